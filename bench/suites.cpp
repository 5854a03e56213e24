// bench/suites.cpp — the driver of the suite engine: tools and work
// directories, corpora and artifacts built once, the interleaved series
// runner, and the issue-2/3 targets checked at the end. The suites themselves
// are in suite_*.cpp.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>
#include <stdexcept>

#include "base/os/sys.hpp"
#include "bench/suite_ctx.hpp"

namespace hpak::bench {

namespace fs = std::filesystem;

const std::vector<std::string>& all_suites() {
  static const std::vector<std::string> s = {"restore", "pack", "read", "verify", "gc"};
  return s;
}

double mono_now() { // CLOCK_MONOTONIC on Linux
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// ---- Ctx ------------------------------------------------------------------------

Ctx::Ctx(const Config& c, Report& r, const Log& l) : cfg(c), rep(r), log(l) {
  threads = cfg.threads ? cfg.threads : online_cpus();
  runs = cfg.runs ? cfg.runs : 1;
  T = std::to_string(threads);
  hpak = cfg.hpak.empty() ? self_exe() : cfg.hpak;
  gencorpus = find_tool("hpak-gencorpus");
  rccbase = find_tool("hpak-rccbase");
  ceiling = find_tool("hpak-ceiling");
  tar = find_tool("tar");
  zstd = find_tool("zstd");
  git = find_tool("git");
  strace = find_tool("strace");
  sha256sum = find_tool("sha256sum");
  xargs = find_tool("xargs");
  cp = find_tool("cp");
  dd = find_tool("dd");
  std::string missing;
  if (hpak.empty()) missing += " hpak";
  // Windows (issue 30): hpak-rccbase and hpak-ceiling are POSIX programs, not
  // built there, and cp is no Windows tool: their rows are left out (a note says
  // so) and copies are made in-process (copy_tree).
  if (rccbase.empty() && !kWindowsBuild) missing += " hpak-rccbase";
  if (ceiling.empty() && !kWindowsBuild) missing += " hpak-ceiling";
  if (gencorpus.empty() && cfg.corpus.empty()) missing += " hpak-gencorpus";
  if (cp.empty() && !kWindowsBuild) missing += " cp";
  if (!missing.empty())
    throw std::runtime_error("bench needs" + missing + " (looked next to " + self_exe() + ", in bench/ beside it and on PATH; build them with " +
                             (kWindowsBuild ? "scripts/build-windows.sh)" : "scripts/build.sh)"));

  std::map<std::string, std::string> roots = {{"tmpfs", cfg.tmpfs_root}, {"disk", cfg.disk_root}};
  for (auto& m : cfg.media) {
    auto it = roots.find(m);
    if (it == roots.end()) throw std::runtime_error("unknown medium '" + m + "' (tmpfs or disk)");
    if (work.count(m)) continue;
    try {
      work[m] = make_temp_dir(it->second, "hpak-bench.");
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string(e.what()) + " (medium " + m + ")");
    }
  }
  // Artifacts (corpora, packs, libraries) go on disk when the disk runs are
  // on, else on tmpfs.
  art_medium = work.count("disk") ? "disk" : "tmpfs";
  art = work[art_medium] + "/art";
  fs::create_directories(art);
  scratch = art + "/.proc";
  fs::create_directories(scratch);
}

Ctx::~Ctx() {
  if (cfg.keep) {
    for (auto& [m, d] : work) log("kept the work directory " + d);
    return;
  }
  for (auto& [m, d] : work) {
    try {
      remove_tree(d);
    } catch (...) {
    }
  }
}

bool Ctx::has_medium(const std::string& m) const { return work.count(m) > 0; }

std::vector<std::string> Ctx::media() const {
  std::vector<std::string> v;
  for (auto& m : cfg.media)
    if (has_medium(m) && std::find(v.begin(), v.end(), m) == v.end()) v.push_back(m);
  return v;
}

std::string Ctx::show(const std::vector<std::string>& argv) const {
  std::vector<std::string> a = argv;
  std::vector<std::pair<std::string, std::string>> subst;
  for (auto& [m, d] : work) subst.emplace_back(d, m == "tmpfs" ? "$T" : "$D");
  for (auto& s : a) {
    if (s.empty()) continue;
    if (s == hpak) s = "hpak";
    else if (s == rccbase || s == ceiling || s == gencorpus || s == tar || s == zstd || s == git || s == strace ||
             s == sha256sum || s == xargs || s == cp)
      s = fs::path(s).filename().string();
  }
  std::string j = shell_join(a);
  for (auto& [from, to] : subst) {
    for (size_t p; (p = j.find(from)) != std::string::npos;) j.replace(p, from.size(), to);
  }
  return j;
}

uint64_t Ctx::profile_files(const std::string& p) const {
  if (cfg.quick) {
    if (p == "rcc") return 400;
    if (p == "smallfile") return 2000;
    if (p == "packfs") return 2000;
    if (p == "packfs2x") return 4000;
  }
  if (p == "rcc") return 12000;
  if (p == "smallfile") return 100000;
  if (p == "packfs") return 20000;
  if (p == "packfs2x") return 40000;
  throw std::runtime_error("unknown profile " + p);
}

ProcResult Ctx::must(const std::vector<std::string>& argv, const std::string& what, bool capture_out) {
  RunOptions o;
  o.scratch = scratch;
  o.capture_out = capture_out;
  ProcResult r = run_proc(argv, o);
  if (!r.ok()) throw std::runtime_error(what + " failed (" + show(argv) + "): " + r.first_error_line());
  return r;
}

void Ctx::copy_tree(const std::string& from, const std::string& to, const std::string& what) {
  if (!cp.empty()) {
    must({cp, "-a", from, to}, what);
    return;
  }
  std::error_code ec;
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
  if (ec) throw std::runtime_error(what + " failed (copy of '" + from + "' to '" + to + "'): " + ec.message());
}

void Ctx::copy_file(const std::string& from, const std::string& to, const std::string& what) {
  if (!cp.empty()) {
    must({cp, from, to}, what);
    return;
  }
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) throw std::runtime_error(what + " failed (copy of '" + from + "' to '" + to + "'): " + ec.message());
}

std::string Ctx::corpus(const std::string& profile) {
  auto it = corpora_.find(profile);
  if (it != corpora_.end()) return it->second;
  CorpusInfo ci;
  ci.name = profile;
  std::string path;
  if (profile == "rcc" && !cfg.corpus.empty()) {
    path = real_path_of(cfg.corpus);
    if (!fs::is_directory(path)) throw std::runtime_error("--corpus '" + cfg.corpus + "' is not a directory");
    ci.name = "user";
    ci.origin = "user tree " + path;
  } else {
    std::string gen_profile = profile == "packfs2x" ? "packfs" : profile;
    path = art + "/corpus-" + profile + "/env";
    fs::create_directories(fs::path(path).parent_path());
    std::vector<std::string> argv = {gencorpus, "--profile", gen_profile, "--files", std::to_string(profile_files(profile))};
    if (profile == "packfs2x") argv.insert(argv.end(), {"--seed", "2"});
    argv.push_back(path);
    log("setup: generating the " + profile + " corpus (" + std::to_string(profile_files(profile)) + " files)");
    must(argv, "hpak-gencorpus");
    ci.origin = show(argv);
  }
  corpora_[profile] = path;
  const TreeInfo& t = info(profile);
  ci.path = path;
  ci.files = t.files.size();
  ci.dirs = t.dirs;
  ci.symlinks = t.symlinks;
  ci.bytes = t.bytes;
  rep.corpora.push_back(ci);
  return path;
}

const TreeInfo& Ctx::info(const std::string& profile) {
  auto it = infos_.find(profile);
  if (it != infos_.end()) return it->second;
  std::string p = corpus(profile);
  auto again = infos_.find(profile); // corpus() may have filled it
  if (again != infos_.end()) return again->second;
  return infos_[profile] = scan_tree(p);
}

std::string Ctx::pack_file(const std::string& profile) {
  auto it = packs_.find(profile);
  if (it != packs_.end()) return it->second;
  std::string src = corpus(profile);
  std::string out = art + "/" + profile + ".hpak";
  log("setup: hpak pack " + profile);
  must({hpak, "-q", "pack", src, "-o", out, "-j", T}, "hpak pack");
  return packs_[profile] = out;
}

std::string Ctx::library(const std::string& profile, int level) {
  std::string key = profile + "/" + std::to_string(level);
  auto it = libs_.find(key);
  if (it != libs_.end()) return it->second;
  std::string src = corpus(profile);
  std::string lib = art + "/lib-" + profile + (level == 3 ? "" : "-l" + std::to_string(level));
  log("setup: hpak init --level, hpak pack --into (library for " + profile + ", level " + std::to_string(level) + ")");
  must({hpak, "-q", "init", lib, "--level", std::to_string(level)}, "hpak init");
  must({hpak, "-q", "pack", src, "--into", lib, "--name", "env", "-j", T}, "hpak pack --into");
  return libs_[key] = lib;
}

std::string Ctx::rcc_lib(const std::string& profile) {
  auto it = rcclibs_.find(profile);
  if (it != rcclibs_.end()) return it->second;
  if (rccbase.empty()) return "";
  std::string src = corpus(profile);
  std::string lib = art + "/rcclib-" + profile;
  log("setup: hpak-rccbase lift " + profile);
  must({rccbase, "lift", src, lib}, "hpak-rccbase lift");
  return rcclibs_[profile] = lib;
}

std::string Ctx::tar_zst(const std::string& profile) {
  auto it = tars_.find(profile);
  if (it != tars_.end()) return it->second;
  if (tar.empty() || zstd.empty()) return "";
  std::string src = corpus(profile);
  std::string out = art + "/" + profile + ".tar.zst";
  log("setup: tar --zstd -cf " + profile);
  must({tar, "--zstd", "-cf", out, "-C", fs::path(src).parent_path().string(), fs::path(src).filename().string()}, "tar --zstd -cf");
  return tars_[profile] = out;
}

std::string row_id(const std::string& suite, const std::string& case_id, const std::string& medium, const std::string& arm) {
  std::string id;
  for (const std::string* part : {&suite, &case_id, &medium, &arm})
    if (!part->empty()) id += (id.empty() ? "" : ".") + *part;
  return id;
}

size_t Ctx::add_row(Row r) {
  if (r.id.empty()) throw std::logic_error("bench row '" + r.group + " / " + r.tool + "' has no id");
  for (auto& other : rep.rows)
    if (other.id == r.id) throw std::logic_error("two bench rows have the id " + r.id);
  rep.rows.push_back(std::move(r));
  return rep.rows.size() - 1;
}

namespace {
std::string fmt_secs(double s) {
  char b[32];
  snprintf(b, sizeof b, "%.3f s", s);
  return b;
}
} // namespace

// The empty row of one arm (Arm or InArm) of a series.
template <class A>
static Row row_of(const std::string& suite, const Case& group, const std::string& medium, const A& a, std::string command) {
  Row r;
  r.id = row_id(suite, group.id, medium, a.key);
  r.suite = suite;
  r.group = group.label;
  r.medium = medium;
  r.tool = a.tool;
  r.role = a.role;
  r.unit = a.unit;
  r.count = a.count;
  r.bytes = a.bytes;
  r.command = std::move(command);
  r.notes = a.notes;
  return r;
}

std::vector<size_t> Ctx::series(const std::string& suite, const Case& group, const std::string& medium,
                                std::vector<Arm> arms, unsigned nruns) {
  if (!nruns) nruns = runs;
  std::vector<size_t> idx;
  std::vector<std::vector<double>> users(arms.size()), syss(arms.size());
  for (auto& a : arms) {
    idx.push_back(add_row(row_of(suite, group, medium, a, show(a.argv(0)))));
  }
  RunOptions ro;
  ro.scratch = scratch;
  for (unsigned rp = 0; rp < nruns; rp++) {
    for (size_t k = 0; k < arms.size(); k++) {
      size_t i = (k + rp) % arms.size();
      Arm& a = arms[i];
      Row& row = rep.rows[idx[i]];
      if (!row.error.empty()) continue;
      try {
        if (a.prep) a.prep(rp);
        if (medium == "disk") sync_all();
        ro.capture_out = a.capture_out;
        std::vector<std::string> argv = a.argv(rp);
        ProcResult pr = run_proc(argv, ro);
        if (!pr.ok()) throw std::runtime_error(show(argv) + ": " + pr.first_error_line());
        double s = a.sample ? a.sample(rp, pr, row) : pr.secs;
        if (a.check) {
          std::string bad = a.check(rp, pr);
          if (!bad.empty()) throw std::runtime_error("check failed after " + a.tool + ": " + bad);
        }
        row.samples.push_back(s);
        users[i].push_back(pr.user);
        syss[i].push_back(pr.sys);
        log(suite + " | " + group.label + (medium.empty() ? "" : " | " + medium) + " | " + a.tool + " | run " +
            std::to_string(rp + 1) + "/" + std::to_string(nruns) + ": " + fmt_secs(s));
      } catch (const std::exception& e) {
        row.error = e.what();
        if (row.role == "hpak") rep.failed = true;
        log(suite + " | " + group.label + " | " + a.tool + ": FAILED: " + e.what());
      }
    }
  }
  for (size_t i = 0; i < arms.size(); i++) {
    Row& row = rep.rows[idx[i]];
    if (!users[i].empty()) {
      row.metrics.push_back({"cpu_user_s", stats_of(users[i]).median});
      row.metrics.push_back({"cpu_sys_s", stats_of(syss[i]).median});
    }
  }
  return idx;
}

std::vector<size_t> Ctx::series_in(const std::string& suite, const Case& group, const std::string& medium,
                                   std::vector<InArm> arms, unsigned nruns) {
  if (!nruns) nruns = runs;
  std::vector<size_t> idx;
  for (auto& a : arms) {
    idx.push_back(add_row(row_of(suite, group, medium, a, a.command)));
  }
  for (size_t i = 0; i < arms.size(); i++) { // one untimed warm-up pass each (page faults, caches)
    try {
      arms[i].body(0);
    } catch (const std::exception&) {
    }
  }
  for (unsigned rp = 0; rp < nruns; rp++) {
    for (size_t k = 0; k < arms.size(); k++) {
      size_t i = (k + rp) % arms.size();
      Row& row = rep.rows[idx[i]];
      if (!row.error.empty()) continue;
      try {
        double s = arms[i].body(rp);
        row.samples.push_back(s);
        log(suite + " | " + group.label + (medium.empty() ? "" : " | " + medium) + " | " + arms[i].tool + " | run " +
            std::to_string(rp + 1) + "/" + std::to_string(nruns) + ": " + fmt_secs(s));
      } catch (const std::exception& e) {
        row.error = e.what();
        if (row.role == "hpak") rep.failed = true;
        log(suite + " | " + group.label + " | " + arms[i].tool + ": FAILED: " + e.what());
      }
    }
  }
  return idx;
}

// ---- dirty-target mutation ------------------------------------------------------

std::vector<std::string> pick_files(const std::vector<std::string>& candidates, size_t k, uint64_t seed) {
  std::vector<size_t> ix(candidates.size());
  for (size_t i = 0; i < ix.size(); i++) ix[i] = i;
  std::mt19937_64 rng(seed);
  k = std::min(k, ix.size());
  for (size_t i = 0; i < k; i++) std::swap(ix[i], ix[i + rng() % (ix.size() - i)]);
  std::vector<std::string> out;
  for (size_t i = 0; i < k; i++) out.push_back(candidates[ix[i]]);
  return out;
}

void Mutation::apply(const std::string& root, const std::vector<std::string>& rel) {
  paths.clear();
  originals.clear();
  for (size_t i = 0; i < rel.size(); i++) {
    std::string p = root + "/" + rel[i];
    std::string orig = read_small_file(p);
    int fd = os::open_path(p.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error("cannot open '" + p + "' to change it: " + std::strerror(errno));
    os::FileStat st;
    os::fstat(fd, st);
    bool ok;
    if (i % 2 == 0 || orig.empty()) { // append: size and mtime change
      static const char tail[] = "\n# changed by hpak bench\n";
      ok = os::pwrite(fd, tail, sizeof tail - 1, os::Off(orig.size())) == long(sizeof tail - 1);
    } else { // same-size edit, mtime put back: only the ctime tells
      size_t n = std::min<size_t>(8, orig.size());
      std::string edit = orig.substr(0, n);
      for (char& ch : edit) ch = char(ch ^ 0x55);
      ok = os::pwrite(fd, edit.data(), n, 0) == long(n);
      os::TimeSpec ts[2] = {st.st_atim, st.st_mtim};
      ok = ok && os::set_times(fd, ts) == 0;
    }
    os::close(fd);
    if (!ok) throw std::runtime_error("cannot change '" + p + "': " + std::strerror(errno));
    paths.push_back(p);
    originals.push_back(std::move(orig));
  }
}

std::string Mutation::check() const {
  for (size_t i = 0; i < paths.size(); i++) {
    os::FileStat st;
    if (os::lstat_path(paths[i].c_str(), st) != 0 || !S_ISREG(st.st_mode)) return "'" + paths[i] + "' is missing";
    if (read_small_file(paths[i]) != originals[i]) return "'" + paths[i] + "' still differs";
  }
  return "";
}

// ---- strace -c ------------------------------------------------------------------

SyscallCount parse_strace_summary(const std::string& text) {
  SyscallCount c;
  std::istringstream in(text);
  std::vector<std::pair<uint64_t, std::string>> calls;
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::vector<std::string> tok;
    for (std::string t; ls >> t;) tok.push_back(t);
    if (tok.size() < 5 || !std::isdigit(static_cast<unsigned char>(tok[0][0]))) continue;
    // % time, seconds, usecs/call, calls, [errors], syscall
    uint64_t n = std::strtoull(tok[3].c_str(), nullptr, 10);
    if (tok.back() == "total") {
      c.total = n;
      c.ok = true;
    } else {
      calls.emplace_back(n, tok.back());
    }
  }
  std::sort(calls.begin(), calls.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (size_t i = 0; i < calls.size() && i < 6; i++)
    c.top += (i ? ", " : "") + calls[i].second + " " + std::to_string(calls[i].first);
  return c;
}

// ---- targets ----------------------------------------------------------------------

namespace {

// The measured row of this id, or null.
const Row* find_row(const Report& r, const std::string& id) {
  for (auto& row : r.rows)
    if (row.id == id && row.error.empty() && !row.samples.empty()) return &row;
  return nullptr;
}

std::string num(double v, int prec = 3) {
  char b[64];
  snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

void add_target(Report& rep, std::string id, std::string name, std::string op, double value, double limit, std::string unit,
                std::string detail) {
  Target t;
  t.id = std::move(id);
  t.name = std::move(name);
  t.op = std::move(op);
  t.value = value;
  t.limit = limit;
  t.unit = std::move(unit);
  t.detail = std::move(detail);
  t.measured = std::isfinite(value);
  t.pass = t.measured && (t.op == "<=" ? value <= limit : value >= limit);
  rep.targets.push_back(std::move(t));
}

// Time ratio a/b of two rows' medians.
void ratio_target(Report& rep, const std::string& id, const std::string& name, const Row* a, const Row* b, const std::string& op,
                  double limit, bool inverse = false) {
  if (!a || !b) {
    add_target(rep, id, name, op, kNaN, limit, "x", "not measured in this run");
    return;
  }
  double ma = a->median(), mb = b->median();
  double v = inverse ? mb / ma : ma / mb;
  std::string detail = inverse ? (b->tool + " " + num(mb) + " s / " + a->tool + " " + num(ma) + " s")
                               : (a->tool + " " + num(ma) + " s / " + b->tool + " " + num(mb) + " s");
  add_target(rep, id, name, op, v, limit, "x", detail);
}

bool ran(const Report& rep, const char* suite) { return std::count(rep.suites.begin(), rep.suites.end(), suite) > 0; }

void check_unpack_target(Report& rep, const Ctx& c) {
  if (c.has_medium("tmpfs"))
    ratio_target(rep, "unpack.tmpfs", "unpack <= 0.5x tar --zstd -xf (empty dir, tmpfs)", find_row(rep, "restore.unpack.tmpfs.hpak"),
                 find_row(rep, "restore.unpack.tmpfs.tar"), "<=", 0.5);
}

void check_pack_targets(Report& rep, const Ctx& c) {
  for (const char* p : {"rcc", "user", "smallfile", "packfs"}) {
    std::string base = row_id("pack", p, c.art_medium, "");
    const Row* h = find_row(rep, base + ".hpak");
    const Row* t = find_row(rep, base + ".tar");
    if (!h && !t) continue;
    ratio_target(rep, std::string("pack_time.") + p, std::string("pack time <= 0.7x tar --zstd -cf (") + p + ")", h, t, "<=", 0.7);
    double hs = h ? h->metric("output_bytes") : kNaN, ts = t ? t->metric("output_bytes") : kNaN;
    add_target(rep, std::string("pack_size.") + p, std::string("pack size <= 1.2x .tar.zst (") + p + ")", "<=", hs / ts, 1.2, "x",
               "pack+index " + num(hs / 1e6, 2) + " MB / .tar.zst " + num(ts / 1e6, 2) + " MB");
  }
}

void check_into_target(Report& rep, const Ctx& c) {
  for (auto& row : rep.rows) {
    if (row.id == row_id("pack", "into", c.art_medium, "second")) {
      double v = row.metric("written_vs_first");
      add_target(rep, "into_shared", "second env sharing 90% writes <= 15% of the first's bytes", "<=", v * 100, 15.0, "%",
                 num(row.metric("pack_bytes") / 1e6, 2) + " MB / " + num(row.metric("first_pack_bytes") / 1e6, 2) + " MB");
    }
  }
}

void check_verify_target(Report& rep) {
  const Row* v = find_row(rep, "verify.hpak");
  double gbs = v ? v->mb_per_s() / 1000 : kNaN;
  add_target(rep, "verify_rate", "verify >= 1 GB/s of content checked", ">=", gbs, 1.0, "GB/s",
             v ? num(double(v->bytes) / 1e6, 1) + " MB of object content in " + num(v->median()) + " s" : "not measured");
}

void check_fresh_targets(Report& rep, const Ctx& c) {
  for (auto& m : c.media()) {
    std::string base = row_id("restore", "fresh", m, "");
    const Row* h = find_row(rep, base + ".hpak");
    ratio_target(rep, "fresh_vs_rcc." + m, "fresh restore >= 5x faster than rcc-style (" + m + ")", h, find_row(rep, base + ".rcc"),
                 ">=", 5.0, true);
    ratio_target(rep, "fresh_vs_ceiling." + m, "fresh restore <= 1.3x the ceiling (" + m + ")", h, find_row(rep, base + ".ceiling"),
                 "<=", 1.3);
  }
}

void check_syscall_targets(Report& rep) {
  for (auto& row : rep.rows) {
    if (row.id == row_id("restore", "syscalls", row.medium, "hpak_fresh")) {
      // Per entry (files + directories + symlinks), each of which gets its
      // recorded mtime since issue 10 (item 12): at most 4.
      double v = row.metric("syscalls_per_entry");
      add_target(rep, "syscalls_per_entry." + row.medium, "<= 4 syscalls per restored entry (fresh restore, " + row.medium + ")", "<=",
                 v, 4.0, "syscalls/entry",
                 num(row.metric("syscalls"), 0) + " syscalls / " + num(row.metric("syscalls") / v, 0) +
                     " files, dirs and symlinks (strace -f -c, whole process)");
    }
  }
}

void check_dirty_targets(Report& rep, const Ctx& c) {
  for (auto& m : c.media()) {
    ratio_target(rep, "noop_vs_git_status." + m, "no-op restore <= git status (" + m + ")",
                 find_row(rep, row_id("restore", "dirty0", m, "hpak")), find_row(rep, row_id("restore", "dirty0", m, "git_status")),
                 "<=", 1.0);
    ratio_target(rep, "dirty1_vs_git_checkout." + m, "1% dirty restore <= git checkout -f (" + m + ")",
                 find_row(rep, row_id("restore", "dirty1", m, "hpak")), find_row(rep, row_id("restore", "dirty1", m, "git_checkout")),
                 "<=", 1.0);
  }
}

void check_repack_targets(Report& rep, const Ctx& c) {
  const Row* g = find_row(rep, row_id("gc", "repack_packfs", c.art_medium, "copy"));
  double v = g ? g->per_second() / 1e6 : kNaN;
  add_target(rep, "repack_small", "repack >= 1M small objects/s (packfs, 128 B)", ">=", v, 1.0, "M objects/s",
             g ? std::to_string(g->count) + " objects in " + num(g->median(), 4) + " s (hpak gc --json copy_seconds)" : "not measured");
  // "Near disk bandwidth" for large objects, taken as at least half of what
  // cp achieves on the same medium (cp neither hashes nor checks anything).
  std::string base = row_id("gc", "repack_large", c.art_medium, "");
  const Row* l = find_row(rep, base + ".copy");
  // On disk, "disk bandwidth" is the device's: dd with O_DIRECT; cp (a
  // page-cache copy in the kernel) is shown beside it. On tmpfs there is no
  // device, and cp is the bound.
  const Row* d = find_row(rep, base + ".dd");
  const Row* b = d ? d : find_row(rep, base + ".cp");
  double lr = l && b ? l->mb_per_s() / b->mb_per_s() : kNaN;
  std::string what = d ? "the disk's write bandwidth (dd oflag=direct)" : "cp's bandwidth";
  add_target(rep, "repack_large", "repack of large objects >= 0.5x " + what + " (" + c.art_medium + ")", ">=", lr, 0.5,
             d ? "x dd" : "x cp",
             l && b ? num(l->mb_per_s(), 3) + " MB/s copied / " + (d ? "dd " : "cp ") + num(b->mb_per_s(), 3) + " MB/s" : "not measured");
}

// The issue-2/3 targets, in the order of the table; each found by row id.
void check_targets(Report& rep, const Ctx& c) {
  if (ran(rep, "restore")) check_unpack_target(rep, c);
  if (ran(rep, "pack")) check_pack_targets(rep, c);
  if (ran(rep, "verify")) check_verify_target(rep);
  if (ran(rep, "restore")) {
    check_fresh_targets(rep, c);
    check_syscall_targets(rep);
    check_dirty_targets(rep, c);
  }
  if (ran(rep, "pack")) check_into_target(rep, c);
  if (ran(rep, "gc")) check_repack_targets(rep, c);
}

void compute_ratios(Report& rep) {
  for (auto& row : rep.rows) {
    if (row.samples.empty()) continue;
    for (auto& other : rep.rows) {
      if (other.suite != row.suite || other.group != row.group || other.medium != row.medium || other.samples.empty() ||
          !other.error.empty())
        continue;
      if (other.role == "baseline" && std::isnan(row.vs_baseline)) row.vs_baseline = row.median() / other.median();
      if (other.role == "ceiling" && std::isnan(row.vs_ceiling)) row.vs_ceiling = row.median() / other.median();
    }
  }
}

std::string tool_version(const std::string& path, const std::vector<std::string>& args, const std::string& scratch) {
  if (path.empty()) return "not found";
  std::vector<std::string> argv = {path};
  argv.insert(argv.end(), args.begin(), args.end());
  RunOptions o;
  o.scratch = scratch;
  ProcResult r = run_proc(argv, o);
  std::string s = r.out.empty() ? r.err : r.out;
  s = s.substr(0, s.find('\n'));
  return path + (s.empty() ? "" : " (" + s + ")");
}

} // namespace

Report run_bench(const Config& cfg_in, const Log& log) {
  Config cfg = cfg_in;
  if (cfg.suites.empty()) cfg.suites = all_suites();
  for (auto& s : cfg.suites)
    if (std::find(all_suites().begin(), all_suites().end(), s) == all_suites().end())
      throw std::runtime_error("unknown suite '" + s + "' (restore, pack, read, verify, gc)");
  Report rep;
  double t0 = mono_now();
  rep.env.started = now_iso8601();
  rep.env.load_start = loadavg();
  rep.env.cpu = cpu_model();
  rep.env.cpus = online_cpus();
  rep.env.cpus_usable = usable_cpus();
  const char* fsync_env = getenv("HPAK_FSYNC");
  rep.env.hpak_fsync = fsync_env ? fsync_env : "";
  rep.env.kernel = kernel_release();
  rep.env.mem_bytes = mem_total_bytes();
  rep.env.quick = cfg.quick;
  Ctx c(cfg, rep, log);
  rep.env.threads = c.threads;
  rep.env.runs = c.runs;
  rep.env.hpak = c.hpak;
  {
    RunOptions o;
    o.scratch = c.scratch;
    rep.env.hpak_version = run_proc({c.hpak, "--version"}, o).out;
    while (!rep.env.hpak_version.empty() && rep.env.hpak_version.back() == '\n') rep.env.hpak_version.pop_back();
  }
  for (auto& m : c.media()) {
    MediumInfo mi;
    mi.name = m;
    mi.root = fs::path(c.work[m]).parent_path().string();
    mi.mount = mount_of(c.work[m]);
    rep.env.media.push_back(mi);
  }
  rep.env.tools = {
      {"hpak-gencorpus", c.gencorpus.empty() ? "not found" : c.gencorpus},
      {"hpak-rccbase", c.rccbase.empty() ? "not found" : c.rccbase},
      {"hpak-ceiling", c.ceiling.empty() ? "not found" : c.ceiling},
      {"tar", tool_version(c.tar, {"--version"}, c.scratch)},
      {"zstd", tool_version(c.zstd, {"--version"}, c.scratch)},
      {"git", tool_version(c.git, {"--version"}, c.scratch)},
      {"strace", tool_version(c.strace, {"-V"}, c.scratch)},
      {"sha256sum", tool_version(c.sha256sum, {"--version"}, c.scratch)},
  };
  if (c.rccbase.empty()) c.note("hpak-rccbase is not in this build (a POSIX program): no rcc-style rows");
  if (c.ceiling.empty()) c.note("hpak-ceiling is not in this build (a POSIX program): no ceiling rows");
  if (c.cp.empty()) c.note("cp is not installed: setup copies are made in-process (std::filesystem::copy), the gc suite has no cp row");
  if (kWindowsBuild)
    c.note(std::string("Windows: each run's wall time includes process creation; CPU times are the child's own (GetProcessTimes, its "
                       "children not added)") +
           (rep.env.kernel.find("Wine") != std::string::npos ? ", none under Wine (its GetProcessTimes of a child gives the caller's)" : "") +
           "; nothing is synced before the disk runs; under Wine the figures are Wine's, not Windows'");
  if (c.strace.empty()) c.note("strace is not installed: no syscall counts");
  if (c.git.empty()) c.note("git is not installed: no git checkout -f / git status rows");
  if (c.tar.empty() || c.zstd.empty()) c.note("tar or zstd is not installed: no tar --zstd rows");
  if (cfg.quick) c.note("--quick: tiny corpora and few runs; proves the harness works, the figures mean little");

  for (auto& s : all_suites()) {
    if (std::find(cfg.suites.begin(), cfg.suites.end(), s) == cfg.suites.end()) continue;
    rep.suites.push_back(s);
    log("== suite " + s);
    try {
      if (s == "restore") suite_restore(c);
      else if (s == "pack") suite_pack(c);
      else if (s == "read") suite_read(c);
      else if (s == "verify") suite_verify(c);
      else if (s == "gc") suite_gc(c);
    } catch (const std::exception& e) { // a setup step failed: report it, go on with the next suite
      rep.failed = true;
      c.note("suite " + s + " stopped: " + e.what());
      log("suite " + s + " stopped: " + e.what());
    }
  }
  compute_ratios(rep);
  check_targets(rep, c);
  rep.env.load_end = loadavg();
  rep.seconds = mono_now() - t0;
  return rep;
}

} // namespace hpak::bench
