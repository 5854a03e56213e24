// Shared by `hpak fetch` and `hpak restore URL ...` (cmd/fetch.cpp).
#pragma once

#include <string>

#include "core/remote_fetch.hpp"

namespace CLI {
class App;
}

namespace hpak::cmd {

// Declares --parallel, --timeout, --attempts and --gap, bound to `o`.
void add_fetch_options(CLI::App& app, FetchOptions& o);
// Opens (creating it if missing) the library at `dir`.
std::unique_ptr<Library> open_or_create_library(const std::string& dir);
// Prints a one-line summary of a fetch on stderr (restore) or stdout (fetch).
void print_fetch_summary(FILE* to, const std::string& url, const std::string& name, const FetchResult& r, double secs);

} // namespace hpak::cmd
