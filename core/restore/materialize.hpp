// Materialize: writes a catalog's tree into an (empty) target directory with
// the fewest syscalls the kernel allows.
//
// Directories are created once, in catalog order, each with mkdirat relative
// to its parent's fd, and opened (O_DIRECTORY|O_NOFOLLOW) only if it has
// subdirectories; the files of a leaf directory are created beneath its
// parent with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) on "leaf/name". So
// no path is ever resolved through a symlink and nothing can land outside
// the target. One worker makes the directories while the others already
// write files into the ones made so far. Regular files are written by N workers: openat(parent_fd, name,
// O_CREAT|O_EXCL|O_NOFOLLOW, final mode) + write + [futimens] + close — no temp
// file, rename or chmod (umask is cleared for the duration). Each object's
// stored bytes are checked (XXH3; with `verify`, its SHA-256 too) before its
// bytes are written (streamed objects: before close), and a file whose object fails is unlinked again, so a corrupt object
// never leaves a file that looks complete. Hardlinks and symlinks
// follow; directory modes and mtimes are applied last, deepest first.
//
// Modes come from the catalog, umask not applied (like `tar -p`), except
// that set-uid and set-gid bits (files and directories) are dropped unless
// `preserve_setid`; the sticky bit is kept (it grants nothing). Before the
// first write, what the tree needs (file bytes plus a block per entry, and an
// inode per entry) is compared with the target file system's free space
// (statvfs): a tree that cannot fit is refused with "needs X, has Y".
#pragma once

#include <ctime>
#include <string>
#include <vector>

#include "base/os/sys.hpp"
#include "core/pack/large_copy.hpp" // ReadChecks
#include "core/pack/object_source.hpp"
#include "base/progress.hpp"
#include "core/pack/relocation.hpp"
#include "formats/catalog_format.hpp"

namespace hpak {

struct MaterializeOptions {
  unsigned threads = 0;         // 0 = all cores
  bool restore_mtime = true;
  bool verify = true;           // check each object's SHA-256 as it is read (restore: off)
  bool trust_large_raw = false; // see ReadChecks (core/pack/large_copy.hpp)
  RelocTo relocate_to;          // path empty: write objects unrelocated (core/pack/relocation.hpp)
  bool partial = false;         // continue past unreadable objects
  bool force = false;           // replace existing entries in the target
  bool preserve_setid = false;  // keep set-uid/set-gid bits (dropped by default)
  bool check_space = true;      // refuse a tree the file system cannot hold
  Progress progress;
};

struct Failure {
  std::string path;
  std::string digest; // hex, may be empty
  std::string why;
};

struct MaterializeStats {
  uint64_t files = 0, dirs = 0, symlinks = 0, hardlinks = 0;
  uint64_t bytes = 0;
  std::vector<Failure> failures;
};

// `target_fd` is an open directory; `target_shown` names it in messages.
MaterializeStats materialize(const formats::Catalog& cat, const ObjectSource& src, int target_fd,
                             const std::string& target_shown, const MaterializeOptions& opts);

// Writes one catalog file's content (relocated if asked) to an open fd,
// reading through `src`; throws on a missing or corrupt object (messages name
// target_shown + "/" + n.path). Shared by materialize and the dirty restore.
void write_file_content(const formats::Node& n, const formats::Catalog& cat, const ObjectSource& src, int fd,
                        const std::string& target_shown, const RelocTo& relocate_to, const ReadChecks& checks, Bytes& scratch);
// The same from an object already located (`ref` empty: the object is missing).
void write_file_content(const formats::Node& n, const formats::Catalog& cat, const std::optional<ObjectRef>& ref, int fd,
                        const std::string& target_shown, const RelocTo& relocate_to, const ReadChecks& checks, Bytes& scratch);
// The same from the object's bytes, already read and checked against its
// SHA-256 name (`raw` is exactly the object; the dirty restore's compare kept
// them): relocated as write_file_content would, written, nothing re-read.
void write_file_bytes(const formats::Node& n, const formats::Catalog& cat, ByteSpan raw, int fd, const std::string& target_shown,
                      const RelocTo& relocate_to);

// A version 1 catalog's relocated files get their kinds from their objects
// (read, not written anywhere): a missing or damaged object is taken as
// same-length (never spliced), and its write reports it.
void classify_old_catalog(formats::Catalog& cat, const ObjectSource& src);

// Locates the objects of `files` (catalog node indexes) on `threads` threads.
std::vector<std::optional<ObjectRef>> locate_all(const formats::Catalog& cat, const std::vector<size_t>& files,
                                                 const ObjectSource& src, unsigned threads);
// The files of a restore in the order the workers take them, cut into units
// (one parallel_for index each): files in catalog order, except that a
// block's members are gathered behind its first one, in table order, so one
// thread decodes each block once, whatever order the pack wrote them in. A unit holds at
// least 8 files or 1 MiB (so large files go to different threads), unless it
// is the last, and never ends between two members of one block; at most 1024
// files.
struct WorkUnits {
  std::vector<size_t> order;  // a permutation of [0, refs.size())
  std::vector<size_t> starts; // unit u is order[starts[u] .. starts[u+1])
  size_t count() const { return starts.empty() ? 0 : starts.size() - 1; }
};
WorkUnits work_units(const std::vector<std::optional<ObjectRef>>& refs);

// The mode a catalog entry is given: its recorded mode, set-uid and set-gid
// dropped unless `preserve_setid` (the sticky bit is kept).
inline unsigned wanted_mode(const formats::Node& n, bool preserve_setid) {
  return n.mode & (preserve_setid ? 07777u : 01777u);
}

// A recorded mtime (ns since the epoch) as a timespec.
timespec to_timespec(int64_t ns);
inline int64_t mtime_ns_of(const os::FileStat& st) { return int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec; }

// What a restore will add to a file system: file bytes and entries that take
// an inode (files, directories, symlinks). Sums saturate (a hostile catalog
// can name exabytes).
struct SpaceNeed {
  uint64_t bytes = 0;
  uint64_t entries = 0;
  void add_file(uint64_t size) {
    bytes = bytes + size < bytes ? UINT64_MAX : bytes + size;
    entries++;
  }
};
// The space a fresh write of the whole catalog needs (files relocated to
// `relocate_to`; empty: none).
SpaceNeed space_for_catalog(const formats::Catalog& cat, std::string_view relocate_to);
// Throws "not enough space in 'shown': needs X, has Y" (or inodes) when the
// file system of `fd` cannot hold `need`: its bytes plus one block per entry
// against f_bavail * f_frsize (plus `freed` bytes the caller removes first),
// its entries against f_favail (where the file system counts inodes).
void check_free_space(int fd, const std::string& shown, const SpaceNeed& need, uint64_t freed = 0);
// "1.5 MiB".
std::string human_size(uint64_t n);

// The outcome of comparing a file with its object.
enum class ContentMatch {
  Same,       // the file holds exactly the object's bytes (relocated)
  Differs,    // it does not (or cannot be read): rewrite it
  Unreadable, // the object is missing or damaged: the write reports why
  Forged,     // the object's bytes do not match its name (SHA-256)
};
// Compares the file open at `fd` (read from its current offset) with the
// object of catalog file `n`, relocated to `relocate_to` (path empty: none), in
// bounded chunks: the object is decoded as a stream and relocated chunk by
// chunk, the file read through `buf` (1 MiB), never either whole. The
// object's SHA-256 is always checked against its name, to the end even after
// a difference, so a forged object is never taken for a changed file;
// `why` then says what failed. With `keep`, the object's bytes (unrelocated,
// all of them) are left there: the caller may write a Differs file from them
// (they were checked against the name) instead of decoding its block again.
ContentMatch compare_file_content(const formats::Node& n, const formats::Catalog& cat, const ObjectSource& src, int fd,
                                  const RelocTo& relocate_to, Bytes& buf, std::string* why, Bytes* keep = nullptr);

// Sets the mode (if `mode` >= 0) and/or mtime (if `mtime`) of the regular
// file dirfd/name through a descriptor opened without following a symlink,
// after checking it is still the inode `ino` and has at most `max_links`
// links (more would mean it is shared with a file the catalog does not name:
// changing it would change that file too). Returns false, changing nothing,
// when the checks fail or the file cannot be opened: the caller then replaces
// the entry instead.
bool fix_file_meta(int dirfd, const std::string& name, os::Ino ino, os::Nlink max_links, int mode, const timespec* mtime,
                   const std::string& shown);

} // namespace hpak
