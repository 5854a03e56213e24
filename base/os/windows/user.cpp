// The os seam's user lookup (base/os/sys.hpp: user_of) on Windows (issue 30):
// there are no uids; kUser (every file's owner, sys_types.hpp) is the user
// hpak runs as: GetUserNameW, and USERPROFILE for the home.
#include "base/os/windows/win.hpp"

#include <cstdlib>

namespace hpak::os {

bool user_of(Uid uid, std::string* name, std::string* home) {
  if (uid != kUser) return false;
  if (name) {
    wchar_t buf[257];
    DWORD n = 257;
    *name = GetUserNameW(buf, &n) ? win::narrow(std::wstring(buf, n ? n - 1 : 0)) : "";
  }
  if (home) {
    const char* p = std::getenv("USERPROFILE");
    *home = p ? p : "";
  }
  return true;
}

} // namespace hpak::os
