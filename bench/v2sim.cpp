// hpak-v2sim: sizes the pack-format-v2 candidates of issue 15 on one tree,
// without writing a pack. Throwaway measuring tool (kept so the table in
// bench/RESULTS.md can be reproduced); it does not share code with core/.
//
//   hpak-v2sim [--level L] [--catalog-bytes N] DIR
//
// Walks DIR like `hpak pack` (depth-first, siblings sorted bytewise), keeps
// regular files, dedups them by SHA-256 in first-seen order, and prints one
// line per candidate: the bytes of pack content + index, where
//   v1        72-byte entry header + each object compressed alone, 72 B/object index
//   dict      v1 + a per-pack zstd dictionary (64 KiB, trained on the small objects)
//   blkB      small objects (raw < B/2) concatenated in pack order into blocks of
//             ~B KiB raw, each block one zstd frame; per block a 48-byte header and
//             a 36-byte member (digest + u32 raw_len) per object; large objects as v1;
//             index records 44 B/object (digest 32 + offset u64 + member u32)
//   blkB+dict the same, each block compressed with the trained dictionary
//   blkB/idx20 blocks with a 20 B/object index (8-byte digest prefix + offset + member)
// `--catalog-bytes` (the catalogs' share of a real v1 pack, measured by the
// caller) is added to every candidate so totals compare with a .tar.zst.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <openssl/sha.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>
#include <zdict.h>
#include <zstd.h>

namespace {

using Bytes = std::vector<uint8_t>;

struct Obj {
  Bytes raw;
};

void walk(const std::string& dir, std::vector<std::string>& files) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  for (auto& n : names) {
    std::string p = dir + "/" + n;
    struct stat st;
    if (lstat(p.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) walk(p, files);
    else if (S_ISREG(st.st_mode)) files.push_back(p);
  }
}

Bytes slurp(const std::string& p) {
  Bytes b;
  int fd = open(p.c_str(), O_RDONLY);
  if (fd < 0) return b;
  struct stat st;
  fstat(fd, &st);
  b.resize(size_t(st.st_size));
  size_t got = 0;
  while (got < b.size()) {
    ssize_t n = read(fd, b.data() + got, b.size() - got);
    if (n <= 0) break;
    got += size_t(n);
  }
  b.resize(got);
  close(fd);
  return b;
}

size_t zsize(const uint8_t* p, size_t n, int level, ZSTD_CDict* cd, ZSTD_CCtx* cx) {
  if (level <= 0) return n;
  Bytes out(ZSTD_compressBound(n));
  size_t r = cd ? ZSTD_compress_usingCDict(cx, out.data(), out.size(), p, n, cd) : ZSTD_compressCCtx(cx, out.data(), out.size(), p, n, level);
  if (ZSTD_isError(r)) return n;
  return std::min(r, n); // stored raw when compression does not pay
}

struct Sizes {
  uint64_t pack = 0, index = 0, blocks = 0, max_block_raw = 0;
};

Sizes v1(const std::vector<Obj>& objs, int level, ZSTD_CDict* cd, size_t dict_bytes, ZSTD_CCtx* cx) {
  Sizes s;
  s.pack = 32 + 32 + 32 + dict_bytes + (dict_bytes ? 72 : 0);
  for (auto& o : objs) s.pack += 72 + zsize(o.raw.data(), o.raw.size(), level, cd, cx);
  s.index = 56 + 1024 + 32 + 72 * objs.size();
  return s;
}

Sizes blocks(const std::vector<Obj>& objs, int level, size_t target, ZSTD_CDict* cd, size_t dict_bytes, ZSTD_CCtx* cx,
             size_t index_rec) {
  Sizes s;
  s.pack = 32 + 32 + 32 + dict_bytes + (dict_bytes ? 72 : 0);
  Bytes cur;
  size_t members = 0;
  auto close_block = [&] {
    if (members == 0) return;
    s.pack += 48 + 36 * members + zsize(cur.data(), cur.size(), level, cd, cx);
    s.max_block_raw = std::max<uint64_t>(s.max_block_raw, cur.size());
    s.blocks++;
    cur.clear();
    members = 0;
  };
  for (auto& o : objs) {
    if (o.raw.size() >= target / 2) {
      s.pack += 72 + zsize(o.raw.data(), o.raw.size(), level, nullptr, cx);
      continue;
    }
    if (!cur.empty() && cur.size() + o.raw.size() > target) close_block();
    cur.insert(cur.end(), o.raw.begin(), o.raw.end());
    members++;
  }
  close_block();
  s.index = 56 + 1024 + 32 + index_rec * objs.size();
  return s;
}

Bytes train(const std::vector<Obj>& objs, size_t cap) {
  Bytes samples;
  std::vector<size_t> lens;
  for (auto& o : objs) {
    if (o.raw.size() >= 64 * 1024 || o.raw.empty()) continue;
    if (samples.size() + o.raw.size() > (64u << 20)) break;
    samples.insert(samples.end(), o.raw.begin(), o.raw.end());
    lens.push_back(o.raw.size());
  }
  Bytes dict(cap);
  if (lens.size() < 10) return {};
  size_t r = ZDICT_trainFromBuffer(dict.data(), dict.size(), samples.data(), lens.data(), unsigned(lens.size()));
  if (ZDICT_isError(r)) return {};
  dict.resize(r);
  return dict;
}

} // namespace

int main(int argc, char** argv) {
  int level = 3;
  uint64_t catalog = 0;
  std::string dir;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--level" && i + 1 < argc) level = std::atoi(argv[++i]);
    else if (a == "--catalog-bytes" && i + 1 < argc) catalog = std::strtoull(argv[++i], nullptr, 10);
    else dir = a;
  }
  if (dir.empty()) {
    std::fprintf(stderr, "usage: hpak-v2sim [--level L] [--catalog-bytes N] DIR\n");
    return 2;
  }
  std::vector<std::string> files;
  walk(dir, files);
  std::map<std::string, bool> seen;
  std::vector<Obj> objs;
  uint64_t raw_total = 0, small = 0;
  for (auto& f : files) {
    Bytes b = slurp(f);
    uint8_t md[32];
    SHA256(b.data(), b.size(), md);
    std::string key(reinterpret_cast<char*>(md), 32);
    if (!seen.emplace(key, true).second) continue;
    raw_total += b.size();
    if (b.size() < 1024) small++;
    objs.push_back({std::move(b)});
  }
  std::printf("# %s: %zu files, %zu unique objects (%llu under 1 KiB), %llu raw bytes, level %d, catalogs %llu bytes\n",
              dir.c_str(), files.size(), objs.size(), (unsigned long long)small, (unsigned long long)raw_total, level,
              (unsigned long long)catalog);
  std::printf("%-16s %12s %12s %12s %8s\n", "candidate", "pack", "index", "total", "blocks");
  ZSTD_CCtx* cx = ZSTD_createCCtx();
  auto row = [&](const char* name, const Sizes& s) {
    std::printf("%-16s %12llu %12llu %12llu %8llu\n", name, (unsigned long long)(s.pack + catalog), (unsigned long long)s.index,
                (unsigned long long)(s.pack + catalog + s.index), (unsigned long long)s.blocks);
  };
  row("v1", v1(objs, level, nullptr, 0, cx));
  Bytes dict = level > 0 ? train(objs, 64 * 1024) : Bytes{};
  ZSTD_CDict* cd = dict.empty() ? nullptr : ZSTD_createCDict(dict.data(), dict.size(), level);
  if (cd) row("dict", v1(objs, level, cd, dict.size(), cx));
  for (size_t kib : {16, 32, 64, 128}) {
    std::string n = "blk" + std::to_string(kib);
    row(n.c_str(), blocks(objs, level, kib * 1024, nullptr, 0, cx, 44));
    if (cd) row((n + "+dict").c_str(), blocks(objs, level, kib * 1024, cd, dict.size(), cx, 44));
    row((n + "/idx20").c_str(), blocks(objs, level, kib * 1024, nullptr, 0, cx, 20));
  }
  if (cd) ZSTD_freeCDict(cd);
  ZSTD_freeCCtx(cx);
  return 0;
}
