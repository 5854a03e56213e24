// bench/suite_pack.cpp — the pack / commit suite (see suites.hpp): hpak pack
// vs tar --zstd -cf on the rcc, smallfile and packfs profiles, and
// pack --into of a second environment sharing 90% of its files.
#include <filesystem>
#include <memory>
#include <stdexcept>

#include "base/os/sys.hpp"
#include "bench/suite_ctx.hpp"

namespace hpak::bench {

namespace fs = std::filesystem;

namespace {
using Argv = std::vector<std::string>;

} // namespace

void suite_pack(Ctx& c) {
  std::vector<std::string> profiles = {"rcc"};
  if (c.cfg.corpus.empty()) profiles = {"rcc", "smallfile", "packfs"};
  const std::string J = c.T;
  for (auto& p : profiles) {
    std::string src = c.corpus(p);
    const TreeInfo& ti = c.info(p);
    std::string label = (p == "rcc" && !c.cfg.corpus.empty()) ? "user" : p;
    std::string out = c.art + "/pk-" + p;
    std::string hp = out + ".hpak", hi = out + ".hidx", tz = out + ".tar.zst";
    std::vector<Arm> arms;
    Arm h;
    h.key = "hpak";
    h.tool = "hpak pack";
    h.argv = [&c, src, hp, J](unsigned) { return Argv{c.hpak, "-q", "pack", src, "-o", hp, "-l", "3", "-j", J}; };
    h.prep = [hp, hi](unsigned) { os::unlink_path(hp.c_str()), os::unlink_path(hi.c_str()); };
    h.sample = [hp, hi](unsigned, const ProcResult& pr, Row& r) {
      set_metric(r, "output_bytes", double(file_size(hp) + file_size(hi)));
      return pr.secs;
    };
    h.notes.push_back("zstd level 3, each object compressed on its own; output = pack + index");
    arms.push_back(h);
    if (!c.tar.empty() && !c.zstd.empty()) {
      Arm t;
      t.key = "tar";
      t.tool = "tar --zstd -cf";
      t.role = "baseline";
      std::string parent = fs::path(src).parent_path().string(), name = fs::path(src).filename().string();
      t.argv = [&c, tz, parent, name](unsigned) { return Argv{c.tar, "--zstd", "-cf", tz, "-C", parent, name}; };
      t.prep = [tz](unsigned) { os::unlink_path(tz.c_str()); };
      t.sample = [tz](unsigned, const ProcResult& pr, Row& r) {
        set_metric(r, "output_bytes", double(file_size(tz)));
        return pr.secs;
      };
      t.notes.push_back("zstd's default level 3, one solid stream; tar and zstd are two processes");
      arms.push_back(t);
    }
    for (auto& a : arms) a.count = ti.files.size(), a.bytes = ti.bytes;
    auto idx = c.series("pack", {label, "pack " + label}, c.art_medium, arms);
    if (idx.size() == 2) {
      Row& hr = c.rep.rows[idx[0]];
      double tb = c.rep.rows[idx[1]].metric("output_bytes");
      if (tb > 0) hr.metrics.push_back({"size_vs_tar", hr.metric("output_bytes") / tb});
    }
    os::unlink_path(hp.c_str());
    os::unlink_path(hi.c_str());
    os::unlink_path(tz.c_str());
  }

  // ---- a second environment sharing 90% of its files, added to the same library ----
  {
    std::string src = c.corpus("rcc");
    const TreeInfo& ti = c.info("rcc");
    std::string b = c.art + "/env-b";
    if (!fs::exists(b)) {
      c.log("setup: second environment (cp -a, every 10th file changed)");
      c.copy_tree(src, b, "cp -a");
      std::vector<std::string> change;
      for (size_t i = 0; i < ti.files.size(); i++) {
        os::FileStat st;
        if (i % 10 == 9 && os::lstat_path((src + "/" + ti.files[i]).c_str(), st) == 0 && st.st_nlink == 1) change.push_back(ti.files[i]);
      }
      Mutation m;
      m.apply(b, change);
    }
    unsigned n = std::min(c.runs, 3u);
    uint64_t files = ti.files.size();
    Row first, second;
    first.suite = second.suite = "pack";
    first.group = second.group = "pack --into, second env sharing 90%";
    first.medium = second.medium = c.art_medium;
    first.id = row_id("pack", "into", c.art_medium, "first");
    second.id = row_id("pack", "into", c.art_medium, "second");
    first.tool = "hpak pack --into (first env)";
    second.tool = "hpak pack --into (second env, 90% shared)";
    first.role = "reference";
    second.role = "hpak";
    first.count = second.count = files;
    first.bytes = ti.bytes;
    second.bytes = ti.bytes;
    std::vector<double> fb, sb, sw;
    for (unsigned r = 0; r < n; r++) {
      std::string lib = c.art + "/into-" + std::to_string(r);
      remove_tree(lib);
      Argv a1 = {c.hpak, "-q", "pack", src, "--into", lib, "--name", "a", "-j", J, "--json"};
      Argv a2 = {c.hpak, "-q", "pack", b, "--into", lib, "--name", "b", "-j", J, "--json"};
      if (r == 0) first.command = c.show(a1), second.command = c.show(a2);
      try {
        sync_all();
        ProcResult p1 = c.must(a1, "hpak pack --into (first)");
        sync_all();
        ProcResult p2 = c.must(a2, "hpak pack --into (second)");
        first.samples.push_back(p1.secs);
        second.samples.push_back(p2.secs);
        fb.push_back(json_number(p1.out, "pack_bytes").value_or(0));
        sb.push_back(json_number(p2.out, "pack_bytes").value_or(0));
        sw.push_back(json_number(p2.out, "objects_written").value_or(0));
        c.log("pack | --into 90% shared | run " + std::to_string(r + 1) + "/" + std::to_string(n) + ": first " +
              std::to_string(p1.secs) + " s, second " + std::to_string(p2.secs) + " s");
      } catch (const std::exception& e) {
        second.error = e.what();
        c.rep.failed = true;
      }
      remove_tree(lib);
    }
    if (!fb.empty()) {
      double f = stats_of(fb).median, s = stats_of(sb).median;
      first.metrics.push_back({"pack_bytes", f});
      second.metrics.push_back({"pack_bytes", s});
      second.metrics.push_back({"first_pack_bytes", f});
      second.metrics.push_back({"written_vs_first", f > 0 ? s / f : kNaN});
      second.metrics.push_back({"objects_written", stats_of(sw).median});
    }
    second.notes.push_back("every 10th file of the first env changed (appends and same-size edits); bytes written = the new pack");
    c.add_row(std::move(first));
    c.add_row(std::move(second));
  }
}

} // namespace hpak::bench
