// Relocation: finding where the packed tree's own absolute path(s) occur in
// file bytes and deciding how such a file may be rewritten (at pack time),
// and writing another path in their place (at restore time) without ever
// making a file invalid in its own format. Offsets and root indices are
// encoded as in formats/catalog_format.hpp, which also defines the kinds.
//
// Why kinds (measured on CPython 3.11 and real venvs, issue 25): splicing a
// path of another length into a .pyc breaks its marshal data ("bad marshal
// data"), into an ELF string table moves every string after it (a segfault),
// into a zip breaks its offsets and CRC-32. So:
//   - text files are spliced at any length (shebangs, pyvenv.cfg, activate);
//   - ELF/Mach-O/PE/ar files are patched in place: the new path over the old,
//     the rest of that NUL-terminated string moved up and NUL-padded before
//     its terminator (conda's rule), so the target may be shorter, not longer;
//   - .pyc and unknown binaries are rewritten only at the same length (rcc's
//     rule) and otherwise left as packed. For .pyc that is exactly right:
//     importlib replaces co_filename of code loaded from a .pyc with the path
//     of the source beside it (_imp._fix_co_filename, called by
//     SourceLoader.get_code), so an unrelocated .pyc reports the new path;
//   - zip/jar/whl and compressed streams are never rewritten (checksums).
#pragma once

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "base/bytes.hpp"
#include "formats/catalog_format.hpp"

namespace hpak {

// Ascending, non-overlapping occurrences of any root in `data`; where two roots
// match at one offset the longer wins.
std::vector<uint64_t> find_relocations(ByteSpan data, const std::vector<std::string>& roots);

// find_relocations over a file seen in windows (the packer's large files):
// feed(data, own, base) gets the bytes [base, base + data.size()) of the file,
// which run `lookahead()` bytes past the window's own `own` bytes (or to the
// end of the file), and keeps the occurrences that start within its own bytes;
// finish() returns exactly what find_relocations would for the whole file.
class RelocationScanner {
public:
  explicit RelocationScanner(const std::vector<std::string>& roots);
  size_t lookahead() const { return longest_ ? longest_ - 1 : 0; }
  void feed(ByteSpan data, size_t own, uint64_t base);
  std::vector<uint64_t> finish();

private:
  const std::vector<std::string>& roots_;
  size_t longest_ = 0;
  std::vector<std::pair<uint64_t, unsigned>> hits_; // (offset, root)
};

// ---- classification (pack time, or a reader of a version 1 catalog) ----

// The longest run from the end of an occurrence to the NUL ending its string
// that an in-place file may have: past it the bytes are not a C string.
constexpr uint64_t kMaxInPlaceTail = 4096;

// The kind of a file whose bytes hold the relocations `relocs`, from its
// bytes fed in order (any chunking gives the same answer).
class RelocClassifier {
public:
  RelocClassifier(const std::vector<uint64_t>& relocs, const std::vector<std::string>& roots);
  void feed(ByteSpan chunk);
  formats::RelocKind finish() const;

private:
  void find_string_ends(ByteSpan chunk);
  const std::vector<uint64_t>& relocs_;
  const std::vector<std::string>& roots_;
  uint8_t head_[512] = {}; // the magic numbers (a PE header within 512 bytes)
  size_t head_len_ = 0;
  uint64_t pos_ = 0;
  bool control_ = false; // a NUL or control byte other than \t \n \v \f \r ESC
  bool zip_end_ = false; // a zip end-of-central-directory signature anywhere
  uint32_t last4_ = 0;   // the last bytes seen, for the signature across chunks
  size_t next_ = 0;      // the first occurrence whose string end is not seen yet
  bool tails_ok_ = true; // every occurrence so far ends its string within kMaxInPlaceTail
};

formats::RelocKind classify_relocated(ByteSpan data, const std::vector<uint64_t>& relocs, const std::vector<std::string>& roots);

// Relocated files of a catalog by kind (pack, import and catalogs report them).
struct RelocCounts {
  uint64_t text = 0, in_place = 0, same_length = 0, verbatim = 0;
  size_t in_place_limit = SIZE_MAX; // the longest target path every in-place file takes
  void add(const formats::Node& n, const std::vector<std::string>& roots);
  uint64_t total() const { return text + in_place + same_length + verbatim; }
};

// ---- applying (restore time) ----

// What a restore into `target` does with a file's relocations.
enum class RelocAction {
  None,    // no relocations, or no relocation asked: the object's bytes
  Splice,  // the target written in place of each root (a text file: any length)
  Pad,     // in place: the target over the root, its string NUL-padded (same size)
  Keep,    // left as packed: its format cannot take the target's length (or never any)
  Blocked, // an in-place file and a target longer than its root: refused unless kept
};
// `target` empty: no relocation. Throws on an unclassified file (classify first).
RelocAction reloc_action(const formats::Node& n, const std::vector<std::string>& roots, std::string_view target);

// Where a restore or unpack relocates to, and whether files that cannot take
// that path are left as packed (--keep-unrelocated) rather than refused.
struct RelocTo {
  std::string path;          // empty: no relocation
  bool keep_blocked = false;
  bool active() const { return !path.empty(); }
};
// reloc_action for `to`: Blocked becomes Keep when `to.keep_blocked`.
RelocAction reloc_action(const formats::Node& n, const std::vector<std::string>& roots, const RelocTo& to);
// The size of the file (or symlink target) as a restore into `target` writes it.
uint64_t relocated_size(const formats::Node& n, const std::vector<std::string>& roots, std::string_view target);

// Windows paths: a root written with '\\' separators (as Windows programs
// write paths: "C:\\Users\\me\\env") takes a Windows target ("Z:/envs/t",
// a drive letter or "//server/share") written with '\\' too; any other root
// takes the target as it is. The two forms have the same length.
bool windows_form_root(std::string_view root);
std::string windows_form_target(std::string_view target); // the target with '\\', or "" if it is no Windows path
// The root's other spelling a Windows pack records beside it: "C:/Users/me/env"
// -> "C:\\Users\\me\\env"; "" for a root without a drive letter or UNC prefix.
std::string backslash_root(std::string_view root);

// Rewrites an object streamed in chunks as `action` says (Splice or Pad):
// offsets are absolute in the object, so a root may straddle two chunks.
class Relocator {
public:
  Relocator(const std::vector<uint64_t>& relocs, const std::vector<std::string>& roots, std::string_view target, RelocAction action);
  template <class Sink> void feed(ByteSpan chunk, Sink&& out);
  // After the last chunk: NULs still owed (a string whose terminator never
  // came: only from a hostile catalog) go at the end, so the size holds.
  template <class Sink> void finish(Sink&& out) {
    static const uint8_t zeros[256] = {};
    for (; pad_; pad_ -= std::min<uint64_t>(pad_, sizeof zeros)) out(ByteSpan(zeros, size_t(std::min<uint64_t>(pad_, sizeof zeros))));
  }

private:
  template <class Sink> void emit_padded(ByteSpan piece, Sink&& out);
  const std::vector<uint64_t>& relocs_;
  const std::vector<std::string>& roots_;
  ByteSpan target_;
  std::string target_back_; // target_ with '\\' (windows_form_target), for windows_form_root roots
  bool pad_mode_;
  size_t next_ = 0;
  uint64_t pos_ = 0, skip_until_ = 0;
  uint64_t pad_ = 0; // NULs owed before the terminator of the current string (Pad)
};

// `data` rewritten as `action` says, into a new buffer (None/Keep: a copy).
Bytes relocate_bytes(ByteSpan data, const std::vector<uint64_t>& relocs, const std::vector<std::string>& roots,
                     std::string_view target, RelocAction action = RelocAction::Splice);
// A symlink's target as a restore into `target` writes it (always text).
std::string relocated_link(const formats::Node& n, const std::vector<std::string>& roots, std::string_view target);

// ---- the restore's check, before anything is written ----

struct RelocationPlan {
  uint64_t spliced = 0, padded = 0, kept = 0, blocked = 0; // files, by action
  std::string first_blocked;                               // its catalog path
  size_t longest_target = 0; // the longest target path every blocked file takes
};
RelocationPlan plan_relocation(const formats::Catalog& cat, std::string_view target);
// Throws the one-line refusal when `plan` has blocked files (`shown` names the target).
void refuse_blocked(const RelocationPlan& plan, std::string_view target, const std::string& shown);
// plan_relocation, refusing blocked files unless `to.keep_blocked` (then counted as kept).
RelocationPlan check_relocation(const formats::Catalog& cat, const RelocTo& to, const std::string& shown);

// Gives each relocated file of `cat` that has no kind (a version 1 catalog)
// the one `kind_of(node)` returns (from its object: RelocClassifier).
template <class KindOf> void classify_unclassified(formats::Catalog& cat, KindOf&& kind_of);

} // namespace hpak

template <class Sink>
void hpak::Relocator::emit_padded(ByteSpan piece, Sink&& out) {
  // In a string that was shortened: the NULs it owes go before its terminator.
  while (pad_ && !piece.empty()) {
    const void* z = memchr(piece.data(), 0, piece.size());
    if (!z) return out(piece);
    size_t k = size_t(static_cast<const uint8_t*>(z) - piece.data());
    out(piece.subspan(0, k));
    static const uint8_t zeros[256] = {};
    for (uint64_t left = pad_; left; left -= std::min<uint64_t>(left, sizeof zeros))
      out(ByteSpan(zeros, size_t(std::min<uint64_t>(left, sizeof zeros))));
    pad_ = 0;
    piece = piece.subspan(k);
  }
  if (!piece.empty()) out(piece);
}

template <class Sink>
void hpak::Relocator::feed(ByteSpan chunk, Sink&& out) {
  const uint64_t start = pos_, end = pos_ + chunk.size();
  uint64_t p = start;
  auto pass = [&](uint64_t from, uint64_t to) {
    ByteSpan piece = chunk.subspan(size_t(from - start), size_t(to - from));
    if (pad_mode_) emit_padded(piece, out);
    else out(piece);
  };
  while (p < end) {
    if (p < skip_until_) {
      p = std::min(end, skip_until_);
      continue;
    }
    if (next_ < relocs_.size() && formats::reloc_offset(relocs_[next_]) < end) {
      uint64_t off = std::max(p, formats::reloc_offset(relocs_[next_]));
      pass(p, off);
      const std::string& root = roots_[formats::reloc_root(relocs_[next_])];
      out(!target_back_.empty() && windows_form_root(root)
              ? ByteSpan(reinterpret_cast<const uint8_t*>(target_back_.data()), target_back_.size())
              : target_);
      size_t root_len = root.size();
      if (pad_mode_) pad_ += root_len - target_.size();
      skip_until_ = off + root_len;
      next_++;
      p = off;
      continue;
    }
    pass(p, end);
    p = end;
  }
  pos_ = end;
}

template <class KindOf> void hpak::classify_unclassified(formats::Catalog& cat, KindOf&& kind_of) {
  for (formats::Node& n : cat.nodes)
    if (n.type == formats::NodeType::File && !n.relocs.empty() && n.reloc_kind == formats::RelocKind::Unclassified)
      n.reloc_kind = kind_of(n);
}
