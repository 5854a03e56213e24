// Fuzzes `hpak unpack` end to end: the input bytes are written as a pack file
// in a scratch directory, opened with PackReader (no index file: the reader
// scans), its catalog loaded, and materialized into an empty target that is
// the only entry of a per-run sandbox directory.
//
// Guarantee checked after every run (man/hpak-guarantees.7, guarantee 2):
// nothing is created, removed or changed outside the target: the sandbox
// holds only the target, the scratch directory only its own entries, and a
// canary file beside them is unchanged. Knobs taken from the input's middle
// byte: --partial, mtimes, relocation (as restore does), and --force over a
// target whose top-level names were planted as symlinks into the canary
// directory (they must be replaced, never followed). Refusing the input with
// hpak::Error is fine; any other exception, crash or sanitizer report is a finding.
//
// Random mutations break the checksums (entry header XXH3, stored XXH3,
// SHA-256 of the content) long before they reach the catalog decoder or the
// materializer, so a custom mutator re-seals most mutants: it walks the
// entries, converts zstd entries to raw (so later mutations edit the catalog
// itself) and recomputes digest, stored checksum and header checksum; a
// block's checksums are recomputed, its frame kept.
#include <zstd.h>

#include "core/restore/materialize.hpp"
#include "core/pack/object_source.hpp"
#include "core/pack/pack_reader.hpp"
#include "fuzz_common.hpp"

using namespace hpak;
using namespace hpak::formats;

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

// Appends the block at `b` (at most `left` bytes) with its table, stored
// and header checksums made to agree with its bytes, so a mutated frame
// reaches the zstd decoders (the scan's, and the member reads' block by
// block); its length, or 0 if it does not fit.
size_t reseal_block(const uint8_t* b, size_t left, Bytes& out) {
  if (left < kBlockHeaderSize) return 0;
  BlockHeader h;
  h.codec = Codec(b[5]);
  h.flags = get_u16(b + 6);
  h.count = get_u32(b + 8);
  h.raw_len = get_u32(b + 12);
  h.stored_len = get_u32(b + 16);
  h.dict_id = get_u32(b + 20);
  const uint64_t table = block_table_size(h);
  if (table + h.stored_len > left - kBlockHeaderSize) return 0;
  h.table_xxh = xxh64(ByteSpan(b + kBlockHeaderSize, table));
  h.stored_xxh = xxh64(ByteSpan(b + kBlockHeaderSize + table, h.stored_len));
  uint8_t hdr[kBlockHeaderSize];
  encode_block_header(h, hdr);
  out.insert(out.end(), hdr, hdr + kBlockHeaderSize);
  out.insert(out.end(), b + kBlockHeaderSize, b + kBlockHeaderSize + table + h.stored_len);
  return kBlockHeaderSize + table + h.stored_len;
}

// Re-seals the entries and blocks of a mutated pack (see above). With `to_raw`, zstd
// entries that decompress are rewritten as raw entries.
Bytes reseal(const uint8_t* data, size_t size, bool to_raw) {
  Bytes out;
  if (size < kPackHeaderSize) return Bytes(data, data + size);
  out.insert(out.end(), data, data + kPackHeaderSize);
  size_t pos = kPackHeaderSize;
  while (pos + kEntryHeaderSize <= size) {
    if (std::memcmp(data + pos, kBlockMagic, 4) == 0) {
      size_t len = reseal_block(data + pos, size - pos, out);
      if (len == 0) break;
      pos += len;
      continue;
    }
    if (std::memcmp(data + pos, kEntryMagic, 4) != 0) break;
    uint64_t stored_len = get_u64(data + pos + 8);
    if (stored_len > size - pos - kEntryHeaderSize) break;
    uint8_t hdr[kEntryHeaderSize];
    std::memcpy(hdr, data + pos, kEntryHeaderSize);
    ByteSpan payload(data + pos + kEntryHeaderSize, stored_len);
    Bytes converted;
    if (hdr[5] == uint8_t(Codec::Zstd) && to_raw) {
      unsigned long long n = ZSTD_getFrameContentSize(payload.data(), payload.size());
      if (n != ZSTD_CONTENTSIZE_ERROR && n != ZSTD_CONTENTSIZE_UNKNOWN && n <= (1u << 20)) {
        converted.resize(n);
        size_t got = ZSTD_decompress(converted.data(), converted.size(), payload.data(), payload.size());
        if (!ZSTD_isError(got) && got == n) {
          payload = ByteSpan(converted.data(), converted.size());
          hdr[5] = uint8_t(Codec::Raw);
          set_u64(hdr + 8, payload.size());
        }
      }
    }
    if (hdr[5] == uint8_t(Codec::Raw)) {
      set_u64(hdr + 16, payload.size());
      Digest d = sha256(payload);
      std::memcpy(hdr + 24, d.data(), 32);
    }
    set_u64(hdr + 56, xxh64(payload));
    set_u32(hdr + 64, uint32_t(xxh64(ByteSpan(hdr, 64))));
    set_u32(hdr + 68, 0);
    out.insert(out.end(), hdr, hdr + kEntryHeaderSize);
    out.insert(out.end(), payload.begin(), payload.end());
    pos += kEntryHeaderSize + stored_len;
  }
  out.insert(out.end(), data + pos, data + size);
  return out;
}

void check_only(const std::string& dir, std::vector<std::string> allowed, const char* what) {
  for (auto& n : fuzz::list_names(dir)) {
    bool ok = false;
    for (auto& a : allowed) ok |= n == a;
    FUZZ_CHECK(ok, "%s: '%s' appeared in %s", what, n.c_str(), dir.c_str());
  }
}

} // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  size = LLVMFuzzerMutate(data, size, max_size);
  if (seed % 8 == 0) return size; // keep some mutants unsealed: the checksum paths need fuzzing too
  Bytes b = reseal(data, size, seed % 3 != 0);
  if (b.size() > max_size) b = reseal(data, size, false);
  if (b.size() > max_size) return size;
  std::memcpy(data, b.data(), b.size());
  return b.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string base = fuzz::scratch_dir("fuzz-unpack");
  static const std::string canary_dir = base + "/canary";
  static const std::string canary = canary_dir + "/c";
  static const char kCanary[] = "canary: must never change\n";
  static struct stat canary_st, canary_dir_st;
  static bool init = [] {
    mkdir(canary_dir.c_str(), 0755);
    fuzz::write_file(canary, reinterpret_cast<const uint8_t*>(kCanary), sizeof kCanary - 1);
    FUZZ_CHECK(stat(canary.c_str(), &canary_st) == 0 && stat(canary_dir.c_str(), &canary_dir_st) == 0, "stat canary");
    return true;
  }();
  (void)init;
  const std::string pack = base + "/in.hpak";
  const std::string box = base + "/box";
  const std::string target = box + "/t";
  fuzz::write_file(pack, data, size);
  FUZZ_CHECK(mkdir(box.c_str(), 0755) == 0, "mkdir %s: %s", box.c_str(), strerror(errno));
  FUZZ_CHECK(mkdir(target.c_str(), 0755) == 0, "mkdir %s: %s", target.c_str(), strerror(errno));
  uint8_t knobs = size ? data[size / 2] : 0;
  {
    Fd tfd(open(target.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    FUZZ_CHECK(tfd.get() >= 0, "open target");
    try {
      PackReader reader(pack);
      Catalog cat = reader.load_catalog();
      PackSource src(reader);
      MaterializeOptions mo;
      mo.threads = 1;
      mo.partial = knobs & 1;
      mo.restore_mtime = knobs & 2;
      if (knobs & 4) { // as `hpak restore` does: old kinds from the objects, a binary that cannot take the path refused
        classify_old_catalog(cat, src);
        mo.relocate_to.path = target;
        mo.relocate_to.keep_blocked = knobs & 16;
        check_relocation(cat, mo.relocate_to, target);
      }
      if (knobs & 8) {
        // `unpack --force` over a target whose top-level names are symlinks
        // into the canary directory: they must be replaced, never followed.
        mo.force = true;
        int planted = 0;
        for (const Node& n : cat.nodes) {
          if (n.path.find('/') != std::string::npos || planted++ == 8) continue;
          std::string to = n.type == NodeType::Dir ? canary_dir : canary;
          if (symlinkat(to.c_str(), tfd.get(), n.path.c_str()) != 0) continue;
        }
      }
      materialize(cat, src, tfd.get(), target, mo);
    } catch (const Error&) {
    }
  }
  check_only(box, {"t"}, "outside the target");
  check_only(base, {"in.hpak", "box", "canary"}, "beside the pack");
  check_only(canary_dir, {"c"}, "in the canary directory");
  {
    Bytes c;
    try {
      c = read_file(canary);
    } catch (const Error&) {
    }
    FUZZ_CHECK(c.size() == sizeof kCanary - 1 && std::memcmp(c.data(), kCanary, c.size()) == 0, "canary file changed");
    struct stat f, d;
    FUZZ_CHECK(stat(canary.c_str(), &f) == 0 && stat(canary_dir.c_str(), &d) == 0, "canary gone");
    FUZZ_CHECK(f.st_mode == canary_st.st_mode && f.st_mtim.tv_sec == canary_st.st_mtim.tv_sec &&
                   f.st_mtim.tv_nsec == canary_st.st_mtim.tv_nsec && f.st_nlink == canary_st.st_nlink,
               "canary file's mode, mtime or link count changed");
    FUZZ_CHECK(d.st_mode == canary_dir_st.st_mode && d.st_mtim.tv_sec == canary_dir_st.st_mtim.tv_sec &&
                   d.st_mtim.tv_nsec == canary_dir_st.st_mtim.tv_nsec,
               "canary directory's mode or mtime changed");
  }
  fuzz::rm_rf_at(AT_FDCWD, box.c_str());
  return 0;
}
