// bench/suite_gc.cpp — the gc/repack suite (see suites.hpp): the
// copy of a library with 50% garbage (packfs and rcc profiles), and a library
// of 200 small packs: packs and lookup rate before and after gc.
#include <cstring>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <random>
#include <stdexcept>

#include "base/os/sys.hpp"
#include "bench/suite_ctx.hpp"
#include "core/library/library.hpp"
#include "base/hash.hpp"

namespace hpak::bench {

namespace fs = std::filesystem;

namespace {
using Argv = std::vector<std::string>;


double json_or_throw(const std::string& json, const std::string& key) {
  auto v = json_number(json, key);
  if (!v) throw std::runtime_error("hpak gc --json has no '" + key + "': " + json.substr(0, 200));
  return *v;
}

// The gc rows of one library template: whole command (wall) and copy phase;
// with `bandwidth`, also a plain `cp` of the template's largest pack on the
// same medium (the medium's copy bandwidth, for the MB/s comparison).
void gc_series(Ctx& c, const Case& group, const std::string& tmpl, const std::string& note, bool bandwidth = false) {
  std::string lib = c.art + "/gc-run";
  auto copy_secs = std::make_shared<std::vector<double>>();
  auto jsons = std::make_shared<std::vector<std::string>>();
  std::vector<Arm> arms(1);
  Arm& g = arms[0];
  g.key = "hpak_gc";
  g.tool = "hpak gc";
  g.unit = "objects";
  g.argv = [&c, lib](unsigned) { return Argv{c.hpak, "-q", "gc", lib, "--grace", "0", "--json"}; };
  g.prep = [&c, lib, tmpl](unsigned) {
    remove_tree(lib);
    c.copy_tree(tmpl, lib, "cp -a");
  };
  g.sample = [copy_secs, jsons](unsigned, const ProcResult& pr, Row& r) {
    double cs = json_or_throw(pr.out, "copy_seconds");
    copy_secs->push_back(cs);
    jsons->push_back(pr.out);
    r.count = uint64_t(json_or_throw(pr.out, "copied_objects"));
    r.bytes = uint64_t(json_or_throw(pr.out, "copied_bytes"));
    for (const char* k : {"packs_before", "packs_after", "objects_kept", "objects_dropped", "bytes_before", "bytes_after",
                          "copied_objects", "copied_bytes"})
      set_metric(r, k, json_or_throw(pr.out, k));
    return pr.secs;
  };
  g.notes.push_back("whole command (open, mark, copy, publish, midx, delete); prep: cp -a of the library template (untimed)");
  if (!note.empty()) g.notes.push_back(note);
  if (bandwidth && !c.cp.empty()) { // no cp (Windows): no bandwidth rows
    std::string biggest;
    uintmax_t size = 0;
    for (auto& e : fs::directory_iterator(tmpl + "/packs"))
      if (e.path().extension() == ".hpak" && e.file_size() > size) size = e.file_size(), biggest = e.path().string();
    std::string dst = c.art + "/gc-cp.hpak";
    // One arm that writes the pack's bytes to dst another way.
    auto copy_arm = [&](std::string key, std::string tool, std::string role, Argv argv, std::string why) {
      Arm a;
      a.key = std::move(key);
      a.tool = std::move(tool);
      a.role = std::move(role);
      a.unit = "bytes";
      a.count = a.bytes = size;
      a.argv = [argv](unsigned) { return argv; };
      a.prep = [dst](unsigned) { os::unlink_path(dst.c_str()); };
      a.notes.push_back(std::move(why));
      arms.push_back(std::move(a));
    };
    copy_arm("cp", "cp of the pack (copy bandwidth)", "baseline", Argv{c.cp, biggest, dst},
             "the page cache's copy bandwidth on this medium: cp of the library's largest pack (" + std::to_string(size) +
                 " bytes, warm), which copies in the kernel (copy_file_range) and checks nothing");
    if (c.art_medium == "disk" && !c.dd.empty())
      copy_arm("dd", "dd oflag=direct of the pack (device write bandwidth)", "reference",
               Argv{c.dd, "if=" + biggest, "of=" + dst, "bs=4M", "oflag=direct", "status=none"},
               "the disk's own write bandwidth: the same bytes written with O_DIRECT (past the page cache)");
  }
  auto idx = c.series("gc", group, c.art_medium, arms);
  if (bandwidth) os::unlink_path((c.art + "/gc-cp.hpak").c_str());
  const Row& whole = c.rep.rows[idx[0]];
  Row copy;
  copy.id = row_id("gc", group.id, c.art_medium, "copy");
  copy.suite = "gc";
  copy.group = group.label;
  copy.medium = c.art_medium;
  copy.tool = "copy (gc copy phase)";
  copy.role = "hpak";
  copy.unit = "objects";
  copy.command = whole.command + "  ->  copy_seconds, copied_objects, copied_bytes";
  copy.samples = *copy_secs;
  copy.count = whole.count;
  copy.bytes = whole.bytes;
  copy.notes.push_back("live objects copied verbatim (stored bytes, no recompression) into the new pack, timed by gc itself");
  c.add_row(std::move(copy));
  remove_tree(lib);
}

// Random lookups + reads of every digest through a Library, one thread.
double lookups(const Library& lib, const std::vector<Digest>& ds, bool read) {
  uint64_t n = 0;
  double t0 = mono_now();
  for (auto& d : ds) {
    auto ref = lib.locate(d);
    if (!ref) throw std::runtime_error("object not found in the library");
    if (read) n += ref->pack->read(ref->rec).size();
    else n += ref->rec.raw_len;
  }
  double t = mono_now() - t0;
  if (!n && !ds.empty()) throw std::runtime_error("nothing read");
  return t;
}
} // namespace

void suite_gc(Ctx& c) {
  const std::string J = c.T;
  // ---- 50% garbage: a library whose one pack holds X, and a catalog of half of X --------
  std::vector<std::string> profiles = {"packfs2x", "rcc"};
  for (auto& p : profiles) {
    std::string src = c.corpus(p);
    const TreeInfo& ti = c.info(p);
    std::string label = p == "packfs2x" ? "packfs" : (c.cfg.corpus.empty() ? "rcc" : "user");
    std::string half = c.art + "/gc-half-" + p, tmpl = c.art + "/gc-tmpl-" + p;
    c.log("setup: library with 50% garbage (" + label + ")");
    remove_tree(half);
    remove_tree(tmpl);
    c.copy_tree(src, half, "cp -a");
    for (size_t i = 1; i < ti.files.size(); i += 2) os::unlink_path((half + "/" + ti.files[i]).c_str());
    c.must({c.hpak, "-q", "pack", src, "--into", tmpl, "--name", "all", "-j", J}, "hpak pack --into");
    c.must({c.hpak, "-q", "pack", half, "--into", tmpl, "--name", "half", "-j", J}, "hpak pack --into");
    c.must({c.hpak, "-q", "catalogs", "rm", tmpl, "all"}, "hpak catalogs rm");
    gc_series(c, {"repack_" + label, "repack 50% garbage " + label}, tmpl,
              "library: one pack of " + std::to_string(ti.files.size()) + " files; catalog kept: every other file");
    remove_tree(half);
    remove_tree(tmpl);
  }

  // ---- 50% garbage of large objects: copy bandwidth against cp ---------------------------
  {
    unsigned nfiles = c.cfg.quick ? 8 : 96;
    size_t each = c.cfg.quick ? (256u << 10) : (2u << 20);
    std::string all = c.art + "/gc-large-all", half = c.art + "/gc-large-half", tmpl = c.art + "/gc-large-tmpl";
    remove_tree(all);
    remove_tree(half);
    remove_tree(tmpl);
    c.log("setup: library with 50% garbage (" + std::to_string(nfiles) + " files of " + std::to_string(each >> 10) + " KiB)");
    fs::create_directories(all);
    fs::create_directories(half);
    std::mt19937_64 rng(42);
    for (unsigned f = 0; f < nfiles; f++) {
      std::string data(each, '\0');
      for (size_t k = 0; k + 8 <= data.size(); k += 8) {
        uint64_t v = rng();
        memcpy(&data[k], &v, 8);
      }
      write_file(all + "/f" + std::to_string(f) + ".bin", data);
      if (f % 2 == 0) write_file(half + "/f" + std::to_string(f) + ".bin", data);
    }
    c.must({c.hpak, "-q", "pack", all, "--into", tmpl, "--name", "all", "-j", J}, "hpak pack --into");
    c.must({c.hpak, "-q", "pack", half, "--into", tmpl, "--name", "half", "-j", J}, "hpak pack --into");
    c.must({c.hpak, "-q", "catalogs", "rm", tmpl, "all"}, "hpak catalogs rm");
    gc_series(c, {"repack_large", "repack 50% garbage large"}, tmpl,
              "library: one pack of " + std::to_string(nfiles) + " incompressible files of " + std::to_string(each >> 10) +
                  " KiB; catalog kept: every other file",
              /*bandwidth=*/true);
    remove_tree(all);
    remove_tree(half);
    remove_tree(tmpl);
  }

  // ---- 200 small packs: lookups before and after gc --------------------------------------
  {
    unsigned npacks = c.cfg.quick ? 10 : 200, per = c.cfg.quick ? 10 : 100;
    std::string trees = c.art + "/small-envs", tmpl = c.art + "/small-tmpl", after = c.art + "/small-after";
    remove_tree(trees);
    remove_tree(tmpl);
    remove_tree(after);
    c.log("setup: " + std::to_string(npacks) + " small packs (" + std::to_string(per) + " files of 128 B each)");
    std::mt19937_64 rng(200);
    auto digests = std::make_shared<std::vector<Digest>>();
    for (unsigned e = 0; e < npacks; e++) {
      char name[16];
      snprintf(name, sizeof name, "e%03u", e);
      std::string d = trees + "/" + name;
      fs::create_directories(d);
      for (unsigned f = 0; f < per; f++) {
        std::string data(128, '\0');
        for (auto& ch : data) ch = char(rng());
        write_file(d + "/f" + std::to_string(f) + ".dat", data);
        digests->push_back(sha256(ByteSpan(reinterpret_cast<const uint8_t*>(data.data()), data.size())));
      }
      c.must({c.hpak, "-q", "pack", d, "--into", tmpl, "--name", name, "-j", J}, "hpak pack --into");
    }
    std::shuffle(digests->begin(), digests->end(), std::mt19937_64(7));
    std::string group = std::to_string(npacks) + " small packs";
    gc_series(c, {"small_packs", group}, tmpl,
              "library of " + std::to_string(npacks) + " packs of " + std::to_string(per) + " objects, no garbage");
    c.copy_tree(tmpl, after, "cp -a");
    c.must({c.hpak, "-q", "gc", after, "--grace", "0"}, "hpak gc");
    auto before_lib = std::make_shared<Library>(tmpl);
    auto after_lib = std::make_shared<Library>(after);
    size_t packs_before = before_lib->packs().size(), packs_after = after_lib->packs().size();
    size_t unc_before = before_lib->uncovered_packs(), unc_after = after_lib->uncovered_packs();
    std::vector<InArm> arms(4);
    auto desc = [](const char* what) {
      return std::string("in-process: Library::locate(digest)") + what + " for every object in random order, one thread";
    };
    arms[0].key = "read_before";
    arms[0].tool = "lookup+read, before gc (" + std::to_string(packs_before) + " packs)";
    arms[0].role = "baseline";
    arms[0].command = desc(" + PackReader::read");
    arms[0].body = [before_lib, digests](unsigned) { return lookups(*before_lib, *digests, true); };
    arms[1].key = "read_after";
    arms[1].tool = "lookup+read, after gc (" + std::to_string(packs_after) + " packs)";
    arms[1].command = desc(" + PackReader::read");
    arms[1].body = [after_lib, digests](unsigned) { return lookups(*after_lib, *digests, true); };
    arms[2].key = "lookup_before";
    arms[2].tool = "lookup only, before gc";
    arms[2].role = "reference";
    arms[2].command = desc("");
    arms[2].body = [before_lib, digests](unsigned) { return lookups(*before_lib, *digests, false); };
    arms[3].key = "lookup_after";
    arms[3].tool = "lookup only, after gc";
    arms[3].role = "reference";
    arms[3].command = desc("");
    arms[3].body = [after_lib, digests](unsigned) { return lookups(*after_lib, *digests, false); };
    for (auto& a : arms) a.count = digests->size(), a.bytes = digests->size() * 128, a.unit = "lookups";
    auto idx = c.series_in("gc", {"small_packs_lookups", group + ": lookups"}, c.art_medium, arms);
    c.rep.rows[idx[0]].metrics.push_back({"packs", double(packs_before)});
    c.rep.rows[idx[0]].metrics.push_back({"packs_outside_midx", double(unc_before)});
    c.rep.rows[idx[1]].metrics.push_back({"packs", double(packs_after)});
    c.rep.rows[idx[1]].metrics.push_back({"packs_outside_midx", double(unc_after)});
    arms.clear(); // their bodies hold the libraries too: every pack closed before the removal (Windows deletes no open file)
    before_lib.reset();
    after_lib.reset();
    remove_tree(trees);
    remove_tree(tmpl);
    remove_tree(after);
  }
}

} // namespace hpak::bench
