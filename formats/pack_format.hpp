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
//                by dictID, the dictionary being a kind=dict entry of the same pack;
//                zstd-base, catalogs only: base:[32] then one zstd frame made with
//                the raw bytes of catalog `base` as its prefix, zstd --patch-from)
//   codec    ::= 0 raw | 1 zstd | 2 zstd-dict | 3 zstd-base
//
//   zstd-base: 32 < stored_len <= 2^27, raw_len < 2^27, and base's raw_len +
//   raw_len <= 2^27 (a window of at most 2^27 bytes). The base is a catalog entry
//   stored raw or zstd (never zstd-base: one level), in the same pack or in
//   another pack of the same library; it is not the entry's own digest. hpak
//   writes it only for a catalog's mirror copy (eflags bit 0), so the first copy
//   reads alone.
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
//
// HPAK pack file, format version 2 (issue 15: small objects cost their size).
// Everything of v1 holds except where said; a v2 pack adds blocks, in which
// small objects are compressed together, and aligned raw entries.
//
//   pack2    ::= header2 item* footer2 trailer
//   header2  ::= "HPAK" version:u16(=2) header_len:u16(=32) flags:u32(=0)
//                level:i32 block_target:u32 reserved:[12]zero          -- 32 bytes
//   item     ::= entry                         -- ehdr + payload, exactly as v1
//              | apad entry                    -- an aligned entry (eflags bit 1)
//              | block
//   apad     ::= zero bytes, as many (0..4095) as put the following entry's
//                payload at a multiple of 4096 in the file; never more
//   block    ::= bhdr member * count bpayload
//   bhdr     ::= "HPBk" kind:u8(=1) codec:u8 bflags:u16 count:u32
//                raw_len:u32 stored_len:u32 dict_id:u32 stored_xxh:u64
//                table_xxh:u64 hdr_xxh:u32 pad:u32(=0)                 -- 48 bytes
//   bflags   ::= 0 (named members) | 1 (lengths only); other bits are refused
//   member   ::= digest:[32] raw_len:u32      -- bflags 0: 36 bytes
//              | raw_len:u32                  -- bflags 1: 4 bytes
//
//   Lengths only (bflags 1, what hpak writes since 2026-12-06): the block's
//   members are named once, by the index (their records give digest, block
//   offset and member position), not again in the table. A scan without the
//   index (hpak index, verify, repair, a reader whose .hidx is unusable)
//   names them by decoding the block and hashing each member; a block whose
//   payload is damaged then has no names to lose but the index's and the
//   catalogs'. A read checks the member's size against the index and, when
//   it verifies, its SHA-256 against the digest it asked for. Older hpak
//   refuses such a block ("unknown block flags") as damage.
//   bpayload ::= stored_len bytes: the members' bytes concatenated in table
//                order; codec raw: as is (stored_len = raw_len); zstd: one zstd
//                frame with its content size; zstd-dict: one frame made with
//                the pack's dictionary whose zstd dictID is dict_id (0 otherwise).
//                A frame may hold several zstd blocks: hpak since 2026-12-07
//                ends one at the end of each member that reaches 16 KiB past
//                the previous end (never at the frame's end), so a member read
//                alone decodes only up to there; a reader takes any frame
//   footer2  ::= "HPFt" version:u32(=2) object_count:u64 raw_total:u64 reserved:u64
//
//   table_xxh  = XXH3-64 of the member table; stored_xxh of bpayload; hdr_xxh =
//                low 32 bits of XXH3-64 of the first 40 bytes of bhdr
//   object_count counts objects (entries + block members), not items
//   1 <= count <= 4096, raw_len = sum of the members' raw_len <= 1 MiB, the
//   digests of one block distinct (named in the table, or found by hashing);
//   a block holds blobs only (catalogs and
//   dictionaries stay entries, each written twice, the second a mirror)
//
// Writer rules (what makes a pack deterministic, and checked by verify):
//   - an object whose raw size is below block_target/2 (default target 64 KiB)
//     goes into a block; blocks fill in the order objects are appended and a
//     block is closed before the member that would take it past block_target;
//   - a blob stored raw (level 0 or incompressible) of 64 KiB or more is an
//     aligned entry: eflags bit 1 set, payload at a multiple of 4096, so a
//     copy_file_range of it can share blocks (reflink) on XFS and Btrfs. The
//     padding is computed from the offset, never read from the file: a reader
//     checks it is the minimal run of zero bytes, verify reports any other.
//   - blocks and single entries compress with one thread's rules at the
//     pack's level (a block's frame cut as bpayload says), so the same objects
//     in the same order give the same bytes.
//
// Random access: one index lookup gives the block and the member's position;
// a read checks bhdr, the table and stored_xxh, decompresses the frame zstd
// block by zstd block until the one holding that member's end (never past the
// block) and checks its SHA-256.
//
// Corruption bound: one bad byte costs at most one item: an entry (one
// object, as in v1) or a block (at most 4096 objects, at most block_target of
// content as written: 64 KiB). Damage in bhdr or the table fails hdr_xxh or
// table_xxh and a scan resyncs at the next "HPEn" or "HPBk" whose own check
// holds, as v1 does. A damaged dictionary copy costs nothing while its mirror
// is intact. Padding damage costs no object (objects carry their own checks).
//
// gc copies items verbatim (header, table and payload as stored, checked by
// their xxh, never recompressed). A block is copied whole only when every
// member is copied; otherwise its live members are decompressed and go into
// new blocks, so a pack gc rewrites keeps no dead object. Dedup across packs is unchanged: a writer skips an object
// some pack already holds, whichever item holds it there.
//
// Writers: v2 is the default (core/pack/pack_writer.hpp kDefaultWriteVersion;
// `hpak pack --pack-version 1` writes v1). gc writes v2 and, with --upgrade,
// rewrites every v1 pack; a remote fetch copies a wanted object's block whole
// (core/remote/remote_fetch.cpp). `hpak pack -o` writes a trained dictionary
// (a kind=dict entry and its mirror, before the first block; its blocks then
// zstd-dict, and its single blob entries below 256 KiB too) when it pays
// (core/pack/pack_dictionary.hpp); library packs (pack --into, gc, fetch)
// hold none, since gc and fetch copy items between packs without carrying
// dictionaries: gc stores the objects of a zstd-dict item again (decoded,
// recompressed), never as stored, and fetch refuses them. Not done: compressing blocks on the
// packer's worker threads (they are compressed on the writer's thread).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/bytes.hpp"
#include "base/hash.hpp"

namespace hpak::formats {

constexpr uint16_t kPackVersion = 1;   // v1, still read
constexpr uint16_t kPackVersion2 = 2;  // blocks of small objects, aligned raw entries
constexpr size_t kBlockHeaderSize = 48;
constexpr size_t kBlockMemberSize = 36; // a named member: digest, raw_len
constexpr size_t kBlockLengthSize = 4;  // a member of a lengths-only block: raw_len
constexpr uint16_t kBflagLengths = 1;   // bflags: the member table holds raw lengths only
constexpr uint32_t kBlockMaxCount = 4096;
constexpr uint32_t kBlockMaxRaw = 1u << 20;
constexpr uint32_t kDefaultBlockTarget = 64 * 1024;
constexpr uint64_t kAlign = 4096;
constexpr uint64_t kAlignMinRaw = 64 * 1024;
constexpr uint16_t kEflagMirror = 1;
constexpr uint16_t kEflagAligned = 2;
constexpr char kBlockMagic[4] = {'H', 'P', 'B', 'k'};
constexpr size_t kPackHeaderSize = 32;
constexpr size_t kEntryHeaderSize = 72;
constexpr size_t kFooterSize = 32;
constexpr size_t kTrailerSize = 32;
constexpr size_t kPackMinSize = kPackHeaderSize + kFooterSize + kTrailerSize;
constexpr char kPackMagic[4] = {'H', 'P', 'A', 'K'};
constexpr char kEntryMagic[4] = {'H', 'P', 'E', 'n'};
constexpr char kFooterMagic[4] = {'H', 'P', 'F', 't'};

enum class Kind : uint8_t { Blob = 1, Catalog = 2, Dict = 3 };
// ZstdBase (catalog entries only): the payload is the SHA-256 of a base
// catalog, then one zstd frame compressed with the base's raw bytes as its
// prefix (zstd --patch-from). The base is a catalog entry of the same
// library stored whole (not ZstdBase itself), and the base and the catalog
// together are at most kBaseCodedMax bytes (a 2^27-byte zstd window).
enum class Codec : uint8_t { Raw = 0, Zstd = 1, ZstdDict = 2, ZstdBase = 3 };
constexpr uint64_t kBaseCodedMax = uint64_t(1) << 27;
constexpr size_t kBaseDigestSize = 32;

const char* kind_name(Kind k);
const char* codec_name(Codec c);

struct PackHeader {
  uint16_t version = kPackVersion;
  uint32_t flags = 0;
  int32_t level = 0;
  uint32_t block_target = 0; // v2 only
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
  uint64_t entry_count = 0; // v2: objects (entries + block members)
  uint64_t raw_total = 0;
  uint32_t version = 1;
};

struct BlockHeader {
  Codec codec = Codec::Zstd;
  uint16_t flags = 0; // bflags
  bool named() const { return (flags & kBflagLengths) == 0; }
  uint32_t count = 0;
  uint32_t raw_len = 0;
  uint32_t stored_len = 0;
  uint32_t dict_id = 0;
  uint64_t stored_xxh = 0;
  uint64_t table_xxh = 0;
};

struct BlockMember {
  Digest digest{}; // zero in a lengths-only block until the caller names it (from the index or by hashing)
  uint32_t raw_len = 0;
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

// v2 blocks. decode_block_header checks magic, hdr_xxh, kind, codec, flags,
// count and sizes (raw codec: stored_len = raw_len); decode_block_table checks
// table_xxh, that the raw lengths add up to the header's and (a named table)
// that digests are distinct.
void encode_block_header(const BlockHeader& h, uint8_t out[kBlockHeaderSize]);
BlockHeader decode_block_header(ByteSpan bytes, const std::string& where, uint64_t offset);
bool looks_like_block_header(ByteSpan bytes);
// The table of `h` (named or lengths only, as h.flags says).
Bytes encode_block_table(const BlockHeader& h, const std::vector<BlockMember>& members);
std::vector<BlockMember> decode_block_table(const BlockHeader& h, ByteSpan table, const std::string& where, uint64_t offset);
// True if no two members carry the same digest.
bool distinct_names(const std::vector<BlockMember>& members);
// Whole size of a block item: header + table + payload.
inline uint64_t block_table_size(const BlockHeader& h) { return uint64_t(h.count) * (h.named() ? kBlockMemberSize : kBlockLengthSize); }
inline uint64_t block_item_size(const BlockHeader& h) { return kBlockHeaderSize + block_table_size(h) + h.stored_len; }
// Zero bytes an aligned entry at `pos` needs before its header.
inline uint64_t align_padding(uint64_t pos) { return (kAlign - (pos + kEntryHeaderSize) % kAlign) % kAlign; }

void encode_footer(const Footer& f, uint8_t out[kFooterSize]);
Footer decode_footer(ByteSpan bytes, const std::string& where, uint64_t offset);

} // namespace hpak::formats
