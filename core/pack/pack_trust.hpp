// Trust in the packs of a shared library (man/hpak-library.7, "What is trusted").
//
// A restore reads an object's bytes through the pack's index and checks the
// entry header and the XXH3 of the stored bytes, not the SHA-256 of the
// content against its name (that costs a full hash of every byte). That is
// safe only when whoever wrote the pack could also have written the target
// anyway. In a shared library any member can drop a pack into packs/, so a
// pack (or the .hidx a reader uses) owned by another user is used only once
// this user has verified it:
//
//   trusted   the library is private, or the pack file and its index are
//             owned by this user or by root and writable by no one else
//   verified  every record of the index the reader uses names bytes whose
//             SHA-256 matches (one pass, in parallel, the first time the
//             pack is needed); the verdict is remembered per user
//   refused   verification failed: the pack's objects are invisible to this
//             user (an add stores its own bytes, a restore uses another copy
//             or fails), with a one-line warning naming the pack
//
// A verdict only decides whether the pack's objects are visible (an add
// dedups against them, a lookup returns them). It never vouches for bytes
// read later: the owner can rewrite the file in place while it is mapped, so
// an untrusted pack is marked PackReader::check_every_read() and every read
// of it checks the SHA-256 of the bytes it hands out, over a private copy.
//
// Verdicts live in $XDG_CACHE_HOME/hpak/trust (or ~/.cache/hpak/trust), a
// directory that must be owned by this user and closed to others (0700);
// otherwise nothing is remembered and packs are verified on every run. A
// verdict file is named by the SHA-256 of the pack's name and the identity of
// the pack and index files (device, inode, owner, mode, size, mtime, ctime)
// from a fresh stat when the verdict is looked up, of the very inodes mapped
// (a path that now names another file has no remembered verdict): any change
// to either file (ctime cannot be set back) voids it and the pack is verified
// again.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>

#include "core/pack/pack_reader.hpp"

namespace hpak {

// Where non-fatal warnings go (the command layer prints them as
// "hpak: warning: ..."); nothing is printed until a sink is set.
void set_warning_sink(std::function<void(const std::string&)> sink);
void warn(const std::string& message);

// The per-user verdict directory ("" when no safe one can be used).
std::string trust_cache_dir();
// $XDG_VAR/hpak/LEAF, or ~/FALLBACK/hpak/LEAF (".cache", ".local/state"),
// created 0700; "" unless hpak/ and LEAF are directories owned by this user
// and closed to group and others (os::not_private_why: on Windows, owned by
// this user and writable by no other SID). On Windows HOME and XDG_* count only
// as drive or UNC paths (a Unix "/home/..." passed in by Wine does not), and the
// home is USERPROFILE.
// `why`: when "" is returned for a directory that is not private, which one and why.
std::string user_private_dir(const char* xdg_var, const char* home_fallback, const std::string& leaf, std::string* why = nullptr);

class PackTrust {
public:
  // `shared`: the pack belongs to a shared library (otherwise always
  // trusted). An untrusted pack is marked pack.check_every_read().
  PackTrust(PackReader& pack, bool shared);
  // May this user's lookups return objects of the pack? The first call on an
  // untrusted pack verifies it (or reads the remembered verdict); thread-safe.
  bool usable() const {
    int s = state_.load(std::memory_order_acquire);
    if (s == kTrusted || s == kVerified) return true;
    if (s == kRefused) return false;
    return settle();
  }
  // "trusted", "verified", "refused" or "unchecked".
  const char* state_name() const;

private:
  enum { kUnknown, kTrusted, kVerified, kRefused };
  bool settle() const;
  int decide() const;
  std::string verdict_key() const;

  const PackReader& pack_;
  mutable std::atomic<int> state_{kUnknown};
  mutable std::once_flag once_;
};

// Whether the pack file (and the .hidx the reader uses) was, as mapped,
// owned by this user or root and writable by no one else: the bytes cannot
// change under this user (ACLs aside).
bool pack_owned_safely(const PackReader& pack);

// Checks every record of `pack`'s index: its entry, stored checksum and the
// SHA-256 of its content against its name. Returns "" or the first problem.
std::string verify_pack_records(const PackReader& pack);

} // namespace hpak
