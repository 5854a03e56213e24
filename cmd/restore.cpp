// hpak restore LIB NAME TARGET: materialise a library catalog into TARGET,
// relocated to TARGET's path; fresh or dirty (only what differs is touched).
#include <CLI/CLI.hpp>
#include <memory>

#include "cmd/command.hpp"
#include "cmd/json.hpp"
#include "cmd/log.hpp"
#include "cmd/output.hpp"
#include "cmd/remote.hpp"
#include "core/restore/restore.hpp"
#include "core/trust/signing.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::string lib, name, target, cache;
  FetchArgs fetch;
  std::string allowed_signers;
  unsigned threads = 0;
  bool verify_content = false, partial = false, no_wait = false, json = false, verify = false, force = false, trust_large = false;
  bool preserve_setid = false, keep_unrelocated = false, windows_names = os::kWindowsNames;
};

int run(const Options& o);

Runner setup(CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_option("library", o->lib, "Library directory, or URL of a published library (http://, https://, s3://BUCKET/PREFIX or file:///DIR)")->required();
  app.add_option("catalog", o->name, "Catalog name")->required();
  app.add_option("target", o->target, "Target directory (created with its missing parents if missing)")->required();
  app.add_option("-j,--threads", o->threads, "Worker threads (default: all cores)");
  app.add_flag("--verify-content", o->verify_content, "Compare the bytes of every file kept, not only its metadata (a stored object that does not match its name fails the restore)");
  app.add_flag("--preserve-setid", o->preserve_setid, "Keep set-uid and set-gid bits (dropped by default)");
  app.add_flag("--windows-names", o->windows_names,
               "Refuse, before writing anything, a catalog with a name Windows cannot hold (two names differing only in case, CON, NUL..., a trailing dot or space, a character such as : or |; always on Windows)");
  app.add_flag("--keep-unrelocated", o->keep_unrelocated,
               "Restore even when binary files hold the packed path in strings too short for the target's path, leaving them as packed");
  app.add_flag("--partial", o->partial, "Restore every intact file past damaged objects (exit 1 all the same)");
  app.add_flag("-f,--force", o->force, "Restore into a non-empty directory hpak did not restore, deleting what the catalog does not name");
  app.add_flag("--no-wait", o->no_wait, "Fail instead of waiting when another restore holds the target");
  app.add_flag("--verify", o->verify, "Also check each object's SHA-256 against its name as it is read (stored checksums are checked too)");
  app.add_flag("--trust-large-objects", o->trust_large,
               "Copy raw objects of 1 MiB or more without reading them for their stored checksum (fast; trusts the library's bytes; no effect with --verify)");
  app.add_flag("--json", o->json, "Print the summary as JSON");
  app.add_option("--allowed-signers", o->allowed_signers,
                 "Require the name (with a URL: the remote root) to be signed by a key of this OpenSSH allowed_signers file (see hpak-sign(1))");
  app.add_option("--cache", o->cache, "With a URL: the local library to fetch into (default $XDG_CACHE_HOME/hpak)");
  add_fetch_options(app, o->fetch);
  return [o] { return run(*o); };
}

// hpak restore URL NAME TARGET: fetch into the cache library first; returns
// the name the catalog has there (core/remote/remote_fetch.hpp, remote_cache_name).
// With --allowed-signers (or a cache that requires signatures) the remote
// root must be signed; the restore then expects the digest that root gives.
struct Cached {
  std::string lib, name;       // the cache library and the catalog's name there
  std::optional<Digest> expect; // the digest the signed remote root gives
};
Cached fetch_into_cache(const Options& o) {
  Cached c{o.cache.empty() ? default_remote_cache() : o.cache, {}, {}};
  auto cache = open_or_create_library(c.lib);
  FetchOptions fo = resolved_fetch_options(o.fetch, signature_policy(*cache, o.allowed_signers));
  fo.local_name = remote_cache_name(o.lib, o.name);
  fo.progress = progress_bar();
  double t0 = now_seconds();
  FetchResult r = fetch(*cache, o.lib, o.name, fo);
  clear_progress();
  log_fetch(r);
  if (!global().quiet && !o.json) print_fetch_summary(stdout, o.lib, o.name, r, now_seconds() - t0);
  if (fo.allowed_signers) c.expect = r.catalog_digest;
  c.name = fo.local_name;
  return c;
}

int run(const Options& o) {
  bool remote = is_remote_url(o.lib);
  Cached at = remote ? fetch_into_cache(o) : Cached{o.lib, o.name, {}};
  const std::string& name = at.name;
  Library lib(at.lib, /*check_index_trailers=*/o.verify);
  log_library(lib);
  RestoreOptions ro;
  ro.threads = o.threads;
  ro.verify_content = o.verify_content;
  ro.partial = o.partial;
  ro.wait = !o.no_wait;
  ro.force = o.force;
  ro.verify = o.verify;
  ro.trust_large_raw = o.trust_large;
  ro.preserve_setid = o.preserve_setid;
  ro.keep_unrelocated = o.keep_unrelocated;
  ro.windows_names = o.windows_names;
  ro.progress = progress_bar();
  // A signature policy: --allowed-signers, or the library's own (hpak init --require-signatures).
  // With a URL the signed remote root stood for the name (fetch_into_cache).
  if (remote) ro.expect_catalog = at.expect;
  else if (auto policy = signature_policy(lib, o.allowed_signers)) ro.expect_catalog = enforce_name_policy(lib, name, policy->signers);
  double t0 = now_seconds();
  RestoreStats s = restore(lib, name, o.target, ro);
  double secs = now_seconds() - t0;
  clear_progress();
  spdlog::debug("restore: {}, {} files: {} written, {} kept, {} compared, {} removed, {} dirs created, {} links written, "
                "{} modes fixed, {} bytes written, {} failed",
                s.fresh ? "fresh" : "dirty", s.files, s.files_written, s.files_kept, s.files_compared, s.removed, s.dirs_created, s.links_written, s.modes_fixed,
                s.bytes_written, s.failures.size());
  for (auto& f : s.failures) log_error("'" + f.path + "' not restored: " + f.why);
  if (o.json) {
    JsonWriter w;
    w.begin_object().field("catalog", o.name).field("target", o.target).field("fresh", s.fresh).field("files", s.files);
    w.field("written", s.files_written).field("kept", s.files_kept).field("compared", s.files_compared).field("removed", s.removed);
    w.field("dirs_created", s.dirs_created).field("links_written", s.links_written).field("modes_fixed", s.modes_fixed);
    w.field("bytes_written", s.bytes_written).field("relocated", s.relocated).field("kept_unrelocated", s.kept_unrelocated);
    w.field("failed", s.failures.size()).key("seconds").fixed(secs, 3);
    w.end().newline().print(stdout);
  } else {
    printf("restored '%s' into '%s' (%s): %llu files written, %llu kept, %llu removed, %llu modes fixed, %s in %.3f s\n",
           o.name.c_str(), o.target.c_str(), s.fresh ? "fresh" : "dirty", (unsigned long long)s.files_written,
           (unsigned long long)s.files_kept, (unsigned long long)s.removed, (unsigned long long)s.modes_fixed,
           human_bytes(s.bytes_written).c_str(), secs);
    if (s.kept_unrelocated)
      printf("%llu files holding the packed path left as packed: their format cannot take this target's length (see hpak-restore(1))\n",
             (unsigned long long)s.kept_unrelocated);
  }
  if (!s.failures.empty()) {
    log_error(std::to_string(s.failures.size()) + " files not restored; '" + o.target + "' is marked incomplete");
    return kExitProblem;
  }
  return kExitOk;
}
} // namespace

extern const Command cmd_restore{"restore", "Restore a library catalog into a target directory", setup};

} // namespace hpak::cmd
