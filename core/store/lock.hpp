// The locks of a library (LIB/locks, core/store/layout.hpp), flock(2) on
// lock files held open as an Fd; the kernel releases them when the holder
// exits, however it exits. What each lock protects: core/gc/gc.hpp (protocol).
//
// Locks need flock(2): where it fails with ENOLCK, EOPNOTSUPP or ENOSYS (some
// FUSE and network file systems), every lock here throws a one-line Error
// saying so: adds, gc and repair refuse to run rather than run unprotected
// (restores need no lock). On NFS mounted with nolock, local_lock=flock or
// local_lock=all, flock succeeds but excludes only this host's processes:
// every lock here refuses such a library too, unless HPAK_SINGLE_HOST=1
// (core/store/lock_scope.hpp).
//
// A wait for a lock someone else holds is reported through base/diag.hpp
// (debug) with the holder, when /proc/locks names it.
#pragma once

#include <string>

#include "core/store/layout.hpp"
#include "base/os/file.hpp"

namespace hpak::store {

// LIB/locks/gc.lock, exclusive, for the object's lifetime: one gc or repair at
// a time. Never waits: a second gc fails at once naming the holder.
class GcLock {
public:
  GcLock(const Layout& layout, bool shared_library);

private:
  Fd fd_;
};

// LIB/locks/publish.lock: held shared by an add from checking that every
// object its catalog needs is visible until its name is set, and exclusive by
// gc while it reads the names again and condemns packs (protocol step 6).
// Exclusive waits at most 60 s for adds (milliseconds each), then throws.
class PublishLock {
public:
  PublishLock(const Layout& layout, bool shared_library, bool exclusive);

private:
  Fd fd_;
};

// Throws the one-line Error above when flock(2) on publish.lock does not work:
// an add calls it before writing anything.
void check_locks_work(const Layout& layout, bool shared_library);

// The process holding a flock on `fd`, from /proc/locks: "pid N (comm)", or "".
std::string flock_holder(int fd);

} // namespace hpak::store
