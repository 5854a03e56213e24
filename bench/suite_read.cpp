// bench/suite_read.cpp — the random-read suite (in-process: PackReader::read
// of N random objects by digest vs open/read/close of the same files) and the
// verify suite (hpak verify vs sha256sum over the unpacked files).
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <stdexcept>

#include "base/os/sys.hpp"
#include "bench/suite_ctx.hpp"
#include "core/pack/pack_reader.hpp"
#include "base/hash.hpp"

namespace hpak::bench {

namespace fs = std::filesystem;

namespace {
using Argv = std::vector<std::string>;

struct ReadSet {
  std::vector<std::string> rel;
  std::vector<uint64_t> size;
  std::vector<Digest> digest;
  uint64_t bytes = 0;
};

// Every regular file whose content is an object of `pack`, in a shuffled order.
ReadSet read_set(const std::string& src, const TreeInfo& ti, const PackReader& pack, size_t& missing) {
  ReadSet s;
  missing = 0;
  for (size_t i = 0; i < ti.files.size(); i++) {
    std::string data = read_small_file(src + "/" + ti.files[i]);
    Digest d = sha256(ByteSpan(reinterpret_cast<const uint8_t*>(data.data()), data.size()));
    if (!pack.find(d)) {
      missing++;
      continue;
    }
    s.rel.push_back(ti.files[i]);
    s.size.push_back(data.size());
    s.digest.push_back(d);
    s.bytes += data.size();
  }
  std::vector<size_t> ix(s.rel.size());
  for (size_t i = 0; i < ix.size(); i++) ix[i] = i;
  std::shuffle(ix.begin(), ix.end(), std::mt19937_64(42));
  ReadSet o;
  o.bytes = s.bytes;
  for (size_t i : ix) o.rel.push_back(s.rel[i]), o.size.push_back(s.size[i]), o.digest.push_back(s.digest[i]);
  return o;
}

double read_pack(const PackReader& pack, const ReadSet& s, bool verify) {
  uint64_t sum = 0;
  double t0 = mono_now();
  for (auto& d : s.digest) {
    auto rec = pack.find(d);
    if (!rec) throw std::runtime_error("object vanished from the pack");
    Bytes b = pack.read(*rec, verify);
    sum += b.size();
  }
  double t = mono_now() - t0;
  if (sum != s.bytes) throw std::runtime_error("read " + std::to_string(sum) + " bytes, expected " + std::to_string(s.bytes));
  return t;
}

double read_files(const std::vector<std::string>& paths, const ReadSet& s) {
  uint64_t mx = 1;
  for (auto z : s.size) mx = std::max(mx, z);
  std::vector<char> buf(mx);
  uint64_t sum = 0;
  double t0 = mono_now();
  for (size_t i = 0; i < paths.size(); i++) {
    int fd = os::open_path(paths[i].c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error("open " + paths[i] + ": " + std::strerror(errno));
    uint64_t got = 0;
    while (got < s.size[i]) {
      long n = os::read(fd, buf.data() + got, s.size[i] - got);
      if (n <= 0) break;
      got += uint64_t(n);
    }
    os::close(fd);
    sum += got;
  }
  double t = mono_now() - t0;
  if (sum != s.bytes) throw std::runtime_error("read " + std::to_string(sum) + " bytes, expected " + std::to_string(s.bytes));
  return t;
}
} // namespace

// The same reads from packs of format 1 and 2, at level 0 and 3 (issue 15:
// what blocks of small objects cost a random read), against the files.
void read_formats(Ctx& c, const std::string& p, const std::string& label, const std::string& src,
                  const std::shared_ptr<ReadSet>& set, const std::vector<std::string>& paths, const std::string& m) {
  std::vector<InArm> arms;
  for (const char* level : {"3", "0"})
    for (const char* version : {"1", "2"}) {
      std::string pk = c.art + "/read-" + p + "-v" + version + "-l" + level + ".hpak";
      c.must({c.hpak, "-q", "pack", src, "-o", pk, "-l", level, "--pack-version", version, "-j", c.T}, "hpak pack");
      auto reader = std::make_shared<PackReader>(pk);
      InArm a;
      a.key = std::string("v") + version + "_l" + level;
      a.tool = std::string("format ") + version + ", level " + level + ": find + read (SHA-256 checked)";
      a.command = std::string("in-process: PackReader::find + read of each object from a pack written with --pack-version ") +
                  version + " -l " + level + ", one thread";
      a.role = version[0] == '2' && level[0] == '3' ? "hpak" : "reference";
      a.body = [reader, set](unsigned) { return read_pack(*reader, *set, true); };
      arms.push_back(std::move(a));
    }
  InArm files;
  files.key = "files";
  files.tool = "raw fs: open/read/close";
  files.role = "baseline";
  files.command = kWindowsBuild ? "in-process: CreateFileW(path) + ReadFile(size) + CloseHandle for each file (os seam), same order, one thread"
                                : "in-process: open(path) + read(size) + close for each file, same order, one thread";
  auto paths_p = std::make_shared<std::vector<std::string>>(paths);
  files.body = [paths_p, set](unsigned) { return read_files(*paths_p, *set); };
  arms.push_back(std::move(files));
  for (auto& a : arms) a.count = set->rel.size(), a.bytes = set->bytes, a.unit = "reads";
  c.series_in("read", {"by_format_" + label, "random read by format " + label}, m, arms);
}

void suite_read(Ctx& c) {
  std::vector<std::string> profiles = {"rcc"};
  if (c.cfg.corpus.empty()) profiles = {"packfs", "rcc"};
  for (auto& p : profiles) {
    std::string src = c.corpus(p);
    const TreeInfo& ti = c.info(p);
    std::string label = (p == "rcc" && !c.cfg.corpus.empty()) ? "user" : p;
    std::string pack_path = c.pack_file(p);
    size_t missing = 0;
    auto set = std::make_shared<ReadSet>();
    {
      PackReader pr(pack_path);
      *set = read_set(src, ti, pr, missing);
    }
    for (auto& m : c.media()) {
      std::string tree = src, pk = pack_path;
      if (m != c.art_medium) { // copies on this medium
        tree = c.work[m] + "/read-" + p;
        pk = c.work[m] + "/read-" + p + ".hpak";
        c.copy_tree(src, tree, "cp -a");
        c.copy_file(pack_path, pk, "cp");
        c.copy_file(index_path_for(pack_path), index_path_for(pk), "cp");
      }
      auto reader = std::make_shared<PackReader>(pk);
      auto paths = std::make_shared<std::vector<std::string>>();
      for (auto& r : set->rel) paths->push_back(tree + "/" + r);
      std::vector<InArm> arms(3);
      arms[0].key = "pack";
      arms[0].tool = "pack: find + read (SHA-256 checked)";
      arms[0].command = "in-process: PackReader::find(digest) + PackReader::read(record) for each object, one thread";
      arms[0].body = [reader, set](unsigned) { return read_pack(*reader, *set, true); };
      arms[1].key = "pack_no_sha256";
      arms[1].tool = "pack: find + read, no SHA-256";
      arms[1].role = "reference";
      arms[1].command = "in-process: as above with read(record, verify_digest=false) (XXH3 of stored bytes still checked)";
      arms[1].body = [reader, set](unsigned) { return read_pack(*reader, *set, false); };
      arms[2].key = "files";
      arms[2].tool = "raw fs: open/read/close";
      arms[2].role = "baseline";
      arms[2].command = kWindowsBuild ? "in-process: CreateFileW(path) + ReadFile(size) + CloseHandle for each file (os seam), same order, one thread"
                                      : "in-process: open(path) + read(size) + close for each file, same order, one thread";
      arms[2].body = [paths, set](unsigned) { return read_files(*paths, *set); };
      for (auto& a : arms) a.count = set->rel.size(), a.bytes = set->bytes, a.unit = "reads";
      if (missing)
        arms[0].notes.push_back(std::to_string(missing) + " files left out: their bytes are stored relocated (no object of that digest)");
      c.series_in("read", {"random_" + label, "random read " + label}, m, arms);
      if (m == c.art_medium) read_formats(c, p, label, src, set, *paths, m);
      if (m != c.art_medium) {
        arms.clear(); // their bodies hold the reader too
        reader.reset();
        remove_tree(tree);
        os::unlink_path(pk.c_str());
        os::unlink_path(index_path_for(pk).c_str());
      }
    }
  }
}

void suite_verify(Ctx& c) {
  const std::string p = "rcc";
  std::string pack = c.pack_file(p), tz = c.tar_zst(p);
  std::string tree = c.art + "/verify-tree";
  remove_tree(tree);
  c.log("setup: hpak unpack for sha256sum");
  c.must({c.hpak, "-q", "unpack", pack, tree, "-j", c.T}, "hpak unpack");
  TreeInfo ti = scan_tree(tree);
  std::string list = c.art + "/verify-files.lst", text;
  for (auto& f : ti.files) text += tree + "/" + f + '\0';
  write_file(list, text);
  std::vector<Arm> arms;
  Arm h;
  h.key = "hpak";
  h.tool = "hpak verify";
  h.unit = "objects";
  h.argv = [&c, pack](unsigned) { return Argv{c.hpak, "-q", "verify", pack, "-j", c.T, "--json"}; };
  h.sample = [](unsigned, const ProcResult& pr, Row& r) {
    auto raw = json_number(pr.out, "raw_bytes");
    auto obj = json_number(pr.out, "objects");
    auto ok = json_number(pr.out, "ok");
    if (!raw || !ok || *ok != 1.0) throw std::runtime_error("hpak verify did not report ok: " + pr.out.substr(0, 200));
    r.bytes = uint64_t(*raw);
    r.count = obj ? uint64_t(*obj) : 0;
    return pr.secs;
  };
  h.notes.push_back("checks trailer, index, every object's XXH3 and SHA-256 (after zstd decoding) and the catalog; MB/s of object content");
  arms.push_back(h);
  if (!c.sha256sum.empty() && !c.xargs.empty()) {
    Arm s;
    s.key = "sha256sum";
    s.tool = "sha256sum (xargs -P" + c.T + ")";
    s.role = "baseline";
    s.argv = [&c, list](unsigned) { return Argv{c.xargs, "-0", "-a", list, "-P", c.T, "-n", "256", c.sha256sum}; };
    s.capture_out = false;
    s.count = ti.files.size();
    s.bytes = ti.bytes;
    s.notes.push_back("hashes every unpacked file (duplicates included); checks nothing against a list");
    arms.push_back(s);
  }
  if (!tz.empty()) {
    Arm z;
    z.key = "zstd_t";
    z.tool = "zstd -t (.tar.zst)";
    z.role = "reference";
    z.argv = [&c, tz](unsigned) { return Argv{c.zstd, "-q", "-t", tz}; };
    z.count = ti.files.size();
    z.bytes = c.info(p).bytes;
    z.notes.push_back("frame checksums of the solid archive only (XXH64); no per-file check");
    arms.push_back(z);
  }
  c.series("verify", {"", "verify"}, "", arms);
  remove_tree(tree);
  os::unlink_path(list.c_str());
}

} // namespace hpak::bench
