// bench/suite_restore.cpp — the restore suite (see suites.hpp): fresh,
// churn, unpack, dirty 0/1/10%, and syscalls per restored file.
#include <chrono>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <thread>

#include "base/os/sys.hpp"
#include "bench/suite_ctx.hpp"
#include "core/pack/pack_reader.hpp"
#include "base/hash.hpp"

namespace hpak::bench {

namespace fs = std::filesystem;

namespace {

using Argv = std::vector<std::string>;

// After rep 0: the tree has as many regular files and symlinks as the corpus.
std::function<std::string(unsigned, const ProcResult&)> tree_check(const TreeInfo& want, std::function<std::string(unsigned)> dir) {
  uint64_t files = want.files.size(), links = want.symlinks;
  return [files, links, dir](unsigned rp, const ProcResult&) -> std::string {
    if (rp != 0) return "";
    TreeInfo t = scan_tree(dir(rp));
    std::erase(t.files, std::string(".hpak-state")); // hpak restore's state file
    if (t.files.size() != files || t.symlinks != links)
      return dir(rp) + " has " + std::to_string(t.files.size()) + " files and " + std::to_string(t.symlinks) +
             " symlinks, the corpus " + std::to_string(files) + " and " + std::to_string(links);
    return "";
  };
}

std::vector<std::string> symlinks_under(const std::string& root) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_symlink(ec)) out.push_back(it->path().string());
  return out;
}

void remove_matching(const std::string& dir, const std::string& prefix) {
  std::error_code ec;
  std::vector<std::string> doomed;
  for (auto& e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string().rfind(prefix, 0) == 0) doomed.push_back(e.path().string());
  for (auto& d : doomed) remove_tree(d);
}

} // namespace

void suite_restore(Ctx& c) {
  const std::string P = "rcc";
  std::string src = c.corpus(P);
  const TreeInfo& ti = c.info(P);
  const uint64_t files = ti.files.size(), bytes = ti.bytes;
  std::string lib = c.library(P), lib0 = c.library(P, 0), rl = c.rcc_lib(P), pack = c.pack_file(P), tz = c.tar_zst(P);
  const std::string J = c.T;

  // Files that may be changed for the dirty runs: regular, not hardlinked.
  std::vector<std::string> candidates;
  for (auto& f : ti.files) {
    os::FileStat st;
    if (os::lstat_path((src + "/" + f).c_str(), st) == 0 && st.st_nlink == 1) candidates.push_back(f);
  }

  // ---- the CPU work of a restore that the ceiling does not do, in-process -------
  {
    auto reader = std::make_shared<PackReader>(pack);
    auto recs = std::make_shared<std::vector<formats::IndexRecord>>();
    uint64_t raw = 0;
    for (uint64_t i = 0; i < reader->index().count(); i++) {
      auto r = reader->index().record_at(i);
      if (r.kind == formats::Kind::Blob) recs->push_back(r), raw += r.raw_len;
    }
    auto decoded = std::make_shared<std::vector<Bytes>>();
    for (auto& r : *recs) decoded->push_back(reader->read(r, false));
    std::vector<InArm> arms(3);
    arms[0].key = "decode";
    arms[0].tool = "zstd decode of every object";
    arms[0].role = "reference";
    arms[0].command = "in-process, one thread: PackReader::read(record, verify_digest=false) for every blob of the pack";
    arms[0].body = [reader, recs](unsigned) {
      double t0 = mono_now();
      uint64_t n = 0;
      for (auto& r : *recs) n += reader->read(r, false).size();
      if (!n && !recs->empty()) throw std::runtime_error("nothing decoded");
      return mono_now() - t0;
    };
    arms[1].key = "sha256";
    arms[1].tool = "SHA-256 of every object";
    arms[1].role = "reference";
    arms[1].command = "in-process, one thread: sha256() of every blob's decoded bytes (already in memory)";
    arms[1].body = [decoded](unsigned) {
      double t0 = mono_now();
      uint8_t x = 0;
      for (auto& b : *decoded) x ^= sha256(ByteSpan(b.data(), b.size()))[0];
      volatile uint8_t sink = x;
      (void)sink;
      return mono_now() - t0;
    };
    arms[2].key = "decode_sha256";
    arms[2].tool = "decode + SHA-256 (what restore does per object)";
    arms[2].role = "reference";
    arms[2].command = "in-process, one thread: PackReader::read(record) (decode, XXH3 and SHA-256 checked) for every blob";
    arms[2].body = [reader, recs](unsigned) {
      double t0 = mono_now();
      uint64_t n = 0;
      for (auto& r : *recs) n += reader->read(r, true).size();
      if (!n && !recs->empty()) throw std::runtime_error("nothing decoded");
      return mono_now() - t0;
    };
    for (auto& a : arms) a.count = recs->size(), a.bytes = raw, a.unit = "objects";
    arms[2].notes.push_back("the CPU a restore spends beyond the ceiling's syscalls, on one core; restore spreads it over " + c.T + " threads");
    c.series_in("restore", {"cpu_work", "CPU work per restore (1 thread)"}, "", arms);
  }

  bool strace_done = false;
  for (const std::string& m : c.media()) {
    const std::string W = c.work[m];
    // On disk, deleting a tree makes the next creations slow (ext4 skips
    // recently freed inodes: the "churn" regime); so the fresh, unpack and
    // dirty series delete nothing, churn comes last, and the trees stay until
    // the end of the run. tmpfs has no such effect: its trees go at once.
    const bool keep_trees = m == "disk";
    auto at = [W](const std::string& tag) { return [W, tag](unsigned r) { return W + "/" + tag + "-" + std::to_string(r); }; };

    // ---- fresh: a new directory every run, nothing deleted meanwhile -------------
    {
      auto hd = at("fresh-hpak"), rd = at("fresh-rcc"), cd = at("fresh-ceil");
      std::vector<Arm> arms(1);
      arms[0].key = "hpak";
      arms[0].tool = "hpak restore";
      arms[0].argv = [&c, lib, hd, J](unsigned r) { return Argv{c.hpak, "-q", "restore", lib, "env", hd(r), "-j", J}; };
      arms[0].check = tree_check(ti, hd);
      if (!c.rccbase.empty()) { // not on Windows: a POSIX program
        Arm a;
        a.key = "rcc";
        a.tool = "rcc-style restore";
        a.role = "baseline";
        a.argv = [&c, rl, rd, J](unsigned r) { return Argv{c.rccbase, "restore", rl, rd(r), "-j", J}; };
        a.check = tree_check(ti, rd);
        arms.push_back(a);
      }
      auto walls = std::make_shared<std::vector<double>>();
      size_t ceiling_arm = 0;
      if (!c.ceiling.empty()) { // not on Windows: a POSIX program
        Arm a;
        a.key = "ceiling";
        a.tool = "ceiling (write only)";
        a.role = "ceiling";
        a.argv = [&c, src, cd, J](unsigned r) { return Argv{c.ceiling, src, cd(r), "-j", J}; };
        a.sample = [walls](unsigned, const ProcResult& pr, Row&) {
          walls->push_back(pr.secs);
          double s = std::strtod(pr.out.c_str(), nullptr);
          if (!(s > 0)) throw std::runtime_error("hpak-ceiling printed no time: " + pr.out.substr(0, 80));
          return s;
        };
        a.check = tree_check(ti, cd);
        a.notes.push_back("its own write-phase time (tree read into memory first, untimed); hardlinks written as copies");
        ceiling_arm = arms.size();
        arms.push_back(a);
      }
      // What the gap to the ceiling is made of: the same restore with the
      // SHA-256 check of every object (--verify), and from a library stored
      // uncompressed (-l 0): no decoding at all.
      auto nd = at("fresh-verify"), zd = at("fresh-raw");
      Arm vf;
      vf.key = "hpak_verify";
      vf.tool = "hpak restore --verify";
      vf.role = "reference";
      vf.argv = [&c, lib, nd, J](unsigned r) { return Argv{c.hpak, "-q", "restore", "--verify", lib, "env", nd(r), "-j", J}; };
      vf.notes.push_back("also checks the SHA-256 of each object against its name (what rcc does on every restore)");
      arms.push_back(vf);
      Arm raw;
      raw.key = "hpak_level0";
      raw.tool = "hpak restore, -l 0 library";
      raw.role = "reference";
      raw.argv = [&c, lib0, zd, J](unsigned r) { return Argv{c.hpak, "-q", "restore", lib0, "env", zd(r), "-j", J}; };
      raw.check = tree_check(ti, zd);
      raw.notes.push_back("the same catalog from a library whose objects are stored uncompressed (hpak init --level 0): no decoding at all");
      arms.push_back(raw);
      for (auto& a : arms) a.count = files, a.bytes = bytes;
      auto idx = c.series("restore", {"fresh", "fresh"}, m, arms);
      if (!walls->empty()) c.rep.rows[idx[ceiling_arm]].metrics.push_back({"process_wall_s", stats_of(*walls).median});
      if (!keep_trees) remove_matching(W, "fresh-");
    }

    // ---- unpack from a pack file into an empty directory ------------------------------
    {
      auto hd = at("unpack-hpak"), nd = at("unpack-nover"), td = at("unpack-tar");
      std::vector<Arm> arms(2);
      arms[0].key = "hpak";
      arms[0].tool = "hpak unpack";
      arms[0].argv = [&c, pack, hd, J](unsigned r) { return Argv{c.hpak, "-q", "unpack", pack, hd(r), "-j", J}; };
      arms[0].check = tree_check(ti, hd);
      arms[1].key = "hpak_no_verify";
      arms[1].tool = "hpak unpack --no-verify";
      arms[1].role = "reference";
      arms[1].argv = [&c, pack, nd, J](unsigned r) { return Argv{c.hpak, "-q", "unpack", "--no-verify", pack, nd(r), "-j", J}; };
      arms[1].notes.push_back("skips the SHA-256 of each object (XXH3 of the stored bytes still checked): the cost of verification");
      if (!tz.empty()) {
        Arm t;
        t.key = "tar";
        t.tool = "tar --zstd -xf";
        t.role = "baseline";
        t.argv = [&c, tz, td](unsigned r) { return Argv{c.tar, "--zstd", "-xf", tz, "-C", td(r)}; };
        t.prep = [td](unsigned r) { fs::create_directories(td(r)); };
        t.notes.push_back("single-threaded zstd; the target directory is made (untimed) before");
        arms.push_back(t);
      }
      for (auto& a : arms) a.count = files, a.bytes = bytes;
      c.series("restore", {"unpack", "unpack"}, m, arms);
      if (!keep_trees) remove_matching(W, "unpack-");
    }

    // ---- dirty targets ------------------------------------------------------------
    {
      std::string hd = W + "/dirty-hpak", rd = W + "/dirty-rcc", gd = W + "/dirty-git";
      c.log("setup: dirty trees on " + m + (c.git.empty() ? "" : " (git add + commit of the corpus)"));
      c.must({c.hpak, "-q", "restore", lib, "env", hd, "-j", J}, "hpak restore");
      bool have_rcc = !c.rccbase.empty();
      if (have_rcc) c.must({c.rccbase, "restore", rl, rd, "-j", J}, "hpak-rccbase restore");
      std::vector<std::string> rcc_links = have_rcc ? symlinks_under(rd) : std::vector<std::string>{};
      bool have_git = !c.git.empty();
      if (have_git) {
        c.copy_tree(src, gd, "cp -a");
        c.must({c.git, "init", "-q", gd}, "git init");
        c.must({c.git, "-C", gd, "config", "gc.auto", "0"}, "git config");
        c.must({c.git, "-C", gd, "add", "-A"}, "git add");
        c.must({c.git, "-C", gd, "-c", "user.name=hpak-bench", "-c", "user.email=bench@localhost", "commit", "-q", "-m", "corpus"},
               "git commit");
        c.must({c.git, "-C", gd, "status", "--porcelain"}, "git status"); // refresh the index once
        // git keeps ctimes in whole seconds here: a same-size edit with the mtime
        // put back in the second the index entry was written goes unseen. Start
        // changing files in a later second (a real limit of git, not measured).
        std::this_thread::sleep_for(std::chrono::milliseconds(1100));
      }
      for (unsigned pct : {0u, 1u, 10u}) {
        size_t k = (candidates.size() * pct + 50) / 100;
        if (pct && !k) k = 1;
        auto files_for = [&candidates, k, pct](unsigned r) { return pick_files(candidates, k, 1000003ull * pct + r); };
        auto mh = std::make_shared<Mutation>(), mr = std::make_shared<Mutation>(), mg = std::make_shared<Mutation>();
        std::vector<Arm> arms;
        Arm h;
        h.key = "hpak";
        h.tool = "hpak restore";
        h.argv = [&c, lib, hd, J](unsigned) { return Argv{c.hpak, "-q", "restore", lib, "env", hd, "-j", J}; };
        h.prep = [mh, hd, files_for](unsigned r) { mh->apply(hd, files_for(r)); };
        h.check = [mh](unsigned, const ProcResult&) { return mh->check(); };
        if (pct == 0) h.notes.push_back("no-op restore: nothing changed since the last restore");
        arms.push_back(h);
        if (have_rcc) {
          Arm rc;
          rc.key = "rcc";
          rc.tool = "rcc-style restore-over";
          rc.role = "baseline";
          rc.argv = [&c, rl, rd, J](unsigned) { return Argv{c.rccbase, "restore", rl, rd, "-j", J}; };
          rc.prep = [mr, rd, files_for, rcc_links](unsigned r) {
            mr->apply(rd, files_for(r));
            for (auto& l : rcc_links) os::unlink_path(l.c_str());
          };
          rc.check = [mr](unsigned, const ProcResult&) { return mr->check(); };
          rc.notes.push_back("rewrites every file (hpak-rccbase has no change detection); its " + std::to_string(rcc_links.size()) +
                             " symlinks are removed before each run (untimed): it recreates them with symlink(2)");
          arms.push_back(rc);
        }
        if (have_git) {
          Arm g;
          g.key = "git_checkout";
          g.tool = "git checkout -f";
          g.role = "peer";
          g.argv = [&c, gd](unsigned) { return Argv{c.git, "-C", gd, "checkout", "-f", "-q"}; };
          g.prep = [mg, gd, files_for](unsigned r) { mg->apply(gd, files_for(r)); };
          g.check = [mg](unsigned, const ProcResult&) { return mg->check(); };
          g.notes.push_back("the corpus committed in a git repo in the tree (.git inside); mtimes not restored by git");
          arms.push_back(g);
          if (pct == 0) {
            Arm s;
            s.key = "git_status";
            s.tool = "git status";
            s.role = "peer";
            s.argv = [&c, gd](unsigned) { return Argv{c.git, "-C", gd, "status", "--porcelain"}; };
            s.check = [](unsigned, const ProcResult& pr) { return pr.out.empty() ? std::string() : "git status reports changes: " + pr.out.substr(0, 200); };
            s.notes.push_back("only detects (writes nothing); the like-for-like of a no-op restore");
            arms.push_back(s);
          }
        }
        for (auto& a : arms) a.count = files, a.bytes = bytes;
        auto idx = c.series("restore", {"dirty" + std::to_string(pct), "dirty " + std::to_string(pct) + "%"}, m, arms);
        for (auto i : idx) c.rep.rows[i].metrics.push_back({"files_changed", double(k)});
      }

      // ---- syscalls per restored file: one extra strace -f -c run each --------------
      if (!c.strace.empty() && !strace_done) {
        strace_done = true;
        c.log("syscalls: strace -f -c on " + m);
        auto count = [&](const std::string& key, const std::string& tool, const std::string& role, Argv argv, const std::string& note) {
          std::string out = c.scratch + "/strace.txt";
          Argv full = {c.strace, "-f", "-c", "-o", out};
          full.insert(full.end(), argv.begin(), argv.end());
          RunOptions o;
          o.scratch = c.scratch;
          ProcResult pr = run_proc(full, o);
          Row r;
          r.id = row_id("restore", "syscalls", m, key);
          r.suite = "restore";
          r.group = "syscalls";
          r.medium = m;
          r.tool = tool;
          r.role = role;
          r.command = c.show(full);
          r.count = files;
          SyscallCount sc = parse_strace_summary(read_small_file(out));
          if (!pr.ok() || !sc.ok) {
            r.error = "strace run failed: " + pr.first_error_line();
          } else {
            r.metrics.push_back({"syscalls", double(sc.total)});
            r.metrics.push_back({"syscalls_per_file", double(sc.total) / double(files)});
            // Entries: files, directories and symlinks (each gets its mtime: issue 10 item 12).
            r.metrics.push_back({"syscalls_per_entry", double(sc.total) / double(files + ti.dirs + ti.symlinks)});
            r.notes.push_back("busiest: " + sc.top);
          }
          if (!note.empty()) r.notes.push_back(note);
          c.add_row(std::move(r));
        };
        std::string sh = W + "/strace-hpak", sr = W + "/strace-rcc", su = W + "/strace-unpack", st = W + "/strace-tar";
        count("hpak_fresh", "hpak restore (fresh)", "hpak", {c.hpak, "-q", "restore", lib, "env", sh, "-j", J}, "");
        if (have_rcc) count("rcc_fresh", "rcc-style restore (fresh)", "baseline", {c.rccbase, "restore", rl, sr, "-j", J}, "");
        count("hpak_unpack", "hpak unpack (fresh)", "hpak", {c.hpak, "-q", "unpack", pack, su, "-j", J}, "");
        if (!tz.empty()) {
          fs::create_directories(st);
          count("tar_unpack", "tar --zstd -xf (fresh)", "peer", {c.tar, "--zstd", "-xf", tz, "-C", st}, "counts the zstd child too (-f)");
        }
        count("hpak_noop", "hpak restore (no-op)", "hpak", {c.hpak, "-q", "restore", lib, "env", sh, "-j", J}, "");
        if (have_git) count("git_status", "git status (clean)", "peer", {c.git, "-C", gd, "status", "--porcelain"}, "");
        auto one = pick_files(candidates, (candidates.size() + 50) / 100, 77);
        Mutation a, b;
        a.apply(sh, one);
        count("hpak_dirty1", "hpak restore (1% dirty)", "hpak", {c.hpak, "-q", "restore", lib, "env", sh, "-j", J}, "");
        if (have_git) {
          b.apply(gd, one);
          count("git_checkout_dirty1", "git checkout -f (1% dirty)", "peer", {c.git, "-C", gd, "checkout", "-f", "-q"}, "");
        }
        c.rep.notes.push_back("syscalls per file: one extra run under 'strace -f -c' (every thread and child; process start-up, "
                              "library/catalog loading and directory creation included) divided by the corpus's regular files");
        remove_matching(W, "strace-");
      }
      if (!keep_trees) {
        remove_tree(hd);
        if (have_rcc) remove_tree(rd);
        if (have_git) remove_tree(gd);
      }
    }

    // ---- churn: right after rm -rf of the previous tree (+ sync) ----------------------
    {
      std::string hd = W + "/churn-hpak", rd = W + "/churn-rcc", cd = W + "/churn-ceil";
      c.log("setup: churn trees on " + m);
      c.must({c.hpak, "-q", "restore", lib, "env", hd, "-j", J}, "hpak restore");
      if (!c.rccbase.empty()) c.must({c.rccbase, "restore", rl, rd, "-j", J}, "hpak-rccbase restore");
      if (!c.ceiling.empty()) c.must({c.ceiling, src, cd, "-j", J}, "hpak-ceiling");
      bool disk = m == "disk";
      auto wipe = [disk](std::string d) {
        return [d, disk](unsigned) {
          remove_tree(d);
          if (disk) sync_all();
        };
      };
      std::vector<Arm> arms(1);
      arms[0].key = "hpak";
      arms[0].tool = "hpak restore";
      arms[0].argv = [&c, lib, hd, J](unsigned) { return Argv{c.hpak, "-q", "restore", lib, "env", hd, "-j", J}; };
      arms[0].prep = wipe(hd);
      if (!c.rccbase.empty()) {
        Arm a;
        a.key = "rcc";
        a.tool = "rcc-style restore";
        a.role = "baseline";
        a.argv = [&c, rl, rd, J](unsigned) { return Argv{c.rccbase, "restore", rl, rd, "-j", J}; };
        a.prep = wipe(rd);
        arms.push_back(a);
      }
      if (!c.ceiling.empty()) {
        Arm a;
        a.key = "ceiling";
        a.tool = "ceiling (write only)";
        a.role = "ceiling";
        a.argv = [&c, src, cd, J](unsigned) { return Argv{c.ceiling, src, cd, "-j", J}; };
        a.prep = wipe(cd);
        a.sample = [](unsigned, const ProcResult& pr, Row&) {
          double s = std::strtod(pr.out.c_str(), nullptr);
          if (!(s > 0)) throw std::runtime_error("hpak-ceiling printed no time");
          return s;
        };
        arms.push_back(a);
      }
      for (auto& a : arms) a.count = files, a.bytes = bytes, a.notes.push_back("prep: rm -rf of the previous tree at the same path, then sync (untimed)");
      c.series("restore", {"churn", "churn"}, m, arms);
      remove_matching(W, "churn-");
    }
  }
}

} // namespace hpak::bench
