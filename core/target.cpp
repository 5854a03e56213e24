#include "core/target.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hpak {

Fd open_or_create_dir(const std::string& path, mode_t mode) {
  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) throw Error("target '" + path + "' is a symlink, not a directory");
    } else if (!S_ISDIR(st.st_mode)) {
      throw Error("target '" + path + "' exists and is not a directory");
    }
  } else if (errno == ENOENT) {
    if (mkdir(path.c_str(), mode) != 0 && errno != EEXIST) throw_errno("unable to create target directory '" + path + "'");
  } else {
    throw_errno("unable to examine target '" + path + "'");
  }
  int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw_errno("unable to open target directory '" + path + "'");
  return Fd(fd);
}

Fd open_unpack_target(const std::string& path, const formats::Catalog& cat, bool force) {
  Fd fd = open_or_create_dir(path);
  if (force) return fd;
  int dup_fd = dup(fd.get());
  DIR* d = fdopendir(dup_fd);
  if (!d) throw_errno("unable to read target directory '" + path + "'");
  size_t entries = 0;
  while (auto* e = readdir(d))
    if (std::string_view(e->d_name) != "." && std::string_view(e->d_name) != "..") entries++;
  closedir(d);
  if (entries == 0) return fd;
  std::vector<std::string> clash;
  for (auto& n : cat.nodes) {
    if (n.path.find('/') != std::string::npos) continue;
    struct stat st;
    if (fstatat(fd.get(), n.path.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) clash.push_back(n.path);
  }
  std::string msg = "target directory '" + path + "' is not empty (" + std::to_string(entries) + " entries)";
  if (!clash.empty()) {
    msg += "; would overwrite ";
    for (size_t i = 0; i < clash.size() && i < 5; i++) msg += (i ? ", '" : "'") + clash[i] + "'";
    if (clash.size() > 5) msg += " and " + std::to_string(clash.size() - 5) + " more";
  }
  throw Error(msg + "; use --force to unpack anyway");
}

} // namespace hpak
