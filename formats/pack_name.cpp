#include "formats/pack_name.hpp"

namespace hpak::formats {

namespace {
constexpr std::string_view kPrefix = "pack-";
constexpr size_t kHexLen = 64;

bool is_lower_hex64(std::string_view s) {
  if (s.size() != kHexLen) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool strip_suffix(std::string_view& s, std::string_view suffix) {
  if (s.size() < suffix.size() || s.substr(s.size() - suffix.size()) != suffix) return false;
  s.remove_suffix(suffix.size());
  return true;
}
} // namespace

std::string pack_file_name(const Digest& file_sum) { return std::string(kPrefix) + to_hex(file_sum) + std::string(kPackSuffix); }

std::string index_file_name(const Digest& file_sum) { return std::string(kPrefix) + to_hex(file_sum) + std::string(kIndexSuffix); }

std::optional<PackFileName> parse_pack_file_name(std::string_view name) {
  PackFileName out;
  out.condemned = strip_suffix(name, kCondemnedSuffix);
  if (strip_suffix(name, kPackSuffix)) out.kind = PackFileKind::Pack;
  else if (strip_suffix(name, kIndexSuffix)) out.kind = PackFileKind::Index;
  else return std::nullopt;
  if (name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  name.remove_prefix(kPrefix.size());
  if (!is_lower_hex64(name)) return std::nullopt;
  out.sum = *digest_from_hex(name);
  return out;
}

bool is_pack_name(std::string_view name) {
  auto p = parse_pack_file_name(name);
  return p && p->kind == PackFileKind::Pack && !p->condemned;
}

std::string pack_index_name(std::string_view pack_name) {
  auto p = parse_pack_file_name(pack_name);
  if (!p || p->kind != PackFileKind::Pack) return std::string(pack_name) + std::string(kIndexSuffix);
  return index_file_name(p->sum);
}

std::string midx_layer_name(const Digest& trailer) { return "midx-" + to_hex(trailer) + ".midx"; }

std::optional<Digest> parse_midx_layer_name(std::string_view name) {
  constexpr std::string_view prefix = "midx-";
  if (!strip_suffix(name, ".midx") || name.substr(0, prefix.size()) != prefix) return std::nullopt;
  name.remove_prefix(prefix.size());
  if (!is_lower_hex64(name)) return std::nullopt;
  return digest_from_hex(name);
}

} // namespace hpak::formats
