// A published library in a directory (`hpak publish LIB DIR`, served by any
// web server, or read in place: `hpak fetch file:///DIR`). An object is the
// file DIR/NAME.
//  - reads open the file as a hostile one (open_regular: no symlink in its
//    last component, a regular file, bounded); a missing file is
//    RemoteNotFound, EACCES RemoteDenied, anything else that is not the
//    object asked for (a symlink, a FIFO, too large, too short for the range)
//    RemoteProtocol;
//  - put writes a temp name in the object's folder (AtomicFile: created
//    beside it, hashed as it is written, fsync'd, renamed, the folder
//    fsync'd), so no reader sees a partial file under the final name and it
//    survives a power loss; missing folders are created (and their parents
//    fsync'd);
//  - list walks the folder of the prefix (and below), regular files only,
//    temp names (".tmp-*", a put under way) left out;
//  - remove unlinks (durable after sync());
//  - the writer lock is a flock(2) on DIR/NAME, created if missing.
// Opened for writing, DIR and the folders of the remote layout
// (core/remote/remote_layout.hpp: packs/, roots/) are created if missing.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "base/os/file.hpp"
#include "core/remote/backend.hpp"
#include "core/remote/schemes.hpp"

namespace hpak::remote {

class DirBackend : public Backend {
public:
  DirBackend(std::string dir, Access access);
  std::string where(const std::string& name) const override;
  void get_many(const std::vector<GetRequest>& reqs, const std::function<void(size_t, Bytes&)>& done) override;
  void put(const std::string& name, ByteSpan bytes, const Digest* want = nullptr) override;
  std::vector<RemoteEntry> list(const std::string& prefix) override;
  void remove(const std::string& name) override;
  void sync() override;
  void lock_writers(const std::string& name) override;
  BackendStats stats() const override { return stats_; }

private:
  Bytes read(const GetRequest& r);
  Bytes read_whole(const GetRequest& r, int fd);
  Bytes read_range(const GetRequest& r, int fd);
  void make_parents(const std::string& name);
  std::string dir_;
  Fd lock_;
  std::set<std::string> unsynced_; // folders whose removes are not yet durable
  BackendStats stats_;
};

std::string parse_dir_url(const std::string& rest, bool as_url, RemoteUrl& url);
std::unique_ptr<Backend> open_dir(const RemoteUrl& url, const BackendOptions& opts, Access access);

} // namespace hpak::remote
