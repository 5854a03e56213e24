// hpak mount: a read-only FUSE file system (libfuse3's low-level API) serving
// a MountTree (core/mount/mount_tree.hpp) with the bytes of MountContent
// (core/mount/mount_content.hpp).
//
// The tree is immutable while mounted, so the kernel may keep everything it
// learns: entries, negative lookups and attributes for a day, file pages
// across opens (keep_cache), directory listings (cache_readdir) and symlink
// targets (FUSE_CAP_CACHE_SYMLINKS); where the kernel supports it, files and
// directories are opened without asking the server (FUSE_CAP_NO_OPEN_SUPPORT,
// FUSE_CAP_NO_OPENDIR_SUPPORT), and listings
// carry each entry's attributes (readdirplus), answering the lookups that
// follow a listing. Requests are served by up to `threads` threads, as many
// reading at once as keep busy (fuse_mount.cpp, RequestLoop). Reads are answered from the file's memfd by libfuse
// (spliced where the kernel allows). No file takes an ioctl (ENOTTY); the first one asked of
// an open small file (Python's open asks isatty of every file) first stores
// its checked bytes into the kernel's page cache, so its first read needs no
// request (prefill). Mounted as the calling user with `default_permissions`
// (the kernel checks modes), `ro`, and `allow_other` only when asked.
// serve_mount returns when the file system is unmounted (hpak umount,
// fusermount3 -u, umount) or on SIGINT/SIGTERM/SIGHUP (it then unmounts).
#pragma once

#include <functional>
#include <string>

#include "core/mount/mount_content.hpp"

namespace hpak {

struct FuseMountOptions {
  std::string mountpoint;
  std::string fsname = "hpak";  // shown by mount(8) and /proc/mounts
  bool allow_other = false;
  unsigned threads = 4; // the request loop's most threads (fuse_mount.cpp, RequestLoop)
  double cache_seconds = 86400; // entry and attribute timeouts
  // Let the kernel open files without a request to the server when it can
  // (no open/release round trip per open(2); file pages are kept across opens).
  bool no_open = true;
  // The same for directories (FUSE_CAP_NO_OPENDIR_SUPPORT; the kernel then keeps their listings).
  bool no_opendir = true;
  // The kernel caches below, each on by default. They are switched off one at a
  // time only to measure what each buys (bench/mount-cache.sh, through
  // HPAK_MOUNT_OFF; see hpak-mount(1)); cache_seconds 0 stands for the timeouts.
  bool keep_cache = true;     // file pages kept across opens (answered opens; no_open keeps them anyway)
  bool cache_readdir = true;  // directory listings kept by the kernel
  bool cache_symlinks = true; // FUSE_CAP_CACHE_SYMLINKS
  bool readdirplus = true;    // listings carry attributes (FUSE_CAP_READDIRPLUS)
  bool splice = true;         // reads spliced from the memory file (FUSE_CAP_SPLICE_WRITE, SPLICE_MOVE)
  bool prefill = true;        // a small file's bytes stored into the kernel's cache when an ioctl asks (fuse_mount.cpp)
  // With threads > 1: hpak's request loop (one thread reads and answers, handing the reading over before a
  // load); off, libfuse's multi-threaded loop of up to `threads` threads.
  bool own_loop = true;
  bool async_read = true; // FUSE_CAP_ASYNC_READ: the kernel may send several reads of a file at once (readahead)
  bool readahead = true;  // the kernel's readahead (max_readahead as the kernel offers it; off: 0)
  bool big_reads = true;  // reads of up to the kernel's request size (off: max_read=4096, a page per request)
  // Called once the file system is mounted, before the first request is served.
  std::function<void()> on_ready;
};

// Mounts and serves until unmounted; throws when the mount itself fails.
void serve_mount(const MountTree& tree, MountContent& content, const FuseMountOptions& opts);

} // namespace hpak
