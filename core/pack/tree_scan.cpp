#include "core/pack/tree_scan.hpp"

#include <algorithm>
#include <map>

#include "base/os/sys.hpp"
#include "core/store/dir_stream.hpp"
#include "base/os/file.hpp"

namespace hpak {

using namespace formats;

namespace {

struct Walker {
  const ScanOptions& opts;
  std::string root;
  ScannedTree out;
  std::map<std::pair<os::Dev, os::Ino>, std::string> links;

  int64_t mtime(const os::FileStat& st) const {
    return opts.record_mtime ? int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec : 0;
  }

  void walk(int dirfd, const std::string& rel) {
    const std::vector<std::string> names = store::list_dir_at(dirfd, root + "/" + rel);
    for (const std::string& name : names) {
      std::string path = rel.empty() ? name : rel + "/" + name;
      if (opts.exclude && opts.exclude(path)) continue;
      std::string shown = root + "/" + path;
      if (path.size() > kMaxPath) throw Error("path too long for a catalog (over 4095 bytes): '" + shown + "'");
      os::FileStat st;
      if (os::stat_at(dirfd, name.c_str(), st, AT_SYMLINK_NOFOLLOW) != 0) throw_errno("unable to stat '" + shown + "'");
      Node n;
      n.path = out.paths.keep(path);
      n.mode = st.st_mode & 07777;
      n.mtime_ns = mtime(st);
      if (S_ISDIR(st.st_mode)) {
        n.type = NodeType::Dir;
        out.nodes.push_back(std::move(n));
        int sub = os::open_at(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0) throw_errno("unable to open directory '" + shown + "'");
        Fd guard(sub);
        walk(sub, path);
      } else if (S_ISREG(st.st_mode)) {
        n.size = uint64_t(st.st_size);
        if (st.st_nlink > 1) {
          auto key = std::make_pair(st.st_dev, st.st_ino);
          auto it = links.find(key);
          if (it != links.end()) {
            n.type = NodeType::Hardlink;
            n.target = it->second;
            out.nodes.push_back(std::move(n));
            continue;
          }
          links.emplace(key, path);
        }
        n.type = NodeType::File;
        out.file_bytes += n.size;
        out.files.push_back(out.nodes.size());
        out.nodes.push_back(std::move(n));
      } else if (S_ISLNK(st.st_mode)) {
        n.type = NodeType::Symlink;
        std::string target(size_t(st.st_size) + 1, '\0');
        long len = os::readlink_at(dirfd, name.c_str(), target.data(), target.size());
        if (len < 0) throw_errno("unable to read symlink '" + shown + "'");
        if (size_t(len) >= target.size()) throw Error("symlink '" + shown + "' changed while packing");
        target.resize(size_t(len));
        if (target.empty()) throw Error("symlink '" + shown + "' has an empty target");
        n.target = target;
        n.size = target.size();
        n.mode = 0777;
        out.nodes.push_back(std::move(n));
      } else {
        if (!opts.skip_special)
          throw Error("'" + shown + "' is a special file (device, socket or fifo); refusing to pack it (use --skip-special to leave it out)");
        out.skipped.push_back(path);
      }
    }
  }
};

} // namespace

ScannedTree scan_tree(int rootfd, const std::string& root, const ScanOptions& opts) {
  Walker w{opts, root, {}, {}};
  w.walk(rootfd, "");
  return std::move(w.out);
}

} // namespace hpak
