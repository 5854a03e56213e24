// bench/gencorpus.cpp — hpak-gencorpus: deterministic generator of benchmark
// trees.
//
//   hpak-gencorpus --profile rcc|smallfile|packfs [--files N] [--seed S]
//                  [--reloc-path PATH] [--reloc-pct P] OUTDIR
//
//   rcc        (default N=12000, ~170 MB) a Python/conda-like environment:
//              bin/ include/ lib/python3.11/site-packages/<pkg>/... share/
//              conda-meta/, realistic size mix, ~15% duplicate contents,
//              empty files and dirs, exec bits, relative symlinks, one
//              hardlink pair, unicode/long names, and ~P% (default 5) of
//              files embedding PATH (default: realpath(OUTDIR)) as shebangs,
//              prefix= lines etc. so relocation can be tested.
//   smallfile  (default N=100000) 4096-byte files, 1000 per directory.
//   packfs     (default N=20000) 128-byte files, 1000 per directory.
//
// The same seed and arguments produce a byte-identical tree (contents,
// names, modes, mtimes = 2024-01-01).  The default --reloc-path depends on
// OUTDIR, so pass it explicitly when comparing trees generated in different
// places.  OUTDIR is created; it must be empty.  Prints a one-line summary
// on stdout (files counts the hardlink; dup_contents = files whose content
// already appeared earlier).
//
// Windows (hpak-gencorpus.exe, issue 30): the same tree through the os seam's
// Windows implementation (base/os/windows); a symlink the system will not make
// (no privilege, or Wine, which reports one made without making it) is left
// out and counted (symlinks_skipped=N in the summary).
#if defined(_WIN32)
#include "base/os/sys.hpp"
#else
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "corpus_content.hpp"
#include "prng.hpp"

namespace {

// The calls write_all makes: POSIX's on Linux, the os seam's on Windows.
namespace sys {
#if defined(_WIN32)
using hpak::os::close;
using hpak::os::fchmod;
using hpak::os::link_at;
using hpak::os::mkdir_at;
using hpak::os::open_at;
using hpak::os::open_path;
using hpak::os::set_times;
using hpak::os::set_times_at;
using hpak::os::set_umask;
using hpak::os::symlink_at;
using hpak::os::write;
using TimeSpec = hpak::os::TimeSpec;
constexpr bool kSkipUnmadeSymlinks = true;
#else
inline int open_path(const char *p, int f) { return ::open(p, f); }
inline int open_at(int d, const char *p, int f, mode_t m) { return ::openat(d, p, f, m); }
inline int mkdir_at(int d, const char *p, mode_t m) { return ::mkdirat(d, p, m); }
inline long write(int fd, const void *b, size_t n) { return ::write(fd, b, n); }
inline int fchmod(int fd, mode_t m) { return ::fchmod(fd, m); }
inline int set_times(int fd, const struct timespec ts[2]) { return ::futimens(fd, ts); }
inline int set_times_at(int d, const char *p, const struct timespec ts[2], int f) { return ::utimensat(d, p, ts, f); }
inline int close(int fd) { return ::close(fd); }
inline int link_at(int od, const char *op, int nd, const char *np, int f) { return ::linkat(od, op, nd, np, f); }
inline int symlink_at(const char *t, int d, const char *p) { return ::symlinkat(t, d, p); }
inline mode_t set_umask(mode_t m) { return ::umask(m); }
using TimeSpec = struct timespec;
constexpr bool kSkipUnmadeSymlinks = false;
#endif
}  // namespace sys

using bench::Kind;
using bench::Rng;

constexpr time_t kFixedTime = 1704067200;  // 2024-01-01T00:00:00Z

struct FileSpec {
  std::string path;
  Kind kind = Kind::Py;
  uint32_t mode = 0644;
  uint64_t size = 0;
  bool fixed = false;    // size (and content) chosen by the planner
  bool literal = false;  // content is `text` verbatim
  std::string text;
  int64_t dup_of = -1;
  uint64_t cseed = 0;
  bool reloc = false;
};

struct Plan {
  std::vector<std::string> dirs;  // parents before children
  std::vector<FileSpec> files;
  std::vector<std::pair<std::string, std::string>> symlinks;  // path, target
  std::vector<std::pair<std::string, size_t>> hardlinks;      // path, file index
  std::set<std::string> used;
};

[[noreturn]] void die(const std::string &msg) {
  std::fprintf(stderr, "hpak-gencorpus: %s\n", msg.c_str());
  std::exit(1);
}
[[noreturn]] void die_errno(const std::string &what) { die(what + ": " + std::strerror(errno)); }

// ---------------------------------------------------------------------------
// Planner for the rcc (conda-environment-like) profile.
class RccPlanner {
 public:
  RccPlanner(Plan &p, uint64_t seed, uint64_t n) : p_(p), r_(bench::mix_seed(seed, 0x7ccULL)), n_(n) {}

  void build() {
    uint64_t nbin = std::max<uint64_t>(5, n_ / 120), nlib = std::max<uint64_t>(3, n_ / 250);
    uint64_t npc = std::max<uint64_t>(2, n_ / 500), ncm = std::max<uint64_t>(2, n_ / 150);
    uint64_t netc = std::max<uint64_t>(1, n_ / 1000), ndyn = std::max<uint64_t>(2, n_ / 200);
    uint64_t ninc = n_ * 4 / 100, nstd = n_ * 18 / 100, nshare = n_ * 6 / 100, nextra = 5;
    uint64_t fixed = nbin + nlib + npc + ncm + netc + ndyn + ninc + nstd + nshare + nextra;
    if (n_ < 100 || fixed >= n_) die("rcc profile needs --files >= 100");
    bin(nbin);
    libs(nlib, npc);
    for (uint64_t i = 0; i < netc; ++i) add_file("etc", ident(), ".conf", Kind::Cfg, 0644);
    for (uint64_t i = 0; i < ncm; ++i)
      add_file("conda-meta", pkgname() + "-" + version() + "-py311_0", ".json", Kind::Json, 0644);
    tree("include/python3.11", ninc / 2, 2, Flavor::Header);
    tree("include", ninc - ninc / 2, 1, Flavor::Header);
    stdlib(nstd, ndyn);
    share(nshare);
    site_packages(n_ - fixed);
    extras();
    for (uint64_t i = 0, n = std::max<uint64_t>(3, n_ / 2000); i < n; ++i) {
      const std::string parent = p_.dirs[r_.below(p_.dirs.size())];
      dir(parent + "/" + uniq_base(parent, r_.chance(1, 2) ? "_vendor" : std::string(word()), ""));
    }
    for (int i = 0; i < 2;) {  // a couple of read-only files
      auto &f = p_.files[r_.below(p_.files.size())];
      if (f.mode == 0644) f.mode = 0444, ++i;
    }
  }

 private:
  enum class Flavor { Python, Header, Share };

  std::string_view word() { return bench::vocabulary()[r_.skewed(bench::vocabulary().size())]; }
  std::string ident() {
    std::string s(word());
    if (r_.chance(1, 2)) (s += '_') += word();
    return s;
  }
  std::string pkgname() {
    std::string s(word());
    if (r_.chance(1, 3)) s += word();
    else if (r_.chance(1, 4)) s += "py";
    return s;
  }
  std::string version() {
    return std::to_string(r_.below(5)) + "." + std::to_string(r_.below(30)) + "." + std::to_string(r_.below(12));
  }

  void dir(const std::string &path) {
    if (!p_.used.insert(path).second) return;
    auto slash = path.rfind('/');
    if (slash != std::string::npos) dir(path.substr(0, slash));
    p_.dirs.push_back(path);
  }
  std::string uniq_base(const std::string &d, std::string base, const std::string &ext) {
    std::string b = base;
    for (int i = 2; p_.used.count(d + "/" + b + ext); ++i) b = base + "_" + std::to_string(i);
    return b;
  }
  size_t add_file(const std::string &d, const std::string &base, const std::string &ext, Kind k,
                  uint32_t mode) {
    dir(d);
    FileSpec f;
    f.path = d + "/" + uniq_base(d, base, ext) + ext;
    f.kind = k;
    f.mode = mode;
    p_.used.insert(f.path);
    p_.files.push_back(std::move(f));
    return p_.files.size() - 1;
  }
  size_t add_literal(const std::string &d, const std::string &name, std::string text) {
    size_t i = add_file(d, name, "", Kind::Cfg, 0644);
    auto &f = p_.files[i];
    f.fixed = f.literal = true;
    f.size = text.size();
    f.text = std::move(text);
    return i;
  }
  void symlink(const std::string &path, const std::string &target) {
    p_.used.insert(path);
    p_.symlinks.emplace_back(path, target);
  }

  void bin(uint64_t n) {
    add_file("bin", "python3.11", "", Kind::So, 0755);
    symlink("bin/python", "python3.11");
    symlink("bin/python3", "python3.11");
    size_t pip3 = add_file("bin", "pip3", "", Kind::Script, 0755);
    p_.hardlinks.emplace_back("bin/pip3.11", pip3);
    p_.used.insert("bin/pip3.11");
    add_file("bin", "xz", "", Kind::So, 0755);
    symlink("bin/unxz", "xz");
    symlink("bin/xzcat", "xz");
    static const char *names[] = {"pip", "wheel", "pydoc3", "idle3", "2to3-3.11", "f2py", "ipython",
                                  "jupyter", "pytest", "normalizer", "tqdm", "isympy", "black"};
    for (uint64_t i = 3; i < n - 1; ++i) {  // 3 files + 1 hardlink placed above
      bool compiled = r_.chance(1, 5);
      std::string name = i - 3 < std::size(names) ? names[i - 3] : ident();
      if (!compiled && i - 3 >= std::size(names) && r_.chance(1, 2)) name += "-" + std::string(word());
      add_file("bin", name, "", compiled ? Kind::So : Kind::Script, 0755);
    }
  }

  void libs(uint64_t nlib, uint64_t npc) {
    add_file("lib", "libpython3.11.so.1.0", "", Kind::So, 0755);
    symlink("lib/libpython3.11.so", "libpython3.11.so.1.0");
    for (uint64_t i = 1; i < nlib; ++i) {
      std::string base = "lib" + std::string(word()) + (r_.chance(1, 3) ? std::string(word()) : "");
      uint32_t mode = r_.chance(1, 2) ? 0755 : 0644;
      if (i <= 6) {
        std::string maj = std::to_string(r_.below(12));
        std::string real = uniq_base("lib", base + ".so." + maj + "." + std::to_string(r_.below(20)) + ".0", "");
        add_file("lib", real, "", Kind::So, mode);
        if (p_.used.count("lib/" + base + ".so." + maj) || p_.used.count("lib/" + base + ".so")) continue;
        symlink("lib/" + base + ".so." + maj, real);
        symlink("lib/" + base + ".so", base + ".so." + maj);
      } else {
        add_file("lib", base, ".so", Kind::So, mode);
      }
    }
    symlink("lib/terminfo", "../share/terminfo");
    for (uint64_t i = 0; i < npc; ++i) add_file("lib/pkgconfig", std::string(word()), ".pc", Kind::Pc, 0644);
  }

  // Files of one directory of a Python package: regular modules plus a
  // __pycache__ holding .pyc files for about a third of the budget.
  void py_files(const std::string &d, uint64_t n, bool tests) {
    uint64_t npyc = n >= 6 && r_.chance(2, 3) ? n / 3 : 0;
    std::vector<std::string> stems;
    bool typed = false;
    for (uint64_t i = 0; i < n - npyc; ++i) {
      if (i == 0) {
        size_t f = add_file(d, "__init__", ".py", Kind::Py, 0644);
        if (r_.chance(1, 8)) p_.files[f].fixed = true;  // empty __init__.py
        stems.push_back("__init__");
        continue;
      }
      uint64_t u = r_.below(100);
      std::string stem = tests ? "test_" + ident() : ident();
      if (u < 68) {
        stem = uniq_base(d, stem, ".py");
        add_file(d, stem, ".py", Kind::Py, 0644);
        stems.push_back(stem);
      } else if (u < 73) add_file(d, stem, ".pyi", Kind::Py, 0644);
      else if (u < 76)
        add_file(d, stem, ".cpython-311-x86_64-linux-gnu.so", Kind::So, r_.chance(1, 2) ? 0755 : 0644);
      else if (u < 80) add_file(d, stem, ".json", Kind::Json, 0644);
      else if (u < 85) add_file(d, stem, ".txt", Kind::Prose, 0644);
      else if (u < 89) add_file(d, stem, r_.chance(1, 2) ? ".cfg" : ".toml", Kind::Cfg, 0644);
      else if (u < 92) add_file(d, stem, r_.chance(1, 2) ? ".pyx" : ".pxd", Kind::Py, 0644);
      else if (u < 94) add_file(d, stem, ".dat", Kind::Data, 0644);
      else if (u < 96) add_file(d, stem, ".h", Kind::CHeader, 0644);
      else if (u < 97 && !typed) {
        p_.files[add_file(d, "py", ".typed", Kind::Cfg, 0644)].fixed = true;
        typed = true;
      } else add_file(d, stem, ".md", Kind::Prose, 0644);
    }
    for (uint64_t i = 0; i < npyc; ++i)
      add_file(d + "/__pycache__", stems[i % stems.size()], ".cpython-311.pyc", Kind::Pyc, 0644);
  }

  void plain_files(const std::string &d, uint64_t n, Flavor fl) {
    for (uint64_t i = 0; i < n; ++i) {
      if (fl == Flavor::Header) {
        add_file(d, ident(), r_.chance(1, 10) ? ".hpp" : ".h", Kind::CHeader, 0644);
        continue;
      }
      uint64_t u = r_.below(10);
      if (u < 3) add_file(d, ident(), ".1", Kind::Prose, 0644);
      else if (u < 6) add_file(d, ident(), r_.chance(1, 2) ? ".md" : ".html", Kind::Prose, 0644);
      else if (u < 8) add_file(d, ident(), ".mo", Kind::Data, 0644);
      else add_file(d, ident(), r_.chance(1, 2) ? ".json" : ".xml", r_.chance(1, 2) ? Kind::Json : Kind::Prose, 0644);
    }
  }

  // Distribute `budget` files over dir d and a random subtree below it.
  void tree(const std::string &d, uint64_t budget, int depth, Flavor fl, bool tests = false) {
    dir(d);
    if (budget == 0) return;
    // ~8-15 entries per directory (Python dirs also feed their __pycache__).
    uint64_t here = std::min<uint64_t>(budget, fl == Flavor::Python ? 12 + r_.below(12) : 8 + r_.below(8));
    if (depth >= 8) here = budget;
    uint64_t rest = budget - here;
    if (fl == Flavor::Python) py_files(d, here, tests);
    else plain_files(d, here, fl);
    if (rest == 0) return;
    uint64_t nsub = 1 + r_.below(std::min<uint64_t>(4, (rest + 9) / 10));
    std::vector<uint64_t> w(nsub);
    uint64_t tw = 0;
    for (auto &x : w) tw += x = 1 + r_.below(8);
    uint64_t given = 0;
    for (uint64_t i = 0; i < nsub; ++i) {
      uint64_t share = i + 1 == nsub ? rest - given : rest * w[i] / tw;
      given += share;
      bool t = tests || (fl == Flavor::Python && r_.chance(1, 8));
      std::string name = t && !tests ? "tests" : std::string(r_.chance(1, 6) ? "_" : "") + std::string(word());
      tree(d + "/" + uniq_base(d, name, ""), share, depth + 1, fl, t);
    }
  }

  void stdlib(uint64_t n, uint64_t ndyn) {
    const std::string root = "lib/python3.11";
    for (uint64_t i = 0; i < ndyn; ++i)
      add_file(root + "/lib-dynload", "_" + ident(), ".cpython-311-x86_64-linux-gnu.so", Kind::So, 0755);
    uint64_t top = std::min<uint64_t>(n / 3, 200);
    py_files(root, top, false);
    uint64_t rest = n - top, nsub = std::max<uint64_t>(1, rest / 100);
    for (uint64_t i = 0; i < nsub; ++i)
      tree(root + "/" + uniq_base(root, std::string(word()), ""), i + 1 == nsub ? rest - (nsub - 1) * (rest / nsub) : rest / nsub, 3, Flavor::Python);
  }

  void share(uint64_t n) {
    uint64_t a = n / 4, b = n / 4, c = n / 8;
    tree("share/man/man1", a, 3, Flavor::Share);
    tree("share/locale", b, 2, Flavor::Share);
    tree("share/terminfo", c, 2, Flavor::Share);
    tree("share/doc", n - a - b - c, 2, Flavor::Share);
  }

  void dist_info(const std::string &sp, const std::string &pkg, uint64_t n) {
    std::string d = sp + "/" + pkg + "-" + version() + ".dist-info";
    if (n > 0) add_file(d, "METADATA", "", Kind::Prose, 0644);
    if (n > 1) add_file(d, "RECORD", "", Kind::Record, 0644);
    if (n > 2) add_literal(d, "INSTALLER", "conda\n");
    if (n > 3) {  // one of a handful of common licence texts: natural duplicates
      uint64_t lic = r_.skewed(6);
      auto &f = p_.files[add_file(d, "LICENSE", "", Kind::Prose, 0644)];
      f.fixed = true;
      f.size = 1070 + 1733 * lic;
      f.cseed = 1000 + lic;
    }
    if (n > 4)
      add_literal(d, "WHEEL", "Wheel-Version: 1.0\nGenerator: bdist_wheel (0.41.2)\nRoot-Is-Purelib: true\nTag: py3-none-any\n");
    if (n > 5) add_literal(d, "top_level.txt", pkg + "\n");
    if (n > 6) p_.files[add_file(d, "REQUESTED", "", Kind::Cfg, 0644)].fixed = true;
  }

  void site_packages(uint64_t n) {
    const std::string sp = "lib/python3.11/site-packages";
    uint64_t npkg = std::max<uint64_t>(1, n / 120);
    std::vector<uint64_t> w(npkg);
    uint64_t tw = 0;
    for (auto &x : w) tw += x = 1 + r_.below(24) * r_.below(24);
    uint64_t given = 0;
    for (uint64_t i = 0; i < npkg; ++i) {
      uint64_t share = i + 1 == npkg ? n - given : n * w[i] / tw;
      given += share;
      std::string pkg = uniq_base(sp, pkgname(), "");
      uint64_t ndist = std::min<uint64_t>(7, share / 3);
      dist_info(sp, pkg, ndist);
      tree(sp + "/" + pkg, share - ndist, 4, Flavor::Python);
      if (i == 0) first_pkg_ = sp + "/" + pkg;
    }
  }

  void extras() {  // unicode, long and space-containing names (5 files)
    add_file("share/doc/café-résumé", "naïve_Ünïcødé", ".md", Kind::Prose, 0644);
    add_file(first_pkg_ + "/locale", "日本語のテキスト", ".json", Kind::Json, 0644);
    std::string lng = "test";
    while (lng.size() < 190) (lng += '_') += word();
    add_file(first_pkg_, lng.substr(0, 196), ".py", Kind::Py, 0644);
    std::string ldir = "share/doc/" + lng.substr(0, 200);
    add_file(ldir, "README", ".md", Kind::Prose, 0644);
    add_file("share/doc", "Release Notes (v1.0) & more", ".txt", Kind::Prose, 0644);
  }

  Plan &p_;
  Rng r_;
  uint64_t n_;
  std::string first_pkg_ = "lib/python3.11/site-packages/misc";
};

// Sizes, duplicates and relocation targets for a planned rcc tree.
void assign_rcc_contents(Plan &p, uint64_t seed, uint64_t n, const std::string &reloc_path, uint64_t reloc_pct_x100) {
  Rng r(bench::mix_seed(seed, 0x517eULL));
  auto &fs = p.files;
  auto shuffle = [&r](std::vector<size_t> &v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[r.below(i)]);
  };
  for (size_t i = 0; i < fs.size(); ++i) {
    auto &f = fs[i];
    if (!f.cseed) f.cseed = i + 1;
    else f.cseed |= uint64_t{1} << 40;  // shared licence texts
    f.cseed = bench::mix_seed(seed, f.cseed);
    if (f.fixed) continue;
    uint64_t u = r.below(1000);
    if (f.kind == Kind::Pc) f.size = r.logish(200, 1023);
    else if (u < 485) f.size = r.logish(24, 1023);
    else if (u < 920) f.size = r.logish(1024, 10239);
    else if (u < 990) f.size = r.logish(10240, 102399);
    else f.size = r.logish(102400, 1048575);
  }
  // Most big sizes go to shared objects; the biggest few become multi-MB
  // libraries that bring the total to ~170 MB per 12000 files.
  std::vector<size_t> so, order;
  for (size_t i = 0; i < fs.size(); ++i) {
    if (!fs[i].fixed) order.push_back(i);
    if (fs[i].kind == Kind::So && !fs[i].fixed) so.push_back(i);
  }
  shuffle(so);
  auto by_size = [&fs](size_t a, size_t b) { return fs[a].size != fs[b].size ? fs[a].size > fs[b].size : a < b; };
  std::sort(order.begin(), order.end(), by_size);
  uint64_t khuge = std::max<uint64_t>(1, n / 1500);
  size_t next_so = 0;
  for (size_t rank = 0; rank < order.size() && fs[order[rank]].size > 102400; ++rank) {
    size_t i = order[rank];
    if (fs[i].kind == Kind::So || !(rank < khuge || r.chance(3, 5))) continue;
    while (next_so < so.size() && fs[so[next_so]].size >= fs[i].size) ++next_so;
    if (next_so == so.size()) break;
    std::swap(fs[i].size, fs[so[next_so++]].size);
  }
  std::sort(order.begin(), order.end(), by_size);
  uint64_t total = 0, target = uint64_t{170'000'000} * n / 12000;
  for (auto &f : fs) total += f.size;
  if (total < target)
    for (uint64_t k = 0; k < khuge && k < order.size(); ++k) fs[order[k]].size += (target - total) / khuge;

  // ~15% of files are exact duplicates of another file of the same kind.
  std::vector<size_t> cand;
  for (size_t i = 0; i < fs.size(); ++i)
    if (!fs[i].fixed && fs[i].size < 102400) cand.push_back(i);
  shuffle(cand);
  size_t ndup = std::min(cand.size(), static_cast<size_t>(n * 13 / 100));  // + natural duplicates
  std::map<Kind, std::vector<size_t>> originals;
  for (size_t j = ndup; j < cand.size(); ++j) originals[fs[cand[j]].kind].push_back(cand[j]);
  for (size_t j = 0; j < ndup; ++j) {
    auto &pool = originals[fs[cand[j]].kind];
    if (!pool.empty()) fs[cand[j]].dup_of = static_cast<int64_t>(pool[r.below(pool.size())]);
  }

  // Relocation: bin scripts and .pc files always, then random text files.
  if (reloc_pct_x100 > 0) {
    std::vector<uint64_t> refs(fs.size(), 0);
    for (size_t i = 0; i < fs.size(); ++i) ++refs[fs[i].dup_of >= 0 ? fs[i].dup_of : i];
    uint64_t want = (n * reloc_pct_x100 + 5000) / 10000, have = 0;
    std::vector<size_t> text;
    for (size_t i = 0; i < fs.size(); ++i) {
      auto &f = fs[i];
      if (f.dup_of >= 0 || f.literal || f.fixed || !bench::reloc_capable(f.kind)) continue;
      if (f.kind == Kind::Script || f.kind == Kind::Pc) f.reloc = true, have += refs[i];
      else text.push_back(i);
    }
    shuffle(text);
    for (size_t j = 0; j < text.size() && have < want; ++j) fs[text[j]].reloc = true, have += refs[text[j]];
    for (auto &f : fs)
      if (f.reloc) f.size = std::max(f.size, bench::reloc_min_size(f.kind, reloc_path));
  }
  for (auto &f : fs)
    if (f.dup_of >= 0) {
      const auto &s = fs[f.dup_of];
      f.kind = s.kind, f.size = s.size, f.cseed = s.cseed, f.reloc = s.reloc;
    }
}

// Flat profiles: `n` files of `size` bytes, 1000 per directory.
void plan_flat(Plan &p, uint64_t seed, uint64_t n, uint64_t size) {
  char buf[64];
  for (uint64_t i = 0; i < n; ++i) {
    if (i % 1000 == 0) {
      std::snprintf(buf, sizeof buf, "d%04llu", static_cast<unsigned long long>(i / 1000));
      p.dirs.emplace_back(buf);
    }
    FileSpec f;
    std::snprintf(buf, sizeof buf, "/f%07llu.dat", static_cast<unsigned long long>(i));
    f.path = p.dirs.back() + buf;
    f.kind = size > 1024 ? Kind::Py : Kind::Cfg;
    f.size = size;
    f.cseed = bench::mix_seed(seed, i + 1);
    p.files.push_back(std::move(f));
  }
}

// ---------------------------------------------------------------------------
void write_all(const Plan &p, const std::string &outdir, const std::string &reloc_path) {
  int root = sys::open_path(outdir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) die_errno(outdir);
  const sys::TimeSpec ts[2] = {{kFixedTime, 0}, {kFixedTime, 0}};
  for (const auto &d : p.dirs)
    if (sys::mkdir_at(root, d.c_str(), 0755) != 0) die_errno("mkdir " + d);
  uint64_t bytes = 0, empty = 0, reloc = 0;
  std::unordered_set<size_t> seen;
  uint64_t dups = 0;
  for (const auto &f : p.files) {
    std::string data = f.literal ? f.text : bench::make_content(f.kind, f.size, f.cseed, f.reloc ? &reloc_path : nullptr);
    if (data.size() != f.size) die("internal: size mismatch for " + f.path);
    if (!seen.insert(std::hash<std::string>{}(data)).second) ++dups;
    int fd = sys::open_at(root, f.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, f.mode);
    if (fd < 0) die_errno("create " + f.path);
    for (size_t off = 0; off < data.size();) {
      long w = sys::write(fd, data.data() + off, data.size() - off);
      if (w < 0) die_errno("write " + f.path);
      off += static_cast<size_t>(w);
    }
    if (sys::fchmod(fd, f.mode) != 0 || sys::set_times(fd, ts) != 0 || sys::close(fd) != 0) die_errno("finish " + f.path);
    bytes += f.size;
    empty += f.size == 0;
    reloc += f.reloc;
  }
  for (const auto &[path, idx] : p.hardlinks) {
    if (sys::link_at(root, p.files[idx].path.c_str(), root, path.c_str(), 0) != 0) die_errno("link " + path);
    bytes += p.files[idx].size;
    reloc += p.files[idx].reloc;
    ++dups;
  }
  size_t symlinks = 0, symlinks_skipped = 0;
  for (const auto &[path, target] : p.symlinks) {
    if (sys::symlink_at(target.c_str(), root, path.c_str()) != 0) {
      if (sys::kSkipUnmadeSymlinks && (errno == EOPNOTSUPP || errno == EPERM)) {
        ++symlinks_skipped;
        continue;
      }
      die_errno("symlink " + path);
    }
    ++symlinks;
    if (sys::set_times_at(root, path.c_str(), ts, AT_SYMLINK_NOFOLLOW) != 0) die_errno("utimens " + path);
  }
  // Directories last, deepest first, so nothing touches them afterwards.
  std::set<std::string> parents;
  auto note_parent = [&parents](const std::string &path) {
    auto s = path.rfind('/');
    parents.insert(s == std::string::npos ? "" : path.substr(0, s));
  };
  for (const auto &d : p.dirs) note_parent(d);
  for (const auto &f : p.files) note_parent(f.path);
  for (const auto &h : p.hardlinks) note_parent(h.first);
  for (const auto &s : p.symlinks) note_parent(s.first);
  uint64_t empty_dirs = 0;
  int max_depth = 0;
  for (auto it = p.dirs.rbegin(); it != p.dirs.rend(); ++it) {
    if (sys::set_times_at(root, it->c_str(), ts, 0) != 0) die_errno("utimens " + *it);
    empty_dirs += !parents.count(*it);
    max_depth = std::max(max_depth, 1 + static_cast<int>(std::count(it->begin(), it->end(), '/')));
  }
  if (sys::set_times(root, ts) != 0) die_errno("utimens " + outdir);
  sys::close(root);
  std::printf("files=%zu dirs=%zu symlinks=%zu bytes=%llu (hardlinks=%zu empty_files=%llu empty_dirs=%llu "
              "dup_contents=%llu reloc_files=%llu max_dir_depth=%d%s)\n",
              p.files.size() + p.hardlinks.size(), p.dirs.size(), symlinks,
              static_cast<unsigned long long>(bytes), p.hardlinks.size(), static_cast<unsigned long long>(empty),
              static_cast<unsigned long long>(empty_dirs), static_cast<unsigned long long>(dups),
              static_cast<unsigned long long>(reloc), max_depth,
              symlinks_skipped ? (" symlinks_skipped=" + std::to_string(symlinks_skipped)).c_str() : "");
}

[[noreturn]] void usage(int code) {
  std::fprintf(code ? stderr : stdout,
               "usage: hpak-gencorpus --profile rcc|smallfile|packfs [--files N] [--seed S]\n"
               "                      [--reloc-path PATH] [--reloc-pct P] OUTDIR\n");
  std::exit(code);
}

uint64_t parse_u64(const char *s, const char *what) {
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 0);
  if (errno || !end || *end || *s == '-') die(std::string("bad ") + what + ": " + s);
  return v;
}

// Percentage with up to two decimals, as an integer in hundredths.
uint64_t parse_pct_x100(const char *s) {
  uint64_t whole = 0, frac = 0, scale = 100;
  const char *c = s;
  for (; *c >= '0' && *c <= '9'; ++c) whole = whole * 10 + static_cast<uint64_t>(*c - '0');
  if (*c == '.')
    for (++c; *c >= '0' && *c <= '9'; ++c)
      if (scale > 1) scale /= 10, frac += static_cast<uint64_t>(*c - '0') * scale;
  if (*c || c == s || whole > 100) die(std::string("bad --reloc-pct: ") + s);
  return whole * 100 + frac;
}

}  // namespace

int main(int argc, char **argv) {
  std::string profile, outdir, reloc_path;
  uint64_t files = 0, seed = 1, reloc_pct_x100 = 500;
  bool have_files = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> const char * {
      if (i + 1 >= argc) usage(2);
      return argv[++i];
    };
    if (a == "-h" || a == "--help") usage(0);
    else if (a == "--profile") profile = val();
    else if (a == "--files") files = parse_u64(val(), "--files"), have_files = true;
    else if (a == "--seed") seed = parse_u64(val(), "--seed");
    else if (a == "--reloc-path") reloc_path = val();
    else if (a == "--reloc-pct") reloc_pct_x100 = parse_pct_x100(val());
    else if (!a.empty() && a[0] == '-') usage(2);
    else if (outdir.empty()) outdir = a;
    else usage(2);
  }
  if (outdir.empty() || profile.empty()) usage(2);

  std::error_code ec;
  std::filesystem::create_directories(outdir, ec);
  if (ec) die(outdir + ": " + ec.message());
  if (!std::filesystem::is_empty(outdir, ec) || ec) die(outdir + ": not an empty directory");
  if (reloc_path.empty()) reloc_path = std::filesystem::canonical(outdir).string();
  sys::set_umask(0);

  Plan plan;
  if (profile == "rcc") {
    if (!have_files) files = 12000;
    RccPlanner(plan, seed, files).build();
    assign_rcc_contents(plan, seed, files, reloc_path, reloc_pct_x100);
  } else if (profile == "smallfile") {
    plan_flat(plan, seed, have_files ? files : 100000, 4096);
  } else if (profile == "packfs") {
    plan_flat(plan, seed, have_files ? files : 20000, 128);
  } else {
    die("unknown profile: " + profile);
  }
  write_all(plan, outdir, reloc_path);
  return 0;
}
