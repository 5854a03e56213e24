// The restore state file, TARGET/.hpak-state: what the last restore wrote,
// so the next one touches only what differs.
//
//   state    ::= "HPRS" version:u32(=1) complete:u8 reserved:[7] fence_ns:i64
//                catalog_digest:[32] target:str library:str name:str
//                catalog_raw_len:u64 catalog_zstd_len:u64 catalog_zstd
//                check:u64                   -- XXH3-64 of every preceding byte
//
// `fence_ns` comes from ctime_fence() after the last write: a file whose ctime
// is below it has not been changed since hpak wrote it (ctime cannot be set
// from user space; writes, chmods, renames and links all move it). The
// embedded catalog says what each path held, so switching a space to another
// environment rewrites only paths whose digest, relocation or mode differ.
// `complete` is 0 while a restore is under way: after a crash the next
// restore still trusts only files below the previous fence.
#pragma once

#include <optional>
#include <string>

#include "core/util/hash.hpp"
#include "formats/catalog_format.hpp"

namespace hpak {

constexpr const char* kStateName = ".hpak-state";

struct RestoreState {
  bool complete = false;
  int64_t fence_ns = 0;
  Digest catalog_digest{};
  std::string target, library, name;
  Bytes catalog_raw; // encoded catalog (decode on demand)
};

// Missing or unreadable state -> nullopt (the target is then treated as unknown).
std::optional<RestoreState> read_state(int target_fd);
void write_state(int target_fd, const std::string& target_shown, const RestoreState& s);

} // namespace hpak
