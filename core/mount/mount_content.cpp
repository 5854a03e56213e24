#include "core/mount/mount_content.hpp"

#include <sys/mman.h>

#include "base/error.hpp"
#include "core/restore/materialize.hpp"

namespace hpak {

MountContent::MountContent(const MountTree& tree, const ObjectSource& src, const ReadChecks& checks, std::string shown,
                           std::function<void(const std::string&)> on_error)
    : tree_(tree), src_(src), checks_(checks), shown_(std::move(shown)), on_error_(std::move(on_error)) {}

std::shared_ptr<MountContent::File> MountContent::open(uint64_t ino) {
  std::lock_guard lk(mu_);
  auto& slot = open_[ino];
  if (auto f = slot.lock()) return f;
  auto f = std::make_shared<File>();
  slot = f;
  // Drop the slots of files closed meanwhile, so the map stays as small as what is open.
  if (open_.size() > 1024)
    for (auto it = open_.begin(); it != open_.end();) it = it->second.expired() ? open_.erase(it) : std::next(it);
  return f;
}

bool MountContent::load(uint64_t ino, File& f) {
  std::lock_guard lk(f.mu);
  if (f.loaded) return !f.failed;
  f.loaded = true;
  const formats::Node* n = tree_.node_of(ino);
  try {
    if (!n || n->type != formats::NodeType::File) throw Error("internal error: inode " + std::to_string(ino) + " is not a file");
    Fd mfd(memfd_create("hpak-mount", MFD_CLOEXEC));
    if (!mfd) throw_errno("unable to make a memory file for '" + shown_ + "/" + n->path + "'");
    Bytes scratch;
    write_file_content(*n, tree_.catalog(), src_, mfd.get(), shown_, tree_.relocate_to(), checks_, scratch);
    f.size = tree_.inode(ino)->size;
    f.fd = std::move(mfd);
    return true;
  } catch (const std::exception& e) {
    f.failed = true;
    failures_++;
    if (on_error_) on_error_(std::string("'") + shown_ + "/" + (n ? n->path : "?") + "' unreadable: " + e.what());
    return false;
  }
}

} // namespace hpak
