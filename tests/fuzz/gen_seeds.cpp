// Seed inputs the CLI cannot produce, for the fuzz corpus (tests/fuzz/make_corpus.sh):
// packs with raw (uncompressed) catalogs, so byte mutations edit the tree
// itself; a pack with a zstd dictionary entry and dictionary-coded blobs; a
// pack with two catalogs; every node type, relocations in files and symlinks,
// read-only directories; their indexes, a multi-pack index, raw catalogs
// (format 2, whose files carry relocation kinds, and one in format 1) and
// restore state files.
//
//   hpak_fuzz_seeds OUT_DIR    -> OUT_DIR/<target>/<seed files>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/pack/pack_writer.hpp"
#include "core/pack/relocation.hpp"
#include "core/restore/restore_state.hpp"
#include "base/os/file.hpp"
#include "base/zstd_codec.hpp"
#include "formats/catalog_format.hpp"
#include "formats/index_format.hpp"
#include "formats/midx_format.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {

// The seeds' node paths, kept for the whole run (each node is built before the
// catalog it goes into; Catalog's copy keeps it again).
PathRef kept(const std::string& path) {
  static PathStore store;
  return store.keep(path);
}

std::string out_dir;

void put(const std::string& target, const std::string& name, ByteSpan bytes) {
  std::string dir = out_dir + "/" + target;
  mkdir(dir.c_str(), 0755);
  std::string p = dir + "/" + name;
  int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw_errno("unable to create '" + p + "'");
  Fd g(fd);
  write_all(fd, bytes, p);
}

Bytes text(const std::string& s) { return Bytes(s.begin(), s.end()); }

const std::string kRoot = "/opt/env-root";

struct Built {
  Bytes pack;
  Bytes index;
  Digest file_sum;
  std::vector<Catalog> catalogs;
};

// Writes a pack through PackWriter into a temp file and reads it back.
// With `mirror_against_first`, each catalog after the first has its mirror
// stored against the first (Codec::ZstdBase), as pack --into writes it.
Built build(const std::vector<Catalog>& cats, const std::vector<std::pair<Bytes, bool>>& blobs, bool raw_catalog,
            const Bytes* dict = nullptr, bool mirror_against_first = false) {
  char tmpl[] = "/tmp/hpak-seed-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) throw_errno("mkstemp");
  Fd g(fd);
  PackWriter w(fd, tmpl, 3);
  std::unique_ptr<ZstdDict> zd;
  if (dict) {
    zd = std::make_unique<ZstdDict>(*dict, 3);
    w.append(Kind::Dict, Codec::Raw, sha256(*dict), dict->size(), *dict);
  }
  for (auto& [raw, compress] : blobs) {
    Digest d = sha256(raw);
    if (w.contains(d)) continue;
    if (zd) {
      Bytes stored;
      zstd_compress(raw, 3, zd.get(), stored);
      w.append(Kind::Blob, Codec::ZstdDict, d, raw.size(), stored);
    } else if (compress) {
      Bytes stored;
      zstd_compress(raw, 3, nullptr, stored);
      w.append(Kind::Blob, Codec::Zstd, d, raw.size(), stored);
    } else {
      w.append(Kind::Blob, Codec::Raw, d, raw.size(), raw);
    }
  }
  Bytes first_raw;
  for (auto& c : cats) {
    Bytes raw = encode_catalog(c, c.version);
    Digest d = sha256(raw);
    if (mirror_against_first && !first_raw.empty()) {
      Bytes stored, frame;
      zstd_compress(raw, 3, nullptr, stored);
      w.append(Kind::Catalog, Codec::Zstd, d, raw.size(), stored);
      zstd_compress_against(raw, first_raw, 3, frame);
      Digest base = sha256(first_raw);
      Bytes mirror(base.begin(), base.end());
      mirror.insert(mirror.end(), frame.begin(), frame.end());
      w.append(Kind::Catalog, Codec::ZstdBase, d, raw.size(), mirror, 1, true);
      continue;
    }
    if (first_raw.empty()) first_raw = raw;
    if (raw_catalog) {
      w.append(Kind::Catalog, Codec::Raw, d, raw.size(), raw);
      w.append(Kind::Catalog, Codec::Raw, d, raw.size(), raw, 1, true);
    } else {
      Bytes stored;
      zstd_compress(raw, 3, nullptr, stored);
      w.append(Kind::Catalog, Codec::Zstd, d, raw.size(), stored);
      w.append(Kind::Catalog, Codec::Zstd, d, raw.size(), stored, 1, true);
    }
  }
  PackResult r = w.finish();
  Built b;
  b.pack = read_file(tmpl);
  unlink(tmpl);
  b.index = encode_index(r.records, r.size, r.pack_sum);
  b.file_sum = r.file_sum;
  b.catalogs = cats;
  return b;
}

Node dir(const std::string& path, uint32_t mode = 0755) {
  Node n;
  n.type = NodeType::Dir;
  n.mode = mode;
  n.path = kept(path);
  n.mtime_ns = 1700000000123456789;
  return n;
}

Node file(const std::string& path, const Bytes& content, const std::vector<std::string>& roots, uint32_t mode = 0644) {
  Node n;
  n.type = NodeType::File;
  n.mode = mode;
  n.path = kept(path);
  n.size = content.size();
  n.digest = sha256(content);
  n.relocs = find_relocations(content, roots);
  if (!n.relocs.empty()) n.reloc_kind = classify_relocated(content, n.relocs, roots);
  n.mtime_ns = 1600000000000000000;
  return n;
}

Node symlink(const std::string& path, const std::string& target, const std::vector<std::string>& roots) {
  Node n;
  n.type = NodeType::Symlink;
  n.mode = 0777;
  n.path = kept(path);
  n.target = target;
  n.size = target.size();
  n.relocs = find_relocations(ByteSpan(reinterpret_cast<const uint8_t*>(target.data()), target.size()), roots);
  return n;
}

Node hardlink(const std::string& path, const Node& first) {
  Node n;
  n.type = NodeType::Hardlink;
  n.mode = first.mode;
  n.path = kept(path);
  n.target = first.path;
  n.size = first.size;
  return n;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  out_dir = argv[1];
  mkdir(out_dir.c_str(), 0755);
  try {
    std::vector<std::string> roots{kRoot, "/usr/local"};
    Bytes script = text("#!/bin/sh\nexec " + kRoot + "/bin/python \"$@\"\n");
    Bytes conf = text("prefix=" + kRoot + "\nlibdir=/usr/local/lib\nname=seed\n");
    Bytes zeros(3000, 0);
    Bytes empty;
    Bytes readme = text("A small tree for the fuzz corpus.\n");
    // Binaries holding the root: an ELF-like file (in-place kind) and a .pyc-like one (same-length kind).
    Bytes elf = text(std::string("\x7f" "ELF\x02\x01\x01\0", 8) + kRoot + std::string("/lib\0tail\0", 10));
    Bytes pyc = text(std::string("\xa7\x0d\x0d\x0a\0\0\0\0\0\0\0\0\0\0\0\0\xe3", 17) + kRoot + "/lib/m.py");

    Catalog a;
    a.name = "seed-a";
    a.roots = roots;
    a.nodes.push_back(file("README", readme, roots));
    a.nodes.push_back(dir("bin"));
    a.nodes.push_back(file("bin/prog", elf, roots, 0755));
    a.nodes.push_back(file("bin/run", script, roots, 0755));
    a.nodes.push_back(hardlink("bin/run2", a.nodes.back()));
    a.nodes.push_back(symlink("bin/self", kRoot + "/bin/run", roots));
    a.nodes.push_back(dir("etc", 0555));
    a.nodes.push_back(file("etc/env.conf", conf, roots, 0600));
    a.nodes.push_back(file("etc/zero", zeros, roots));
    a.nodes.push_back(dir("lib"));
    a.nodes.push_back(dir("lib/empty", 0700));
    a.nodes.push_back(file("lib/m.pyc", pyc, roots));
    a.nodes.push_back(file("lib/none", empty, roots, 04755));
    a.nodes.push_back(symlink("lib/up", "../etc", roots));
    std::vector<std::pair<Bytes, bool>> blobs{{readme, false}, {script, false}, {conf, true}, {zeros, true}, {empty, false},
                                              {elf, false},    {pyc, true}};

    Catalog b;
    b.name = "seed-b";
    b.nodes.push_back(dir("d"));
    b.nodes.push_back(file("d/f", readme, {}));
    b.nodes.push_back(file("g", zeros, {}));

    Built raw = build({a}, blobs, true);
    Built zst = build({a}, blobs, false);
    Built two = build({a, b}, blobs, true);
    Built based = build({a, b}, blobs, false, nullptr, /*mirror_against_first=*/true);
    Catalog a1 = a;
    a1.version = 1; // no relocation kinds: a restore classifies from the objects
    Built old = build({a1}, blobs, true);

    // A dictionary pack: many similar small files.
    std::vector<std::pair<Bytes, bool>> similar;
    Bytes samples;
    std::vector<size_t> sizes;
    Catalog c;
    c.name = "seed-dict";
    for (int i = 0; i < 200; i++) {
      char line[160];
      snprintf(line, sizeof line, "{\"name\": \"pkg-%d\", \"version\": \"1.%d.%d\", \"depends\": [\"python >=3.%d\", \"zlib\"]}\n", i,
               i % 7, i % 13, i % 11);
      Bytes content = text(line);
      samples.insert(samples.end(), content.begin(), content.end());
      sizes.push_back(content.size());
      if (i < 12) {
        similar.push_back({content, true});
        char name[32];
        snprintf(name, sizeof name, "m%02d.json", i);
        c.nodes.push_back(file(name, content, {}));
      }
    }
    Bytes dict = zstd_train_dict(samples, sizes, 1024, 3);
    Built dic = dict.empty() ? build({c}, similar, true) : build({c}, similar, true, &dict);
    if (dict.empty()) fprintf(stderr, "hpak_fuzz_seeds: dictionary training failed; dict seed has no dictionary\n");

    struct {
      const char* name;
      const Built* b;
    } all[] = {{"raw-catalog", &raw}, {"zstd-catalog", &zst}, {"two-catalogs", &two}, {"mirror-against-base", &based}, {"dict", &dic}, {"raw-catalog-v1", &old}};
    for (auto& s : all) {
      put("fuzz_unpack", std::string(s.name) + ".hpak", s.b->pack);
      put("fuzz_pack_entry", std::string(s.name) + ".hpak", s.b->pack);
      put("fuzz_index", std::string(s.name) + ".hidx", s.b->index);
    }
    put("fuzz_catalog", "seed-a.cat", encode_catalog(a));
    put("fuzz_catalog", "seed-a-v1.cat", encode_catalog(a, 1)); // as hpak before catalog format 2 wrote it
    put("fuzz_catalog", "seed-a-v2.cat", encode_catalog(a, 2)); // as hpak before catalog format 3 wrote it
    put("fuzz_catalog", "seed-b.cat", encode_catalog(b));
    put("fuzz_catalog", "seed-dict.cat", encode_catalog(c));

    // A midx over the four packs.
    std::vector<Digest> names{raw.file_sum, zst.file_sum, two.file_sum, dic.file_sum};
    std::sort(names.begin(), names.end());
    std::vector<MidxEntry> entries;
    for (uint32_t p = 0; p < names.size(); p++)
      for (auto& s : all)
        if (s.b->file_sum == names[p]) {
          IndexView v(s.b->index, s.name);
          for (uint64_t i = 0; i < v.count(); i++) entries.push_back({v.digest_at(i), p});
        }
    put("fuzz_midx", "four-packs.midx", encode_midx(names, entries));
    put("fuzz_midx", "empty.midx", encode_midx({}, {}));

    // A decompression-bomb lie on the relocating path: the catalog says a
    // 32 GiB file with a relocation, the entry declares 32 GiB for a frame of
    // a few bytes. fuzz_unpack relocates when the input's middle byte has bit
    // 2 set: pad after the trailer until it does. (Once allocated 32 GiB.)
    {
      char tmpl[] = "/tmp/hpak-seed-XXXXXX";
      int fd = mkstemp(tmpl);
      if (fd < 0) throw_errno("mkstemp");
      Fd g(fd);
      PackWriter w(fd, tmpl, 3);
      Bytes small = text(kRoot + "/lib\n");
      Bytes frame;
      zstd_compress(small, 3, nullptr, frame);
      const uint64_t huge = 32ull << 30;
      Digest d = sha256(small);
      w.append(Kind::Blob, Codec::Zstd, d, huge, frame);
      Catalog bomb;
      bomb.name = "bomb";
      bomb.roots = {kRoot};
      Node f = file("big", small, bomb.roots);
      f.size = huge;
      bomb.nodes.push_back(f);
      Bytes raw = encode_catalog(bomb);
      w.append(Kind::Catalog, Codec::Raw, sha256(raw), raw.size(), raw);
      w.finish();
      Bytes pack = read_file(tmpl);
      unlink(tmpl);
      while (!(pack[pack.size() / 2] & 4)) pack.push_back(0);
      put("fuzz_unpack", "regress-relocate-bomb.hpak", pack);
    }

    // Restore states: complete and incomplete.
    std::string sdir = out_dir + "/fuzz_restore_state";
    mkdir(sdir.c_str(), 0755);
    Fd sfd(open(sdir.c_str(), O_RDONLY | O_DIRECTORY));
    for (int complete = 0; complete < 2; complete++) {
      RestoreState st;
      st.complete = complete;
      st.fence_ns = 1700000000000000000;
      Bytes raw = encode_catalog(complete ? a : b);
      st.set_catalog_raw(raw);
      st.catalog_digest = sha256(raw);
      st.target = "/work/target";
      st.library = "/work/lib";
      st.name = complete ? "seed-a" : "seed-b";
      write_state(sfd.get(), sdir, st);
      std::string to = sdir + (complete ? "/complete.state" : "/incomplete.state");
      if (rename((sdir + "/.hpak-state").c_str(), to.c_str()) != 0) throw_errno("rename");
    }
  } catch (const Error& e) {
    fprintf(stderr, "hpak_fuzz_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
