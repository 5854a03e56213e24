// PackReader: read access to one pack through an mmap and its index.
//
// Opening maps the pack and checks its header and footer; damage there is
// recorded in `damage()` rather than thrown, so one bad byte never makes the
// rest unreadable. The index comes from the sibling .hidx when it is intact and
// tied to this pack (size + trailer), otherwise from a resyncing scan of the
// entries (see formats/pack_format.hpp). Every object read checks the entry
// header against the index record and the XXH3 of the stored bytes, and (by
// default) the SHA-256 of the decompressed bytes against the object's name.
// Thread-safe for concurrent reads after construction.
//
// A pack whose bytes someone else can change while it is mapped (another
// member's pack of a shared library: core/pack/pack_trust.hpp) is marked with
// check_every_read(): then every read checks the SHA-256 of the content
// against its name whatever `verify_digest` says, over bytes copied out of
// the mapping first (the bytes checked are the bytes handed out: a mapping
// follows the file), and callers that copy stored bytes verbatim (gc) use
// the *_copy_checked methods instead of checked_stored/checked_block.
#pragma once

#include <algorithm>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/store/layout.hpp"
#include "base/os/file.hpp"
#include "base/zstd_codec.hpp"
#include "formats/catalog_format.hpp"
#include "formats/index_format.hpp"

namespace hpak {

struct ScanProblem {
  uint64_t offset;
  std::string why;
};

struct ScanResult {
  std::vector<formats::IndexRecord> records;
  // Lengths-only blocks whose header and table are sound: their members'
  // records are not in `records` (the table names none); PackReader names
  // them by decoding each block (name_scanned_blocks).
  std::vector<uint64_t> unnamed_blocks;
  std::vector<ScanProblem> problems;
  uint64_t end = 0; // where entries end (footer offset when intact)
  uint16_t version = formats::kPackVersion; // of the pack scanned (from its header, else its footer)
  uint32_t index_version() const { return version == formats::kPackVersion2 ? formats::kIndexVersion2 : formats::kIndexVersion; }
};

// Walks the entries of a pack from its header on, resyncing past damage.
ScanResult scan_pack(ByteSpan pack, const std::string& where);

// "dir/env.hpak" -> "dir/env.hidx" (core/store/layout.hpp).
using store::index_path_for;

class PackReader {
public:
  // The largest entry stored_copy_checked copies into memory.
  static constexpr uint64_t kMaxCopyChecked = 256ull << 20;
  enum class IndexSource { File, Scan };
  // `use_index_file`: false forces a scan (verify and `hpak index` use this).
  // `check_index_trailer` = false skips the SHA-256 of the index file (its
  // structure is still checked, and every read checks the entry it reaches):
  // for readers that only look objects up, never for verify, gc or repair.
  // `follow` = Follow::NoLinks for a pack inside a library: a symlink there
  // (pack or index) is refused, never followed (see MappedFile).
  explicit PackReader(const std::string& path, bool use_index_file = true, bool check_index_trailer = true,
                      Follow follow = Follow::Links);
  ~PackReader();

  const std::string& path() const { return map_.path(); }
  ByteSpan bytes() const { return map_.bytes(); }
  const MappedFile& map() const { return map_; }
  // The .hidx mapped (empty when the index came from a scan).
  const MappedFile& index_map() const { return idx_map_; }
  int level() const { return level_; }
  uint16_t version() const { return version_; }
  uint32_t index_version() const { return version_ == formats::kPackVersion2 ? formats::kIndexVersion2 : formats::kIndexVersion; }
  const formats::IndexView& index() const { return view_; }
  IndexSource index_source() const { return index_source_; }
  const std::string& index_problem() const { return index_problem_; }
  const std::vector<ScanProblem>& damage() const { return damage_; }
  // True if this reader's scan named the lengths-only block at `offset` by
  // decoding it and hashing each member: its records are those hashes, so
  // every member's content matches its record (verify need not decode it
  // again).
  bool named_by_scan(uint64_t offset) const { return std::binary_search(scan_named_.begin(), scan_named_.end(), offset); }
  Digest stored_trailer() const;
  // Set once, before the reader is shared (see the header).
  void check_every_read() { check_every_read_ = true; }
  bool checks_every_read() const { return check_every_read_; }

  // The record of `d`, completed (see complete()).
  std::optional<formats::IndexRecord> find(const Digest& d) const;
  // A v2 index leaves stored_len and stored_xxh of an entry to the pack: this
  // fills them from the entry header (checked). Block members keep 0 there
  // (their stored bytes are the block's). v1 records come back unchanged.
  formats::IndexRecord complete(const formats::IndexRecord& r) const;
  // complete(), or `r` unchanged when its entry header is damaged (never throws).
  formats::IndexRecord complete_or_same(const formats::IndexRecord& r) const;
  // The stored bytes of an entry after checking its header and stored checksum.
  // For a v2 block member: its raw bytes when the block is stored raw (after
  // checking the block), and an error for a compressed block (use read*).
  ByteSpan checked_stored(const formats::IndexRecord& r, bool check_sum = true) const;
  // The base a ZstdBase entry names, its header checked against `r` and its
  // stored bytes not (a damaged entry that names another digest only makes
  // gc keep that one): what gc keeps alive for it.
  Digest base_named(const formats::IndexRecord& r) const;
  // A v2 block, checked (header, table, stored checksum), for gc's verbatim
  // copy and for reads of its members.
  struct Block {
    formats::BlockHeader header;
    std::vector<formats::BlockMember> members;
    ByteSpan table, payload;
  };
  Block checked_block(uint64_t offset) const;
  // An entry's stored bytes copied out of the mapping, then checked on the
  // copy: header, stored checksum and the SHA-256 of the decoded content
  // against its name. What a copy of another member's pack must use.
  Bytes stored_copy_checked(const formats::IndexRecord& r) const;
  // A v2 block copied out of the mapping into `buf`, then checked on the
  // copy (header, table, stored checksum, every member's SHA-256); the
  // Block's spans point into `buf`. A lengths-only block's members are named
  // by that hashing.
  Block block_copy_checked(uint64_t offset, Bytes& buf) const;
  // All of a block's raw bytes (members concatenated in table order); the
  // members' SHA-256 are left to the caller (verify checks them all at once).
  Bytes read_block(const Block& bl, uint64_t offset) const;
  // Where a raw object's bytes lie in the pack file (for copy_file_range): an
  // entry stored raw, or a member of a block stored raw; nullopt otherwise.
  // The stored checksum has been checked, the SHA-256 has not.
  std::optional<std::pair<uint64_t, uint64_t>> raw_extent(const formats::IndexRecord& r) const;
  // Decodes the object into `out` (exactly r.raw_len bytes).
  void read_into(const formats::IndexRecord& r, std::span<uint8_t> out, bool verify_digest = true) const;
  Bytes read(const formats::IndexRecord& r, bool verify_digest = true) const;
  // For objects too large for memory: decoded chunks go to `sink`; the digest
  // is checked at the end (after the sink has seen the bytes).
  void read_stream(const formats::IndexRecord& r, const std::function<void(ByteSpan)>& sink, bool verify_digest = true) const;

  // An entry (not a block member) read with pread(2) from `fd`, an open
  // descriptor of this pack's file (the caller checks it is the file mapped),
  // checked as read() checks it: the entry header against the record, the
  // stored bytes' bounds and checksum, the declared size, and the SHA-256 of
  // the decoded bytes against the object's name. `stored` and `raw` are the
  // caller's buffers, reused from call to call; returns the decoded bytes (in
  // `raw`). Maps no page of the pack: what a pass over many entries on
  // several threads uses (gc's mark), where faulting pages in and unmapping
  // them again costs more than the copy.
  ByteSpan read_pread(int fd, const formats::IndexRecord& r, Bytes& stored, Bytes& raw) const;
  // The entries and blocks a pass reads whole with pread; a larger entry is
  // read in pieces (check_pread).
  static constexpr uint64_t kPreadWhole = 4ull << 20;
  // An entry checked as read_pread checks it, with every check and message
  // of read(), holding at most kPreadWhole bytes in each buffer: an entry
  // larger than that is read twice in pieces of 1 MiB (its stored checksum,
  // then its content's SHA-256 as it decodes). Returns the record completed.
  // What verify reads every object with: no page of the pack is mapped.
  formats::IndexRecord check_pread(int fd, const formats::IndexRecord& r, Bytes& stored, Bytes& raw) const;
  // A v2 block read with pread into `buf` and checked as checked_block checks
  // it (the Block's spans point into `buf`); its header's lengths are checked
  // against the file before its table and payload are read.
  Block block_pread(int fd, uint64_t offset, Bytes& buf) const;
  // A descriptor of the file mapped, opened by its name; empty when the name
  // is gone or now names another file (another device or inode).
  Fd open_same_file(Follow follow) const;
  // Bytes [offset, offset + len) of the file read with pread into `buf`, 1 MiB
  // at a time, each piece handed to `f` (an error if the file ends first).
  void pread_range(int fd, uint64_t offset, uint64_t len, Bytes& buf, const std::function<void(ByteSpan)>& f) const;

  // Where a catalog stored against a base (Codec::ZstdBase) finds its base's
  // raw bytes. By default in this pack only (read_base_catalog); a library
  // sets one that looks through all of its packs.
  using BaseSource = std::function<Bytes(const Digest& base)>;
  void set_base_source(BaseSource s) { base_source_ = std::move(s); }
  // The base a ZstdBase entry's stored bytes name (their first 32 bytes).
  static Digest base_of(ByteSpan stored);
  // Catalog `d` as a base: the first copy of it in this pack stored whole
  // (not itself against a base), read and checked against its name; nullopt
  // when this pack holds no such copy. Throws when every copy is damaged.
  std::optional<Bytes> read_base_catalog(const Digest& d) const;

  // Catalog records in pack order (mirror copies included).
  std::vector<formats::IndexRecord> catalog_records() const;
  // The catalog named `name` ("" = the only one). Tries each stored copy.
  formats::Catalog load_catalog(const std::string& name = "") const;
  // Names of all readable catalogs.
  std::vector<std::string> catalog_names() const;
  formats::Catalog load_catalog_record(const formats::IndexRecord& r, bool verify_digest = true) const;
  // A catalog and its stored bytes, both from one copy checked by
  // stored_copy_checked (a library keeps the stored bytes in .hpak-state).
  formats::Catalog load_catalog_copy(const formats::IndexRecord& r, Bytes& stored_out) const;

  struct DecodedBlock; // a block in this thread's cache of decoded blocks (pack_reader.cpp)

private:
  // The constructor's steps, in order.
  void read_header(const std::string& path);
  void check_footer(const std::string& path);
  void open_index_file(const std::string& path, Follow follow, bool check_index_trailer);
  void index_by_scan(const std::string& path);
  void name_scanned_blocks(const std::vector<uint64_t>& offsets, std::vector<formats::IndexRecord>& records);
  std::vector<formats::IndexRecord> named_members(uint64_t block_offset) const;
  void load_dicts(const std::vector<formats::IndexRecord>& records);
  struct MemberAt {
    DecodedBlock* block;
    uint64_t start; // of the member in the block's raw bytes
  };
  std::string what(const formats::IndexRecord& r) const;
  // A mapped page the file no longer has reads as zeros (MappedFile::shrunk):
  // every Corrupt says so, and a read that copied such zeros out fails.
  std::string shrink_note() const;
  Corrupt corrupt(const std::string& where, uint64_t offset, const std::string& why) const;
  void check_not_shrunk(const formats::IndexRecord& r) const;
  template <class F> auto noting_shrink(F&& f) const {
    try {
      return f();
    } catch (const Corrupt& e) {
      throw corrupt(e.where(), e.offset(), e.why());
    }
  }
  Digest content_digest(ByteSpan stored, const formats::IndexRecord& r) const;
  void read_member_into(const formats::IndexRecord& r, std::span<uint8_t> out) const;
  DecodedBlock& load_block(uint64_t offset) const; // into this thread's decoded-block cache
  MemberAt cached_member(const formats::IndexRecord& r) const; // checks r against its (cached) block
  void decode_further(DecodedBlock& c, uint64_t end) const;     // decodes c's frame at least to end
  static uint64_t new_id();
  const ZstdDict* dict_for(ByteSpan frame, const formats::IndexRecord& r) const;
  // An entry's stored bytes (checked) decoded into `out` (r.raw_len bytes),
  // whatever its codec; a ZstdBase catalog through base_for.
  void decode_stored(ByteSpan stored, const formats::IndexRecord& r, std::span<uint8_t> out) const;
  Bytes base_for(const Digest& base, const formats::IndexRecord& r) const;
  // pack_pread.cpp's steps.
  formats::IndexRecord pread_header(int fd, const formats::IndexRecord& r) const;
  ByteSpan read_pread_body(int fd, const formats::IndexRecord& r, Bytes& stored, Bytes& raw) const;
  void check_sizes(const formats::IndexRecord& r) const;
  void check_pread_pieces(int fd, const formats::IndexRecord& r, Bytes& buf) const;

  MappedFile map_;
  MappedFile idx_map_;
  Bytes idx_owned_;
  formats::IndexView view_;
  IndexSource index_source_ = IndexSource::Scan;
  std::string index_problem_;
  std::vector<ScanProblem> damage_;
  std::vector<uint64_t> scan_named_; // sorted: blocks named_by_scan
  int level_ = 0;
  uint16_t version_ = formats::kPackVersion;
  std::map<uint32_t, std::unique_ptr<ZstdDict>> dicts_;
  const uint64_t id_ = new_id(); // keys the per-thread decoded-block cache (pack_reader.cpp)
  bool check_every_read_ = false;
  BaseSource base_source_;
};

// A v2 block from `item` (bytes from its header on, `offset` in `where`),
// checked as checked_block does: header, table, stored checksum.
PackReader::Block parse_block(ByteSpan item, const std::string& where, uint64_t offset);
// All of a checked block's raw bytes (members in table order); `dict` for a
// zstd-dict block. The members' SHA-256 are left to the caller.
Bytes decode_block(const PackReader::Block& bl, const ZSTD_DDict* dict, const std::string& where, uint64_t offset);

} // namespace hpak
