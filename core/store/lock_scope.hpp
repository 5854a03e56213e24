// Whether the locks of a library (core/store/lock.hpp) exclude other hosts.
//
// On Linux, NFS emulates flock(2) with byte-range locks the server sees (NLM
// for NFSv3, the protocol itself for NFSv4), so they exclude every client --
// unless the file system is mounted with local_lock=flock or local_lock=all
// (nolock shows as local_lock=all): then flock succeeds but only excludes
// processes of the same host, and a gc on another host could delete packs an
// add here is naming. Adds, gc and repair refuse such a library unless
// HPAK_SINGLE_HOST=1 says it is used from one host only.
//
// The decision is a pure function of the file system's type (statfs f_type)
// and its super options (mountinfo); the mount is found in
// /proc/self/mountinfo by the mount id of the lock file (statx STATX_MNT_ID),
// else by its device number.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hpak::store {

constexpr uint64_t kNfsSuperMagic = 0x6969;

// One line of /proc/PID/mountinfo (proc(5)):
//   36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
// Paths and the source unescaped (\040 is a space).
struct MountInfo {
  uint64_t mount_id = 0;
  unsigned major = 0, minor = 0;
  std::string mount_point;
  std::string fs_type;
  std::string source;
  std::string super_options;
};

// The fields of a mountinfo line, or nullopt if it is not one.
std::optional<MountInfo> parse_mountinfo_line(std::string_view line);

// True when flock(2) locks on a file system of type `fs_type` (statfs
// f_type) with these super options are local to this host.
bool locks_host_local(uint64_t fs_type, std::string_view super_options);

// The mount `fd` is on, from /proc/self/mountinfo; nullopt if not found.
std::optional<MountInfo> mount_of(int fd);

// Throws a one-line Error naming `library`, the mount and why when the locks
// on `lock_fd` are local to this host (locks_host_local) and
// HPAK_SINGLE_HOST is not 1.
void refuse_host_local_locks(int lock_fd, const std::string& library);

} // namespace hpak::store
