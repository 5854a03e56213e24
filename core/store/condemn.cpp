#include "core/store/condemn.hpp"

#include <cstdio>

#include "base/os/sys.hpp"
#include "core/store/dir_stream.hpp"
#include "base/error.hpp"
#include "base/os/file.hpp"
#include "formats/pack_name.hpp"

namespace hpak::store {

bool condemn_pack(const std::string& pack) {
  const std::string idx = index_path_for(pack);
  if (os::rename_path(idx.c_str(), condemned_path(idx).c_str()) != 0) return false;
  if (os::rename_path(pack.c_str(), condemned_path(pack).c_str()) != 0) {
    os::rename_path(condemned_path(idx).c_str(), idx.c_str()); // keep it then
    return false;
  }
  return true;
}

bool condemn_orphan(const std::string& pack) { return os::rename_path(pack.c_str(), condemned_path(pack).c_str()) == 0; }

// Replacing a same-named file a writer published meanwhile is harmless: the
// name is the SHA-256 of the content.
void uncondemn_pack(const std::string& pack) {
  const std::string idx = index_path_for(pack);
  if (path_exists(condemned_path(pack))) uncondemn_orphan(pack);
  if (os::rename_path(condemned_path(idx).c_str(), idx.c_str()) != 0) throw_errno("unable to restore '" + idx + "'");
}

void uncondemn_orphan(const std::string& pack) {
  if (os::rename_path(condemned_path(pack).c_str(), pack.c_str()) != 0) throw_errno("unable to restore '" + pack + "'");
}

void delete_condemned(const std::string& pack) {
  os::unlink_path(condemned_path(pack).c_str());
  os::unlink_path(condemned_path(index_path_for(pack)).c_str());
}

size_t recover_condemned(const Layout& layout) {
  using formats::PackFileKind;
  size_t n = 0;
  for (auto& name : list_dir(layout.packs_dir())) {
    auto f = formats::parse_pack_file_name(name);
    if (!f || !f->condemned || f->kind != PackFileKind::Index) continue;
    const std::string pack = layout.pack_path(f->sum);
    if (!path_exists(pack) && !path_exists(condemned_path(pack))) {
      os::unlink_path(condemned_path(layout.index_path(f->sum)).c_str()); // its pack was already deleted
      continue;
    }
    uncondemn_pack(pack);
    n++;
  }
  // A condemned pack whose index is gone (an orphan gc was sweeping): keep the data.
  for (auto& name : list_dir(layout.packs_dir())) {
    auto f = formats::parse_pack_file_name(name);
    if (!f || !f->condemned || f->kind != PackFileKind::Pack) continue;
    const std::string pack = layout.pack_path(f->sum);
    if (path_exists(pack)) os::unlink_path(condemned_path(pack).c_str());
    else os::rename_path(condemned_path(pack).c_str(), pack.c_str());
  }
  return n;
}

} // namespace hpak::store
