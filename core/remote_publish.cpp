#include "core/remote_publish.hpp"

#include <algorithm>
#include <fcntl.h>
#include <filesystem>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util/file.hpp"
#include "formats/remote_root_format.hpp"

namespace hpak {

using namespace formats;

namespace {

void make_dir(const std::string& p) {
  std::error_code ec;
  std::filesystem::create_directories(p, ec);
  if (ec) throw Error("unable to create directory '" + p + "': " + ec.message());
}

// Holds DEST/.hpak-publish.lock: one publish into DEST at a time.
Fd lock_dest(const std::string& dest) {
  std::string p = dest + "/.hpak-publish.lock";
  Fd fd(open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!fd) throw_errno("unable to open '" + p + "'");
  while (flock(fd.get(), LOCK_EX) != 0)
    if (errno != EINTR) throw_errno("unable to lock '" + p + "'");
  return fd;
}

// The generation of DEST's current root, 0 if there is none.
uint64_t published_generation(const std::string& dest) {
  std::string p = dest + "/" + kRemoteRootFile;
  if (!path_exists(p)) return 0;
  Bytes b = read_file(p);
  return decode_remote_root(b, p).generation;
}

uint64_t file_size(const std::string& p) {
  struct stat st;
  if (stat(p.c_str(), &st) != 0) return UINT64_MAX;
  return uint64_t(st.st_size);
}

// Writes the mapped pack `p` to `dst` (temp name, fsync, rename), checking on
// the way that its SHA-256 is `want` (its name). The mapping stays valid even
// if a gc of the library removes the file meanwhile.
void copy_checked(const PackReader& p, const std::string& dst, const Digest& want) {
  AtomicFile out(dst, 0644);
  Sha256 sha;
  ByteSpan all = p.bytes();
  for (size_t off = 0; off < all.size(); off += 4 << 20) {
    ByteSpan chunk = all.subspan(off, std::min<size_t>(4 << 20, all.size() - off));
    sha.update(chunk);
    out.write(chunk);
  }
  if (sha.finish() != want)
    throw Error("pack '" + p.path() + "' does not match its name (damaged?); run 'hpak verify' on the library; nothing published");
  out.commit(/*fsync_first=*/true);
}

void write_file(const std::string& dst, ByteSpan bytes) {
  AtomicFile out(dst, 0644);
  out.write(bytes);
  out.commit(/*fsync_first=*/true);
}

// Each visible pack of `lib`, copied to DEST/packs unless already there.
std::vector<RemotePackEntry> publish_packs(const Library& lib, const std::string& dest, const PublishOptions& opts,
                                           PublishResult& res) {
  std::vector<RemotePackEntry> out;
  auto packs = lib.packs();
  for (const PackReader* p : packs) {
    std::string name = base_name(p->path());
    if (!is_pack_name(name)) continue; // not a library pack name: never published
    RemotePackEntry e;
    e.name = name;
    e.size = p->bytes().size();
    std::string src_idx = lib.packs_dir() + "/" + pack_index_name(name);
    Bytes idx = read_file(src_idx);
    formats::IndexView check(idx, src_idx); // a damaged index is not published
    if (check.pack_size() != e.size) throw Error("index '" + src_idx + "' does not match its pack; run 'hpak repair'");
    e.index_sum = sha256(idx);
    e.index_size = idx.size();
    std::string dst_pack = dest + "/packs/" + name, dst_idx = dest + "/packs/" + pack_index_name(name);
    if (file_size(dst_pack) != e.size) {
      copy_checked(*p, dst_pack, *digest_from_hex(std::string_view(name).substr(5, 64)));
      res.packs_copied++;
      res.bytes_copied += e.size;
    }
    if (file_size(dst_idx) != e.index_size || sha256(read_file(dst_idx)) != e.index_sum) {
      write_file(dst_idx, idx);
      res.bytes_copied += idx.size();
    }
    out.push_back(std::move(e));
    report(opts.progress, "publish", out.size(), packs.size());
  }
  return out;
}

// Every catalog name of `lib` with its digest, after checking that each
// catalog and all its objects are in the packs being published.
std::vector<RemoteCatalogEntry> published_catalogs(const Library& lib) {
  std::vector<RemoteCatalogEntry> out;
  for (const std::string& name : lib.catalog_names()) {
    Digest d;
    Catalog cat = lib.load_catalog(name, &d);
    for (const Node& n : cat.nodes)
      if (n.type == NodeType::File && !lib.locate_loaded(n.digest))
        throw Error("catalog '" + name + "' needs object " + to_hex(n.digest) + ", which is missing from library '" +
                    lib.root() + "'; nothing published");
    out.push_back({name, d});
  }
  return out;
}

} // namespace

PublishResult publish(const Library& lib, const std::string& dest, const PublishOptions& opts) {
  PublishResult res;
  make_dir(dest);
  make_dir(dest + "/packs");
  Fd lock = lock_dest(dest);
  res.previous_generation = published_generation(dest);
  RemoteRoot root;
  root.generation = opts.generation ? opts.generation : res.previous_generation + 1;
  if (root.generation <= res.previous_generation)
    throw Error("generation " + std::to_string(root.generation) + " is not above generation " +
                std::to_string(res.previous_generation) + " published in '" + dest + "'; nothing published");
  lib.refresh();
  // Names first (so a gc racing this publish can only have left more packs
  // than the names need, never fewer), then the packs that hold them.
  root.catalogs = published_catalogs(lib);
  root.packs = publish_packs(lib, dest, opts, res);
  sync_dir(dest + "/packs");
  std::string text = encode_remote_root(root);
  write_file(dest + "/" + kRemoteRootFile, ByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  sync_dir(dest);
  res.generation = root.generation;
  res.packs = root.packs.size();
  res.catalogs = root.catalogs.size();
  return res;
}

} // namespace hpak
