// HPAK pack file, format version 1. All integers little-endian.
//
//   pack     ::= header entry* footer trailer
//   header   ::= "HPAK" version:u16(=1) header_len:u16(=32) flags:u32(=0)
//                level:i32 reserved:[16]zero                            -- 32 bytes
//   entry    ::= ehdr payload
//   ehdr     ::= "HPEn" kind:u8 codec:u8 eflags:u16 stored_len:u64 raw_len:u64
//                digest:[32] stored_xxh:u64 hdr_xxh:u32 pad:u32(=0)     -- 72 bytes
//   payload  ::= stored_len bytes (codec raw: the object; zstd: one zstd frame
//                with its content size; zstd-dict: one frame naming its dictionary
//                by dictID, the dictionary being a kind=dict entry of the same pack)
//   footer   ::= "HPFt" version:u32(=1) entry_count:u64 raw_total:u64 reserved:u64 -- 32 bytes
//   trailer  ::= SHA-256 of every preceding byte                        -- 32 bytes
//
//   kind     ::= 1 blob (file content) | 2 catalog | 3 dict (zstd dictionary)
//   digest   =   SHA-256 of the raw (uncompressed) object bytes: its name
//   stored_xxh = XXH3-64 of the payload as stored, so an entry can be checked and
//                copied between packs without decompressing it
//   hdr_xxh  =   low 32 bits of XXH3-64 of the first 64 bytes of ehdr, so a scan
//                can tell a real entry header from payload bytes and resync after
//                damage by searching for the next "HPEn" whose hdr_xxh matches
//
// Why not the 32-byte header of the rcc research issue: its object count and
// total size are unknown until the end of a streaming write, and patching them
// afterwards breaks the single-pass trailer hash; they live in the footer here.
// Entries carry no path or mode (the catalog has those), so one object serves
// every path and every catalog that has those bytes. Entry sizes are 64-bit.
// A flipped byte in one entry loses that entry only: offsets come from the index
// (or from a resyncing scan), never from a neighbour's damaged length.
//
// A pack is named (in a library) by the SHA-256 of the whole file, trailer
// included, so `sha256sum pack-<hex>.hpak` checks it with stock tools.
#pragma once

#include <cstdint>
#include <string>

#include "core/util/bytes.hpp"
#include "core/util/hash.hpp"

namespace hpak::formats {

constexpr uint16_t kPackVersion = 1;
constexpr size_t kPackHeaderSize = 32;
constexpr size_t kEntryHeaderSize = 72;
constexpr size_t kFooterSize = 32;
constexpr size_t kTrailerSize = 32;
constexpr size_t kPackMinSize = kPackHeaderSize + kFooterSize + kTrailerSize;
constexpr char kPackMagic[4] = {'H', 'P', 'A', 'K'};
constexpr char kEntryMagic[4] = {'H', 'P', 'E', 'n'};
constexpr char kFooterMagic[4] = {'H', 'P', 'F', 't'};

enum class Kind : uint8_t { Blob = 1, Catalog = 2, Dict = 3 };
enum class Codec : uint8_t { Raw = 0, Zstd = 1, ZstdDict = 2 };

const char* kind_name(Kind k);
const char* codec_name(Codec c);

struct PackHeader {
  uint16_t version = kPackVersion;
  uint32_t flags = 0;
  int32_t level = 0;
};

struct EntryHeader {
  Kind kind = Kind::Blob;
  Codec codec = Codec::Raw;
  uint16_t eflags = 0;
  uint64_t stored_len = 0;
  uint64_t raw_len = 0;
  Digest digest{};
  uint64_t stored_xxh = 0;
};

struct Footer {
  uint64_t entry_count = 0;
  uint64_t raw_total = 0;
};

void encode_pack_header(const PackHeader& h, uint8_t out[kPackHeaderSize]);
// Throws Corrupt (naming `where`, offset 0) on bad magic, version or reserved bytes.
PackHeader decode_pack_header(ByteSpan bytes, const std::string& where);

void encode_entry_header(const EntryHeader& h, uint8_t out[kEntryHeaderSize]);
// Throws Corrupt on bad magic, header checksum, kind or codec. `offset` is the
// absolute offset of the header in `where`, for the message.
EntryHeader decode_entry_header(ByteSpan bytes, const std::string& where, uint64_t offset);
// True if `bytes` (>= kEntryHeaderSize) start with a self-consistent entry header.
bool looks_like_entry_header(ByteSpan bytes);

void encode_footer(const Footer& f, uint8_t out[kFooterSize]);
Footer decode_footer(ByteSpan bytes, const std::string& where, uint64_t offset);

} // namespace hpak::formats
