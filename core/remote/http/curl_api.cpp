#include "core/remote/http/curl_api.hpp"

#include <string>

#include "base/error.hpp"
#include "base/os/sys.hpp"

namespace hpak::curl {

namespace {

#if HPAK_CURL_DLOPEN
constexpr const char* kLibrary = "libcurl.so.4";

[[noreturn]] void unloadable(const std::string& why) {
  throw Error(std::string("unable to load ") + kLibrary + " (libcurl, for remote libraries): " + why);
}

Api load() {
  void* lib = os::load_library(kLibrary);
  if (!lib) unloadable(os::library_error());
  Api a;
#define HPAK_CURL_BIND(f)                                                                                              \
  a.f = reinterpret_cast<decltype(a.f)>(os::library_symbol(lib, "curl_" #f));                                          \
  if (!a.f) unloadable("it has no curl_" #f);
  HPAK_CURL_FUNCTIONS(HPAK_CURL_BIND)
#undef HPAK_CURL_BIND
  a.global_init(CURL_GLOBAL_DEFAULT);
  return a;
}
#else
Api load() {
  Api a;
#define HPAK_CURL_BIND(f) a.f = &::curl_##f;
  HPAK_CURL_FUNCTIONS(HPAK_CURL_BIND)
#undef HPAK_CURL_BIND
  a.global_init(CURL_GLOBAL_DEFAULT);
  return a;
}
#endif

} // namespace

const Api& api() {
  static const Api a = load();
  return a;
}

} // namespace hpak::curl
