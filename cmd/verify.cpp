// hpak verify PACK|LIB...: check packs end to end, or a whole library (every
// pack, then every catalog against them: core/verify_library.hpp); name every
// bad object and the paths it breaks. Exit 0 all intact, 1 damage found, 2
// could not run.
#include <CLI/CLI.hpp>

#include "cmd/command.hpp"
#include "cmd/output.hpp"
#include "cmd/verify_library.hpp"
#include "core/signing.hpp"
#include "core/util/error.hpp"
#include "core/verify.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::vector<std::string> packs;
  unsigned threads = 0;
  bool json = false;
  std::string allowed_signers;
} o;

void setup(CLI::App& app) {
  app.add_option("pack", o.packs, "Pack files (or library directories) to verify")->required();
  app.add_option("-j,--threads", o.threads, "Worker threads (default: all cores)");
  app.add_flag("--json", o.json, "Machine-readable report on stdout");
  app.add_option("--allowed-signers", o.allowed_signers,
                 "Also check signatures (PACK.sig, a library's signed names) against this OpenSSH allowed_signers file");
}

std::string json_verdict(const sshsig::Verdict& v) {
  return std::string("{\"ok\":") + (v.ok ? "true" : "false") + ",\"signer\":" + (v.ok ? json_str(v.signer) : "null") +
         ",\"error\":" + (v.ok ? "null" : json_str(v.why)) + "}";
}

// A pack's FILE.sig against the allowed signers: JSON member or a human line.
bool check_pack_signature(const std::string& pack, std::string& json_extra) {
  sshsig::Verdict v = verify_pack_file(pack, sshsig::load_allowed_signers(o.allowed_signers));
  json_extra = ",\"signature\":" + json_verdict(v);
  if (!o.json) {
    if (v.ok) printf("good signature: '%s.sig' by %s\n", pack.c_str(), v.signer.c_str());
    else printf("BAD signature: '%s': %s\n", pack.c_str(), v.why.c_str());
  }
  return v.ok;
}

// Every name's signature state (checked when there are allowed signers: from
// --allowed-signers or the library's own policy). False if one fails the check.
bool report_name_signatures(const std::string& lib_path, std::string& json_extra) {
  Library lib(lib_path);
  std::string policy = o.allowed_signers.empty() ? library_policy_file(lib) : o.allowed_signers;
  std::vector<sshsig::AllowedSigner> allowed;
  if (!policy.empty()) allowed = sshsig::load_allowed_signers(policy);
  bool ok = true, any = !policy.empty();
  std::string json = ",\"signatures\":[";
  std::string human;
  bool first = true;
  for (const std::string& name : lib.catalog_names()) {
    auto sn = read_name_signature(lib, name, policy.empty() ? nullptr : &allowed);
    any |= sn.has_value();
    json += std::string(first ? "" : ",") + "{\"name\":" + json_str(name) + ",\"signed\":" + (sn ? "true" : "false");
    first = false;
    if (!sn) {
      json += ",\"checked\":" + std::string(policy.empty() ? "false" : "true") + ",\"ok\":" + (policy.empty() ? "null" : "false") + "}";
      human += "  " + name + ": unsigned\n";
      ok &= policy.empty();
      continue;
    }
    const NameStatement& st = sn->statement;
    json += ",\"generation\":" + std::to_string(st.generation) + ",\"time\":" + std::to_string(st.time) + ",\"key\":" +
            (sn->key.empty() ? "null" : json_str(sn->key)) + ",\"checked\":" + (policy.empty() ? "false" : "true");
    if (policy.empty()) {
      json += ",\"ok\":null}";
      human += "  " + name + ": signed by key " + sn->key + ", generation " + std::to_string(st.generation) + " (not checked: no allowed signers)\n";
      continue;
    }
    json += ",\"verdict\":" + json_verdict(sn->verdict) + ",\"ok\":" + (sn->verdict.ok ? "true" : "false") + "}";
    if (sn->verdict.ok) human += "  " + name + ": good, generation " + std::to_string(st.generation) + ", signed by " + sn->verdict.signer + "\n";
    else human += "  " + name + ": BAD: " + sn->verdict.why + "\n";
    ok &= sn->verdict.ok;
  }
  json += "]";
  if (!any) return true;
  json_extra = json;
  if (!o.json) printf("signatures%s:\n%s", policy.empty() ? "" : (" (allowed signers '" + policy + "')").c_str(), human.c_str());
  return ok;
}


void print_json(const VerifyReport& r, double secs, bool first, const std::string& extra) {
  printf("%s{\"pack\":%s,\"ok\":%s,\"objects\":%llu,\"catalogs\":%llu,\"raw_bytes\":%llu,\"seconds\":%.3f,\"problems\":[",
         first ? "" : ",", json_str(r.pack).c_str(), r.ok() ? "true" : "false", (unsigned long long)r.objects,
         (unsigned long long)r.catalogs, (unsigned long long)r.raw_bytes, secs);
  for (size_t i = 0; i < r.problems.size(); i++) printf("%s%s", i ? "," : "", json_str(r.problems[i]).c_str());
  printf("],\"bad_objects\":[");
  for (size_t i = 0; i < r.bad_objects.size(); i++) {
    const BadObject& b = r.bad_objects[i];
    printf("%s{\"digest\":\"%s\",\"kind\":\"%s\",\"offset\":%llu,\"lost\":%s,\"error\":%s,\"paths\":[", i ? "," : "",
           b.digest.c_str(), b.kind.c_str(), (unsigned long long)b.offset, b.lost ? "true" : "false", json_str(b.why).c_str());
    for (size_t k = 0; k < b.paths.size(); k++) printf("%s%s", k ? "," : "", json_str(b.paths[k]).c_str());
    printf("]}");
  }
  printf("]%s}", extra.c_str());
}

void print_human(const VerifyReport& r, double secs) {
  if (r.ok()) {
    printf("ok: '%s': %llu objects, %llu catalog%s, %s checked in %.2f s\n", r.pack.c_str(), (unsigned long long)r.objects,
           (unsigned long long)r.catalogs, r.catalogs == 1 ? "" : "s", human_bytes(r.raw_bytes).c_str(), secs);
    return;
  }
  printf("BAD: '%s'\n", r.pack.c_str());
  for (auto& p : r.problems) printf("  problem: %s\n", p.c_str());
  for (auto& b : r.bad_objects) {
    printf("  bad %s %s at offset %llu%s: %s\n", b.kind.c_str(), b.digest.c_str(), (unsigned long long)b.offset,
           b.lost ? "" : " (another copy is intact)", b.why.c_str());
    for (auto& p : b.paths) printf("    breaks %s\n", p.c_str());
  }
  printf("  %llu object%s lost\n", (unsigned long long)r.lost_objects(), r.lost_objects() == 1 ? "" : "s");
}

int run() {
  bool all_ok = true, all_ran = true;
  if (o.json) printf("[");
  bool first = true;
  for (auto& p : o.packs) {
    VerifyOptions vo;
    vo.threads = o.threads;
    vo.progress = progress_bar();
    double t0 = now_seconds();
    if (is_directory(p)) {
      LibraryVerifyReport lr;
      try {
        lr = verify_library(p, vo);
      } catch (const Error& e) {
        clear_progress();
        fprintf(stderr, "hpak: error: %s\n", e.what());
        all_ran = false;
        continue;
      }
      clear_progress();
      all_ok &= lr.ok();
      double lsecs = now_seconds() - t0;
      std::string extra;
      if (!o.json) print_library_human(lr, lsecs);
      try {
        all_ok &= report_name_signatures(p, extra);
      } catch (const Error& e) {
        fprintf(stderr, "hpak: error: %s\n", e.what());
        all_ran = false;
      }
      if (o.json) print_library_json(lr, lsecs, first, extra);
      first = false;
      continue;
    }
    VerifyReport r;
    try {
      r = verify_pack(p, vo);
    } catch (const Error& e) {
      // Not examinable at all (missing, not a pack): say so, go on with the rest.
      clear_progress();
      fprintf(stderr, "hpak: error: %s\n", e.what());
      all_ran = false;
      continue;
    }
    double secs = now_seconds() - t0;
    clear_progress();
    all_ok &= r.ok();
    if (!o.json) print_human(r, secs);
    std::string extra;
    if (!o.allowed_signers.empty()) {
      try {
        all_ok &= check_pack_signature(p, extra);
      } catch (const Error& e) {
        fprintf(stderr, "hpak: error: %s\n", e.what());
        all_ran = false;
      }
    }
    if (o.json) print_json(r, secs, first, extra);
    first = false;
  }
  if (o.json) printf("]\n");
  if (!all_ran) return kExitError;
  return all_ok ? kExitOk : kExitProblem;
}
} // namespace

extern const Command cmd_verify{"verify", "Check packs: trailer, index, every object and catalog", setup, run};

} // namespace hpak::cmd
