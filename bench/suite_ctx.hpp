// bench/suite_ctx.hpp — internal to the suite engine: the shared state of one
// `hpak bench` run (tools, work directories, corpora and artifacts built once
// and reused by the suites) and the interleaved series runner.
#pragma once

#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench/suites.hpp"

namespace hpak::bench {

// Whether this is hpak.exe (issue 30): no hpak-rccbase, hpak-ceiling or cp
// required, no tmpfs by default.
#if defined(_WIN32)
constexpr bool kWindowsBuild = true;
#else
constexpr bool kWindowsBuild = false;
#endif

// One arm of an interleaved series: a command timed as a subprocess.
struct Arm {
  std::string key;                  // the arm's part of the row id: hpak, rcc, ceiling, tar, ...
  std::string tool, role = "hpak";  // tool: the label shown
  std::string unit = "files";
  uint64_t count = 0, bytes = 0;
  std::function<std::vector<std::string>(unsigned rep)> argv;
  std::function<void(unsigned rep)> prep; // untimed, right before the run
  // The sample to record (default: wall seconds); may add metrics to the row;
  // throws std::runtime_error to mark the arm failed.
  std::function<double(unsigned rep, const ProcResult&, Row&)> sample;
  // Untimed, after a successful run: "" or what is wrong (a correctness check).
  std::function<std::string(unsigned rep, const ProcResult&)> check;
  bool capture_out = true;
  std::vector<std::string> notes;
};

// One arm measured in-process: `body` runs the loop and returns its seconds.
struct InArm {
  std::string key; // the arm's part of the row id
  std::string tool, role = "hpak", command, unit = "ops";
  uint64_t count = 0, bytes = 0;
  std::function<double(unsigned rep)> body;
  std::vector<std::string> notes;
};

// One case of a suite: its id (part of every row id) and its label (shown).
struct Case {
  std::string id, label;
};

class Ctx {
public:
  Ctx(const Config& cfg, Report& rep, const Log& log);
  ~Ctx();

  const Config& cfg;
  Report& rep;
  Log log;
  unsigned threads = 1, runs = 1;
  std::string T; // "-j" value as text

  // Tools ("" when not found; hpak, gencorpus, rccbase, ceiling and cp are required,
  // on Windows only hpak and gencorpus).
  std::string hpak, gencorpus, rccbase, ceiling, tar, zstd, git, strace, sha256sum, xargs, cp, dd;

  // Work directories: one per medium (tmpfs, disk); artifacts live on disk.
  std::map<std::string, std::string> work; // medium -> dir
  std::string art;                         // artifacts (corpora, packs, libraries)
  std::string art_medium;                  // where they are: disk, or tmpfs when only tmpfs is measured
  std::string scratch;                     // capture files of subprocesses
  bool has_medium(const std::string& m) const;
  std::vector<std::string> media() const; // the configured media that have a work dir

  // Shown commands: work dirs and tool paths replaced by $T/$D and tool names.
  std::string show(const std::vector<std::string>& argv) const;

  // Corpora by profile: "rcc" (or the user's --corpus), "smallfile", "packfs",
  // "packfs2x" (twice the packfs files, for the 50%-garbage library).
  std::string corpus(const std::string& profile);
  const TreeInfo& info(const std::string& profile);
  // Artifacts of a profile's corpus, built once (untimed).
  std::string pack_file(const std::string& profile); // hpak pack -o
  std::string library(const std::string& profile, int level = 3); // hpak init LIB --level LEVEL; hpak pack --into LIB --name env
  std::string rcc_lib(const std::string& profile);   // hpak-rccbase lift ("" without hpak-rccbase)
  std::string tar_zst(const std::string& profile);   // tar --zstd -cf
  uint64_t profile_files(const std::string& profile) const;

  // Runs a command that is setup, not measurement; throws on failure.
  ProcResult must(const std::vector<std::string>& argv, const std::string& what, bool capture_out = true);
  // Setup copies: `cp -a FROM TO` / `cp FROM TO`, or where there is no cp
  // (Windows) std::filesystem::copy in-process; throw naming `what` on failure.
  void copy_tree(const std::string& from, const std::string& to, const std::string& what);
  void copy_file(const std::string& from, const std::string& to, const std::string& what);

  // Interleaved series: `runs` reps; rep r runs the arms starting at r mod n.
  // Appends one row per arm (in the order given), id suite.case.medium.key;
  // returns their indices.
  std::vector<size_t> series(const std::string& suite, const Case& group, const std::string& medium,
                             std::vector<Arm> arms, unsigned nruns = 0);
  std::vector<size_t> series_in(const std::string& suite, const Case& group, const std::string& medium,
                                std::vector<InArm> arms, unsigned nruns = 0);
  // A row without samples (e.g. syscall counts); its id must be set and unique
  // (throws std::logic_error otherwise, as series does for a repeated arm key).
  size_t add_row(Row r);
  void note(const std::string& s) { rep.notes.push_back(s); }

private:
  std::map<std::string, std::string> corpora_, packs_, libs_, rcclibs_, tars_;
  std::map<std::string, TreeInfo> infos_;
};

// Dirty-target mutation: appends (half) and same-size edits with the mtime put
// back via futimens (the other half) on the chosen files of one tree; keeps
// the original bytes so `check` can prove the tool repaired every one.
struct Mutation {
  std::vector<std::string> paths;     // absolute
  std::vector<std::string> originals; // bytes before the change
  void apply(const std::string& root, const std::vector<std::string>& rel); // throws
  std::string check() const;          // "" or the first path not restored
};
// k files of `candidates` chosen reproducibly by `seed`.
std::vector<std::string> pick_files(const std::vector<std::string>& candidates, size_t k, uint64_t seed);

// strace -f -c -o FILE: total calls and the busiest syscalls ("openat 12001, ...").
struct SyscallCount {
  uint64_t total = 0;
  std::string top;
  bool ok = false;
};
SyscallCount parse_strace_summary(const std::string& text);

double mono_now();

// Suites.
void suite_restore(Ctx& c);
void suite_pack(Ctx& c);
void suite_read(Ctx& c);
void suite_verify(Ctx& c);
void suite_gc(Ctx& c);

// Sets (or replaces) a named metric of a row.
inline void set_metric(Row& r, const std::string& k, double v) {
  for (auto& m : r.metrics)
    if (m.key == k) {
      m.value = v;
      return;
    }
  r.metrics.push_back({k, v});
}

} // namespace hpak::bench
