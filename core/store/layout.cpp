#include "core/store/layout.hpp"

#include "base/os/file.hpp"
#include "formats/pack_name.hpp"

namespace hpak::store {

std::string Layout::pack_path(const Digest& file_sum) const { return packs_dir() + "/" + formats::pack_file_name(file_sum); }

std::string Layout::index_path(const Digest& file_sum) const { return packs_dir() + "/" + formats::index_file_name(file_sum); }

std::string Layout::midx_layer_path(const Digest& trailer) const { return packs_dir() + "/" + formats::midx_layer_name(trailer); }

std::string index_path_for(const std::string& p) {
  const std::string_view suffix = formats::kPackSuffix;
  if (p.size() > suffix.size() && std::string_view(p).substr(p.size() - suffix.size()) == suffix)
    return p.substr(0, p.size() - suffix.size()) + std::string(formats::kIndexSuffix);
  return p + std::string(formats::kIndexSuffix);
}

std::string condemned_path(const std::string& path) { return path + std::string(formats::kCondemnedSuffix); }

bool is_temp_name(std::string_view name) { return name.substr(0, kTempPrefix.size()) == kTempPrefix; }

} // namespace hpak::store
