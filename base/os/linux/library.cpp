// The os seam's run-time loaded libraries (base/os/sys.hpp), Linux: dlopen.
#include <dlfcn.h>

#include "base/os/sys.hpp"

namespace hpak::os {

void* load_library(const char* name) { return dlopen(name, RTLD_NOW | RTLD_LOCAL); }

void* library_symbol(void* library, const char* symbol) { return dlsym(library, symbol); }

std::string library_error() {
  const char* e = dlerror();
  return e ? e : "unknown error";
}

} // namespace hpak::os
