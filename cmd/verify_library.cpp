#include "cmd/verify_library.hpp"

#include <cstdio>

#include "base/os/sys.hpp"
#include "cmd/output.hpp"

namespace hpak::cmd {

namespace {
using ull = unsigned long long;
} // namespace

bool is_directory(const std::string& path) {
  os::FileStat st;
  return os::stat_path(path.c_str(), st) == 0 && S_ISDIR(st.st_mode);
}

void write_library_json(JsonWriter& w, const LibraryVerifyReport& r, double secs, const JsonMembers& extra) {
  w.begin_object().field("library", r.library).field("ok", r.ok()).field("packs", r.packs.size()).field("objects", r.objects);
  w.field("catalogs", r.catalogs.size()).field("raw_bytes", r.raw_bytes).field("lost_objects", r.lost_objects());
  w.key("seconds").fixed(secs, 3).key("problems").strings(messages_of(r.problems)).key("notes").strings(r.notes);
  w.key("broken_catalogs").strings(r.broken_catalogs());
  w.key("pack_reports").begin_array();
  for (const VerifyReport& p : r.packs) {
    w.begin_object().field("pack", p.pack).field("ok", p.ok()).field("objects", p.objects).field("bad_objects", p.bad_objects.size());
    w.key("problems").strings(messages_of(p.problems)).end();
  }
  w.end().key("bad_objects").begin_array();
  for (const LibraryBadObject& b : r.bad_objects) {
    w.begin_object().field("digest", b.digest).field("kind", b.kind).field("lost", b.lost).key("missing").value_or_null(b.missing);
    w.key("bad_copies").begin_array();
    for (auto& c : b.bad_copies) w.begin_object().field("pack", c.pack).field("offset", c.offset).field("error", c.why).end();
    w.end().key("intact_in").strings(b.intact_in).key("paths").strings(b.paths).end();
  }
  w.end().key("catalog_reports").begin_array();
  for (const LibraryCatalogReport& c : r.catalogs) {
    w.begin_object().field("name", c.name).key("digest").value_or_null(c.digest).field("files", c.files).field("broken", c.broken());
    w.field("lost_objects", c.lost_objects).field("degraded_objects", c.degraded_objects).key("error").value_or_null(c.error).end();
  }
  w.end();
  if (extra) extra(w);
  w.end();
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
  for (auto& p : r.problems) printf("  problem: %s\n", p.message.c_str());
  for (auto& p : r.packs)
    for (auto& why : p.problems) printf("  problem: pack '%s': %s\n", p.pack.c_str(), why.message.c_str());
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
