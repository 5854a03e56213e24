// core/library_add: the store rule of the objects an add writes again after a
// concurrent gc took them away (`--level 0` stores them raw, like the first add).
#include <doctest/doctest.h>
#include <cstdio>
#include <filesystem>
#include <string>

#include "core/library/library.hpp"
#include "core/pack/pack_reader.hpp"
#include "tree_fixture.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {

// Files that zstd shrinks a lot (a level-0 pack must still hold them raw).
void compressible_tree(const std::string& root, int n) {
  fx::mkdirs(root + "/d");
  for (int i = 0; i < n; i++) fx::write_file(root + "/d/f" + std::to_string(i), std::string(4096, char('a' + i % 26)) + std::to_string(i));
}

// Every blob entry of every pack in the library: {codec raw count, zstd count}.
std::pair<int, int> blob_codecs(const std::string& root) {
  int raw = 0, zstd = 0;
  for (auto& e : std::filesystem::directory_iterator(root + "/packs")) {
    if (e.path().extension() != ".hpak") continue;
    PackReader p(e.path().string(), /*use_index_file=*/false);
    for (uint64_t i = 0; i < p.index().count(); i++) {
      IndexRecord r = p.index().record_at(i);
      if (r.kind != Kind::Blob) continue;
      (r.codec == Codec::Raw ? raw : zstd)++;
    }
  }
  return {raw, zstd};
}

} // namespace

TEST_CASE("library: add_tree at level 0 re-adds objects a concurrent gc took away uncompressed") {
  fx::TempDir dir("level0");
  std::string root = dir / "lib";
  Library::init(root);
  std::string src = dir / "env";
  compressible_tree(src, 8);
  Library lib(root);
  PackOptions o;
  o.threads = 2;
  o.level = 0;
  Library::AddResult a = lib.add_tree(src, "a", o);
  auto [raw1, zstd1] = blob_codecs(root);
  CHECK(raw1 == 8);
  CHECK(zstd1 == 0);
  std::string idx = index_path_for(root + "/packs/" + a.pack_name);

  // The second add finds every object present; then, before its name is set,
  // a gc condemns the only pack holding them (its index renamed away), so the
  // add writes them again.
  bool condemned = false;
  o.progress = [&](std::string_view phase, uint64_t done, uint64_t total) {
    if (phase == "pack" && done == total && !condemned) {
      REQUIRE(rename(idx.c_str(), (idx + ".condemned").c_str()) == 0);
      condemned = true;
    }
  };
  Library::AddResult b = lib.add_tree(src, "b", o);
  REQUIRE(condemned);
  CHECK(b.repairs == 1);
  // The condemned pack's index is gone, so the scan sees both packs: 8 blobs
  // from each, all raw as --level 0 asks.
  auto [raw2, zstd2] = blob_codecs(root);
  CHECK(raw2 == 16);
  CHECK(zstd2 == 0);
}
