#include "core/import/zip_api.hpp"

#include <string>

#include "base/os/loaded_library.hpp"

namespace hpak::zip {

namespace {

#if HPAK_ZIP_DLOPEN
Api load() {
  os::LoadedLibrary lib("libzip.so.4", "libzip, for importing a zipped rcc hololib");
  Api a;
#define HPAK_ZIP_BIND(f) lib.bind(a.f, "zip_" #f);
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
