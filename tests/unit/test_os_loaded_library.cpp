// os::LoadedLibrary (base/os/loaded_library.hpp): a library loaded at run
// time, its functions bound by name, every failure an Error naming the
// library, what hpak needs it for, and why.
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "base/error.hpp"
#include "base/os/loaded_library.hpp"

namespace {

std::string load_failure(const char* name, const char* purpose) {
  try {
    hpak::os::LoadedLibrary lib(name, purpose);
  } catch (const hpak::Error& e) {
    return e.what();
  }
  return "";
}

std::string bind_failure(const char* symbol) {
  hpak::os::LoadedLibrary libz("libz.so.1", "zlib");
  int (*f)() = nullptr;
  try {
    libz.bind(f, symbol);
  } catch (const hpak::Error& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("LoadedLibrary: a library that is not there is an error naming it, its purpose and why") {
  auto m = load_failure("libhpak-none.so.9", "nothing, for a test");
  CHECK(m.find("unable to load libhpak-none.so.9 (nothing, for a test): ") == 0);
  CHECK(m.find("libhpak-none.so.9: cannot open shared object file") != std::string::npos);
}

TEST_CASE("LoadedLibrary: binds a function by name, and a name the library lacks is an error") {
  hpak::os::LoadedLibrary libz("libz.so.1", "zlib");
  const char* (*version)() = nullptr;
  libz.bind(version, "zlibVersion");
  const bool bound = version != nullptr;
  REQUIRE(bound);
  CHECK(std::strncmp(version(), "1.", 2) == 0);
  CHECK(bind_failure("zlib_hpak_none") == "unable to load libz.so.1 (zlib): it has no zlib_hpak_none");
}
