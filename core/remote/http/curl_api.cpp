#include "core/remote/http/curl_api.hpp"

#include <string>

#include "base/os/loaded_library.hpp"

namespace hpak::curl {

namespace {

#if HPAK_CURL_DLOPEN
Api load() {
  os::LoadedLibrary lib("libcurl.so.4", "libcurl, for remote libraries");
  Api a;
#define HPAK_CURL_BIND(f) lib.bind(a.f, "curl_" #f);
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
