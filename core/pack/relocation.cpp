#include "core/pack/relocation.hpp"

#include <algorithm>
#include <cstring>

namespace hpak {

using namespace formats;

// ---- finding ----

RelocationScanner::RelocationScanner(const std::vector<std::string>& roots) : roots_(roots) {
  for (auto& r : roots) longest_ = std::max(longest_, r.size());
}

void RelocationScanner::feed(ByteSpan data, size_t own, uint64_t base) {
  for (unsigned i = 0; i < roots_.size(); i++) {
    const std::string& r = roots_[i];
    if (r.empty() || r.size() > data.size()) continue;
    // Candidates by memchr of the first byte (vectorised; several times faster
    // than memmem on large files), then the rest compared.
    const uint8_t* p = data.data();
    const uint8_t* limit = data.data() + std::min(own, data.size() - r.size() + 1); // starts before it
    while (p < limit) {
      p = static_cast<const uint8_t*>(memchr(p, uint8_t(r[0]), size_t(limit - p)));
      if (!p) break;
      if (std::memcmp(p + 1, r.data() + 1, r.size() - 1) == 0) hits_.emplace_back(base + uint64_t(p - data.data()), i);
      p++;
    }
  }
}

std::vector<uint64_t> RelocationScanner::finish() {
  std::sort(hits_.begin(), hits_.end(), [&](auto& a, auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return roots_[a.second].size() > roots_[b.second].size();
  });
  std::vector<uint64_t> out;
  uint64_t next_min = 0;
  for (auto& [off, idx] : hits_) {
    if (off < next_min) continue;
    out.push_back(make_reloc(off, idx));
    next_min = off + roots_[idx].size();
  }
  hits_.clear();
  return out;
}

std::vector<uint64_t> find_relocations(ByteSpan data, const std::vector<std::string>& roots) {
  RelocationScanner scan(roots);
  scan.feed(data, data.size(), 0);
  return scan.finish();
}

// ---- classification ----

namespace {

bool starts(const uint8_t* head, size_t len, std::initializer_list<uint8_t> magic) {
  return len >= magic.size() && std::equal(magic.begin(), magic.end(), head);
}

// Archives and compressed streams: a CRC or a checksum covers the bytes.
bool checksummed_magic(const uint8_t* h, size_t n) {
  return starts(h, n, {'P', 'K', 3, 4}) || starts(h, n, {'P', 'K', 5, 6}) || starts(h, n, {'P', 'K', 7, 8}) ||
         starts(h, n, {0x1f, 0x8b}) || starts(h, n, {0x28, 0xb5, 0x2f, 0xfd}) || starts(h, n, {0xfd, '7', 'z', 'X', 'Z', 0}) ||
         starts(h, n, {'B', 'Z', 'h'}) || starts(h, n, {'7', 'z', 0xbc, 0xaf, 0x27, 0x1c}) || starts(h, n, {0x04, 0x22, 0x4d, 0x18});
}

// A PE image: "MZ", and at the offset the DOS header gives, "PE\0\0".
bool pe_magic(const uint8_t* h, size_t n) {
  if (!starts(h, n, {'M', 'Z'}) || n < 0x40) return false;
  uint32_t at = uint32_t(h[0x3c]) | uint32_t(h[0x3d]) << 8 | uint32_t(h[0x3e]) << 16 | uint32_t(h[0x3f]) << 24;
  return at <= n - 4 && std::memcmp(h + at, "PE\0\0", 4) == 0;
}

// Object files whose strings are NUL-terminated and addressed by offset.
bool cstring_magic(const uint8_t* h, size_t n) {
  return starts(h, n, {0x7f, 'E', 'L', 'F'}) || starts(h, n, {'!', '<', 'a', 'r', 'c', 'h', '>', '\n'}) ||
         starts(h, n, {0xfe, 0xed, 0xfa, 0xce}) || starts(h, n, {0xfe, 0xed, 0xfa, 0xcf}) ||
         starts(h, n, {0xce, 0xfa, 0xed, 0xfe}) || starts(h, n, {0xcf, 0xfa, 0xed, 0xfe}) || pe_magic(h, n);
}

// CPython's .pyc: a 2-byte magic number, then "\r\n", then flags and 8 bytes.
bool pyc_magic(const uint8_t* h, size_t n) { return n >= 16 && h[2] == '\r' && h[3] == '\n'; }

// Bytes no text file holds: NUL and the C0 controls other than \t \n \v \f \r and ESC.
bool is_control(uint8_t c) { return c < 0x20 && !(c >= '\t' && c <= '\r') && c != 0x1b; }

} // namespace

RelocClassifier::RelocClassifier(const std::vector<uint64_t>& relocs, const std::vector<std::string>& roots)
    : relocs_(relocs), roots_(roots) {}

// Moves past every occurrence whose string ends (a NUL at or after the
// occurrence's end) in `chunk`, checking the run before that NUL is short.
void RelocClassifier::find_string_ends(ByteSpan chunk) {
  const uint64_t end = pos_ + chunk.size();
  while (tails_ok_ && next_ < relocs_.size()) {
    uint64_t occ_end = reloc_offset(relocs_[next_]) + roots_[reloc_root(relocs_[next_])].size();
    if (occ_end >= end) return;
    uint64_t from = std::max(occ_end, pos_);
    const void* z = memchr(chunk.data() + (from - pos_), 0, size_t(end - from));
    if (!z) {
      if (end - occ_end > kMaxInPlaceTail) tails_ok_ = false;
      return;
    }
    uint64_t nul = pos_ + uint64_t(static_cast<const uint8_t*>(z) - chunk.data());
    if (nul - occ_end > kMaxInPlaceTail) tails_ok_ = false;
    next_++;
  }
}

void RelocClassifier::feed(ByteSpan chunk) {
  for (size_t i = 0; head_len_ < sizeof head_ && i < chunk.size(); i++) head_[head_len_++] = chunk[i];
  for (uint8_t c : chunk) {
    control_ = control_ || is_control(c);
    last4_ = (last4_ << 8) | c;
    zip_end_ = zip_end_ || last4_ == 0x504b0506; // "PK\5\6"
  }
  find_string_ends(chunk);
  pos_ += chunk.size();
}

RelocKind RelocClassifier::finish() const {
  if (!control_) return RelocKind::Text; // (every checksummed format below has control bytes)
  if (checksummed_magic(head_, head_len_)) return RelocKind::Verbatim;
  if (zip_end_) return RelocKind::Verbatim; // a zip behind a stub (self-extracting, a launcher)
  if (pyc_magic(head_, head_len_)) return RelocKind::SameLength;
  bool all_ended = tails_ok_ && next_ == relocs_.size();
  if (cstring_magic(head_, head_len_) && all_ended) return RelocKind::InPlace;
  return RelocKind::SameLength;
}

void RelocCounts::add(const Node& n, const std::vector<std::string>& roots) {
  if (n.type != NodeType::File || n.relocs.empty()) return;
  switch (n.reloc_kind) {
  case RelocKind::Text: text++; break;
  case RelocKind::InPlace:
    in_place++;
    for (uint64_t v : n.relocs) in_place_limit = std::min(in_place_limit, roots[reloc_root(v)].size());
    break;
  case RelocKind::SameLength: same_length++; break;
  case RelocKind::Verbatim: verbatim++; break;
  case RelocKind::Unclassified: same_length++; break; // (a version 1 catalog's: not spliced at another length)
  }
}

RelocKind classify_relocated(ByteSpan data, const std::vector<uint64_t>& relocs, const std::vector<std::string>& roots) {
  RelocClassifier c(relocs, roots);
  c.feed(data);
  return c.finish();
}

// ---- applying ----

RelocAction reloc_action(const Node& n, const std::vector<std::string>& roots, std::string_view target) {
  if (n.relocs.empty() || target.empty()) return RelocAction::None;
  if (n.type == NodeType::Symlink) return RelocAction::Splice;
  bool same = true, longer = false;
  for (uint64_t v : n.relocs) {
    size_t len = roots[reloc_root(v)].size();
    same = same && len == target.size();
    longer = longer || target.size() > len;
  }
  switch (n.reloc_kind) {
  case RelocKind::Text: return RelocAction::Splice;
  case RelocKind::InPlace: return same ? RelocAction::Splice : longer ? RelocAction::Blocked : RelocAction::Pad;
  case RelocKind::SameLength: return same ? RelocAction::Splice : RelocAction::Keep;
  case RelocKind::Verbatim: return RelocAction::Keep;
  case RelocKind::Unclassified: break;
  }
  throw Error("internal error: '" + n.path + "' has relocations of no kind");
}

RelocAction reloc_action(const Node& n, const std::vector<std::string>& roots, const RelocTo& to) {
  RelocAction a = reloc_action(n, roots, to.path);
  return a == RelocAction::Blocked && to.keep_blocked ? RelocAction::Keep : a;
}

uint64_t relocated_size(const Node& n, const std::vector<std::string>& roots, std::string_view target) {
  return reloc_action(n, roots, target) == RelocAction::Splice ? spliced_size(n, roots, target.size()) : n.size;
}

namespace {
// "C:/..." or "C:\\..." (a drive letter), or "//server/..." / "\\\\server\\...".
bool windows_absolute(std::string_view p) {
  auto sep = [](char c) { return c == '/' || c == '\\'; };
  bool drive = p.size() >= 3 && ((p[0] >= 'A' && p[0] <= 'Z') || (p[0] >= 'a' && p[0] <= 'z')) && p[1] == ':' && sep(p[2]);
  return drive || (p.size() >= 3 && sep(p[0]) && sep(p[1]) && !sep(p[2]));
}
} // namespace

bool windows_form_root(std::string_view root) {
  return root.find('\\') != std::string_view::npos && root.find('/') == std::string_view::npos;
}

std::string windows_form_target(std::string_view target) {
  if (!windows_absolute(target)) return "";
  std::string t(target);
  std::replace(t.begin(), t.end(), '/', '\\');
  return t;
}

std::string backslash_root(std::string_view root) {
  if (!windows_absolute(root) || root.find('/') == std::string_view::npos) return "";
  return windows_form_target(root);
}

Relocator::Relocator(const std::vector<uint64_t>& relocs, const std::vector<std::string>& roots, std::string_view target,
                     RelocAction action)
    : relocs_(relocs), roots_(roots), target_(reinterpret_cast<const uint8_t*>(target.data()), target.size()),
      target_back_(windows_form_target(target)), pad_mode_(action == RelocAction::Pad) {}

Bytes relocate_bytes(ByteSpan data, const std::vector<uint64_t>& relocs, const std::vector<std::string>& roots,
                     std::string_view target, RelocAction action) {
  Bytes out;
  auto put = [&](ByteSpan piece) { out.insert(out.end(), piece.begin(), piece.end()); };
  if (action != RelocAction::Splice && action != RelocAction::Pad) {
    put(data);
    return out;
  }
  out.reserve(data.size() + relocs.size() * target.size());
  Relocator r(relocs, roots, target, action);
  r.feed(data, put);
  r.finish(put);
  return out;
}

std::string relocated_link(const Node& n, const std::vector<std::string>& roots, std::string_view target) {
  if (n.relocs.empty() || target.empty()) return n.target;
  Bytes t = relocate_bytes(ByteSpan(reinterpret_cast<const uint8_t*>(n.target.data()), n.target.size()), n.relocs, roots, target);
  return std::string(t.begin(), t.end());
}

// ---- the restore's check ----

RelocationPlan plan_relocation(const Catalog& cat, std::string_view target) {
  RelocationPlan p;
  p.longest_target = SIZE_MAX;
  for (const Node& n : cat.nodes) {
    if (n.type != NodeType::File) continue;
    switch (reloc_action(n, cat.roots, target)) {
    case RelocAction::None: break;
    case RelocAction::Splice: p.spliced++; break;
    case RelocAction::Pad: p.padded++; break;
    case RelocAction::Keep: p.kept++; break;
    case RelocAction::Blocked:
      if (!p.blocked++) p.first_blocked = n.path;
      for (uint64_t v : n.relocs) p.longest_target = std::min(p.longest_target, cat.roots[reloc_root(v)].size());
      break;
    }
  }
  if (!p.blocked) p.longest_target = 0;
  return p;
}

void refuse_blocked(const RelocationPlan& plan, std::string_view target, const std::string& shown) {
  if (!plan.blocked) return;
  std::string more = plan.blocked > 1 ? " and " + std::to_string(plan.blocked - 1) + " more binary files hold" : " holds";
  throw Error("cannot relocate into '" + shown + "': '" + plan.first_blocked + "'" + more +
              " the packed path in NUL-terminated strings, which take a path of at most " + std::to_string(plan.longest_target) +
              " bytes, and '" + std::string(target) + "' has " + std::to_string(target.size()) +
              " (restore to a shorter path, or pass --keep-unrelocated to leave such files as packed)");
}

} // namespace hpak

namespace hpak {

RelocationPlan check_relocation(const Catalog& cat, const RelocTo& to, const std::string& shown) {
  RelocationPlan p = plan_relocation(cat, to.path);
  if (!to.keep_blocked) refuse_blocked(p, to.path, shown);
  p.kept += p.blocked;
  return p;
}

} // namespace hpak
