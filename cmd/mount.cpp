// hpak mount LIB NAME DIR | PACK DIR: a library catalog (or a pack's) as a
// read-only FUSE file system on DIR, as a restore into DIR would write it
// (core/mount/). In the background by default: the command returns once the
// file system is mounted (any error before that is its own), and the server
// goes on until DIR is unmounted (hpak umount DIR).
// With --writable (a library catalog): the FUSE file system is mounted on a
// workspace's lower/ (core/mount/workspace.hpp), relocated to DIR, and this
// process then mounts overlayfs on DIR over it (needs CAP_SYS_ADMIN, checked
// first); hpak commit records the view, hpak umount undoes both mounts.
#include <CLI/CLI.hpp>
#include <memory>

#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <mutex>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/command.hpp"
#include "core/library/library.hpp"
#include "cmd/log.hpp"
#include "core/mount/fuse_mount.hpp"
#include "core/mount/workspace.hpp"
#include "core/store/lock.hpp"
#include "core/store/workspace_roots.hpp"
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
  std::string workspace;
  bool foreground = false, verify = false, keep_unrelocated = false, preserve_setid = false, allow_other = false;
  bool writable = false;
};

// A writable view: the FUSE file system is mounted on the workspace's lower/,
// relocated to DIR, and serves the catalog of this digest.
struct WritableView {
  std::string ws, real_dir;
  WorkspaceState state;
  bool resumed = false;
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
  app.add_flag("--writable", o->writable,
               "Make the view writable: overlayfs over the read-only mount, changes kept in a workspace (needs CAP_SYS_ADMIN; see hpak commit)");
  app.add_option("--workspace", o->workspace,
                 "With --writable: the workspace directory (default: .NAME.hpak-ws beside DIR, NAME being DIR's name)");
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

Source open_source(const Options& o, const std::string& real_dir, const std::string& dir, const WritableView* view) {
  Source s;
  if (view) {
    s.lib = std::make_unique<Library>(o.source, /*check_index_trailers=*/o.verify);
    s.cat = s.lib->load_catalog_by_digest(view->state.digest, nullptr, o.verify);
    classify_old_catalog(s.cat, *s.lib);
    if (s.lib->catalog_digest(o.rest[0])) s.lib->touch_used(o.rest[0]); // not for a name gone (no used/ file for it)
    s.src = s.lib.get();
    s.shown = o.rest[0];
    return s;
  }
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
  s.pack->set_base_source(enclosing_library_bases(o.source)); // a library pack's catalog stored against a base
  log_pack(*s.pack);
  s.cat = s.pack->load_catalog(o.catalog);
  s.pack_src = std::make_unique<PackSource>(*s.pack);
  classify_old_catalog(s.cat, *s.pack_src);
  s.src = s.pack_src.get();
  s.shown = s.cat.name;
  return s;
}

// HPAK_MOUNT_OFF: a comma-separated list of the kernel caches to switch off,
// for measuring what each buys (bench/mount-cache.sh); unset, all are on.
void apply_cache_switches(FuseMountOptions& fo) {
  const char* env = getenv("HPAK_MOUNT_OFF");
  if (!env) return;
  std::string list = env;
  for (size_t at = 0; at <= list.size();) {
    size_t end = std::min(list.find(',', at), list.size());
    const std::string name = list.substr(at, end - at);
    at = end + 1;
    if (name.empty()) continue;
    if (name == "timeouts") fo.cache_seconds = 0;
    else if (name == "keep_cache") fo.keep_cache = false;
    else if (name == "no_open") fo.no_open = false;
    else if (name == "no_opendir") fo.no_opendir = false;
    else if (name == "cache_readdir") fo.cache_readdir = false;
    else if (name == "cache_symlinks") fo.cache_symlinks = false;
    else if (name == "readdirplus") fo.readdirplus = false;
    else if (name == "splice") fo.splice = false;
    else if (name == "threads") fo.threads = 1;
    else if (name == "prefill") fo.prefill = false;
    else if (name == "own_loop") fo.own_loop = false;
    else if (name == "async_read") fo.async_read = false;
    else if (name == "readahead") fo.readahead = false;
    else if (name == "max_read") fo.big_reads = false;
    else
      throw Error("HPAK_MOUNT_OFF: unknown setting '" + name +
                  "' (timeouts, keep_cache, no_open, no_opendir, cache_readdir, cache_symlinks, readdirplus, splice, threads, prefill, own_loop, async_read, readahead, max_read)");
  }
}

// Serves the mount: on DIR, or on the workspace's lower/ for a writable view.
int serve(const Options& o, int ready_fd, const WritableView* view) {
  const std::string dir = o.rest.back();
  struct stat dst;
  std::string real_dir = mount_point(dir, dst);
  Source s = open_source(o, real_dir, dir, view);
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
  fo.mountpoint = view ? workspace_lower(view->ws) : real_dir;
  fo.fsname = "hpak:" + s.shown;
  fo.allow_other = o.allow_other;
  fo.threads = o.threads;
  apply_cache_switches(fo);
  fo.on_ready = [&] {
    uint64_t files = 0;
    for (auto& n : tree.catalog().nodes) files += n.type == formats::NodeType::File;
    if (!global().quiet && !view)
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

// ---- writable views ----

// CAP_SYS_ADMIN (bit 21) in this process's effective set, from /proc/self/status.
bool have_sys_admin() {
  FILE* f = fopen("/proc/self/status", "re");
  if (!f) return false;
  char line[256];
  unsigned long long caps = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "CapEff: %llx", &caps) == 1) break;
  fclose(f);
  return (caps >> 21) & 1;
}

// overlayfs's options are comma-separated and take ':' as a layer separator.
void refuse_unmountable_path(const std::string& path, const std::string& what) {
  if (path.find_first_of(",:\\ \t\n") != std::string::npos)
    throw Error(what + " '" + path + "' holds a character overlayfs cannot take in a mount option (, : \\ or a space)");
}

// publish.lock shared, from reading the name to writing the workspace's gc
// root (core/store/workspace_roots.hpp): a gc's re-mark, under the exclusive
// lock, then either sees the root or ran before the name was read (and left
// every object the name needed visible). nullptr, with a warning, where the
// lock cannot be taken (a library this user cannot write): no root then.
std::unique_ptr<store::PublishLock> lock_for_root(const Library& lib) {
  try {
    return std::make_unique<store::PublishLock>(lib.layout(), lib.shared(), /*exclusive=*/false);
  } catch (const Error& e) {
    spdlog::warn("the workspace is not recorded as a gc root of '{}' ({}): once its catalog is no longer named, a gc may collect it",
                 lib.root(), e.what());
    return nullptr;
  }
}

// Records the workspace as a gc root of its base catalog, which must still be
// in the library; when no name names it any more (a resumed workspace), the
// objects already collected are counted in a warning (those files read EIO).
void record_root(const Library& lib, const WritableView& v, const std::optional<Digest>& named) {
  const std::string gone = "the base catalog of workspace '" + v.ws + "' (" + to_hex(v.state.digest).substr(0, 12) + ", once named '" +
                           v.state.catalog + "') is no longer in '" + lib.root() + "'";
  if (!lib.locate(v.state.digest)) throw Error(gone);
  if (named != v.state.digest) { // a name's objects are all visible (under the lock); these may not be
    formats::Catalog base;
    try {
      base = lib.load_catalog_by_digest(v.state.digest, nullptr, /*verify_digest=*/false);
    } catch (const Error& e) {
      throw Error(gone + ": " + e.what());
    }
    uint64_t missing = 0;
    for (const formats::Node& n : base.nodes)
      if (n.type == formats::NodeType::File && !lib.locate(n.digest)) missing++;
    if (missing)
      spdlog::warn("{} files of the workspace's base catalog are no longer in '{}' (collected before the workspace was a gc root): "
                   "reading them fails with EIO",
                   missing, lib.root());
  }
  try {
    store::write_workspace_root(lib.layout(), lib.shared(), v.ws, v.state.digest);
  } catch (const Error& e) {
    spdlog::warn("the workspace is not recorded as a gc root of '{}' ({}): once its catalog is no longer named, a gc may collect it",
                 lib.root(), e.what());
  }
}

// The workspace, made or resumed: its state must be of this library, catalog
// and view; recorded as a gc root of the library.
WritableView prepare_workspace(const Options& o) {
  const std::string& dir = o.rest.back();
  const std::string& name = o.rest[0];
  WritableView v;
  struct stat dst;
  v.real_dir = mount_point(dir, dst);
  if (workspace_of_view(v.real_dir)) throw Error("'" + dir + "' is already a writable view (hpak umount it first)");
  v.ws = o.workspace.empty() ? default_workspace(v.real_dir) : o.workspace;
  if (path_exists(v.ws)) v.ws = real_path(v.ws);
  refuse_unmountable_path(v.ws, "workspace");
  refuse_unmountable_path(v.real_dir, "mount point");
  Library lib(o.source);
  refuse_inside_library(o.source, v.real_dir, dir);
  std::optional<Digest> signed_digest;
  if (auto policy = signature_policy(lib, o.allowed_signers)) signed_digest = enforce_name_policy(lib, name, policy->signers);
  std::unique_ptr<store::PublishLock> publishing = lock_for_root(lib);
  auto named = lib.catalog_digest(name);
  auto st = read_workspace_state(v.ws);
  if (!named && !st) throw Error("no catalog named '" + name + "' in '" + o.source + "'");
  if (st) { // resumed, whatever the name names now (or if it is gone): the view is of its digest
    if (st->library != real_path(o.source) || st->catalog != name || st->dir != v.real_dir)
      throw Error("workspace '" + v.ws + "' is a view of '" + st->catalog + "' in '" + st->library + "' on '" + st->dir +
                  "'; commit or discard it (hpak umount --discard), or give another --workspace");
    if (signed_digest && *signed_digest != st->digest)
      throw Error("workspace '" + v.ws + "' is based on a catalog that '" + name + "' no longer names, and its signature covers only the new one");
    v.state = *st;
    v.resumed = true;
  } else {
    if (signed_digest && *signed_digest != *named) throw Error("catalog '" + name + "' changed after its signature was checked; mount it again");
    make_workspace(v.ws, WorkspaceState{real_path(o.source), name, *named, v.real_dir, false}, dst.st_mode & 07777);
    v.ws = real_path(v.ws); // overlayfs and /proc/self/mountinfo name it absolutely
    refuse_unmountable_path(v.ws, "workspace");
    v.state = *read_workspace_state(v.ws);
  }
  if (mount_type_at(workspace_lower(v.ws)) == "fuse.hpak")
    throw Error("the workspace's lower layer '" + workspace_lower(v.ws) + "' is still mounted (fusermount3 -u it)");
  if (publishing) record_root(lib, v, named);
  return v;
}

void mount_overlay(const WritableView& v, const std::string& dir) {
  const std::string opts = "lowerdir=" + workspace_lower(v.ws) + ",upperdir=" + workspace_upper(v.ws) + ",workdir=" +
                           workspace_work(v.ws) + ",redirect_dir=off,metacopy=off,index=off";
  if (mount("overlay", v.real_dir.c_str(), "overlay", 0, opts.c_str()) != 0)
    throw_errno("unable to mount overlayfs on '" + dir + "' (lower layer '" + workspace_lower(v.ws) + "')");
}

int run_writable(const Options& o) {
  if (o.rest.size() != 2) throw Error("--writable needs a library and a catalog name: hpak mount --writable LIB NAME DIR");
  if (o.foreground) throw Error("--writable mounts in the background: -f/--foreground cannot be used with it");
  const std::string& dir = o.rest.back();
  if (!have_sys_admin())
    throw Error("unable to mount a writable view on '" + dir + "': overlayfs needs CAP_SYS_ADMIN (run as root), nothing was mounted");
  WritableView v = prepare_workspace(o);
  int ready_fd = -1;
  int rc = fork_server(ready_fd);
  if (rc < 0) return serve(o, ready_fd, &v); // the server
  if (rc != kExitOk) {
    if (!v.resumed) discard_workspace(v.ws, v.state); // the server said why
    return rc;
  }
  try {
    mount_overlay(v, dir);
  } catch (const Error&) {
    os::run_program({"fusermount3", "-u", "--", workspace_lower(v.ws)});
    if (!v.resumed) discard_workspace(v.ws, v.state);
    throw;
  }
  if (!global().quiet) {
    if (auto now = Library(o.source).catalog_digest(o.rest[0]); !now)
      printf("note: '%s' is no longer a name; the view stays on the catalog it was made from (%s)\n", o.rest[0].c_str(),
             to_hex(v.state.digest).substr(0, 12).c_str());
    else if (*now != v.state.digest)
      printf("note: '%s' now names another catalog; the view stays on the one it was made from (%s)\n", o.rest[0].c_str(),
             to_hex(v.state.digest).substr(0, 12).c_str());
    printf("mounted '%s' writable on '%s': changes go to '%s'%s (hpak commit, hpak umount)\n", o.rest[0].c_str(), dir.c_str(),
           workspace_upper(v.ws).c_str(), v.resumed ? ", resumed" : "");
  }
  return kExitOk;
}

int run(const Options& o) {
  if (o.writable) return run_writable(o);
  if (!o.workspace.empty()) throw Error("--workspace is for a writable view (--writable)");
  int ready_fd = -1;
  if (!o.foreground) {
    int rc = fork_server(ready_fd);
    if (rc >= 0) return rc; // the caller's process
  }
  return serve(o, ready_fd, nullptr);
}
} // namespace

extern const Command cmd_mount{"mount", "Mount a library catalog or a pack as a read-only file system", setup, false,
                               "LIB CATALOG DIR | PACK DIR"};

} // namespace hpak::cmd
