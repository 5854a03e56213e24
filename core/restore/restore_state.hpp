// The restore state file, TARGET/.hpak-state: what the last restore wrote,
// so the next one touches only what differs.
//
//   state    ::= "HPRS" version:u32(=1|2) complete:u8 codec:u8 reserved:[6]
//                fence_ns:i64 boot_id catalog_digest:[32] target:str library:str
//                name:str catalog_raw_len:u64 catalog_stored_len:u64 catalog_stored
//                check:u64                   -- XXH3-64 of every preceding byte
//   boot_id  ::= [16] (version 2: the kernel's boot id when the state was
//                written; all zero if unknown) | "" (version 1: unknown)
//   codec    ::= 0 (catalog_stored is one zstd frame) | 1 (stored raw)
//
// hpak writes version 2 and reads both (an older hpak rejects version 2 and
// compares every file once, which is always safe).
//
// The catalog is kept as the library stores it (the stored bytes of its
// entry, copied), so a restore neither re-encodes nor re-compresses it, and
// a reader decodes it only when the next restore's catalog differs.
//
// `fence_ns` comes from take_ctime_fence() after the last change to the tree
// (the restore waits for it before it returns): a file whose ctime is below it
// has not been changed since hpak wrote it (ctime cannot be set from user
// space; writes, chmods, renames and links all move it). The
// embedded catalog says what each path held, so switching a space to another
// environment rewrites only paths whose digest, relocation or mode differ.
// `complete` is 0 while a restore is under way: after a crash the next
// restore still trusts only files below the previous fence.
// The fence assumes the clock and the file system survived since it was
// taken: after a reboot (or a power loss: a stale same-size file can survive
// one on data=writeback) the boot id differs, and the restore compares content
// instead of trusting the fence (`fence_trusted`).
#pragma once

#include <array>
#include <optional>
#include <string>

#include "base/hash.hpp"
#include "formats/catalog_format.hpp"
#include "formats/pack_format.hpp"

namespace hpak {

constexpr const char* kStateName = ".hpak-state";
// The largest state read: a target's file is hostile input (a FIFO, a device,
// a symlink or a larger file there is no state: the restore then compares
// every file, and refuses a non-empty target without --force).
constexpr uint64_t kStateMaxSize = (1ull << 30) + 16384;

// /proc/sys/kernel/random/boot_id as 16 bytes (all zero if unreadable); read once.
using BootId = std::array<uint8_t, 16>;
const BootId& current_boot_id();

struct RestoreState {
  bool complete = false;
  int64_t fence_ns = 0;
  BootId boot_id = current_boot_id(); // read_state: the writer's (zero if unknown)
  Digest catalog_digest{};
  std::string target, library, name;
  uint8_t catalog_codec = 0;   // 0 zstd, 1 raw
  uint64_t catalog_raw_len = 0;
  Bytes catalog_stored;

  // The encoded catalog (decompressed here); throws Error if damaged.
  Bytes catalog_raw() const;
  // Keeps `raw` compressed (zstd level 1).
  void set_catalog_raw(ByteSpan raw);
  // Keeps a catalog entry's stored bytes as they are (codec Raw or Zstd).
  void set_catalog_stored(formats::Codec codec, uint64_t raw_len, Bytes&& stored);
  // The fence may be trusted only in the boot that took it (a known boot id).
  bool fence_trusted() const { return boot_id == current_boot_id() && boot_id != BootId{}; }
};

// Missing or unreadable state -> nullopt (the target is then treated as unknown).
std::optional<RestoreState> read_state(int target_fd);
// How a state is written: its own `complete` and fence, or (before a
// restore's first change) marked incomplete, with the fence it may keep and
// without its catalog when it keeps no fence or restores that same catalog
// (its digest is all the next restore of it reads).
struct StateMark {
  bool complete;
  int64_t fence_ns;
  bool with_catalog = true;
};
// Writes `s` (temp + rename inside the target), header, catalog and check
// written from where they are: the catalog is never copied.
void write_state(int target_fd, const std::string& target_shown, const RestoreState& s, StateMark mark);
inline void write_state(int target_fd, const std::string& target_shown, const RestoreState& s) {
  write_state(target_fd, target_shown, s, StateMark{s.complete, s.fence_ns});
}

} // namespace hpak
