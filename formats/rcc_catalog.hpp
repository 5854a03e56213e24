// rcc holotree catalog (rcc "v12" catalogs, as written by rcc's htfs package),
// read so that `hpak import` can bring rcc hololibs over. Only reading.
//
// On disk a catalog is gzip'd (or, in newer forks, zstd'd; tell them apart by
// magic) indented JSON; the decompressed text is what `parse_rcc_catalog` takes:
//
//   root  ::= { "rcc": str, "identity": str, "path": str, "controller": str,
//               "space": str, "platform": str, "blueprint": str,
//               "lifted": bool, "tree": dir }
//   dir   ::= { "name": str, "symlink"?: str, "mode": u32, "subdirs": {name: dir},
//               "files": {name: file}, "shadow"?: bool }
//   file  ::= { "name": str, "symlink"?: str, "size": i64, "mode": u32,
//               "digest": hex, "rewrite": [i64] }
//
// `path` is the absolute path of the space the tree was lifted from and
// `identity` its last component; `rewrite` holds the offsets in the file's
// bytes where `identity` occurs (rcc swaps the name there on restore).
// `mode` is a Go fs.FileMode: permission bits 0777 plus type and special bits
// in Go's own positions (see go_mode_*). `digest` is the SHA-256 of the
// unrelocated bytes (64 hex), or a SipHash-128 (32 hex) in a `compress.no`
// library. A non-empty `symlink` is the link's target as read by readlink;
// entries of a symlinked directory are recorded ("shadow" for its
// subdirectories) but their objects are not stored. There are no mtimes,
// owners or xattrs. Unknown keys are ignored; missing required keys, wrong
// types and out-of-range numbers are refused.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/bytes.hpp"

namespace hpak::formats {

// Go fs.FileMode bits (io/fs).
constexpr uint32_t kGoModeDir = 1u << 31;
constexpr uint32_t kGoModeAppend = 1u << 30;
constexpr uint32_t kGoModeExclusive = 1u << 29;
constexpr uint32_t kGoModeTemporary = 1u << 28;
constexpr uint32_t kGoModeSymlink = 1u << 27;
constexpr uint32_t kGoModeDevice = 1u << 26;
constexpr uint32_t kGoModeNamedPipe = 1u << 25;
constexpr uint32_t kGoModeSocket = 1u << 24;
constexpr uint32_t kGoModeSetuid = 1u << 23;
constexpr uint32_t kGoModeSetgid = 1u << 22;
constexpr uint32_t kGoModeCharDevice = 1u << 21;
constexpr uint32_t kGoModeSticky = 1u << 20;
constexpr uint32_t kGoModeIrregular = 1u << 19;
constexpr uint32_t kGoModePerm = 0777;

// POSIX permission bits (07777) of a Go mode: perm | setuid 04000 | setgid 02000 | sticky 01000.
uint32_t go_mode_to_posix(uint32_t go_mode);
// True if the Go mode names a device, pipe, socket or irregular file.
bool go_mode_is_special(uint32_t go_mode);

struct RccFile {
  std::string name;
  std::string symlink;
  int64_t size = 0;
  uint32_t mode = 0;
  std::string digest;
  std::vector<int64_t> rewrite;
};

struct RccDir {
  std::string name;
  std::string symlink;
  uint32_t mode = 0;
  bool shadow = false;
  std::map<std::string, RccDir> subdirs; // by key (the entry's name)
  std::map<std::string, RccFile> files;
};

struct RccCatalog {
  std::string rcc, identity, path, controller, space, platform, blueprint;
  bool lifted = false;
  RccDir tree;
};

// Parses decompressed catalog JSON; throws Corrupt naming `where` on malformed
// JSON or a field of the wrong type or range.
RccCatalog parse_rcc_catalog(ByteSpan json, const std::string& where);

} // namespace hpak::formats
