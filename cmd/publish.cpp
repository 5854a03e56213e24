// hpak publish LIB DEST: copy a library into a directory any web server can
// serve, or an S3 bucket (packs and indexes first, the root last; optionally
// signed, optionally pruning what old roots alone named); see
// core/remote/remote_publish.hpp.
#include <CLI/CLI.hpp>
#include <memory>

#include "cmd/command.hpp"
#include "cmd/json.hpp"
#include "cmd/log.hpp"
#include "cmd/duration.hpp"
#include "cmd/output.hpp"
#include "core/remote/remote_publish.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::string lib, dest, key, grace = "7d", expires = "90d", s3_endpoint, cacert;
  uint64_t generation = 0;
  bool json = false, prune = false;
};

int run(const Options& o);

Runner setup(CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_option("library", o->lib, "Library directory")->required();
  app.add_option("dest", o->dest, "Directory served over HTTP (created if missing; also file:///DIR), or s3://BUCKET/PREFIX")->required();
  app.add_option("--generation", o->generation, "Generation of the new root (default: one above the published one; must be above it)")
      ->check(CLI::Range(uint64_t(1), uint64_t(1) << 62));
  app.add_option("-k,--key", o->key, "Sign the root with this OpenSSH Ed25519 private key (checked by fetch --allowed-signers)");
  app.add_flag("--prune", o->prune, "Delete the packs that only roots superseded longer ago than --grace name");
  app.add_option("--grace", o->grace, "With --prune: how long a superseded root keeps its packs (default 7d; s, m, h, d, w)");
  app.add_option("--expires", o->expires, "How long after now clients accept the new root (default 90d; s, m, h, d, w)");
  app.add_option("--s3-endpoint", o->s3_endpoint, "S3-compatible endpoint for s3:// (default $AWS_ENDPOINT_URL, else AWS)");
  app.add_option("--cacert", o->cacert, "CA certificates (PEM) for an https endpoint (default $CURL_CA_BUNDLE, $SSL_CERT_FILE, the system's)");
  app.add_flag("--json", o->json, "Print the summary as JSON");
  return [o] { return run(*o); };
}

int run(const Options& o) {
  Library lib(o.lib);
  log_library(lib);
  PublishOptions po;
  po.generation = o.generation;
  po.sign_key = o.key;
  po.prune = o.prune;
  po.grace_seconds = parse_duration(o.grace);
  po.expires_seconds = parse_duration(o.expires);
  po.remote.http.ca_file = o.cacert;
  po.remote.s3_endpoint = o.s3_endpoint;
  po.progress = progress_bar();
  double t0 = now_seconds();
  PublishResult r = publish(lib, o.dest, po);
  double secs = now_seconds() - t0;
  clear_progress();
  if (o.json) {
    JsonWriter w;
    w.begin_object().field("dest", o.dest).field("generation", r.generation).field("previous_generation", r.previous_generation);
    w.field("packs", r.packs).field("packs_copied", r.packs_copied).field("bytes_copied", r.bytes_copied);
    w.field("catalogs", r.catalogs).field("signed", r.signed_root).field("packs_removed", r.packs_removed);
    w.field("bytes_removed", r.bytes_removed).field("roots_removed", r.roots_removed).field("roots_kept", r.roots_kept);
    w.key("seconds").fixed(secs, 3);
    w.end().newline().print(stdout);
  } else {
    printf("published '%s' to '%s' as generation %llu%s: %llu catalogs, %llu packs (%llu new, %s copied) in %.3f s\n",
           o.lib.c_str(), o.dest.c_str(), (unsigned long long)r.generation, r.signed_root ? " (signed)" : "",
           (unsigned long long)r.catalogs, (unsigned long long)r.packs, (unsigned long long)r.packs_copied,
           human_bytes(r.bytes_copied).c_str(), secs);
    if (o.prune)
      printf("pruned: %llu packs (%s) removed, %llu old roots dropped, %llu roots within the grace period kept\n",
             (unsigned long long)r.packs_removed, human_bytes(r.bytes_removed).c_str(), (unsigned long long)r.roots_removed,
             (unsigned long long)r.roots_kept);
  }
  return kExitOk;
}
} // namespace

extern const Command cmd_publish{"publish", "Publish a library as plain files for a web server or an S3 bucket", setup};

} // namespace hpak::cmd
