// core/large_copy + the large-object paths of materialize and the packer
// (issue 18): copy_file_range and its pread/write fallback for any length;
// raw objects of every size around the thresholds written exactly, checked
// (XXH3 always, SHA-256 with verify) and removed when damaged or forged;
// compressed and relocated objects streamed across buffer boundaries; the
// windowed relocation scan equal to the whole-file one; large files packed
// byte-identically whatever the worker count, incompressible ones stored raw.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/pack/large_copy.hpp"
#include "core/restore/materialize.hpp"
#include "core/pack/pack_reader.hpp"
#include "core/pack/packer.hpp"
#include "core/pack/relocation.hpp"
#include "core/restore/target.hpp"
#include "base/hash.hpp"
#include "formats/index_format.hpp"
#include "formats/pack_format.hpp"
#include "tree_fixture.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {

PackOptions popts(int level = 3, unsigned threads = 2) {
  PackOptions o;
  o.threads = threads;
  o.level = level;
  o.name = "env";
  return o;
}

MaterializeStats unpack(const std::string& pack_path, const std::string& target, bool verify = true,
                        const std::string& relocate_to = "") {
  PackReader pack(pack_path);
  Catalog cat = pack.load_catalog();
  Fd fd = open_unpack_target(target, cat, false);
  MaterializeOptions mo;
  mo.threads = 2;
  mo.verify = verify;
  mo.relocate_to.path = relocate_to;
  PackSource src(pack);
  return materialize(cat, src, fd.get(), target, mo);
}

Bytes random_bytes(size_t n, uint64_t seed) {
  fx::Rng rng(seed);
  return fx::make_content(rng, n, false);
}

dev_t dev_of(const std::string& path) {
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  return st.st_dev;
}

} // namespace

TEST_CASE("copy_fd_range: any length, in the kernel within a file system, through a buffer across") {
  fx::TempDir shm_dir("cfr");
  const bool have_shm = access("/dev/shm", W_OK) == 0;
  std::string src_dir = have_shm ? std::string("/dev/shm") : shm_dir.path();
  fx::TempDir here("cfr"); // $TMPDIR: ext4 on the CI machine
  std::string src = src_dir + "/hpak-cfr-src-" + std::to_string(getpid());
  Bytes data = random_bytes(2 * kLargeChunk + 13, 1);
  fx::write_file(src, data);
  struct Unlink {
    std::string p;
    ~Unlink() { unlink(p.c_str()); }
  } cleanup{src};
  Fd in(open(src.c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(in);
  for (std::string dst_dir : {src_dir, here.path()}) {
    CAPTURE(dst_dir);
    const bool same_fs = dev_of(dst_dir) == dev_of(src_dir);
    struct Case {
      uint64_t off, len;
    };
    for (Case c : {Case{0, 0}, Case{5, 1}, Case{3, kLargeChunk + 5}, Case{0, data.size()}}) {
      CAPTURE(c.off);
      CAPTURE(c.len);
      std::string dst = dst_dir + "/hpak-cfr-dst-" + std::to_string(getpid());
      unlink(dst.c_str());
      Fd out(open(dst.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
      REQUIRE(out);
      const uint64_t k0 = copy_counts().kernel, f0 = copy_counts().fallback;
      copy_fd_range(in.get(), c.off, out.get(), c.len, src, dst);
      out.reset();
      Bytes got = fx::read_file(dst);
      unlink(dst.c_str());
      CHECK(got == Bytes(data.begin() + long(c.off), data.begin() + long(c.off + c.len)));
      CHECK(copy_counts().kernel - k0 + copy_counts().fallback - f0 == c.len);
      if (!same_fs) CHECK(copy_counts().fallback - f0 == c.len); // EXDEV: all through the buffer
    }
  }
  // A source shorter than the range: an error, not a short file.
  std::string dst = here / "short";
  Fd out(open(dst.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  CHECK_THROWS_WITH_AS(copy_fd_range(in.get(), data.size() - 10, out.get(), 20, src, dst), doctest::Contains("ends inside"), Error);
}

TEST_CASE("materialize: raw objects of every size around the thresholds, verified or not") {
  fx::TempDir dir("lc");
  std::string src = dir / "src";
  fx::mkdirs(src);
  const std::vector<uint64_t> sizes = {0, 1, kKernelCopyThreshold - 1, kKernelCopyThreshold, kOverlapThreshold - 1,
                                       kOverlapThreshold + kLargeChunk + 7};
  uint64_t copied = 0;
  for (size_t i = 0; i < sizes.size(); i++) {
    fx::write_file(src + "/f" + std::to_string(i), random_bytes(sizes[i], 10 + i));
    if (sizes[i] >= kKernelCopyThreshold) copied += sizes[i];
  }
  pack_to_file(src, dir / "raw.hpak", popts(0));
  pack_to_file(src, dir / "z.hpak", popts(3)); // random bytes: stored raw at level 3 too
  {
    PackReader p(dir / "z.hpak");
    for (auto& n : p.load_catalog().nodes)
      if (n.type == NodeType::File) CHECK(p.find(n.digest)->codec == Codec::Raw);
  }
  for (std::string pack : {"raw", "z"})
    for (bool verify : {true, false}) {
      CAPTURE(pack);
      CAPTURE(verify);
      std::string out = dir / (pack + (verify ? "-v" : "-n"));
      const uint64_t k0 = copy_counts().kernel, f0 = copy_counts().fallback;
      unpack(dir / (pack + ".hpak"), out, verify);
      CHECK(copy_counts().kernel - k0 + copy_counts().fallback - f0 == copied);
      auto diffs = fx::compare_trees(src, out);
      CHECK_MESSAGE(diffs.empty(), (diffs.empty() ? "" : diffs[0]));
    }
}

TEST_CASE("materialize: compressed and relocated objects streamed across buffer boundaries") {
  fx::TempDir dir("lcz");
  std::string src = dir / "src";
  fx::mkdirs(src);
  fx::Rng rng(4);
  Bytes text = fx::make_content(rng, 2 * kLargeChunk + 12345, true);
  // The root where chunks of the 4 MiB decode buffer and the 8 MiB threshold meet.
  for (size_t at : {size_t(0), size_t(4u << 20) - 3, size_t(kLargeChunk) - 5, text.size() - src.size()})
    std::copy(src.begin(), src.end(), text.begin() + long(at));
  fx::write_file(src + "/text", text);
  fx::write_file(src + "/plain", fx::make_content(rng, kLargeChunk + 1, true));
  pack_to_file(src, dir / "env.hpak", popts(3));
  PackReader p(dir / "env.hpak");
  for (auto& n : p.load_catalog().nodes)
    if (n.type == NodeType::File) CHECK(p.find(n.digest)->codec == Codec::Zstd);
  unpack(dir / "env.hpak", dir / "same");
  CHECK(fx::compare_trees(src, dir / "same").empty());
  std::string target = dir / "relocated-into-a-longer-path";
  unpack(dir / "env.hpak", target, true, target);
  CHECK(fx::to_string(fx::read_file(target + "/text")) == fx::replace_all(fx::to_string(text), src, target));
  CHECK(fx::read_file(target + "/plain") == fx::read_file(src + "/plain"));
}

TEST_CASE("materialize: a damaged or forged large raw object never leaves a file behind") {
  fx::TempDir dir("lcbad");
  const uint64_t size = kOverlapThreshold + kLargeChunk + 7; // checked while it is copied
  Bytes content = random_bytes(size, 21);
  SUBCASE("a flipped byte past the first window: XXH3 catches it, verified or not") {
    fx::mkdirs(dir / "src");
    fx::write_file(dir / "src/big", content);
    PackFileResult pr = pack_to_file(dir / "src", dir / "env.hpak", popts(0));
    Bytes b = fx::read_file(dir / "env.hpak");
    for (auto& r : pr.pack.records)
      if (r.kind == Kind::Blob) b[r.offset + kEntryHeaderSize + kLargeChunk + 100] ^= 0x20;
    fx::replace_file(dir / "env.hpak", b);
    for (bool verify : {true, false}) {
      CAPTURE(verify);
      std::string out = dir / (verify ? "v" : "n");
      CHECK_THROWS_WITH_AS(unpack(dir / "env.hpak", out, verify), doctest::Contains("fail their checksum"), Error);
      CHECK_FALSE(path_exists(out + "/big"));
    }
  }
  SUBCASE("a forged object (stored checksum right, content not its name): verify catches it") {
    // A pack whose entry is named with another digest: its XXH3 is right.
    Digest forged = sha256(content);
    forged[7] ^= 1;
    {
      AtomicFile f(dir / "env.hpak", 0644);
      PackWriter w(f.fd(), dir / "env.hpak", 0);
      w.append(Kind::Blob, Codec::Raw, forged, content.size(), content);
      Catalog cat;
      cat.name = "env";
      Node n;
      n.type = NodeType::File;
      n.mode = 0644;
      n.size = content.size();
      n.path = "big";
      n.digest = forged;
      cat.nodes.push_back(n);
      append_catalog(w, cat, 3);
      PackResult res = w.finish();
      AtomicFile idx(index_path_for(dir / "env.hpak"), 0644);
      idx.write(encode_index(res.records, res.size, res.pack_sum));
      f.commit(false);
      idx.commit(false);
    }
    CHECK_THROWS_WITH_AS(unpack(dir / "env.hpak", dir / "v", true), doctest::Contains("does not match its name"), Error);
    CHECK_FALSE(path_exists(dir / "v/big"));
    unpack(dir / "env.hpak", dir / "n", false); // as documented: without verify only the stored checksum is checked
    CHECK(fx::read_file(dir / "n/big") == content);
  }
}

TEST_CASE("RelocationScanner: windows give exactly what the whole-file scan gives") {
  const std::vector<std::string> roots = {"/opt/env", "/opt/env/lib", "/o/o/o"};
  fx::Rng rng(9);
  Bytes data = random_bytes(300000, 9);
  // Plant roots (some overlapping each other) everywhere, windows' edges included.
  for (int k = 0; k < 400; k++) {
    const std::string& r = roots[rng.below(roots.size())];
    size_t at = rng.below(data.size() - r.size());
    std::copy(r.begin(), r.end(), data.begin() + long(at));
  }
  for (size_t w : {size_t(4096) * 5 + 3, size_t(3) * 1000 + 1, size_t(64)}) {
    for (size_t edge = w; edge < data.size(); edge += w * 7) {
      const std::string& r = roots[rng.below(roots.size())];
      size_t at = edge - 1 - rng.below(std::min(r.size(), edge));
      if (at + r.size() <= data.size()) std::copy(r.begin(), r.end(), data.begin() + long(at));
    }
    std::string rr = "/o/o/o/o/o"; // self-overlapping occurrences straddling an edge
    std::copy(rr.begin(), rr.end(), data.begin() + long(w - 4));
    CAPTURE(w);
    RelocationScanner scan(roots);
    for (size_t pos = 0; pos < data.size(); pos += w) {
      size_t own = std::min(w, data.size() - pos);
      scan.feed(ByteSpan(data).subspan(pos, std::min(own + scan.lookahead(), data.size() - pos)), own, pos);
    }
    std::vector<uint64_t> want = find_relocations(data, roots);
    CHECK(want.size() > 300);
    CHECK(scan.finish() == want);
  }
}

TEST_CASE("packer: large files above the window, byte-identical packs whatever the worker count") {
  fx::TempDir dir("lcp");
  std::string src = dir / "src";
  fx::mkdirs(src);
  fx::Rng rng(5);
  fx::write_file(src + "/text", fx::make_content(rng, 2 * (8u << 20) + 77, true)); // compressible
  fx::write_file(src + "/random", random_bytes((8u << 20) * 2 + 3, 6));             // incompressible
  fx::write_big_file(src + "/blocks", 20u << 20, 7); // a random 1 MiB block repeated: compressible only across blocks
  fx::write_file(src + "/empty", "");
  fx::write_file(src + "/one", "1");
  std::vector<Bytes> packs;
  for (unsigned threads : {1u, 2u, 3u}) {
    PackOptions o = popts(3, threads);
    o.large_threshold = 1 << 20;
    std::string out = dir / ("j" + std::to_string(threads) + ".hpak");
    pack_to_file(src, out, o);
    packs.push_back(fx::read_file(out));
  }
  CHECK(packs[1] == packs[0]);
  CHECK(packs[2] == packs[0]);
  PackReader p(dir / "j1.hpak");
  auto codec_of = [&](const std::string& name) { return p.find(sha256(fx::read_file(src + "/" + name)))->codec; };
  CHECK(codec_of("text") == Codec::Zstd);
  CHECK(codec_of("blocks") == Codec::Zstd);
  CHECK(codec_of("random") == Codec::Raw);
  unpack(dir / "j1.hpak", dir / "out");
  CHECK(fx::compare_trees(src, dir / "out").empty());
}
