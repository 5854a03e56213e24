// hpak bench: the benchmark suites side by side with their baselines and the
// kernel's ceiling. This file is only options and formatting (a markdown
// table on stdout, or --json); the engine is bench/suites.hpp (hpak_bench).
#include <CLI/CLI.hpp>
#include <memory>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "bench/suite_ctx.hpp"
#include "cmd/command.hpp"
#include "cmd/json.hpp"
#include "cmd/output.hpp"
#include "base/error.hpp"

namespace hpak::cmd {

namespace {
// Where the runs go by default. Windows (issue 30) has no tmpfs: the disk runs
// only, in %TEMP% (a RAM disk can be named with --tmpfs).
#if defined(_WIN32)
std::string default_disk() {
  const char* t = getenv("TEMP");
  return t ? t : ".";
}
constexpr const char* kTmpfsHelp = "Directory on a RAM disk for the tmpfs runs (Windows has no default: name one to run them)";
constexpr const char* kDiskHelp = "Directory on disk for the disk runs and the artifacts (default %TEMP%)";
constexpr const char* kMediaHelp = "Where targets go: tmpfs, disk (default disk: Windows has no tmpfs)";
#else
std::string default_disk() { return "/var/tmp"; }
constexpr const char* kTmpfsHelp = "Directory on tmpfs for the tmpfs runs (default /dev/shm)";
constexpr const char* kDiskHelp = "Directory on disk for the disk runs and the artifacts (default /var/tmp)";
constexpr const char* kMediaHelp = "Where targets go: tmpfs, disk (default both)";
#endif

struct Options {
  std::string corpus, save, tmpfs = bench::kWindowsBuild ? "" : "/dev/shm", disk = default_disk();
  std::vector<std::string> suites, media;
  unsigned runs = 0, threads = 0;
  bool quick = false, json = false, keep = false;
};

int run(const Options& o);

Runner setup(CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_option("--corpus", o->corpus, "Measure this tree instead of a generated one")->check(CLI::ExistingDirectory);
  app.add_option("-s,--suite", o->suites, "Suite to run: restore, pack, read, verify, gc (repeatable; default all)")
      ->delimiter(',')
      ->check(CLI::IsMember({"restore", "pack", "read", "verify", "gc"}));
  app.add_option("-r,--runs", o->runs, "Repetitions of each measurement (default 5; 1 with --quick)")->check(CLI::Range(1, 1000));
  app.add_option("-j,--threads", o->threads, "Threads for every tool that takes -j (default: all cores)");
  app.add_option("--media", o->media, kMediaHelp)
      ->delimiter(',')
      ->check(CLI::IsMember({"tmpfs", "disk"}));
  app.add_option("--tmpfs", o->tmpfs, kTmpfsHelp);
  app.add_option("--disk", o->disk, kDiskHelp);
  app.add_flag("--quick", o->quick, "Tiny corpora, one run: proves the harness works (for the test suite)");
  app.add_flag("--json", o->json, "Print the results as JSON instead of tables");
  app.add_option("--save", o->save, "Also write the JSON results to this file");
  app.add_flag("--keep", o->keep, "Keep the work directories (their paths go to stderr)");
  return [o] { return run(*o); };
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
  printf("- machine: %s, %u CPUs online (%u usable by this process), %s, %.1f GiB RAM\n", e.cpu.c_str(), e.cpus, e.cpus_usable,
         e.kernel.c_str(), double(e.mem_bytes) / (1ull << 30));
  if (std::isfinite(e.load_start[0]))
    printf("- load average (1/5/15 min): %.2f %.2f %.2f at the start, %.2f %.2f %.2f at the end\n", e.load_start[0], e.load_start[1],
           e.load_start[2], e.load_end[0], e.load_end[1], e.load_end[2]);
  else
    printf("- load average: none (Windows has no load average)\n");
  for (auto& m : e.media)
    printf("- %s: %s → %s on %s (%s, %s)\n", m.name.c_str(), m.root.c_str(), m.mount.fstype.c_str(), m.mount.mount_point.c_str(),
           m.mount.device.c_str(), m.mount.options.c_str());
  printf("- in the commands, $T is the tmpfs work directory and $D the disk work directory (artifacts live in $D/art)\n");
  printf("- hpak: %s (%s); threads: %u for every tool that takes -j; runs: %u per arm, interleaved; median and min–max\n",
         e.hpak.c_str(), e.hpak_version.c_str(), e.threads, e.runs);
  printf("- HPAK_FSYNC: %s\n", e.hpak_fsync.empty() ? "unset (hpak fsyncs the packs and library files it writes)" : e.hpak_fsync.c_str());
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

void write_numbers(JsonWriter& w, const std::vector<double>& v) {
  w.begin_array();
  for (double x : v) w.number(x, 6);
  w.end();
}

void write_environment(JsonWriter& w, const bench::Environment& e) {
  w.key("environment").begin_object().field("cpu", e.cpu).field("cpus", e.cpus).field("cpus_usable", e.cpus_usable);
  w.field("kernel", e.kernel);
  w.field("mem_bytes", e.mem_bytes).field("threads", e.threads).field("runs", e.runs).field("hpak", e.hpak);
  w.field("hpak_version", e.hpak_version).field("hpak_fsync", e.hpak_fsync);
  write_numbers(w.key("load_start"), e.load_start);
  write_numbers(w.key("load_end"), e.load_end);
  w.key("media").begin_array();
  for (auto& m : e.media) {
    w.begin_object().field("name", m.name).field("root", m.root).field("fstype", m.mount.fstype);
    w.field("mount_point", m.mount.mount_point).field("device", m.mount.device).field("options", m.mount.options).end();
  }
  w.end().key("tools").begin_object();
  for (auto& [name, what] : e.tools) w.field(name, what);
  w.end().end();
}

void write_row(JsonWriter& w, const bench::Row& r) {
  bench::Stats st = r.stats();
  w.begin_object().field("id", r.id).field("suite", r.suite).field("group", r.group).field("medium", r.medium).field("tool", r.tool);
  w.field("role", r.role).field("command", r.command).field("unit", r.unit).field("count", r.count).field("bytes", r.bytes);
  write_numbers(w.key("samples"), r.samples);
  w.field("n", st.n).key("median").number(st.n ? st.median : NAN, 6).key("min").number(st.n ? st.min : NAN, 6);
  w.key("max").number(st.n ? st.max : NAN, 6).key("per_second").number(r.per_second(), 6);
  w.key("mb_per_s").number(r.mb_per_s(), 6).key("us_each").number(r.us_per_unit(), 6);
  w.key("vs_baseline").number(r.vs_baseline, 6).key("vs_ceiling").number(r.vs_ceiling, 6);
  w.key("metrics").begin_object();
  for (auto& m : r.metrics) w.key(m.key).number(m.value, 6);
  w.end().key("notes").strings(r.notes).key("error").value_or_null(r.error).end();
}

std::string to_json(const bench::Report& rep) {
  JsonWriter w;
  w.begin_object().field("hpak_bench", 2).field("started", rep.env.started).key("seconds").number(rep.seconds, 6);
  w.field("failed", rep.failed).field("quick", rep.env.quick).key("suites").strings(rep.suites);
  write_environment(w, rep.env);
  w.key("corpora").begin_array();
  for (auto& c : rep.corpora) {
    w.begin_object().field("name", c.name).field("path", c.path).field("origin", c.origin).field("files", c.files);
    w.field("dirs", c.dirs).field("symlinks", c.symlinks).field("bytes", c.bytes).end();
  }
  w.end().key("rows").begin_array();
  for (auto& r : rep.rows) write_row(w, r);
  w.end().key("targets").begin_array();
  for (auto& t : rep.targets) {
    w.begin_object().field("id", t.id).field("name", t.name).field("op", t.op);
    w.key("value").number(t.value, 6).key("limit").number(t.limit, 6);
    w.field("unit", t.unit).field("measured", t.measured).field("pass", t.pass).field("detail", t.detail).end();
  }
  w.end().key("notes").strings(rep.notes);
  w.end().newline();
  return w.str();
}

int run(const Options& o) {
  bench::Config cfg;
  cfg.corpus = o.corpus;
  cfg.suites = o.suites;
  if (!o.media.empty()) cfg.media = o.media;
  else if (bench::kWindowsBuild) cfg.media = o.tmpfs.empty() ? std::vector<std::string>{"disk"} : std::vector<std::string>{"tmpfs", "disk"};
  if (bench::kWindowsBuild && o.tmpfs.empty() && std::count(cfg.media.begin(), cfg.media.end(), "tmpfs"))
    throw Error("Windows has no tmpfs: name a directory for the tmpfs runs with --tmpfs DIR (a RAM disk), or use --media disk");
  cfg.tmpfs_root = o.tmpfs;
  cfg.disk_root = o.disk;
  cfg.quick = o.quick;
  if (o.quick && o.media.empty()) // the disk runs are what takes long
    cfg.media = {bench::kWindowsBuild && o.tmpfs.empty() ? "disk" : "tmpfs"};
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

extern const Command cmd_bench{"bench", "Run the benchmark suites side by side with baselines and the ceiling", setup};

} // namespace hpak::cmd
