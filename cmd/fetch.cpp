// hpak fetch URL NAME --into LIB: fetch a catalog and the objects LIB lacks
// from a published library (core/remote/remote_fetch.hpp; URL: any scheme of
// core/remote/schemes.hpp), then set NAME in LIB.
#include <CLI/CLI.hpp>
#include <memory>

#include <filesystem>

#include "cmd/command.hpp"
#include "cmd/duration.hpp"
#include "cmd/json.hpp"
#include "cmd/log.hpp"
#include "cmd/output.hpp"
#include "cmd/remote.hpp"
#include "core/trust/signing.hpp"

namespace hpak::cmd {

void add_fetch_options(CLI::App& app, FetchArgs& a) {
  FetchOptions& o = a.fo;
  remote::HttpOptions& http = o.remote.http;
  app.add_option("--parallel", http.parallel, "HTTP transfers at once (default 8)")->check(CLI::Range(1, 64));
  app.add_option("--timeout", http.timeout, "Seconds to connect, and without a byte received, before a retry (default 30)")
      ->check(CLI::Range(1, 3600));
  app.add_option("--attempts", http.attempts, "Attempts per request, for resets, timeouts, 429 and 5xx (default 6)")
      ->check(CLI::Range(1, 20));
  app.add_option("--gap", o.gap, "Merge objects of a pack into one range across gaps up to this many bytes (default 262144)");
  app.add_option("--max-range", o.max_range, "Largest range to ask for in one request, in bytes (default 16777216)")
      ->check(CLI::Range(uint64_t(4096), uint64_t(1) << 40));
  app.add_option("--min-rate", http.min_rate,
                 "Bytes per second a request must average once --timeout seconds have passed, or it is retried (default 8192)")
      ->check(CLI::Range(uint64_t(1), uint64_t(1) << 40));
  app.add_flag("--follow-redirects", http.cross_origin_redirects,
               "Follow redirects to other hosts too (without credentials; never from https to http)");
  app.add_option("--min-generation", o.min_generation, "Refuse a remote root below this generation");
  app.add_option("--max-age", a.max_age, "Refuse a remote root published longer ago than this (s, m, h, d, w)");
  app.add_option("--s3-endpoint", o.remote.s3_endpoint, "S3-compatible endpoint for s3:// URLs (default $AWS_ENDPOINT_URL, else AWS)");
  app.add_option("--cacert", http.ca_file, "CA certificates (PEM) for https (default $CURL_CA_BUNDLE, $SSL_CERT_FILE, the system's)");
}

FetchOptions resolved_fetch_options(const FetchArgs& a, const std::optional<SignaturePolicy>& policy) {
  FetchOptions fo = a.fo;
  if (policy) fo.allowed_signers = policy->signers;
  if (!a.max_age.empty()) fo.max_age_seconds = parse_duration(a.max_age);
  return fo;
}

std::unique_ptr<Library> open_or_create_library(const std::string& dir) {
  if (!Library::is_library(dir)) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw Error("unable to create directory '" + dir + "': " + ec.message());
    Library::init(dir);
  }
  return std::make_unique<Library>(dir);
}

void log_fetch(const FetchResult& r) {
  spdlog::debug("fetch: generation {}, {} objects, {} fetched ({} bytes needed, {} in {} ranges, {} transferred), {} requests, "
                "{} retries, {} indexes fetched, {} packs written, {} replans",
                r.generation, r.objects, r.objects_fetched, r.needed_bytes, r.range_bytes, r.ranges, r.transferred_bytes, r.requests,
                r.retries, r.indexes_fetched, r.packs_written, r.replans);
}

void print_fetch_summary(FILE* to, const std::string& url, const std::string& name, const FetchResult& r, double secs) {
  fprintf(to,
          "fetched '%s' from '%s' (generation %llu): %llu of %llu objects (%s stored) in %llu ranges, %llu requests, %s "
          "transferred, in %.3f s\n",
          name.c_str(), url.c_str(), (unsigned long long)r.generation, (unsigned long long)r.objects_fetched,
          (unsigned long long)r.objects, human_bytes(r.needed_bytes).c_str(), (unsigned long long)r.ranges,
          (unsigned long long)r.requests, human_bytes(r.transferred_bytes).c_str(), secs);
}

namespace {
struct Options {
  std::string url, name, into, as, allowed_signers;
  bool json = false;
  FetchArgs fetch;
};

int run(const Options& o);

Runner setup(CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_option("url", o->url, "URL of a published library (http://, https://, s3://BUCKET/PREFIX, file:///DIR or a directory)")->required();
  app.add_option("catalog", o->name, "Catalog name")->required();
  app.add_option("--into", o->into, "Library to fetch into (created if missing)")->required();
  app.add_option("--as", o->as, "Name to give the catalog in the library (default: its remote name)");
  app.add_option("--allowed-signers", o->allowed_signers,
                 "Require the remote root to be signed by a key of this OpenSSH allowed_signers file (hpak publish -k)");
  add_fetch_options(app, o->fetch);
  app.add_flag("--json", o->json, "Print the summary as JSON");
  return [o] { return run(*o); };
}

void print_json(const Options& o, const FetchResult& r, double secs) {
  JsonWriter w;
  w.begin_object().field("url", o.url).field("catalog", o.name).field("digest", to_hex(r.catalog_digest));
  w.field("generation", r.generation).field("objects", r.objects).field("objects_fetched", r.objects_fetched);
  w.field("needed_bytes", r.needed_bytes).field("range_bytes", r.range_bytes).field("transferred_bytes", r.transferred_bytes);
  w.field("ranges", r.ranges).field("requests", r.requests).field("retries", r.retries);
  w.field("indexes_fetched", r.indexes_fetched).field("packs_written", r.packs_written).field("replans", r.replans);
  w.key("signer").value_or_null(r.signer).key("seconds").fixed(secs, 3);
  w.end().newline().print(stdout);
}

int run(const Options& o) {
  auto lib = open_or_create_library(o.into);
  log_library(*lib);
  // A library that requires signatures (hpak init --require-signatures) requires a signed root.
  FetchOptions fo = resolved_fetch_options(o.fetch, signature_policy(*lib, o.allowed_signers));
  fo.local_name = o.as;
  fo.progress = progress_bar();
  double t0 = now_seconds();
  FetchResult r = fetch(*lib, o.url, o.name, fo);
  double secs = now_seconds() - t0;
  clear_progress();
  log_fetch(r);
  if (o.json)
    print_json(o, r, secs);
  else
    print_fetch_summary(stdout, o.url, o.name, r, secs);
  return kExitOk;
}
} // namespace

extern const Command cmd_fetch{"fetch", "Fetch a catalog from a published library (HTTP, S3 or a directory)", setup};

} // namespace hpak::cmd
