// Shared helpers for the unit tests: temporary directories that are removed
// when a test passes and kept (path printed) when it fails; a deterministic
// generator of file trees shaped like a real Python environment; and a
// file-by-file comparison of two trees.
//
// Generated trees have the size mix of a Python env (~48% < 1 KB, ~43% 1-10 KB,
// ~7% 10-100 KB, ~1% > 100 KB) plus the awkward cases: empty files and dirs,
// unicode and 200-byte names, 30 levels of nesting, relative/absolute/dangling
// symlinks, exec bits, read-only and sticky dirs, hardlinks, duplicate contents,
// files and symlinks holding the tree's own absolute path (relocation), and
// optionally one 70 MiB file (the streaming path). Every entry gets a fixed
// mtime with a nanosecond part, so two trees made from one spec are equal.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "base/bytes.hpp"
#include "base/error.hpp"
#include "base/os/file.hpp"
#include "base/hash.hpp"
#include "fixture_data.hpp"

namespace fx {

using hpak::Bytes;
using hpak::ByteSpan;

// Set by the doctest listener in main.cpp when an assertion of the running test fails.
inline std::atomic<bool>& test_failed() {
  static std::atomic<bool> failed{false};
  return failed;
}

[[noreturn]] inline void die(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

// Makes every directory under `path` writable and removes it all.
inline void remove_tree(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    chmod(path.c_str(), 0700);
    for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory(ec) && !it->is_symlink(ec)) chmod(it->path().c_str(), 0700);
    }
  }
  fs::remove_all(path, ec);
}

class TempDir {
public:
  explicit TempDir(const std::string& tag = "t") {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/hpak-test-" + tag + "-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) die("mkdtemp " + tmpl);
    path_ = hpak::real_path(buf.data());
  }
  ~TempDir() {
    if (test_failed() || std::uncaught_exceptions() > 0) {
      std::fprintf(stderr, "tree_fixture: test failed, keeping %s\n", path_.c_str());
      return;
    }
    remove_tree(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

private:
  std::string path_;
};

inline void write_file(const std::string& path, ByteSpan data, mode_t mode = 0644) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) die("open " + path);
  hpak::write_all(fd, data, path);
  ::close(fd);
  if (::chmod(path.c_str(), mode) != 0) die("chmod " + path);
}
inline void write_file(const std::string& path, std::string_view s, mode_t mode = 0644) {
  write_file(path, ByteSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size()), mode);
}
inline Bytes read_file(const std::string& path) { return hpak::read_file(path); }
// Writes `path` as a new inode (unlink first): rewriting through O_TRUNC makes
// ext4 flush on close (auto_da_alloc), which is slow in tight test loops.
inline void replace_file(const std::string& path, ByteSpan data) {
  ::unlink(path.c_str());
  write_file(path, data);
}
inline void mkdirs(const std::string& path, mode_t mode = 0755) {
  std::filesystem::create_directories(path);
  ::chmod(path.c_str(), mode);
}
inline void symlink_to(const std::string& target, const std::string& at) {
  if (::symlink(target.c_str(), at.c_str()) != 0) die("symlink " + at);
}
inline void hardlink(const std::string& existing, const std::string& at) {
  if (::link(existing.c_str(), at.c_str()) != 0) die("link " + at);
}
// Copies a file (used to make damaged copies of packs).
inline void copy_file(const std::string& from, const std::string& to) {
  write_file(to, read_file(from));
}

// Writes a file of `size` bytes quickly: a 1 MiB pseudo-random block repeated,
// each copy stamped with its index, so it compresses but is not trivial.
inline void write_big_file(const std::string& path, uint64_t size, uint64_t seed) {
  Rng rng(seed);
  Bytes block = make_content(rng, 1 << 20, false);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) die("open " + path);
  uint64_t done = 0;
  for (uint64_t i = 0; done < size; i++) {
    std::memcpy(block.data(), &i, sizeof i);
    size_t n = size_t(std::min<uint64_t>(block.size(), size - done));
    hpak::write_all(fd, ByteSpan(block.data(), n), path);
    done += n;
  }
  ::close(fd);
}

struct TreeSpec {
  uint64_t seed = 1;
  size_t files = 150;            // regular files with the Python-env size mix
  bool specials = true;          // the awkward cases listed at the top
  bool self_path = true;         // files/symlinks containing the root's absolute path
  bool big_file = false;         // one file of `big_size` bytes
  uint64_t big_size = 70ull << 20;
  int64_t mtime_base_ns = 1600000000123456789ll;
};

struct TreeInfo {
  size_t files = 0, dirs = 0, symlinks = 0, hardlinks = 0;
  uint64_t bytes = 0;
  std::vector<std::string> self_path_files; // relative paths of files containing the root
};

namespace detail {
inline void set_mtimes(const std::string& root, const std::string& rel, int64_t base, uint64_t& counter) {
  std::string dir = rel.empty() ? root : root + "/" + rel;
  std::vector<std::string> names;
  for (auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  for (auto& n : names) {
    std::string child = rel.empty() ? n : rel + "/" + n;
    std::string full = root + "/" + child;
    struct stat st;
    if (lstat(full.c_str(), &st) != 0) die("lstat " + full);
    if (S_ISDIR(st.st_mode)) set_mtimes(root, child, base, counter);
    int64_t ns = base + int64_t(counter++) * 1000000007ll;
    timespec ts[2] = {{ns / 1000000000, ns % 1000000000}, {ns / 1000000000, ns % 1000000000}};
    if (utimensat(AT_FDCWD, full.c_str(), ts, AT_SYMLINK_NOFOLLOW) != 0) die("utimensat " + full);
  }
}
} // namespace detail

inline TreeInfo make_tree(const std::string& root, const TreeSpec& spec) {
  TreeInfo info;
  Rng rng(spec.seed);
  mkdirs(root);
  auto dir = [&](const std::string& rel, mode_t mode = 0755) {
    mkdirs(root + "/" + rel, mode);
  };
  auto file = [&](const std::string& rel, ByteSpan data, mode_t mode = 0644) {
    write_file(root + "/" + rel, data, mode);
    info.files++;
    info.bytes += data.size();
  };
  // Regular files with the size mix, spread over a site-packages-like layout.
  const char* pkg_dirs[] = {"lib/python3.11/site-packages/numpy/core", "lib/python3.11/site-packages/numpy/linalg",
                            "lib/python3.11/site-packages/requests", "lib/python3.11/site-packages/pip/_internal",
                            "lib/python3.11/encodings", "include/python3.11", "share/doc"};
  for (auto* d : pkg_dirs) dir(d);
  for (size_t i = 0; i < spec.files; i++) {
    uint64_t r = rng.below(100);
    size_t size = r < 48 ? rng.range(1, 1023) : r < 91 ? rng.range(1024, 10239) : r < 99 ? rng.range(10240, 102399)
                                                                                          : rng.range(102400, 300000);
    bool text = rng.below(4) != 0;
    const char* d = pkg_dirs[rng.below(sizeof pkg_dirs / sizeof *pkg_dirs)];
    std::string name = "m" + std::to_string(i) + (text ? ".py" : ".so");
    file(std::string(d) + "/" + name, make_content(rng, size, text), text ? 0644 : 0755);
  }
  if (spec.specials) {
    // Empty files (same content: one object) and empty dirs.
    file("lib/python3.11/site-packages/numpy/__init__.py", Bytes{});
    file("lib/python3.11/site-packages/requests/__init__.py", Bytes{});
    dir("share/empty");
    dir("include/empty/nested-empty");
    // Duplicate contents under several names.
    Bytes license = make_content(rng, 5000, true);
    file("lib/python3.11/site-packages/numpy/LICENSE.txt", license);
    file("lib/python3.11/site-packages/requests/LICENSE.txt", license);
    file("share/doc/LICENSE", license, 0444);
    // Unicode and 200-byte names.
    file("share/doc/donn\xc3\xa9\x65s_\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e_\xc3\xb1.txt", make_content(rng, 300, true));
    file("share/doc/emoji_\xf0\x9f\x90\x8d.py", make_content(rng, 70, true));
    file("share/doc/" + std::string(200, 'n'), make_content(rng, 2000, true));
    // Sorting traps: "a-b" sorts before "a/..." bytewise but after it per component.
    dir("share/sort/a");
    file("share/sort/a/x", make_content(rng, 10, true));
    file("share/sort/a-b", make_content(rng, 11, true));
    file("share/sort/a.b", make_content(rng, 12, true));
    // 30 levels of nesting.
    std::string deep = "deep";
    for (int i = 1; i <= 30; i++) deep += "/d" + std::to_string(i);
    dir(deep);
    file(deep + "/leaf.txt", make_content(rng, 100, true));
    // Exec bits, modes, a read-only and a sticky directory.
    dir("bin");
    file("bin/python3.11", make_content(rng, 20000, false), 0755);
    file("bin/tool-owner-only", make_content(rng, 100, true), 0700);
    file("bin/secret", make_content(rng, 100, true), 0600);
    dir("share/readonly");
    file("share/readonly/data.txt", make_content(rng, 500, true), 0644);
    ::chmod((root + "/share/readonly").c_str(), 0555);
    dir("share/sticky", 01777);
    // Hardlinks: three names for one inode, and a pair elsewhere.
    file("bin/pip3.11", make_content(rng, 800, true), 0755);
    hardlink(root + "/bin/pip3.11", root + "/bin/pip");
    hardlink(root + "/bin/pip3.11", root + "/bin/pip3");
    info.hardlinks += 2;
    hardlink(root + "/share/doc/LICENSE", root + "/share/LICENSE-link");
    info.hardlinks += 1;
    // Symlinks: relative (file and dir), dangling, absolute outside the tree.
    symlink_to("python3.11", root + "/bin/python");
    symlink_to("lib", root + "/lib64");
    symlink_to("does/not/exist", root + "/share/dangling");
    symlink_to("/nonexistent/hpak-test/target", root + "/share/abs-dangling");
    symlink_to("/usr/bin/env", root + "/bin/env-link");
    info.symlinks += 5;
  }
  if (spec.self_path) {
    dir("bin");
    std::string act = "# This file must be used with \"source bin/activate\"\nVIRTUAL_ENV=\"" + root +
                      "\"\nexport VIRTUAL_ENV\nPATH=\"" + root + "/bin:$PATH\"\n";
    file("bin/activate", to_bytes(act));
    info.self_path_files.push_back("bin/activate");
    std::string shebang = "#!" + root + "/bin/python3.11\nimport sys\nsys.exit(0)\n";
    file("bin/console-script", to_bytes(shebang), 0755);
    info.self_path_files.push_back("bin/console-script");
    symlink_to(root + "/bin/activate", root + "/bin/activate-abs");
    info.symlinks++;
  }
  if (spec.big_file) {
    dir("lib/big");
    write_big_file(root + "/lib/big/libhuge.so", spec.big_size, spec.seed);
    info.files++;
    info.bytes += spec.big_size;
  }
  uint64_t counter = 0;
  detail::set_mtimes(root, "", spec.mtime_base_ns, counter);
  // The root's own mtime is not part of a catalog; leave it.
  for (auto it = std::filesystem::recursive_directory_iterator(root); it != std::filesystem::recursive_directory_iterator(); ++it)
    if (it->is_directory() && !it->is_symlink()) info.dirs++;
  return info;
}

struct CompareOptions {
  bool mtimes = true;
  bool hardlinks = true; // same-inode groups in `a` must be same-inode groups in `b`
};

// Walks both trees (lstat, never following symlinks) and returns every
// difference as one line; empty when the trees are equal.
inline std::vector<std::string> compare_trees(const std::string& a, const std::string& b, CompareOptions opts = {}) {
  struct Entry {
    mode_t mode;
    off_t size;
    int64_t mtime;
    ino_t ino;
    nlink_t nlink;
  };
  auto walk = [](const std::string& root) {
    std::map<std::string, Entry> out;
    std::function<void(const std::string&)> rec = [&](const std::string& rel) {
      std::string d = rel.empty() ? root : root + "/" + rel;
      for (auto& e : std::filesystem::directory_iterator(d)) {
        std::string child = (rel.empty() ? "" : rel + "/") + e.path().filename().string();
        struct stat st;
        if (lstat((root + "/" + child).c_str(), &st) != 0) die("lstat");
        out[child] = Entry{st.st_mode, st.st_size, int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                           st.st_ino, st.st_nlink};
        if (S_ISDIR(st.st_mode)) rec(child);
      }
    };
    rec("");
    return out;
  };
  std::vector<std::string> diffs;
  auto ea = walk(a), eb = walk(b);
  for (auto& [p, x] : ea)
    if (!eb.count(p)) diffs.push_back("only in " + a + ": " + p);
  for (auto& [p, x] : eb)
    if (!ea.count(p)) diffs.push_back("only in " + b + ": " + p);
  std::map<ino_t, ino_t> ino_map;
  for (auto& [p, x] : ea) {
    auto it = eb.find(p);
    if (it == eb.end()) continue;
    const Entry& y = it->second;
    if ((x.mode & S_IFMT) != (y.mode & S_IFMT)) {
      diffs.push_back("type differs: " + p);
      continue;
    }
    if (!S_ISLNK(x.mode) && (x.mode & 07777) != (y.mode & 07777)) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " (%04o vs %04o)", unsigned(x.mode & 07777), unsigned(y.mode & 07777));
      diffs.push_back("mode differs: " + p + buf);
    }
    if (opts.mtimes && x.mtime != y.mtime)
      diffs.push_back("mtime differs: " + p + " (" + std::to_string(x.mtime) + " vs " + std::to_string(y.mtime) + ")");
    if (S_ISREG(x.mode)) {
      if (x.size != y.size || read_file(a + "/" + p) != read_file(b + "/" + p)) diffs.push_back("content differs: " + p);
      if (opts.hardlinks && x.nlink > 1) {
        auto [m, fresh] = ino_map.emplace(x.ino, y.ino);
        if (!fresh && m->second != y.ino) diffs.push_back("hardlink not preserved: " + p);
      }
      if (opts.hardlinks && (x.nlink > 1) != (y.nlink > 1)) diffs.push_back("link count differs: " + p);
    } else if (S_ISLNK(x.mode)) {
      char ta[4096], tb[4096];
      ssize_t na = readlink((a + "/" + p).c_str(), ta, sizeof ta), nb = readlink((b + "/" + p).c_str(), tb, sizeof tb);
      if (na < 0 || nb < 0 || std::string(ta, size_t(na)) != std::string(tb, size_t(nb)))
        diffs.push_back("symlink target differs: " + p);
    }
  }
  return diffs;
}

} // namespace fx
