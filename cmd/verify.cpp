// hpak verify PACK|LIB...: check packs end to end, or a whole library (every
// pack, then every catalog against them: core/verify/verify_library.hpp); name every
// bad object and the paths it breaks. Exit 0 all intact, 1 damage found, 2
// could not run.
#include <CLI/CLI.hpp>
#include <memory>

#include "cmd/command.hpp"
#include "cmd/json.hpp"
#include "cmd/log.hpp"
#include "cmd/output.hpp"
#include "cmd/verify_library.hpp"
#include "core/trust/signing.hpp"
#include "base/error.hpp"
#include "core/verify/verify.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::vector<std::string> packs;
  unsigned threads = 0;
  bool json = false;
  std::string allowed_signers;
};

int run(const Options& o);

Runner setup(CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_option("pack", o->packs, "Pack files (or library directories) to verify")->required();
  app.add_option("-j,--threads", o->threads, "Worker threads (default: all cores)");
  app.add_flag("--json", o->json, "Machine-readable report on stdout");
  app.add_option("--allowed-signers", o->allowed_signers,
                 "Also check signatures (PACK.sig, a library's signed names) against this OpenSSH allowed_signers file");
  return [o] { return run(*o); };
}

void write_verdict(JsonWriter& w, const sshsig::Verdict& v) {
  w.begin_object().field("ok", v.ok);
  if (v.ok) w.field("signer", v.signer).key("error").value(nullptr);
  else w.key("signer").value(nullptr).field("error", v.why);
  w.end();
}

// A pack's FILE.sig against the allowed signers: a human line unless --json.
sshsig::Verdict check_pack_signature(const Options& o, const std::string& pack) {
  sshsig::Verdict v = verify_pack_file(pack, sshsig::load_allowed_signers(o.allowed_signers));
  if (!o.json) {
    if (v.ok) printf("good signature: '%s.sig' by %s\n", pack.c_str(), v.signer.c_str());
    else printf("BAD signature: '%s': %s\n", pack.c_str(), v.why.c_str());
  }
  return v;
}

// Every name's signature state, checked when there are allowed signers (from
// --allowed-signers or the library's own policy).
struct NameSignatures {
  std::string policy; // the allowed signers file, or "" (not checked)
  std::vector<std::pair<std::string, std::optional<SignedName>>> names;

  bool shown() const { // worth a report: a policy, or at least one signed name
    if (!policy.empty()) return true;
    for (auto& n : names)
      if (n.second) return true;
    return false;
  }
  bool ok() const { // false if one fails the check (unsigned fails it too)
    if (policy.empty()) return true;
    for (auto& n : names)
      if (!n.second || !n.second->verdict.ok) return false;
    return true;
  }
};

NameSignatures read_name_signatures(const Options& o, const std::string& lib_path) {
  Library lib(lib_path);
  NameSignatures ns;
  std::vector<sshsig::AllowedSigner> allowed;
  if (auto policy = signature_policy(lib, o.allowed_signers)) {
    ns.policy = policy->file;
    allowed = std::move(policy->signers);
  }
  for (const std::string& name : lib.catalog_names())
    ns.names.emplace_back(name, read_name_signature(lib, name, ns.policy.empty() ? nullptr : &allowed));
  return ns;
}

void print_name_signatures(const NameSignatures& ns) {
  printf("signatures%s:\n", ns.policy.empty() ? "" : (" (allowed signers '" + ns.policy + "')").c_str());
  for (auto& [name, sn] : ns.names) {
    if (!sn) printf("  %s: unsigned\n", name.c_str());
    else if (ns.policy.empty())
      printf("  %s: signed by key %s, generation %llu (not checked: no allowed signers)\n", name.c_str(), sn->key.c_str(),
             (unsigned long long)sn->statement.generation);
    else if (sn->verdict.ok)
      printf("  %s: good, generation %llu, signed by %s\n", name.c_str(), (unsigned long long)sn->statement.generation,
             sn->verdict.signer.c_str());
    else printf("  %s: BAD: %s\n", name.c_str(), sn->verdict.why.c_str());
  }
}

// The "signatures" member: per name, signed or not, and the verdict when checked.
void write_name_signatures(JsonWriter& w, const NameSignatures& ns) {
  const bool checked = !ns.policy.empty();
  w.key("signatures").begin_array();
  for (auto& [name, sn] : ns.names) {
    w.begin_object().field("name", name).field("signed", sn.has_value());
    if (!sn) {
      w.field("checked", checked).key("ok");
      checked ? w.value(false) : w.value(nullptr);
      w.end();
      continue;
    }
    w.field("generation", sn->statement.generation).field("time", sn->statement.time).key("key").value_or_null(sn->key);
    w.field("checked", checked);
    if (!checked) {
      w.key("ok").value(nullptr).end();
      continue;
    }
    w.key("verdict");
    write_verdict(w, sn->verdict);
    w.field("ok", sn->verdict.ok).end();
  }
  w.end();
}

void write_json(JsonWriter& w, const VerifyReport& r, double secs, const JsonMembers& extra) {
  w.begin_object().field("pack", r.pack).field("ok", r.ok()).field("objects", r.objects).field("catalogs", r.catalogs);
  w.field("raw_bytes", r.raw_bytes).key("seconds").fixed(secs, 3).key("problems").strings(messages_of(r.problems));
  w.key("bad_objects").begin_array();
  for (const BadObject& b : r.bad_objects) {
    w.begin_object().field("digest", b.digest).field("kind", b.kind).field("offset", b.offset).field("lost", b.lost);
    w.field("error", b.why).key("paths").strings(b.paths).end();
  }
  w.end();
  if (extra) extra(w);
  w.end();
}

void print_human(const VerifyReport& r, double secs) {
  if (r.ok()) {
    printf("ok: '%s': %llu objects, %llu catalog%s, %s checked in %.2f s\n", r.pack.c_str(), (unsigned long long)r.objects,
           (unsigned long long)r.catalogs, r.catalogs == 1 ? "" : "s", human_bytes(r.raw_bytes).c_str(), secs);
    return;
  }
  printf("BAD: '%s'\n", r.pack.c_str());
  for (auto& p : r.problems) printf("  problem: %s\n", p.message.c_str());
  for (auto& b : r.bad_objects) {
    printf("  bad %s %s at offset %llu%s: %s\n", b.kind.c_str(), b.digest.c_str(), (unsigned long long)b.offset,
           b.lost ? "" : " (another copy is intact)", b.why.c_str());
    for (auto& p : b.paths) printf("    breaks %s\n", p.c_str());
  }
  printf("  %llu object%s lost\n", (unsigned long long)r.lost_objects(), r.lost_objects() == 1 ? "" : "s");
}

// A library directory: verify_library, then the names' signatures.
bool verify_one_library(const Options& o, const std::string& p, const VerifyOptions& vo, JsonWriter& w, bool& all_ran) {
  double t0 = now_seconds();
  LibraryVerifyReport lr;
  try {
    lr = verify_library(p, vo);
  } catch (const Error& e) {
    log_error(e.what());
    all_ran = false;
    return true;
  }
  clear_progress();
  bool ok = lr.ok();
  double lsecs = now_seconds() - t0;
  spdlog::debug("verify: library '{}': {} packs, {} objects, {} catalogs; {} problems, {} bad objects, {} lost; {:.3f} s", p,
                lr.packs.size(), lr.objects, lr.catalogs.size(), lr.problems.size(), lr.bad_objects.size(), lr.lost_objects(), lsecs);
  if (!o.json) print_library_human(lr, lsecs);
  std::optional<NameSignatures> ns;
  try {
    ns = read_name_signatures(o, p);
    if (!ns->shown()) ns.reset();
  } catch (const Error& e) {
    log_error(e.what());
    all_ran = false;
  }
  if (ns) {
    ok &= ns->ok();
    if (!o.json) print_name_signatures(*ns);
  }
  if (o.json) write_library_json(w, lr, lsecs, [&](JsonWriter& jw) {
    if (ns) write_name_signatures(jw, *ns);
  });
  return ok;
}

// A pack file: verify_pack, then its .sig with --allowed-signers.
bool verify_one_pack(const Options& o, const std::string& p, const VerifyOptions& vo, JsonWriter& w, bool& all_ran) {
  double t0 = now_seconds();
  VerifyReport r;
  try {
    r = verify_pack(p, vo);
  } catch (const Error& e) {
    // Not examinable at all (missing, not a pack): say so, go on with the rest.
    log_error(e.what());
    all_ran = false;
    return true;
  }
  double secs = now_seconds() - t0;
  clear_progress();
  spdlog::debug("verify: pack '{}': {} objects, {} catalogs, {} raw bytes; {} problems, {} bad objects; {:.3f} s", p, r.objects,
                r.catalogs, r.raw_bytes, r.problems.size(), r.bad_objects.size(), secs);
  bool ok = r.ok();
  if (!o.json) print_human(r, secs);
  std::optional<sshsig::Verdict> sig;
  if (!o.allowed_signers.empty()) {
    try {
      sig = check_pack_signature(o, p);
      ok &= sig->ok;
    } catch (const Error& e) {
      log_error(e.what());
      all_ran = false;
    }
  }
  if (o.json) write_json(w, r, secs, [&](JsonWriter& jw) {
    if (sig) write_verdict(jw.key("signature"), *sig);
  });
  return ok;
}

int run(const Options& o) {
  bool all_ok = true, all_ran = true;
  JsonWriter w; // with --json: one array, an object per argument, printed as each is done
  if (o.json) w.begin_array();
  for (auto& p : o.packs) {
    VerifyOptions vo;
    vo.threads = o.threads;
    vo.progress = progress_bar();
    all_ok &= is_directory(p) ? verify_one_library(o, p, vo, w, all_ran) : verify_one_pack(o, p, vo, w, all_ran);
    w.print(stdout);
  }
  if (o.json) w.end().newline().print(stdout);
  if (!all_ran) return kExitError;
  return all_ok ? kExitOk : kExitProblem;
}
} // namespace

extern const Command cmd_verify{"verify", "Check packs: trailer, index, every object and catalog", setup};

} // namespace hpak::cmd
