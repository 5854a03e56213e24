// The os seam's passwd lookup and ownership check (base/os/sys.hpp: user_of,
// not_private_why), Linux.
#include <cstring>
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

std::string not_private_why(int fd, Mode others_bits) {
  FileStat st;
  if (os::fstat(fd, st) != 0) return std::string("it cannot be examined (fstat: ") + std::strerror(errno) + ")";
  if (st.st_uid != euid() && st.st_uid != 0) {
    std::string name;
    std::string who = user_of(st.st_uid, &name, nullptr) ? "'" + name + "' " : "";
    return "it belongs to " + who + "(uid " + std::to_string(st.st_uid) + ")";
  }
  if (st.st_mode & others_bits & 022) return "group or others may write it";
  if (st.st_mode & others_bits) return "group or others may use it";
  return "";
}

} // namespace hpak::os
