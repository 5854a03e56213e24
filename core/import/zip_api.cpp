#include "core/import/zip_api.hpp"

#include <string>

#include "base/error.hpp"
#include "base/os/sys.hpp"

namespace hpak::zip {

namespace {

#if HPAK_ZIP_DLOPEN
constexpr const char* kLibrary = "libzip.so.4";

[[noreturn]] void unloadable(const std::string& why) {
  throw Error(std::string("unable to load ") + kLibrary + " (libzip, for importing a zipped rcc hololib): " + why);
}

Api load() {
  void* lib = os::load_library(kLibrary);
  if (!lib) unloadable(os::library_error());
  Api a;
#define HPAK_ZIP_BIND(f)                                                                                               \
  a.f = reinterpret_cast<decltype(a.f)>(os::library_symbol(lib, "zip_" #f));                                           \
  if (!a.f) unloadable("it has no zip_" #f);
  HPAK_ZIP_FUNCTIONS(HPAK_ZIP_BIND)
#undef HPAK_ZIP_BIND
  return a;
}
#else
Api load() {
  Api a;
#define HPAK_ZIP_BIND(f) a.f = &::zip_##f;
  HPAK_ZIP_FUNCTIONS(HPAK_ZIP_BIND)
#undef HPAK_ZIP_BIND
  return a;
}
#endif

} // namespace

const Api& api() {
  static const Api a = load();
  return a;
}

} // namespace hpak::zip
