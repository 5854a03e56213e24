// The os seam's run-time loaded libraries (base/os/sys.hpp), Windows:
// LoadLibraryW from the system's search path.
#include "base/os/windows/win.hpp"

#include "base/os/sys.hpp"

namespace hpak::os {

void* load_library(const char* name) {
  std::wstring w(name, name + std::char_traits<char>::length(name));
  return reinterpret_cast<void*>(LoadLibraryW(w.c_str()));
}

void* library_symbol(void* library, const char* symbol) {
  return reinterpret_cast<void*>(GetProcAddress(static_cast<HMODULE>(library), symbol));
}

std::string library_error() { return "Windows error " + std::to_string(GetLastError()); }

} // namespace hpak::os
