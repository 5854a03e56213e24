// bench/ceiling.cpp — hpak-ceiling: what the kernel/filesystem allows for a
// restore when decompression, hashing and I/O on the source cost nothing.
//
//   hpak-ceiling SRC DEST [-j N]
//
// Reads the whole SRC tree (regular files, directories, symlinks) into
// memory first (not timed), then times only the write phase: mkdir every
// directory, then N threads (default: number of cores) take files and do
// openat(dirfd, name, O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, mode) / write /
// close relative to directory fds, symlinks via symlinkat.  umask is 0 so
// modes are exact.  Hardlinked files are written as separate copies.  DEST
// must not exist or be empty.  Prints the write-phase wall time in seconds
// (one number) on stdout.
#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Dir {
  size_t parent;  // index into dirs; dirs[0] is the root
  std::string name;
  mode_t mode;
};
struct File {
  size_t dir;
  std::string name;
  mode_t mode;
  std::string data;
};
struct Link {
  size_t dir;
  std::string name;
  std::string target;
};
struct Tree {
  std::vector<Dir> dirs;
  std::vector<File> files;
  std::vector<Link> links;
};

[[noreturn]] void die(const std::string &what) {
  std::fprintf(stderr, "hpak-ceiling: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

std::string slurp(int dfd, const char *name, size_t hint) {
  int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) die(std::string("open ") + name);
  std::string data(hint, '\0');
  size_t off = 0;
  for (;;) {
    if (off == data.size()) data.resize(data.size() * 2 + 4096);
    ssize_t r = read(fd, data.data() + off, data.size() - off);
    if (r < 0) {
      if (errno == EINTR) continue;
      die(std::string("read ") + name);
    }
    if (r == 0) break;
    off += static_cast<size_t>(r);
  }
  close(fd);
  data.resize(off);
  return data;
}

void load(int dfd, size_t self, Tree &t) {
  DIR *d = fdopendir(dfd);
  if (!d) die("fdopendir");
  std::vector<std::string> names;
  while (dirent *de = readdir(d))
    if (std::strcmp(de->d_name, ".") && std::strcmp(de->d_name, "..")) names.emplace_back(de->d_name);
  std::sort(names.begin(), names.end());
  for (const auto &n : names) {
    struct stat st;
    if (fstatat(dfd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) die("stat " + n);
    if (S_ISDIR(st.st_mode)) {
      t.dirs.push_back({self, n, st.st_mode & 07777});
      int sub = openat(dfd, n.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
      if (sub < 0) die("open dir " + n);
      load(sub, t.dirs.size() - 1, t);
    } else if (S_ISLNK(st.st_mode)) {
      std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
      ssize_t r = readlinkat(dfd, n.c_str(), target.data(), target.size());
      if (r < 0) die("readlink " + n);
      target.resize(static_cast<size_t>(r));
      t.links.push_back({self, n, std::move(target)});
    } else if (S_ISREG(st.st_mode)) {
      t.files.push_back({self, n, st.st_mode & 07777, slurp(dfd, n.c_str(), static_cast<size_t>(st.st_size))});
    } else {
      std::fprintf(stderr, "hpak-ceiling: skipping special file %s\n", n.c_str());
    }
  }
  closedir(d);  // also closes dfd
}

void raise_fd_limit() {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

}  // namespace

int main(int argc, char **argv) {
  std::vector<std::string> pos;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-j" && i + 1 < argc) jobs = static_cast<unsigned>(std::max(1, std::atoi(argv[++i])));
    else if (a.rfind("-j", 0) == 0 && a.size() > 2) jobs = static_cast<unsigned>(std::max(1, std::atoi(a.c_str() + 2)));
    else pos.push_back(a);
  }
  if (pos.size() != 2) {
    std::fprintf(stderr, "usage: hpak-ceiling SRC DEST [-j N]\n");
    return 2;
  }
  raise_fd_limit();
  Tree t;
  t.dirs.push_back({0, "", 0755});
  int src = open(pos[0].c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (src < 0) die("open " + pos[0]);
  load(src, 0, t);
  umask(0);
  if (mkdir(pos[1].c_str(), 0755) != 0 && errno != EEXIST) die("mkdir " + pos[1]);

  // ---- timed write phase ----
  auto t0 = std::chrono::steady_clock::now();
  std::vector<int> dfd(t.dirs.size(), -1);
  dfd[0] = open(pos[1].c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dfd[0] < 0) die("open " + pos[1]);
  for (size_t i = 1; i < t.dirs.size(); ++i) {  // parents precede children
    const Dir &d = t.dirs[i];
    if (mkdirat(dfd[d.parent], d.name.c_str(), d.mode | 0700) != 0) die("mkdir " + d.name);
    dfd[i] = openat(dfd[d.parent], d.name.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd[i] < 0) die("open dir " + d.name);
  }
  std::atomic<size_t> next{0};
  auto worker = [&] {
    constexpr size_t kBatch = 16;
    for (;;) {
      size_t b = next.fetch_add(kBatch);
      if (b >= t.files.size()) return;
      for (size_t i = b; i < std::min(b + kBatch, t.files.size()); ++i) {
        const File &f = t.files[i];
        int fd = openat(dfd[f.dir], f.name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, f.mode);
        if (fd < 0) die("create " + f.name);
        for (size_t off = 0; off < f.data.size();) {
          ssize_t w = write(fd, f.data.data() + off, f.data.size() - off);
          if (w < 0) die("write " + f.name);
          off += static_cast<size_t>(w);
        }
        if (close(fd) != 0) die("close " + f.name);
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned j = 1; j < jobs; ++j) pool.emplace_back(worker);
  worker();
  for (auto &th : pool) th.join();
  for (const Link &l : t.links)
    if (symlinkat(l.target.c_str(), dfd[l.dir], l.name.c_str()) != 0) die("symlink " + l.name);
  for (size_t i = t.dirs.size(); i-- > 1;) {  // restore modes lacking u+rwx
    const Dir &d = t.dirs[i];
    if ((d.mode & 0700) != 0700 && fchmodat(dfd[d.parent], d.name.c_str(), d.mode, 0) != 0) die("chmod " + d.name);
  }
  for (int fd : dfd) close(fd);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%.6f\n", secs);
  return 0;
}
