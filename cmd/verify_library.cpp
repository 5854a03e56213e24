#include "cmd/verify_library.hpp"

#include <cstdio>
#include <sys/stat.h>

#include "cmd/output.hpp"

namespace hpak::cmd {

namespace {
using ull = unsigned long long;

void json_list(const std::vector<std::string>& v) {
  printf("[");
  for (size_t i = 0; i < v.size(); i++) printf("%s%s", i ? "," : "", json_str(v[i]).c_str());
  printf("]");
}
} // namespace

bool is_directory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void print_library_json(const LibraryVerifyReport& r, double secs, bool first, const std::string& extra) {
  printf("%s{\"library\":%s,\"ok\":%s,\"packs\":%zu,\"objects\":%llu,\"catalogs\":%zu,\"raw_bytes\":%llu,\"lost_objects\":%llu,"
         "\"seconds\":%.3f,\"problems\":",
         first ? "" : ",", json_str(r.library).c_str(), r.ok() ? "true" : "false", r.packs.size(), (ull)r.objects, r.catalogs.size(),
         (ull)r.raw_bytes, (ull)r.lost_objects(), secs);
  json_list(r.problems);
  printf(",\"notes\":");
  json_list(r.notes);
  printf(",\"broken_catalogs\":");
  json_list(r.broken_catalogs());
  printf(",\"pack_reports\":[");
  for (size_t i = 0; i < r.packs.size(); i++) {
    const VerifyReport& p = r.packs[i];
    printf("%s{\"pack\":%s,\"ok\":%s,\"objects\":%llu,\"bad_objects\":%zu,\"problems\":", i ? "," : "", json_str(p.pack).c_str(),
           p.ok() ? "true" : "false", (ull)p.objects, p.bad_objects.size());
    json_list(p.problems);
    printf("}");
  }
  printf("],\"bad_objects\":[");
  for (size_t i = 0; i < r.bad_objects.size(); i++) {
    const LibraryBadObject& b = r.bad_objects[i];
    printf("%s{\"digest\":\"%s\",\"kind\":\"%s\",\"lost\":%s,\"missing\":%s,\"bad_copies\":[", i ? "," : "", b.digest.c_str(),
           b.kind.c_str(), b.lost ? "true" : "false", b.missing.empty() ? "null" : json_str(b.missing).c_str());
    for (size_t k = 0; k < b.bad_copies.size(); k++)
      printf("%s{\"pack\":%s,\"offset\":%llu,\"error\":%s}", k ? "," : "", json_str(b.bad_copies[k].pack).c_str(),
             (ull)b.bad_copies[k].offset, json_str(b.bad_copies[k].why).c_str());
    printf("],\"intact_in\":");
    json_list(b.intact_in);
    printf(",\"paths\":");
    json_list(b.paths);
    printf("}");
  }
  printf("],\"catalog_reports\":[");
  for (size_t i = 0; i < r.catalogs.size(); i++) {
    const LibraryCatalogReport& c = r.catalogs[i];
    printf("%s{\"name\":%s,\"digest\":%s,\"files\":%llu,\"broken\":%s,\"lost_objects\":%llu,\"degraded_objects\":%llu,\"error\":%s}",
           i ? "," : "", json_str(c.name).c_str(), c.digest.empty() ? "null" : json_str(c.digest).c_str(), (ull)c.files,
           c.broken() ? "true" : "false", (ull)c.lost_objects, (ull)c.degraded_objects, c.error.empty() ? "null" : json_str(c.error).c_str());
  }
  printf("]%s}", extra.c_str());
}

void print_library_human(const LibraryVerifyReport& r, double secs) {
  if (r.ok()) {
    printf("ok: library '%s': %zu pack%s, %llu objects, %zu catalog%s, %s checked in %.2f s\n", r.library.c_str(), r.packs.size(),
           r.packs.size() == 1 ? "" : "s", (ull)r.objects, r.catalogs.size(), r.catalogs.size() == 1 ? "" : "s",
           human_bytes(r.raw_bytes).c_str(), secs);
    for (auto& n : r.notes) printf("  note: %s\n", n.c_str());
    return;
  }
  printf("BAD: library '%s'\n", r.library.c_str());
  for (auto& p : r.problems) printf("  problem: %s\n", p.c_str());
  for (auto& p : r.packs)
    for (auto& why : p.problems) printf("  problem: pack '%s': %s\n", p.pack.c_str(), why.c_str());
  for (auto& b : r.bad_objects) {
    printf("  bad %s %s%s\n", b.kind.c_str(), b.digest.c_str(), b.lost ? " (lost)" : "");
    for (auto& c : b.bad_copies) printf("    in '%s' at offset %llu: %s\n", c.pack.c_str(), (ull)c.offset, c.why.c_str());
    if (!b.missing.empty()) printf("    missing: %s\n", b.missing.c_str());
    if (!b.intact_in.empty()) printf("    not lost: an intact copy is in '%s'\n", b.intact_in[0].c_str());
    for (auto& p : b.paths) printf("    breaks %s\n", p.c_str());
  }
  for (auto& c : r.catalogs) {
    if (!c.error.empty()) printf("  catalog '%s' is BROKEN: %s\n", c.name.c_str(), c.error.c_str());
    else if (c.lost_objects) printf("  catalog '%s' is BROKEN: %llu object%s lost\n", c.name.c_str(), (ull)c.lost_objects, c.lost_objects == 1 ? "" : "s");
    else if (c.degraded_objects)
      printf("  catalog '%s': %llu object%s with a bad copy, intact elsewhere\n", c.name.c_str(), (ull)c.degraded_objects,
             c.degraded_objects == 1 ? "" : "s");
  }
  for (auto& n : r.notes) printf("  note: %s\n", n.c_str());
  auto broken = r.broken_catalogs();
  std::string names;
  for (auto& b : broken) names += (names.empty() ? "" : ", ") + b;
  printf("  %llu object%s lost; %zu of %zu catalog%s broken%s%s\n", (ull)r.lost_objects(), r.lost_objects() == 1 ? "" : "s",
         broken.size(), r.catalogs.size(), r.catalogs.size() == 1 ? "" : "s", broken.empty() ? "" : ": ", names.c_str());
}

} // namespace hpak::cmd
