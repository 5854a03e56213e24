#include "core/store/quarantine.hpp"

#include <cerrno>
#include <ctime>

#include "base/os/sys.hpp"
#include "base/error.hpp"
#include "base/os/file.hpp"

namespace hpak::store {

std::string describe_entry(const std::string& path) {
  os::FileStat st;
  if (os::lstat_path(path.c_str(), st) != 0) return "nothing";
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (S_ISLNK(st.st_mode)) return "a symbolic link";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return "a device";
  return "a regular file of " + std::to_string(st.st_size) + " bytes";
}

namespace {

void make_quarantine_dir(const Layout& layout, bool shared) {
  const std::string q = layout.quarantine_dir();
  if (os::mkdir_path(q.c_str(), shared ? 02775 : 0755) == 0) {
    if (shared) os::chmod_path(q.c_str(), 02775);
    sync_dir(layout.root()); // the new folder's entry, before anything relies on it
  } else if (errno != EEXIST) {
    throw_errno("unable to create '" + q + "'");
  }
}

std::string utc_stamp() {
  char buf[32];
  time_t now = time(nullptr);
  struct tm tm;
  strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", gmtime_r(&now, &tm));
  return buf;
}

} // namespace

std::string quarantine_catalog_entry(const Layout& layout, bool shared, const std::string& name) {
  make_quarantine_dir(layout, shared);
  const std::string from = layout.catalog_path(name);
  const std::string stamp = utc_stamp();
  std::string to = layout.quarantined_catalog(name, stamp);
  for (int n = 1; path_exists(to); n++) to = layout.quarantined_catalog(name, stamp, n);
  if (os::rename_path(from.c_str(), to.c_str()) != 0) throw_errno("unable to move '" + from + "' to '" + to + "'");
  sync_dir(layout.quarantine_dir());
  sync_dir(layout.catalogs_dir());
  return to;
}

bool temp_writer_gone(const std::string& dir, const std::string& name) {
  std::optional<TempWriter> w = temp_writer_of(name);
  if (!w || !w->this_host || !process_gone(w->pid)) return false;
  return unlocked_regular_file(dir + "/" + name);
}

} // namespace hpak::store
