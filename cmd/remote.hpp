// Shared by `hpak fetch` and `hpak restore URL ...` (cmd/fetch.cpp).
#pragma once

#include <string>

#include "core/remote/remote_fetch.hpp"
#include "core/trust/signing.hpp"

namespace CLI {
class App;
}

namespace hpak::cmd {

// A fetch as its command line gives it: the options, and --max-age as written.
struct FetchArgs {
  FetchOptions fo;
  std::string max_age;
};

// Declares --parallel, --timeout, --attempts, --gap, --max-range, --min-rate,
// --follow-redirects, --min-generation, --max-age, --s3-endpoint and
// --cacert, bound to `a` (--max-age applied by resolved_fetch_options).
void add_fetch_options(CLI::App& app, FetchArgs& a);
// The signers a root must be signed by (nullopt: no signature required), and
// --max-age. (The URL's backend reads its own credentials: S3's from the
// environment.)
FetchOptions resolved_fetch_options(const FetchArgs& a, const std::optional<SignaturePolicy>& policy);
// Opens (creating it if missing) the library at `dir`.
std::unique_ptr<Library> open_or_create_library(const std::string& dir);
// Prints a one-line summary of a fetch on stderr (restore) or stdout (fetch).
void print_fetch_summary(FILE* to, const std::string& url, const std::string& name, const FetchResult& r, double secs);
// -v: what a fetch did (counts of objects, bytes, ranges, requests, retries).
void log_fetch(const FetchResult& r);

} // namespace hpak::cmd
