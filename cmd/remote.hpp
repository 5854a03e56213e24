// Shared by `hpak fetch` and `hpak restore URL ...` (cmd/fetch.cpp).
#pragma once

#include <string>

#include "core/remote/remote_fetch.hpp"
#include "core/trust/signing.hpp"

namespace CLI {
class App;
}

namespace hpak::cmd {

// Declares --parallel, --timeout, --attempts, --gap, --max-range, --min-rate,
// --follow-redirects, --min-generation, --max-age, --s3-endpoint and
// --cacert, bound to `o` (--max-age applied by resolve_remote_access).
void add_fetch_options(CLI::App& app, FetchOptions& o);
// The --s3-endpoint and --max-age values add_fetch_options binds.
std::string& s3_endpoint();
std::string& max_age();
// S3 access for an s3:// URL (from the environment and --s3-endpoint), the
// signers a root must be signed by (nullopt: no signature required), and
// --max-age.
void resolve_remote_access(const std::string& url, FetchOptions& o, const std::optional<SignaturePolicy>& policy);
// Opens (creating it if missing) the library at `dir`.
std::unique_ptr<Library> open_or_create_library(const std::string& dir);
// Prints a one-line summary of a fetch on stderr (restore) or stdout (fetch).
void print_fetch_summary(FILE* to, const std::string& url, const std::string& name, const FetchResult& r, double secs);
// -v: what a fetch did (counts of objects, bytes, ranges, requests, retries).
void log_fetch(const FetchResult& r);

} // namespace hpak::cmd
