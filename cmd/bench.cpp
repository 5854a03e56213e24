// hpak bench: the benchmark suites side by side with their baselines and the
// kernel's ceiling. This file is only options and formatting (a markdown
// table on stdout, or --json); the engine is bench/suites.hpp (hpak_bench).
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "bench/suites.hpp"
#include "cmd/command.hpp"
#include "cmd/output.hpp"
#include "core/util/error.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::string corpus, save, tmpfs = "/dev/shm", disk = "/var/tmp";
  std::vector<std::string> suites, media;
  unsigned runs = 0, threads = 0;
  bool quick = false, json = false, keep = false;
} o;

void setup(CLI::App& app) {
  app.add_option("--corpus", o.corpus, "Measure this tree instead of a generated one")->check(CLI::ExistingDirectory);
  app.add_option("-s,--suite", o.suites, "Suite to run: restore, pack, read, verify, gc (repeatable; default all)")
      ->delimiter(',')
      ->check(CLI::IsMember({"restore", "pack", "read", "verify", "gc"}));
  app.add_option("-r,--runs", o.runs, "Repetitions of each measurement (default 5; 1 with --quick)")->check(CLI::Range(1, 1000));
  app.add_option("-j,--threads", o.threads, "Threads for every tool that takes -j (default: all cores)");
  app.add_option("--media", o.media, "Where targets go: tmpfs, disk (default both)")
      ->delimiter(',')
      ->check(CLI::IsMember({"tmpfs", "disk"}));
  app.add_option("--tmpfs", o.tmpfs, "Directory on tmpfs for the tmpfs runs (default /dev/shm)");
  app.add_option("--disk", o.disk, "Directory on disk for the disk runs and the artifacts (default /var/tmp)");
  app.add_flag("--quick", o.quick, "Tiny corpora, one run: proves the harness works (for the test suite)");
  app.add_flag("--json", o.json, "Print the results as JSON instead of tables");
  app.add_option("--save", o.save, "Also write the JSON results to this file");
  app.add_flag("--keep", o.keep, "Keep the work directories (their paths go to stderr)");
}

// ---- formatting -------------------------------------------------------------

std::string fmt(const char* f, double v) {
  char b[64];
  snprintf(b, sizeof b, f, v);
  return b;
}

std::string grouped(double v) { // 1234567 -> 1,234,567
  if (!std::isfinite(v)) return "–";
  std::string s = fmt("%.0f", v), g;
  int n = 0;
  for (auto it = s.rbegin(); it != s.rend(); ++it) {
    if (n && n % 3 == 0 && *it != '-') g.insert(g.begin(), ',');
    g.insert(g.begin(), *it);
    n++;
  }
  return g;
}

std::string secs(double v) {
  if (!std::isfinite(v)) return "–";
  if (v < 0.01) return fmt("%.5f", v);
  if (v < 1) return fmt("%.3f", v);
  return fmt("%.2f", v);
}

std::string ratio(double v) { return std::isfinite(v) ? fmt(v < 0.1 ? "%.3f×" : "%.2f×", v) : "–"; }

std::string mb(double bytes) { return fmt(bytes >= 1e8 ? "%.0f MB" : "%.1f MB", bytes / 1e6); }

std::string jnum(double v) {
  if (!std::isfinite(v)) return "null";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt("%.0f", v);
  return fmt("%.6g", v);
}

// Extra numbers of a row, in words.
std::string extras(const bench::Row& r) {
  std::string s;
  auto add = [&](const std::string& t) { s += (s.empty() ? "" : "; ") + t; };
  for (auto& m : r.metrics) {
    const std::string& k = m.key;
    double v = m.value;
    if (k == "output_bytes") add("output " + mb(v));
    else if (k == "size_vs_tar") add("size " + ratio(v) + " the .tar.zst");
    else if (k == "files_changed") add(grouped(v) + " files changed");
    else if (k == "process_wall_s") add("whole process " + secs(v) + " s");
    else if (k == "pack_bytes") add("wrote " + mb(v));
    else if (k == "written_vs_first") add(fmt("%.1f%% of the first", v * 100));
    else if (k == "objects_written") add(grouped(v) + " objects new");
    else if (k == "packs_before") add("packs " + grouped(v) + " →");
    else if (k == "packs_after") s += " " + grouped(v);
    else if (k == "objects_dropped") add(grouped(v) + " objects dropped");
    else if (k == "packs") add(grouped(v) + " packs");
    else if (k == "packs_outside_midx") add(grouped(v) + " outside the midx");
  }
  return s;
}

void print_block(const std::vector<const bench::Row*>& rows) {
  const bench::Row& f = *rows[0];
  bool timed = false, syscalls = false, each = f.suite == "pack" || f.suite == "read" || f.suite == "gc";
  for (auto* r : rows) timed |= !r->samples.empty() || (!r->error.empty() && r->metrics.empty() && r->group != "syscalls"), syscalls |= r->group == "syscalls";
  std::string title = f.group + (f.medium.empty() ? "" : " — " + f.medium);
  uint64_t cnt = 0, by = 0;
  std::string unit;
  for (auto* r : rows)
    if (r->role != "reference" && r->count) {
      cnt = r->count, by = r->bytes, unit = r->unit;
      break;
    }
  if (cnt) title += " — " + grouped(double(cnt)) + " " + unit + (by ? ", " + mb(double(by)) : "");
  printf("\n### %s\n\n", title.c_str());
  if (syscalls) {
    printf("| arm | syscalls | per file | busiest |\n|:--|--:|--:|:--|\n");
    for (auto* r : rows) {
      if (!r->error.empty()) {
        printf("| %s | failed: %s | | |\n", r->tool.c_str(), r->error.c_str());
        continue;
      }
      std::string top;
      for (auto& n : r->notes)
        if (n.rfind("busiest: ", 0) == 0) top = n.substr(9);
      printf("| %s | %s | %.2f | %s |\n", r->tool.c_str(), grouped(r->metric("syscalls")).c_str(), r->metric("syscalls_per_file"),
             top.c_str());
    }
  } else if (timed) {
    printf("| arm | median s | min–max s (n) | rate | MB/s |%s × baseline | × ceiling | CPU user+sys s | notes |\n",
           each ? " µs each |" : "");
    printf("|:--|--:|--:|--:|--:|%s--:|--:|--:|:--|\n", each ? "--:|" : "");
    for (auto* r : rows) {
      bench::Stats st = r->stats();
      std::string rate = std::isfinite(r->per_second()) ? grouped(r->per_second()) + " " + r->unit + "/s" : "–";
      std::string mbs = std::isfinite(r->mb_per_s()) ? grouped(r->mb_per_s()) : "–";
      if (std::isfinite(r->mb_per_s()) && r->mb_per_s() < 10) mbs = fmt("%.2f", r->mb_per_s());
      double u = r->metric("cpu_user_s"), sy = r->metric("cpu_sys_s");
      std::string cpu = std::isfinite(u) ? secs(u) + " + " + secs(sy) : "–";
      std::string note = extras(*r);
      if (!r->error.empty()) note = "FAILED: " + r->error + (note.empty() ? "" : "; " + note);
      std::string range = st.n ? secs(st.min) + "–" + secs(st.max) + " (" + std::to_string(st.n) + ")" : "–";
      std::string tool = r->role == "hpak" ? "**" + r->tool + "**" : r->tool;
      printf("| %s | %s | %s | %s | %s |%s %s | %s | %s | %s |\n", tool.c_str(), st.n ? secs(st.median).c_str() : "–",
             range.c_str(), rate.c_str(), mbs.c_str(),
             each ? (" " + (std::isfinite(r->us_per_unit()) ? fmt(r->us_per_unit() < 10 ? "%.2f" : "%.1f", r->us_per_unit()) : "–") + " |").c_str() : "",
             r->role == "baseline" ? "1 (baseline)" : ratio(r->vs_baseline).c_str(),
             r->role == "ceiling" ? "1 (ceiling)" : ratio(r->vs_ceiling).c_str(), cpu.c_str(), note.c_str());
    }
  }
  printf("\n");
  for (auto* r : rows) printf("- %s: `%s`\n", r->tool.c_str(), r->command.c_str());
  for (auto* r : rows)
    for (auto& n : r->notes)
      if (n.rfind("busiest: ", 0) != 0) printf("- note (%s): %s\n", r->tool.c_str(), n.c_str());
}

void print_tables(const bench::Report& rep) {
  const auto& e = rep.env;
  printf("# hpak bench — %s\n\n", e.started.c_str());
  printf("- machine: %s, %u CPUs, %s, %.1f GiB RAM\n", e.cpu.c_str(), e.cpus, e.kernel.c_str(), double(e.mem_bytes) / (1ull << 30));
  printf("- load average (1/5/15 min): %.2f %.2f %.2f at the start, %.2f %.2f %.2f at the end\n", e.load_start[0], e.load_start[1],
         e.load_start[2], e.load_end[0], e.load_end[1], e.load_end[2]);
  for (auto& m : e.media)
    printf("- %s: %s → %s on %s (%s, %s)\n", m.name.c_str(), m.root.c_str(), m.mount.fstype.c_str(), m.mount.mount_point.c_str(),
           m.mount.device.c_str(), m.mount.options.c_str());
  printf("- in the commands, $T is the tmpfs work directory and $D the disk work directory (artifacts live in $D/art)\n");
  printf("- hpak: %s (%s); threads: %u for every tool that takes -j; runs: %u per arm, interleaved; median and min–max\n",
         e.hpak.c_str(), e.hpak_version.c_str(), e.threads, e.runs);
  for (auto& [k, v] : e.tools) printf("- %s: %s\n", k.c_str(), v.c_str());
  for (auto& c : rep.corpora)
    printf("- corpus %s: %s files, %s dirs, %s symlinks, %s — %s\n", c.name.c_str(), grouped(double(c.files)).c_str(),
           grouped(double(c.dirs)).c_str(), grouped(double(c.symlinks)).c_str(), mb(double(c.bytes)).c_str(), c.origin.c_str());
  for (auto& n : rep.notes) printf("- note: %s\n", n.c_str());

  std::string suite;
  std::vector<std::string> order;
  std::map<std::string, std::vector<const bench::Row*>> blocks;
  for (auto& r : rep.rows) {
    std::string key = r.suite + "\x1f" + r.group + "\x1f" + r.medium;
    if (!blocks.count(key)) order.push_back(key);
    blocks[key].push_back(&r);
  }
  for (auto& key : order) {
    auto& rows = blocks[key];
    if (rows[0]->suite != suite) {
      suite = rows[0]->suite;
      printf("\n## %s\n", suite.c_str());
    }
    print_block(rows);
  }
  if (!rep.targets.empty()) {
    printf("\n## targets (issues 2 and 3)\n\n| target | measured | limit | result | from |\n|:--|--:|--:|:--|:--|\n");
    for (auto& t : rep.targets)
      printf("| %s | %s %s | %s %s | %s | %s |\n", t.name.c_str(), t.measured ? fmt("%.3g", t.value).c_str() : "–", t.unit.c_str(),
             t.op.c_str(), fmt("%.3g", t.limit).c_str(), t.measured ? (t.pass ? "pass" : "**FAIL**") : "not measured",
             t.detail.c_str());
  }
  printf("\n%s in %.0f s%s\n", rep.failed ? "finished with failures" : "finished", rep.seconds,
         rep.env.quick ? " (--quick: the figures mean little)" : "");
}

std::string to_json(const bench::Report& rep) {
  std::string s;
  auto add = [&](const std::string& t) { s += t; };
  auto str_list = [&](const std::vector<std::string>& v) {
    add("[");
    for (size_t i = 0; i < v.size(); i++) add((i ? "," : "") + json_str(v[i]));
    add("]");
  };
  auto num_list = [&](const std::vector<double>& v) {
    add("[");
    for (size_t i = 0; i < v.size(); i++) add((i ? "," : "") + jnum(v[i]));
    add("]");
  };
  const auto& e = rep.env;
  add("{\"hpak_bench\":1,\"started\":" + json_str(e.started) + ",\"seconds\":" + jnum(rep.seconds) +
      ",\"failed\":" + (rep.failed ? "true" : "false") + ",\"quick\":" + (e.quick ? "true" : "false") + ",\"suites\":");
  str_list(rep.suites);
  add(",\"environment\":{\"cpu\":" + json_str(e.cpu) + ",\"cpus\":" + jnum(e.cpus) + ",\"kernel\":" + json_str(e.kernel) +
      ",\"mem_bytes\":" + jnum(double(e.mem_bytes)) + ",\"threads\":" + jnum(e.threads) + ",\"runs\":" + jnum(e.runs) +
      ",\"hpak\":" + json_str(e.hpak) + ",\"hpak_version\":" + json_str(e.hpak_version) + ",\"load_start\":");
  num_list(e.load_start);
  add(",\"load_end\":");
  num_list(e.load_end);
  add(",\"media\":[");
  for (size_t i = 0; i < e.media.size(); i++) {
    auto& m = e.media[i];
    add(std::string(i ? "," : "") + "{\"name\":" + json_str(m.name) + ",\"root\":" + json_str(m.root) + ",\"fstype\":" +
        json_str(m.mount.fstype) + ",\"mount_point\":" + json_str(m.mount.mount_point) + ",\"device\":" + json_str(m.mount.device) +
        ",\"options\":" + json_str(m.mount.options) + "}");
  }
  add("],\"tools\":{");
  for (size_t i = 0; i < e.tools.size(); i++) add((i ? "," : "") + json_str(e.tools[i].first) + ":" + json_str(e.tools[i].second));
  add("}},\"corpora\":[");
  for (size_t i = 0; i < rep.corpora.size(); i++) {
    auto& c = rep.corpora[i];
    add(std::string(i ? "," : "") + "{\"name\":" + json_str(c.name) + ",\"path\":" + json_str(c.path) + ",\"origin\":" +
        json_str(c.origin) + ",\"files\":" + jnum(double(c.files)) + ",\"dirs\":" + jnum(double(c.dirs)) +
        ",\"symlinks\":" + jnum(double(c.symlinks)) + ",\"bytes\":" + jnum(double(c.bytes)) + "}");
  }
  add("],\"rows\":[");
  for (size_t i = 0; i < rep.rows.size(); i++) {
    auto& r = rep.rows[i];
    bench::Stats st = r.stats();
    add(std::string(i ? "," : "") + "{\"suite\":" + json_str(r.suite) + ",\"group\":" + json_str(r.group) + ",\"medium\":" +
        json_str(r.medium) + ",\"tool\":" + json_str(r.tool) + ",\"role\":" + json_str(r.role) + ",\"command\":" +
        json_str(r.command) + ",\"unit\":" + json_str(r.unit) + ",\"count\":" + jnum(double(r.count)) + ",\"bytes\":" +
        jnum(double(r.bytes)) + ",\"samples\":");
    num_list(r.samples);
    add(",\"n\":" + jnum(double(st.n)) + ",\"median\":" + jnum(st.n ? st.median : NAN) + ",\"min\":" + jnum(st.n ? st.min : NAN) +
        ",\"max\":" + jnum(st.n ? st.max : NAN) + ",\"per_second\":" + jnum(r.per_second()) + ",\"mb_per_s\":" +
        jnum(r.mb_per_s()) + ",\"us_each\":" + jnum(r.us_per_unit()) + ",\"vs_baseline\":" + jnum(r.vs_baseline) +
        ",\"vs_ceiling\":" + jnum(r.vs_ceiling) + ",\"metrics\":{");
    for (size_t k = 0; k < r.metrics.size(); k++) add((k ? "," : "") + json_str(r.metrics[k].key) + ":" + jnum(r.metrics[k].value));
    add("},\"notes\":");
    str_list(r.notes);
    add(",\"error\":" + (r.error.empty() ? std::string("null") : json_str(r.error)) + "}");
  }
  add("],\"targets\":[");
  for (size_t i = 0; i < rep.targets.size(); i++) {
    auto& t = rep.targets[i];
    add(std::string(i ? "," : "") + "{\"name\":" + json_str(t.name) + ",\"op\":" + json_str(t.op) + ",\"value\":" + jnum(t.value) +
        ",\"limit\":" + jnum(t.limit) + ",\"unit\":" + json_str(t.unit) + ",\"measured\":" + (t.measured ? "true" : "false") +
        ",\"pass\":" + (t.pass ? "true" : "false") + ",\"detail\":" + json_str(t.detail) + "}");
  }
  add("],\"notes\":");
  str_list(rep.notes);
  add("}\n");
  return s;
}

int run() {
  bench::Config cfg;
  cfg.corpus = o.corpus;
  cfg.suites = o.suites;
  if (!o.media.empty()) cfg.media = o.media;
  cfg.tmpfs_root = o.tmpfs;
  cfg.disk_root = o.disk;
  cfg.quick = o.quick;
  if (o.quick && o.media.empty()) cfg.media = {"tmpfs"}; // the disk runs are what takes long
  cfg.runs = o.runs ? o.runs : (o.quick ? 1 : 5);
  cfg.threads = o.threads;
  cfg.keep = o.keep;
  bool quiet = global().quiet;
  double t0 = now_seconds();
  bench::Log log = [quiet, t0](const std::string& line) {
    if (!quiet) fprintf(stderr, "bench: [%6.1f s] %s\n", now_seconds() - t0, line.c_str());
  };
  bench::Report rep;
  try {
    rep = bench::run_bench(cfg, log);
  } catch (const std::runtime_error& e) {
    throw Error(e.what());
  }
  std::string js = to_json(rep);
  if (!o.save.empty()) {
    FILE* f = fopen(o.save.c_str(), "w");
    if (!f || fwrite(js.data(), 1, js.size(), f) != js.size() || fclose(f) != 0)
      throw Error("cannot write '" + o.save + "'");
  }
  if (o.json) fputs(js.c_str(), stdout);
  else print_tables(rep);
  return rep.failed ? kExitProblem : kExitOk;
}
} // namespace

extern const Command cmd_bench{"bench", "Run the benchmark suites side by side with baselines and the ceiling", setup, run};

} // namespace hpak::cmd
