// hpak mount LIB NAME DIR | PACK DIR: a library catalog (or a pack's) as a
// read-only FUSE file system on DIR, as a restore into DIR would write it
// (core/mount/). In the background by default: the command returns once the
// file system is mounted (any error before that is its own), and the server
// goes on until DIR is unmounted (hpak umount DIR).
#include <CLI/CLI.hpp>
#include <memory>

#include <cstdio>
#include <fcntl.h>
#include <mutex>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/command.hpp"
#include "cmd/log.hpp"
#include "core/mount/fuse_mount.hpp"
#include "core/restore/materialize.hpp"
#include "core/trust/signing.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::string source;
  std::vector<std::string> rest;
  std::string catalog, log, allowed_signers;
  unsigned threads = 4;
  uint64_t cache_mib = MountContent::kDefaultCacheBytes >> 20;
  bool foreground = false, verify = false, keep_unrelocated = false, preserve_setid = false, allow_other = false;
};

int run(const Options& o);

Runner setup(CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_option("source", o->source, "Library directory, or a pack file")->required();
  app.add_option("args", o->rest, "With a library: the catalog name and the mount point; with a pack: the mount point")
      ->required()
      ->expected(1, 2);
  app.add_option("-c,--catalog", o->catalog, "With a pack: the catalog to mount when it holds several");
  app.add_flag("-f,--foreground", o->foreground, "Serve in the foreground until unmounted (default: in the background once mounted)");
  app.add_flag("--verify", o->verify, "Also check each object's SHA-256 against its name as it is read (stored checksums are checked too)");
  app.add_flag("--keep-unrelocated", o->keep_unrelocated,
               "Mount even when binary files hold the packed path in strings too short for the mount point's path, serving them as packed");
  app.add_flag("--preserve-setid", o->preserve_setid, "Keep set-uid and set-gid bits (dropped by default)");
  app.add_flag("--allow-other", o->allow_other, "Let other users see the file system (FUSE allow_other; modes still apply)");
  app.add_option("-j,--threads", o->threads, "Most threads serving requests (default 4)")->check(CLI::Range(1u, 256u));
  app.add_option("--cache-size", o->cache_mib,
                 "MiB of decoded files kept beyond those open or being read (default 64; the kernel's page cache keeps what was read)")
      ->check(CLI::Range(uint64_t(0), uint64_t(1) << 20));
  app.add_option("--log", o->log, "Append the file system's errors (an unreadable object) to this file (default: stderr in the foreground, none in the background)");
  app.add_option("--allowed-signers", o->allowed_signers,
                 "Require the name to be signed by a key of this OpenSSH allowed_signers file (see hpak-sign(1))");
  return [o] { return run(*o); };
}

// The mount point: an existing directory, by its real path (where the tree is relocated to).
std::string mount_point(const std::string& dir, struct stat& st) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw_errno("unable to open mount point '" + dir + "'");
  int rc = fstat(fd, &st);
  close(fd);
  if (rc != 0) throw_errno("unable to examine mount point '" + dir + "'");
  return real_path(dir);
}

void refuse_inside_library(const std::string& lib_root, const std::string& real_dir, const std::string& dir) {
  std::string root = real_path(lib_root);
  if (real_dir == root || real_dir.rfind(root + "/", 0) == 0)
    throw Error("mount point '" + dir + "' is inside the library '" + lib_root + "'");
}

// Where the server's error lines go.
struct Log {
  std::mutex mu;
  FILE* f = nullptr;
  void line(const std::string& s) {
    std::lock_guard lk(mu);
    if (!f) return;
    fprintf(f, "hpak: error: %s\n", escape_controls(s).c_str());
    fflush(f);
  }
};

// Background: the parent waits for one byte ("mounted") or for the child's
// end (an error, already printed to the shared stderr) and exits with it.
// Returns only in the child, which is told through `ready_fd` when mounted.
int fork_server(int& ready_fd) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) throw_errno("unable to make a pipe");
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) throw_errno("unable to start the mount's server");
  if (pid == 0) {
    close(p[0]);
    ready_fd = p[1];
    return -1;
  }
  close(p[1]);
  char c = 0;
  ssize_t n;
  do n = read(p[0], &c, 1);
  while (n < 0 && errno == EINTR);
  close(p[0]);
  if (n == 1) return kExitOk;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  return WIFEXITED(status) && WEXITSTATUS(status) != 0 ? WEXITSTATUS(status) : kExitError;
}

// In the server once mounted: off the caller's session and terminal.
void detach(int ready_fd, FILE*& log_file) {
  setsid();
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2); // nothing holds the caller's terminal or pipe open (a --log file is its own FILE)
    close(null);
  }
  if (log_file == stderr) log_file = nullptr;
  if (write(ready_fd, "R", 1) != 1) {} // the parent exits 0 on it
  close(ready_fd);
}

struct Source {
  std::unique_ptr<Library> lib;
  std::unique_ptr<PackReader> pack;
  std::unique_ptr<PackSource> pack_src;
  const ObjectSource* src = nullptr;
  formats::Catalog cat;
  std::string shown; // the catalog, for fsname
};

Source open_source(const Options& o, const std::string& real_dir, const std::string& dir) {
  Source s;
  if (o.rest.size() == 2) {
    if (!o.catalog.empty()) throw Error("-c/--catalog is for a pack; with a library, name the catalog as the second argument");
    const std::string& name = o.rest[0];
    s.lib = std::make_unique<Library>(o.source, /*check_index_trailers=*/o.verify);
    log_library(*s.lib);
    refuse_inside_library(o.source, real_dir, dir);
    std::optional<Digest> expect;
    if (auto policy = signature_policy(*s.lib, o.allowed_signers)) expect = enforce_name_policy(*s.lib, name, policy->signers);
    Digest digest;
    s.cat = s.lib->load_catalog(name, &digest, nullptr, o.verify);
    if (expect && digest != *expect) throw Error("catalog '" + name + "' changed after its signature was checked; mount it again");
    classify_old_catalog(s.cat, *s.lib);
    s.lib->touch_used(name);
    s.src = s.lib.get();
    s.shown = name;
    return s;
  }
  if (!o.allowed_signers.empty()) throw Error("--allowed-signers is for a library catalog, not a pack");
  s.pack = std::make_unique<PackReader>(o.source);
  log_pack(*s.pack);
  s.cat = s.pack->load_catalog(o.catalog);
  s.pack_src = std::make_unique<PackSource>(*s.pack);
  classify_old_catalog(s.cat, *s.pack_src);
  s.src = s.pack_src.get();
  s.shown = s.cat.name;
  return s;
}

int run(const Options& o) {
  const std::string dir = o.rest.back();
  int ready_fd = -1;
  if (!o.foreground) {
    int rc = fork_server(ready_fd);
    if (rc >= 0) return rc; // the caller's process
  }
  struct stat dst;
  std::string real_dir = mount_point(dir, dst);
  Source s = open_source(o, real_dir, dir);
  MountTreeOptions to;
  to.relocate_to = RelocTo{real_dir, o.keep_unrelocated};
  to.preserve_setid = o.preserve_setid;
  to.root_mode = dst.st_mode & 07777;
  to.root_mtime_ns = mtime_ns_of(dst);
  MountTree tree(std::move(s.cat), to, dir);
  Log log;
  log.f = stderr;
  if (!o.log.empty() && !(log.f = fopen(o.log.c_str(), "ae"))) throw_errno("unable to open log file '" + o.log + "'");
  MountContent content(tree, *s.src, ReadChecks{o.verify, false}, dir, [&](const std::string& line) { log.line(line); },
                       o.cache_mib << 20);
  FuseMountOptions fo;
  fo.mountpoint = real_dir;
  fo.fsname = "hpak:" + s.shown;
  fo.allow_other = o.allow_other;
  fo.threads = o.threads;
  fo.on_ready = [&] {
    uint64_t files = 0;
    for (auto& n : tree.catalog().nodes) files += n.type == formats::NodeType::File;
    if (!global().quiet)
      printf("mounted '%s' on '%s': %llu files%s\n", s.shown.c_str(), dir.c_str(), (unsigned long long)files,
             o.foreground ? " (until unmounted: hpak umount DIR)" : "");
    if (tree.relocation().kept)
      printf("%llu files holding the packed path served as packed: their format cannot take this path's length\n",
             (unsigned long long)tree.relocation().kept);
    fflush(stdout);
    if (!o.foreground) detach(ready_fd, log.f);
  };
  serve_mount(tree, content, fo);
  return kExitOk;
}
} // namespace

extern const Command cmd_mount{"mount", "Mount a library catalog or a pack as a read-only file system", setup, false,
                               "LIB CATALOG DIR | PACK DIR"};

} // namespace hpak::cmd
