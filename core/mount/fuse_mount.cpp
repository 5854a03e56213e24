#define FUSE_USE_VERSION 312
#include "core/mount/fuse_mount.hpp"

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <csignal>
#include <functional>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <thread>
#include <vector>
#include <fcntl.h>
#include <fuse3/fuse_lowlevel.h>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/error.hpp"
#include "core/restore/materialize.hpp"

namespace hpak {

namespace {

// A file handle: the file's shared bytes.
struct Handle {
  uint64_t ino;
  std::shared_ptr<MountContent::File> file;
};

// The read size of a mount without big_reads (max_read): one page.
constexpr unsigned kSmallRead = 4096;

// The request loop with up to `threads` threads (fuse_loop_mt's replacement). A thread reads a request
// only while fewer than `readers_wanted_` threads are reading (or answering what they read); that number
// starts at 1, grows by one (up to `threads`) each time a request is already waiting when one is read
// (parallel readers), and falls by one each time a read waited for its request longer than kIdleRead. A thread
// also gives its place up before it loads a file (decodes it on its first read or prefill), so another reads
// meanwhile. A lone reader's requests are thus answered by one thread, and parallel readers' by as many as
// they keep busy. libfuse's multi-threaded loop (HPAK_MOUNT_OFF=own_loop) instead keeps its idle threads all
// waiting on /dev/fuse, which the kernel wakes in turn: each request of a lone reader then wakes the thread
// idle the longest.
class RequestLoop {
public:
  RequestLoop(fuse_session* se, unsigned threads) : se_(se), max_(std::max(1u, threads)) { sem_init(&ended_, 0, 0); }
  ~RequestLoop() { sem_destroy(&ended_); }
  // Serves until the session ends (unmounted, or a signal); the signals are taken by the calling thread.
  // `unmount` is called then, before the threads are joined (it ends a read in progress).
  void run(const std::function<void()>& unmount) {
    sigset_t sigs, old;
    sigemptyset(&sigs);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&sigs, sig);
    pthread_sigmask(SIG_BLOCK, &sigs, &old); // the loop's threads inherit it: signals come to this thread
    {
      std::lock_guard lk(mu_);
      start_thread();
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    while (!fuse_session_exited(se_)) sem_wait(&ended_); // a signal interrupts it (handlers without SA_RESTART)
    {
      std::lock_guard lk(mu_);
      exiting_ = true;
    }
    cv_.notify_all();
    unmount();
    for (auto& t : threads_) t.join(); // threads_ only grows under mu_, and no longer once exiting_
  }
  // Called by an operation before it loads a file: its thread's place goes to another thread.
  static void hand_over() {
    if (RequestLoop* l = t_reader) {
      t_reader = nullptr;
      std::lock_guard lk(l->mu_);
      l->leave();
    }
  }
  int error() const { return error_; }

private:
  // A read that waited longer than this for its request: more threads read than the requests need.
  static constexpr auto kIdleRead = std::chrono::microseconds(500);
  static thread_local RequestLoop* t_reader; // set while this thread holds a place

  void start_thread() { threads_.emplace_back([this] { work(); }); } // under mu_

  // Gives a place up and lets another thread take it (under mu_).
  void leave() {
    readers_--;
    if (waiting_ == 0 && threads_.size() < max_ && !exiting_) start_thread();
    else cv_.notify_one();
  }

  // Adapts readers_wanted_ after a read (under mu_).
  void adapt(bool waited_long, bool another_waiting) {
    if (another_waiting && readers_wanted_ < max_) {
      readers_wanted_++;
      if (waiting_ == 0 && threads_.size() < max_ && !exiting_) start_thread();
      else cv_.notify_one();
    } else if (waited_long && readers_wanted_ > 1) {
      readers_wanted_--;
    }
  }

  void work() {
    fuse_buf buf;
    memset(&buf, 0, sizeof buf);
    std::unique_lock lk(mu_);
    while (take_place(lk)) {
      lk.unlock();
      const auto t0 = std::chrono::steady_clock::now();
      const int res = fuse_session_receive_buf(se_, &buf);
      const bool waited_long = std::chrono::steady_clock::now() - t0 > kIdleRead;
      if (res > 0) {
        const bool another = request_waiting();
        lk.lock();
        adapt(waited_long, another);
        lk.unlock();
        t_reader = this;
        fuse_session_process_buf(se_, &buf);
      }
      const bool still_placed = t_reader == this || res <= 0;
      t_reader = nullptr;
      lk.lock();
      if (still_placed) readers_--; // and takes a place again at once: nobody else woken
      if (res <= 0 && res != -EINTR) {
        if (res < 0) error_ = res;
        fuse_session_exit(se_);
        exiting_ = true;
        cv_.notify_all();
        sem_post(&ended_);
      }
    }
    lk.unlock();
    free(buf.mem);
  }

  // Whether the kernel holds another request already (parallel readers).
  bool request_waiting() const {
    pollfd p{fuse_session_fd(se_), POLLIN, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
  }

  // Waits for a place among the readers, and takes it; false once the loop ends.
  bool take_place(std::unique_lock<std::mutex>& lk) {
    waiting_++;
    cv_.wait(lk, [&] { return exiting_ || readers_ < readers_wanted_; });
    waiting_--;
    if (exiting_) return false;
    readers_++;
    return true;
  }

  fuse_session* se_;
  const unsigned max_;
  std::mutex mu_;
  std::condition_variable cv_;
  unsigned readers_ = 0, readers_wanted_ = 1, waiting_ = 0;
  bool exiting_ = false;
  std::vector<std::thread> threads_;
  int error_ = 0;
  sem_t ended_;
};

thread_local RequestLoop* RequestLoop::t_reader = nullptr;

struct Served {
  const MountTree& tree;
  MountContent& content;
  const FuseMountOptions& opts;
  uid_t uid = getuid();
  gid_t gid = getgid();
  // The kernel opens files without asking the server (FUSE_CAP_NO_OPEN_SUPPORT): no open or release
  // round trip per open(2); reads come without a handle. Set in op_init when the kernel offers it.
  bool no_open = false;
  // The same for directories (FUSE_CAP_NO_OPENDIR_SUPPORT): no opendir or releasedir round trip; the kernel
  // then keeps the listings as cache_readdir would.
  bool no_opendir = false;
  fuse_session* se = nullptr; // for storing a file's bytes into the kernel's cache (prefill)
  // The regular files whose bytes were stored into the kernel's cache (prefill), once each.
  std::mutex stored_mu;
  std::unordered_set<uint64_t> stored;

  bool prefilled(uint64_t ino) {
    std::lock_guard lk(stored_mu);
    return stored.count(ino) != 0;
  }
  // The handles open now. A server that ends while files are open (after `umount --lazy`, on a signal) gets
  // no release for them: they are freed with the server.
  std::mutex handles_mu;
  std::unordered_map<Handle*, std::unique_ptr<Handle>> handles;

  Handle* keep(std::unique_ptr<Handle> h) {
    std::lock_guard lock(handles_mu);
    Handle* p = h.get();
    handles.emplace(p, std::move(h));
    return p;
  }
  void drop(Handle* h) {
    std::lock_guard lock(handles_mu);
    handles.erase(h);
  }
};

Served& served(fuse_req_t req) { return *static_cast<Served*>(fuse_req_userdata(req)); }

void fill_stat(const Served& s, uint64_t ino, const MountInode& in, struct stat& st) {
  memset(&st, 0, sizeof st);
  st.st_ino = ino;
  st.st_mode = in.mode;
  st.st_nlink = in.nlink;
  st.st_uid = s.uid;
  st.st_gid = s.gid;
  st.st_size = off_t(in.size);
  st.st_blksize = 4096;
  st.st_blocks = off_t((in.size + 511) / 512);
  st.st_mtim = st.st_ctim = st.st_atim = to_timespec(in.mtime_ns);
}

// Every operation's body runs under this: nothing thrown reaches libfuse.
template <class F> void guarded(fuse_req_t req, F&& f) {
  try {
    f();
  } catch (const std::bad_alloc&) {
    fuse_reply_err(req, ENOMEM);
  } catch (const std::exception&) {
    fuse_reply_err(req, EIO);
  }
}

// Wants capability `cap` when the kernel offers it and `on`; drops it otherwise.
void want(struct fuse_conn_info* conn, unsigned cap, bool on) {
  if (on && (conn->capable & cap)) conn->want |= cap;
  else conn->want &= ~cap;
}

void op_init(void* userdata, struct fuse_conn_info* conn) {
  Served& s = *static_cast<Served*>(userdata);
  s.no_open = s.opts.no_open && (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT);
  s.no_opendir = s.opts.no_opendir && s.opts.cache_readdir && (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT);
  want(conn, FUSE_CAP_CACHE_SYMLINKS, s.opts.cache_symlinks);
  want(conn, FUSE_CAP_SPLICE_WRITE, s.opts.splice);
  want(conn, FUSE_CAP_ASYNC_READ, s.opts.async_read);
  if (!s.opts.readahead) conn->max_readahead = 0;
  if (!s.opts.big_reads) conn->max_read = kSmallRead;
  want(conn, FUSE_CAP_READDIRPLUS, s.opts.readdirplus);
  if (!s.opts.readdirplus) conn->want &= ~unsigned(FUSE_CAP_READDIRPLUS_AUTO);
  conn->want &= ~unsigned(FUSE_CAP_ATOMIC_O_TRUNC);
}

void op_lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  guarded(req, [&] {
    Served& s = served(req);
    fuse_entry_param e;
    memset(&e, 0, sizeof e);
    e.entry_timeout = e.attr_timeout = s.opts.cache_seconds;
    auto ino = s.tree.lookup(parent, name);
    if (!ino) { // a negative entry, cached as long as a positive one: the tree never changes
      if (!s.tree.inode(parent)) return void(fuse_reply_err(req, ENOENT));
      return void(fuse_reply_entry(req, &e));
    }
    e.ino = *ino;
    e.generation = 1;
    fill_stat(s, *ino, *s.tree.inode(*ino), e.attr);
    fuse_reply_entry(req, &e);
  });
}

void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info*) {
  guarded(req, [&] {
    Served& s = served(req);
    const MountInode* in = s.tree.inode(ino);
    if (!in) return void(fuse_reply_err(req, ENOENT));
    struct stat st;
    fill_stat(s, ino, *in, st);
    fuse_reply_attr(req, &st, s.opts.cache_seconds);
  });
}

void op_readlink(fuse_req_t req, fuse_ino_t ino) {
  guarded(req, [&] {
    Served& s = served(req);
    const MountInode* in = s.tree.inode(ino);
    if (!in || !S_ISLNK(in->mode)) return void(fuse_reply_err(req, EINVAL));
    std::string t = s.tree.link_target(ino);
    fuse_reply_readlink(req, t.c_str());
  });
}

void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  guarded(req, [&] {
    Served& s = served(req);
    const MountInode* in = s.tree.inode(ino);
    if (!in) return void(fuse_reply_err(req, ENOENT));
    if (S_ISDIR(in->mode)) return void(fuse_reply_err(req, EISDIR));
    if (!S_ISREG(in->mode)) return void(fuse_reply_err(req, EINVAL));
    if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) return void(fuse_reply_err(req, EROFS));
    if (s.no_open) return void(fuse_reply_err(req, ENOSYS)); // from now on the kernel opens without asking
    Handle* h = s.keep(std::make_unique<Handle>(Handle{ino, s.content.file(ino)}));
    fi->fh = reinterpret_cast<uint64_t>(h);
    fi->keep_cache = s.opts.keep_cache; // the bytes never change: pages read stay valid across opens
    if (fuse_reply_open(req, fi) != 0) s.drop(h);
  });
}

// Answers a read of `file` (ino), loading it first if it is not yet.
void reply_read(Served& s, fuse_req_t req, fuse_ino_t ino, MountContent::File& file, size_t size, off_t off) {
  if (!s.content.load(ino, file)) return void(fuse_reply_err(req, EIO));
  const uint64_t fsize = file.size;
  if (off < 0 || uint64_t(off) >= fsize) return void(fuse_reply_buf(req, nullptr, 0));
  size = size_t(std::min<uint64_t>(size, fsize - uint64_t(off)));
  if (!file.fd) return void(fuse_reply_buf(req, reinterpret_cast<const char*>(file.mapped.data()) + off, size)); // a large raw object in its pack's mapping
  fuse_bufvec buf = FUSE_BUFVEC_INIT(size);
  buf.buf[0].flags = fuse_buf_flags(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
  buf.buf[0].fd = file.fd.get();
  buf.buf[0].pos = off;
  fuse_reply_data(req, &buf, s.opts.splice ? FUSE_BUF_SPLICE_MOVE : fuse_buf_copy_flags(FUSE_BUF_NO_SPLICE));
}

void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info* fi) {
  guarded(req, [&] {
    Served& s = served(req);
    // No handle when the kernel opens without asking (no_open): the cached file of the inode.
    std::shared_ptr<MountContent::File> file = fi->fh ? reinterpret_cast<Handle*>(fi->fh)->file : s.content.file(ino);
    if (!s.tree.inode(ino) || !S_ISREG(s.tree.inode(ino)->mode)) return void(fuse_reply_err(req, EINVAL));
    if (!file->done.load(std::memory_order_acquire)) RequestLoop::hand_over(); // a load follows
    reply_read(s, req, ino, *file, size, off);
  });
}

// The largest file whose bytes are stored into the kernel's cache before its first read (prefill).
constexpr uint64_t kPrefillMax = 256 << 10;

// The first time a file is asked about while open (prefill): a small regular file held in a memory file is
// loaded (decoded and checked, as for a read) and its bytes stored into the kernel's page cache for the
// inode, so its first read needs no request. Nothing is stored for a file that fails its checks (its reads
// then fail with EIO), nor when the kernel does not take it (a read then asks as usual).
void prefill(Served& s, fuse_ino_t ino) {
  const MountInode* in = s.tree.inode(ino);
  if (!s.se || !in || !S_ISREG(in->mode) || in->size == 0 || in->size > kPrefillMax) return;
  {
    std::lock_guard lk(s.stored_mu);
    if (!s.stored.insert(ino).second) return;
  }
  std::shared_ptr<MountContent::File> file = s.content.file(ino);
  if (!s.content.load(ino, *file) || !file->fd || file->size == 0) return;
  fuse_bufvec buf = FUSE_BUFVEC_INIT(file->size);
  buf.buf[0].flags = fuse_buf_flags(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
  buf.buf[0].fd = file->fd.get();
  buf.buf[0].pos = 0;
  fuse_lowlevel_notify_store(s.se, ino, 0, &buf, s.opts.splice ? FUSE_BUF_SPLICE_MOVE : fuse_buf_copy_flags(FUSE_BUF_NO_SPLICE));
}

// No file here is a terminal or takes an ioctl: ENOTTY (what the kernel answers for a server without ioctl).
// Python's open() asks every file it opens (isatty: TCGETS) and then reads it; that first question stores a
// small file's bytes into the kernel's cache first (prefill), saving its read a round trip.
// Stores a small file's bytes (prefill) and answers the ioctl that asked.
void prefill_and_reply(Served& s, fuse_req_t req, fuse_ino_t ino) {
  try {
    prefill(s, ino);
  } catch (const std::exception&) { // the read that follows asks and gets its own answer
  }
  fuse_reply_err(req, ENOTTY);
}

void op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned, void*, struct fuse_file_info*, unsigned, const void*, size_t, size_t) {
  Served& s = served(req);
  if (!s.opts.prefill || s.prefilled(ino)) return void(fuse_reply_err(req, ENOTTY));
  RequestLoop::hand_over(); // a load follows
  prefill_and_reply(s, req, ino);
}

void op_release(fuse_req_t req, fuse_ino_t, struct fuse_file_info* fi) {
  if (fi->fh) served(req).drop(reinterpret_cast<Handle*>(fi->fh));
  fuse_reply_err(req, 0);
}

void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  guarded(req, [&] {
    const Served& s = served(req);
    const MountInode* in = s.tree.inode(ino);
    if (!in) return void(fuse_reply_err(req, ENOENT));
    if (!S_ISDIR(in->mode)) return void(fuse_reply_err(req, ENOTDIR));
    if (s.no_opendir) return void(fuse_reply_err(req, ENOSYS)); // from now on the kernel opens directories without asking
    fi->cache_readdir = s.opts.cache_readdir; // the listing never changes
    fi->keep_cache = s.opts.cache_readdir;
    fuse_reply_open(req, fi);
  });
}

// Entries by position: 0 ".", 1 "..", 2.. the children; `off` is where to go on.
// One page of a directory listing from offset `off`; with `plus` each entry
// carries its attributes and entry timeouts (readdirplus), so a listing also
// answers the lookups that usually follow it (Python's importer lists every
// directory of its path first).
void reply_listing(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus) {
  Served& s = served(req);
  if (!s.tree.inode(ino)) return void(fuse_reply_err(req, ENOENT));
  std::vector<MountTree::Entry> kids = s.tree.entries(ino);
  std::string buf(size, '\0');
  size_t used = 0;
  for (uint64_t i = uint64_t(std::max<off_t>(off, 0)); i < kids.size() + 2; i++) {
    fuse_entry_param e;
    memset(&e, 0, sizeof e);
    std::string name;
    if (i < 2) { // "." and "..": no entry of their own (the kernel does not look them up)
      name = i == 0 ? "." : "..";
      e.attr.st_ino = i == 0 ? ino : s.tree.parent(ino);
      e.attr.st_mode = S_IFDIR;
    } else {
      name = std::string(kids[i - 2].name);
      e.ino = kids[i - 2].ino;
      e.generation = 1;
      e.entry_timeout = e.attr_timeout = s.opts.cache_seconds;
      fill_stat(s, e.ino, *s.tree.inode(e.ino), e.attr);
    }
    char* at = buf.data() + used;
    size_t need = plus ? fuse_add_direntry_plus(req, at, size - used, name.c_str(), &e, off_t(i + 1))
                       : fuse_add_direntry(req, at, size - used, name.c_str(), &e.attr, off_t(i + 1));
    if (need > size - used) break;
    used += need;
  }
  fuse_reply_buf(req, buf.data(), used);
}

void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info*) {
  guarded(req, [&] { reply_listing(req, ino, size, off, /*plus=*/false); });
}

void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info*) {
  guarded(req, [&] { reply_listing(req, ino, size, off, /*plus=*/true); });
}

void op_releasedir(fuse_req_t req, fuse_ino_t, struct fuse_file_info*) { fuse_reply_err(req, 0); }

void op_statfs(fuse_req_t req, fuse_ino_t) {
  guarded(req, [&] {
    Served& s = served(req);
    struct statvfs sv;
    memset(&sv, 0, sizeof sv);
    uint64_t blocks = 0;
    for (uint64_t ino = 1; ino <= s.tree.inode_count(); ino++)
      if (const MountInode* in = s.tree.inode(ino)) blocks += (in->size + 4095) / 4096;
    sv.f_bsize = sv.f_frsize = 4096;
    sv.f_blocks = blocks;
    sv.f_files = s.tree.inode_count();
    sv.f_namemax = formats::kMaxName;
    sv.f_flag = ST_RDONLY;
    fuse_reply_statfs(req, &sv);
  });
}

fuse_lowlevel_ops make_ops() {
  fuse_lowlevel_ops ops;
  memset(&ops, 0, sizeof ops);
  ops.init = op_init;
  ops.lookup = op_lookup;
  ops.getattr = op_getattr;
  ops.readlink = op_readlink;
  ops.open = op_open;
  ops.read = op_read;
  ops.release = op_release;
  ops.opendir = op_opendir;
  ops.readdir = op_readdir;
  ops.readdirplus = op_readdirplus;
  ops.releasedir = op_releasedir;
  ops.statfs = op_statfs;
  ops.ioctl = op_ioctl;
  return ops;
}

// fsname as a mount option: no commas (they separate options) or backslashes.
std::string option_safe(std::string s) {
  for (char& c : s)
    if (c == ',' || c == '\\' || c == ' ' || c == '\t' || c == '\n') c = '_';
  return s;
}

struct Session {
  fuse_session* se = nullptr;
  bool mounted = false, signals = false;
  ~Session() {
    if (!se) return;
    if (signals) fuse_remove_signal_handlers(se);
    if (mounted) fuse_session_unmount(se);
    fuse_session_destroy(se);
  }
};

} // namespace

void serve_mount(const MountTree& tree, MountContent& content, const FuseMountOptions& opts) {
  Served s{tree, content, opts};
  std::string mount_opts = "ro,default_permissions,fsname=" + option_safe(opts.fsname) + ",subtype=hpak";
  if (opts.allow_other) mount_opts += ",allow_other";
  if (!opts.big_reads) mount_opts += ",max_read=" + std::to_string(kSmallRead);
  std::string a0 = "hpak", a1 = "-o";
  char* argv[] = {a0.data(), a1.data(), mount_opts.data(), nullptr};
  fuse_args args = FUSE_ARGS_INIT(3, argv);
  fuse_lowlevel_ops ops = make_ops();
  Session ss;
  ss.se = fuse_session_new(&args, &ops, sizeof ops, &s);
  fuse_opt_free_args(&args); // the session copies what it parsed; the parse may have allocated args
  if (!ss.se) throw Error("unable to start a FUSE session for '" + opts.mountpoint + "'");
  s.se = ss.se;
  if (fuse_set_signal_handlers(ss.se) != 0) throw Error("unable to install the mount's signal handlers");
  ss.signals = true;
  if (fuse_session_mount(ss.se, opts.mountpoint.c_str()) != 0)
    throw Error("unable to mount on '" + opts.mountpoint + "' (is /dev/fuse there, and fusermount3 installed?)");
  ss.mounted = true;
  if (opts.on_ready) opts.on_ready();
  if (opts.threads <= 1) { // one thread: libfuse's single-threaded loop
    int rc = fuse_session_loop(ss.se);
    if (rc < 0 && !fuse_session_exited(ss.se)) throw Error("the mount on '" + opts.mountpoint + "' failed: " + strerror(-rc));
    return;
  }
  if (opts.own_loop) {
    RequestLoop loop(ss.se, opts.threads);
    loop.run([&] {
      fuse_session_unmount(ss.se);
      ss.mounted = false;
    });
    if (loop.error() < 0) throw Error("the mount on '" + opts.mountpoint + "' failed: " + strerror(-loop.error()));
    return;
  }
  fuse_loop_config* cfg = fuse_loop_cfg_create(); // libfuse's multi-threaded loop (HPAK_MOUNT_OFF=own_loop)
  fuse_loop_cfg_set_max_threads(cfg, std::max(1u, opts.threads));
  int rc = fuse_session_loop_mt(ss.se, cfg);
  fuse_loop_cfg_destroy(cfg);
  if (rc < 0 && !fuse_session_exited(ss.se)) throw Error("the mount on '" + opts.mountpoint + "' failed: " + strerror(-rc));
}

} // namespace hpak
