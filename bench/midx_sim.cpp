// hpak-midxsim: a simulated multi-pack index of many objects (issue 33, "a
// simulated 10^7-object index"). No pack is written: the layers are real
// midx files (formats/midx_format.hpp, encoded and parsed by hpak's own
// code) over synthetic digests and synthetic pack names, in the state N/A
// adds of A objects each leave behind when they run one at a time (one layer
// per set bit of N/A, the layer of bit b holding 2^b adds; the merge policy
// midx_layers_to_merge keeps exactly that). It then measures:
//   open     opening every layer as a reader does (MidxCheck::lookup: the
//            header and fanout; once per process) and as verify does
//            (MidxCheck::full: trailer, every digest's order and bucket)
//   add      M more adds of A fresh objects each, as Library::add_midx_layer
//            does them: the layers midx_layers_to_merge folds in are read,
//            one layer is encoded and written (temp file, rename), the merged
//            ones deleted; bytes written and seconds per add
//   full     one layer over everything (what gc and repair wrote before
//            issue 33's incremental gc; repair still does): bytes, seconds
//   lookup   L digests present (random) and L absent, each looked up through
//            the layers smallest first as the library reader does
//
//   hpak-midxsim [--objects N] [--per-add A] [--adds M] [--lookups L] DIR
// DIR (a new directory is made inside it) should be on tmpfs for the figures
// to be the index's cost, not the disk's. Defaults: N = 10,000,000, A = 200,
// M = 200, L = 1,000,000.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "base/os/file.hpp"
#include "bench/prng.hpp"
#include "formats/midx_format.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

Digest synthetic(uint64_t n) { // the n-th object's digest: uniform, distinct
  Digest d;
  uint64_t s = n * 0x2545f4914f6cdd1dULL + 7;
  for (int k = 0; k < 4; k++) {
    uint64_t v = bench::splitmix64(s);
    std::memcpy(d.data() + 8 * k, &v, 8);
  }
  return d;
}

Digest pack_name(uint64_t add) { return synthetic(~add); }

struct Layer {
  std::string path;
  MappedFile map;
  MidxView view;
};

std::string dir_of_run;
int serial = 0;

// Writes a layer (temp file, then rename, as publish_layer does) and maps it.
Layer write_layer(const std::vector<Digest>& packs, std::vector<MidxEntry> entries, uint64_t& bytes) {
  Bytes b = encode_midx(packs, std::move(entries));
  bytes = b.size();
  std::string path = dir_of_run + "/midx-" + std::to_string(serial++) + ".midx", tmp = path + ".tmp";
  FILE* f = fopen(tmp.c_str(), "wb");
  if (!f || fwrite(b.data(), 1, b.size(), f) != b.size() || fclose(f) != 0) {
    perror(tmp.c_str());
    exit(1);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    perror(path.c_str());
    exit(1);
  }
  Layer l{path, MappedFile(path), {}};
  l.view = MidxView(l.map.bytes(), path);
  return l;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
  uint64_t n = 10'000'000, a = 200, m = 200, lookups = 1'000'000;
  std::string dir;
  for (int i = 1; i < argc; i++) {
    std::string o = argv[i];
    auto num = [&] { return i + 1 < argc ? std::strtoull(argv[++i], nullptr, 10) : 0; };
    if (o == "--objects") n = num();
    else if (o == "--per-add") a = num();
    else if (o == "--adds") m = num();
    else if (o == "--lookups") lookups = num();
    else dir = o;
  }
  if (dir.empty() || a == 0 || n < a) {
    fprintf(stderr, "usage: hpak-midxsim [--objects N] [--per-add A] [--adds M] [--lookups L] DIR\n");
    return 2;
  }
  dir_of_run = dir + "/midxsim-" + std::to_string(getpid());
  if (mkdir(dir_of_run.c_str(), 0755) != 0) {
    perror(dir_of_run.c_str());
    return 1;
  }
  const uint64_t adds0 = n / a;
  printf("objects %llu in %llu adds of %llu (synthetic digests), layers: one per set bit of %llu\n", (unsigned long long)(adds0 * a),
         (unsigned long long)adds0, (unsigned long long)a, (unsigned long long)adds0);

  // The layers the adds leave: bit b of adds0 set -> a layer of 2^b adds.
  std::vector<Layer> layers; // smallest first
  uint64_t next_add = 0, total_bytes = 0;
  double t0 = now();
  for (int b = 63; b >= 0; b--) {
    if (!(adds0 >> b & 1)) continue;
    uint64_t k = uint64_t(1) << b;
    std::vector<Digest> packs;
    std::vector<MidxEntry> entries;
    for (uint64_t j = 0; j < k; j++, next_add++) {
      packs.push_back(pack_name(next_add));
      for (uint64_t o = 0; o < a; o++) entries.push_back({synthetic(next_add * a + o), uint32_t(j)});
    }
    // encode_midx wants packs sorted and ids into the sorted table.
    std::vector<uint32_t> rank(packs.size());
    std::vector<uint32_t> order(packs.size());
    for (uint32_t j = 0; j < order.size(); j++) order[j] = j;
    std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) { return packs[x] < packs[y]; });
    std::vector<Digest> sorted(packs.size());
    for (uint32_t j = 0; j < order.size(); j++) sorted[j] = packs[order[j]], rank[order[j]] = j;
    for (auto& e : entries) e.pack = rank[e.pack];
    uint64_t bytes = 0;
    layers.insert(layers.begin(), write_layer(sorted, std::move(entries), bytes));
    total_bytes += bytes;
  }
  printf("build: %zu layers, %.1f MiB, %.2f s\n", layers.size(), total_bytes / 1048576.0, now() - t0);

  // open: map and open every layer again (a reader's first load; verify's).
  auto open_all = [&](MidxCheck check) {
    std::vector<double> opens;
    for (int r = 0; r < 3; r++) {
      double t = now();
      uint64_t c = 0;
      for (auto& l : layers) {
        MappedFile f(l.path);
        MidxView v(f.bytes(), l.path, check);
        c += v.count();
      }
      opens.push_back(now() - t);
      if (c != adds0 * a) exit(1);
    }
    return median(opens);
  };
  printf("open every layer as a reader does (header and fanout): median of 3 %.6f s\n", open_all(MidxCheck::lookup));
  printf("open every layer as verify does (trailer, order, buckets): median of 3 %.3f s\n", open_all(MidxCheck::full));

  // lookups: present digests at random, then absent ones, smallest layer first.
  auto lookup = [&](const Digest& d) {
    for (auto& l : layers)
      if (l.view.find(d)) return true;
    return false;
  };
  bench::Rng rng(42);
  std::vector<Digest> hits(lookups), misses(lookups);
  for (auto& d : hits) d = synthetic(rng.next() % (adds0 * a));
  for (uint64_t i = 0; i < lookups; i++) misses[i] = synthetic((uint64_t(1) << 62) + i);
  double t = now();
  uint64_t found = 0;
  for (auto& d : hits) found += lookup(d);
  double hit_s = now() - t;
  t = now();
  for (auto& d : misses) found += lookup(d);
  double miss_s = now() - t;
  if (found != lookups) {
    fprintf(stderr, "lookups found %llu of %llu\n", (unsigned long long)found, (unsigned long long)lookups);
    return 1;
  }
  printf("lookup across %zu layers: present %.0f ns, absent %.0f ns (%llu each)\n", layers.size(), hit_s / lookups * 1e9,
         miss_s / lookups * 1e9, (unsigned long long)lookups);

  // M adds, as add_midx_layer does them.
  std::vector<double> secs, written;
  uint64_t sum = 0, worst = 0;
  for (uint64_t i = 0; i < m; i++, next_add++) {
    double s = now();
    std::vector<uint64_t> counts;
    for (auto& l : layers) counts.push_back(l.view.count());
    size_t fold = midx_layers_to_merge(counts, a);
    std::vector<Digest> packs{pack_name(next_add)};
    for (size_t k = 0; k < fold; k++) packs.insert(packs.end(), layers[k].view.packs().begin(), layers[k].view.packs().end());
    std::sort(packs.begin(), packs.end());
    auto id = [&](const Digest& p) { return uint32_t(std::lower_bound(packs.begin(), packs.end(), p) - packs.begin()); };
    std::vector<MidxEntry> entries;
    for (uint64_t o = 0; o < a; o++) entries.push_back({synthetic(next_add * a + o), id(pack_name(next_add))});
    for (size_t k = 0; k < fold; k++) {
      const MidxView& v = layers[k].view;
      for (uint64_t j = 0; j < v.count(); j++) entries.push_back({v.digest_at(j), id(v.packs()[v.pack_at(j)])});
    }
    uint64_t bytes = 0;
    Layer fresh = write_layer(packs, std::move(entries), bytes);
    for (size_t k = 0; k < fold; k++) unlink(layers[k].path.c_str());
    layers.erase(layers.begin(), layers.begin() + fold);
    layers.insert(std::upper_bound(layers.begin(), layers.end(), fresh.view.count(), [](uint64_t c, const Layer& l) { return c < l.view.count(); }),
                  std::move(fresh));
    secs.push_back(now() - s);
    written.push_back(double(bytes));
    sum += bytes;
    worst = std::max(worst, bytes);
  }
  printf("adds: %llu of %llu objects: index bytes written per add median %.1f KiB, mean %.1f KiB, max %.1f KiB; seconds median %.4f, max %.4f; "
         "layers after %zu\n",
         (unsigned long long)m, (unsigned long long)a, median(written) / 1024, m ? sum / 1024.0 / m : 0, worst / 1024.0, median(secs),
         secs.empty() ? 0 : *std::max_element(secs.begin(), secs.end()), layers.size());

  // full: one layer over everything (gc and repair before incremental gc).
  {
    double s = now();
    std::vector<Digest> packs;
    for (auto& l : layers) packs.insert(packs.end(), l.view.packs().begin(), l.view.packs().end());
    std::sort(packs.begin(), packs.end());
    auto id = [&](const Digest& p) { return uint32_t(std::lower_bound(packs.begin(), packs.end(), p) - packs.begin()); };
    std::vector<MidxEntry> entries;
    for (auto& l : layers)
      for (uint64_t j = 0; j < l.view.count(); j++) entries.push_back({l.view.digest_at(j), id(l.view.packs()[l.view.pack_at(j)])});
    uint64_t bytes = 0;
    Layer whole = write_layer(packs, std::move(entries), bytes);
    printf("full rewrite (one layer over everything): %.1f MiB, %.2f s\n", bytes / 1048576.0, now() - s);
    unlink(whole.path.c_str());
  }
  for (auto& l : layers) unlink(l.path.c_str());
  rmdir(dir_of_run.c_str());
  return 0;
}
