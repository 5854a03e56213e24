// The os seam's passwd lookup (base/os/sys.hpp: user_of), Linux.
#include <pwd.h>

#include "base/os/sys.hpp"

namespace hpak::os {

bool user_of(Uid uid, std::string* name, std::string* home) {
  const passwd* pw = ::getpwuid(uid);
  if (!pw) return false;
  if (name) *name = pw->pw_name ? pw->pw_name : "";
  if (home) *home = pw->pw_dir ? pw->pw_dir : "";
  return true;
}

} // namespace hpak::os
