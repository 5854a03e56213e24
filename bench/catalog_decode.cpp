// bench/catalog_decode.cpp — hpak-catdecode: what holding a catalog in memory
// costs a restore, in today's form and in a compact one (issue 32: the dirty
// restore's catalog decode). Not run by `hpak bench`; see
// bench/catalog-decode.sh and bench/RESULTS.md.
//
//   hpak-catdecode CATALOG nodes|compact
//
// CATALOG is a raw version 3 catalog (`hpak cat PACK DIGEST > F`). The
// process reads it, then times (CPU, and page faults) one decode, the
// directory slots a restore derives from it, and freeing it all:
//   nodes    formats::decode_catalog into a Catalog of formats::Node (128 bytes
//            a node; the paths in the catalog's PathStore, blocks of 64 KiB
//            to 1 MiB), then formats::dir_slots;
//   compact  a prototype: the same columns into one array per field (type,
//            mode, mtime, size, digest as a table index, parent slot), the
//            paths into one block; links' targets and relocations beside.
//            It makes the decoder's checks of the header, the digest table,
//            types, modes and paths (validity, order, parents), not those of
//            relocation offsets and hardlink targets (trees without them, such
//            as the rc corpus, are timed fairly; others flatter it a little).
// One decode per process: a fresh process's heap is what a restore decodes
// into (its pages fault in once), so the script runs the binary many times.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <sys/resource.h>
#include <vector>

#include "base/bytes.hpp"
#include "base/hash.hpp"
#include "formats/catalog_format.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {

double cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
}

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// The compact form: one array per field, paths in one block.
struct Compact {
  std::string name;
  std::vector<std::string> roots;
  std::vector<Digest> digests;    // the table, each once
  std::vector<uint8_t> type;      // NodeType
  std::vector<uint16_t> mode;     // 07777
  std::vector<int64_t> mtime;
  std::vector<uint64_t> size;
  std::vector<uint32_t> digest;   // files: index into `digests`
  std::vector<uint32_t> path_end; // path i is paths[path_end[i-1] .. path_end[i])
  std::vector<char> paths;
  std::vector<uint32_t> parent;   // the node index of the enclosing directory + 1 (0: the root)
  std::vector<std::pair<uint32_t, std::string>> targets;            // links: node, target
  std::vector<std::pair<uint32_t, std::vector<uint64_t>>> relocs;   // node, offsets
  std::string_view path(size_t i) const {
    size_t b = i ? path_end[i - 1] : 0;
    return {paths.data() + b, path_end[i] - b};
  }
};

Compact decode_compact(ByteSpan bytes) {
  ByteReader r(bytes, "catalog");
  Compact c;
  if (std::memcmp(r.bytes(4).data(), "HPCT", 4) != 0 || r.u32() != 3 || r.u32() != 0) r.fail("not a version 3 catalog");
  c.name = std::string(r.vstr(kMaxPath));
  uint64_t nroots = r.var();
  for (uint64_t i = 0; i < nroots; i++) c.roots.emplace_back(r.vstr(kMaxPath));
  uint64_t nd = r.var();
  if (nd > r.remaining() / 32) r.fail("digest count");
  c.digests.resize(nd);
  for (uint64_t i = 0; i < nd; i++) {
    std::memcpy(c.digests[i].data(), r.bytes(32).data(), 32);
    if (i > 0 && !(c.digests[i - 1] < c.digests[i])) r.fail("digest table out of order");
  }
  uint64_t n = r.var();
  if (n > kMaxNodes || n > r.remaining() / 5) r.fail("node count");
  c.type.resize(n);
  for (auto& t : c.type) {
    t = r.u8();
    if (t < 1 || t > 4) r.fail("node type");
  }
  c.mode.resize(n);
  for (auto& m : c.mode) {
    uint64_t v = r.var();
    if (v & ~uint64_t(07777)) r.fail("mode");
    m = uint16_t(v);
  }
  c.mtime.resize(n);
  uint64_t mt = 0;
  for (auto& m : c.mtime) m = int64_t(mt += uint64_t(unzigzag(r.var())));
  std::vector<uint32_t> plen(n), slen(n);
  for (auto& p : plen) p = uint32_t(r.var());
  for (auto& s : slen) s = uint32_t(r.var());
  c.path_end.resize(n);
  c.parent.resize(n);
  c.paths.reserve(bytes.size() * 2);
  std::vector<uint32_t> open; // enclosing directories (node indexes)
  size_t prev_at = 0, prev_len = 0; // the previous path in `paths` (an offset: the block may move as it grows)
  size_t end = 0;
  for (size_t i = 0; i < n; i++) {
    if (plen[i] > prev_len || slen[i] > kMaxPath) r.fail("path lengths");
    ByteSpan suffix = r.bytes(slen[i]);
    const size_t b = end;
    if (c.paths.size() < b + plen[i] + slen[i]) c.paths.resize(std::max(c.paths.size() * 2, b + plen[i] + slen[i]));
    const std::string_view prev(c.paths.data() + prev_at, prev_len);
    std::memmove(c.paths.data() + b, prev.data(), plen[i]);
    std::memcpy(c.paths.data() + b + plen[i], suffix.data(), slen[i]);
    end = b + plen[i] + slen[i];
    c.path_end[i] = uint32_t(end);
    std::string_view p(c.paths.data() + b, end - b);
    const size_t shared = plen[i];
    const size_t slash_in_shared = shared ? p.rfind('/', shared - 1) : std::string_view::npos;
    if (!path_ok(p, slash_in_shared == std::string_view::npos ? 0 : slash_in_shared + 1)) r.fail("bad path");
    if (i > 0 && !path_less(prev.substr(shared), p.substr(shared))) r.fail("path order");
    while (!open.empty()) {
      std::string_view d = c.path(open.back());
      if (p.size() > d.size() && p[d.size()] == '/' && p.compare(0, d.size(), d) == 0) break;
      open.pop_back();
    }
    size_t slash = p.rfind('/');
    if (slash != std::string_view::npos && (open.empty() || c.path(open.back()).size() != slash)) r.fail("parent");
    c.parent[i] = open.empty() ? 0 : open.back() + 1;
    if (c.type[i] == uint8_t(NodeType::Dir)) open.push_back(uint32_t(i));
    prev_at = b, prev_len = p.size();
  }
  c.size.assign(n, 0);
  c.digest.assign(n, 0);
  for (size_t i = 0; i < n; i++)
    if (c.type[i] == uint8_t(NodeType::File)) c.size[i] = r.var();
  std::vector<bool> named(nd);
  for (size_t i = 0; i < n; i++) {
    if (c.type[i] != uint8_t(NodeType::File)) continue;
    uint64_t k = r.var();
    if (k >= nd) r.fail("digest index");
    c.digest[i] = uint32_t(k);
    named[k] = true;
  }
  if (std::find(named.begin(), named.end(), false) != named.end()) r.fail("unnamed digest");
  for (size_t i = 0; i < n; i++)
    if (c.type[i] == uint8_t(NodeType::Symlink) || c.type[i] == uint8_t(NodeType::Hardlink))
      c.targets.emplace_back(uint32_t(i), std::string(r.vstr(kMaxPath)));
  for (size_t i = 0; i < n; i++) {
    if (c.type[i] != uint8_t(NodeType::File) && c.type[i] != uint8_t(NodeType::Symlink)) continue;
    uint64_t count = r.var();
    if (count == 0) continue;
    std::vector<uint64_t> offs;
    uint64_t at = 0;
    for (uint64_t k = 0; k < count; k++) {
      uint64_t root = c.roots.size() > 1 ? r.var() : 0;
      at += r.var();
      offs.push_back(make_reloc(at, unsigned(root)));
      at += root < c.roots.size() ? c.roots[root].size() : 0;
    }
    c.relocs.emplace_back(uint32_t(i), std::move(offs));
  }
  for (auto& [i, offs] : c.relocs)
    if (c.type[i] == uint8_t(NodeType::File)) (void)r.u8();
  if (!r.at_end()) r.fail("trailing bytes");
  return c;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::strcmp(argv[2], "nodes") != 0 && std::strcmp(argv[2], "compact") != 0)) {
    std::fprintf(stderr, "usage: %s CATALOG nodes|compact\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  Bytes bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.empty()) {
    std::fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[1]);
    return 2;
  }
  const bool compact = std::strcmp(argv[2], "compact") == 0;
  const long f0 = minor_faults();
  const double t0 = cpu_ms();
  size_t nodes = 0, keep = 0;
  double decoded = 0;
  if (compact) {
    auto c = std::make_unique<Compact>(decode_compact(bytes));
    decoded = cpu_ms();
    nodes = c->type.size();
    keep = c->parent.back();
  } else {
    auto c = std::make_unique<Catalog>(decode_catalog(bytes, "catalog"));
    DirSlots s = dir_slots(*c);
    decoded = cpu_ms();
    nodes = c->nodes.size();
    keep = s.parent.back();
  }
  const double t1 = cpu_ms();
  std::printf("%s nodes=%zu decode_ms=%.3f free_ms=%.3f total_ms=%.3f faults=%ld (%zu)\n", argv[2], nodes, decoded - t0,
              t1 - decoded, t1 - t0, minor_faults() - f0, keep);
  return 0;
}
