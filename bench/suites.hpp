// bench/suites.hpp — the suite engine of `hpak bench` (library hpak_bench).
//
// A run measures, side by side and interleaved, hpak and its like-for-like
// baseline (and the kernel's ceiling where one exists) on the same corpus,
// the same medium and the same thread count; every arm is repeated
// `runs` times in rotating order (rep r starts with arm r mod n), and each
// row keeps every sample, reported as median and min–max. The suites:
//
//   restore  fresh target (tmpfs and disk; a new directory per run) and
//            "churn" (right after rm -rf of a similar tree): hpak restore vs
//            hpak-rccbase restore (rcc-style) vs hpak-ceiling (same bytes from
//            memory); hpak unpack (with and without --no-verify) vs
//            tar --zstd -xf; dirty targets (0/1/10% of files changed: appends
//            and same-size edits with the mtime put back): hpak restore vs
//            rcc-style restore-over vs git checkout -f, and git status vs the
//            no-op restore; syscalls per file from one extra strace -f -c run.
//   pack     hpak pack vs tar --zstd -cf (same level, 3) on the rcc,
//            smallfile and packfs profiles (µs/file, MB/s, size ratio);
//            pack --into of a second environment sharing 90% (bytes written).
//   read     N random objects by digest through PackReader (in-process) vs
//            open/read/close of the same files on tmpfs and disk.
//   verify   hpak verify vs sha256sum over the unpacked files (xargs -P).
//   gc       verbatim repack of a library with 50% garbage (from gc --json:
//            copied_objects / copy_seconds) for the packfs and rcc profiles;
//            200 small packs: packs and lookup rate before and after gc.
//
// Then the issue-2/3 targets are checked against the medians (Target).
// Nothing here prints except through `Log`; cmd/bench.cpp formats the Report.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "bench/measure.hpp"

namespace hpak::bench {

const std::vector<std::string>& all_suites(); // restore pack read verify gc

struct Config {
  std::string corpus;                 // "" = generate (hpak-gencorpus --profile rcc)
  std::vector<std::string> suites;    // empty = all
  std::vector<std::string> media = {"tmpfs", "disk"};
  std::string tmpfs_root = "/dev/shm", disk_root = "/var/tmp";
  unsigned runs = 5;
  unsigned threads = 0;               // 0 = online CPUs
  bool quick = false;                 // tiny corpora, runs default 1: proves the harness works
  bool keep = false;                  // keep the work directories
  std::string hpak;                   // hpak binary to measure ("" = /proc/self/exe)
};

using Log = std::function<void(const std::string&)>;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Metric {
  std::string key;
  double value;
};

// Every row and target has a stable id, the key a script looks it up by
// (bench/render_results.py); the other names are labels for display and may be
// reworded. A row's id is suite.case[.medium].arm, e.g. restore.fresh.tmpfs.hpak,
// made of lower-case words, digits and '_' (row_id).
struct Row {
  std::string id;      // restore.fresh.tmpfs.hpak, pack.rcc.disk.tar, ...
  std::string suite;   // restore, pack, read, verify, gc
  std::string group;   // "fresh", "churn", "dirty 1%", "unpack", "pack rcc", ...
  std::string medium;  // tmpfs, disk, or "" when not tied to one
  std::string tool;    // what ran, short ("hpak restore", "rcc-style restore", ...)
  std::string role;    // hpak, baseline, ceiling, peer, reference
  std::string command; // exact command (shell syntax) or a description for in-process loops
  std::string unit = "files"; // what `count` counts: files, objects, lookups, ...
  std::vector<double> samples; // seconds
  uint64_t count = 0, bytes = 0; // work per sample, for the rates
  std::vector<Metric> metrics;   // extra numbers (sizes, syscalls, cpu seconds, ...)
  std::vector<std::string> notes;
  std::string error;             // non-empty: this arm failed (samples may be partial)

  Stats stats() const { return stats_of(samples); }
  double median() const { return samples.empty() ? kNaN : stats().median; }
  double per_second() const { double m = median(); return count && m > 0 ? double(count) / m : kNaN; }
  double mb_per_s() const { double m = median(); return bytes && m > 0 ? double(bytes) / 1e6 / m : kNaN; }
  double us_per_unit() const { double m = median(); return count && m > 0 ? m * 1e6 / double(count) : kNaN; }
  double metric(const std::string& key) const {
    for (auto& m : metrics)
      if (m.key == key) return m.value;
    return kNaN;
  }
  double vs_baseline = kNaN; // median / the block's baseline median (time ratio, < 1 is faster)
  double vs_ceiling = kNaN;  // median / the block's ceiling median
};

struct Target {
  std::string id;     // fresh_vs_rcc.tmpfs, pack_time.rcc, ...
  std::string name;   // "fresh restore >= 5x faster than rcc-style (tmpfs)"
  std::string op;     // "<=" or ">="
  double value = kNaN, limit = kNaN;
  std::string unit;   // "x", "syscalls/file", "GB/s", ...
  std::string detail; // how the value was computed, with the numbers
  bool measured = false, pass = false;
};

struct CorpusInfo {
  std::string name, path, origin; // origin: the command that made it, or "user"
  uint64_t files = 0, dirs = 0, symlinks = 0, bytes = 0;
};

struct MediumInfo {
  std::string name, root; // tmpfs /dev/shm
  MountInfo mount;
};

struct Environment {
  std::string started, cpu, kernel, hpak, hpak_version;
  std::string hpak_fsync; // HPAK_FSYNC as the measured commands inherit it ("" = unset: hpak fsyncs)
  unsigned cpus = 0;        // online (sysconf)
  unsigned cpus_usable = 0; // this process may run on (sched_getaffinity, what nproc prints)
  unsigned threads = 0, runs = 0;
  uint64_t mem_bytes = 0;
  bool quick = false;
  std::vector<double> load_start, load_end;
  std::vector<MediumInfo> media;
  std::vector<std::pair<std::string, std::string>> tools; // name -> path + version
};

// "suite.case.medium.arm" without the empty parts.
std::string row_id(const std::string& suite, const std::string& case_id, const std::string& medium, const std::string& arm);

struct Report {
  Environment env;
  std::vector<CorpusInfo> corpora;
  std::vector<Row> rows;
  std::vector<Target> targets;
  std::vector<std::string> notes;   // caveats of this run ("strace not installed", ...)
  std::vector<std::string> suites;  // the suites that ran
  double seconds = 0;
  bool failed = false;              // some arm failed or a correctness check failed
};

// Runs the chosen suites; throws std::runtime_error when the run cannot start
// (bad corpus, missing helper binary, no writable medium).
Report run_bench(const Config& cfg, const Log& log);

} // namespace hpak::bench
