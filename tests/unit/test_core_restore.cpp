// core/restore: fresh restores (relocated, exact modes under any umask,
// hardlinks, symlinks), dirty restores that touch exactly what differs, the
// state file (trusted only for its own target, ignored when damaged), switching
// environments, interruption and repair, the per-target lock, refused targets,
// damaged objects with and without --partial, and read-only directories for a
// user who is not root.
#include <doctest/doctest.h>
#include <filesystem>
#include <grp.h>
#include <set>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "core/library/library.hpp"
#include "core/pack/pack_reader.hpp"
#include "core/pack/pack_writer.hpp"
#include "core/restore/restore.hpp"
#include "core/restore/restore_state.hpp"
#include "core/verify/verify_library.hpp"
#include "tree_fixture.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {

RestoreOptions ropts() {
  RestoreOptions o;
  o.threads = 2;
  return o;
}

// Differences between a reference tree and a restored one (mtimes aside: a
// restore does not set them; the state file aside).
std::vector<std::string> tree_diffs(const std::string& ref, const std::string& t) {
  fx::CompareOptions co;
  co.mtimes = false;
  auto d = fx::compare_trees(ref, t, co);
  std::erase_if(d, [](const std::string& line) { return line.find(kStateName) != std::string::npos; });
  return d;
}

// What a restore into `target` must produce: the fixture tree generated at
// `target` itself (so it holds that path), then moved aside.
std::string make_reference(const std::string& target, const fx::TreeSpec& spec) {
  fx::make_tree(target, spec);
  std::string ref = target + ".ref";
  if (rename(target.c_str(), ref.c_str()) != 0) fx::die("rename " + target);
  return ref;
}

struct Env {
  fx::TempDir dir{"restore"};
  std::string lib_root = dir / "lib";
  std::string src = dir / "src";
  fx::TreeSpec spec;
  fx::TreeInfo info;
  explicit Env(size_t files = 150) {
    spec.files = files;
    info = fx::make_tree(src, spec);
    Library::init(lib_root);
    Library lib(lib_root);
    PackOptions po;
    po.threads = 2;
    po.pack_version = 1; // the damage cases below cost one object each (format 2 costs the block)
    lib.add_tree(src, "env", po);
  }
};

std::optional<RestoreState> state_of(const std::string& target) {
  Fd fd(open(target.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  return read_state(fd.get());
}

std::string stat_key(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return "missing";
  return std::to_string(st.st_ino) + "/" + std::to_string(st.st_ctim.tv_sec) + "." + std::to_string(st.st_ctim.tv_nsec);
}

// Regular files of a tree with one link, sorted (state file aside).
std::vector<std::string> plain_files(const std::string& root) {
  std::vector<std::string> out;
  for (auto& e : std::filesystem::recursive_directory_iterator(root)) {
    struct stat st;
    if (lstat(e.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) continue;
    std::string rel = e.path().string().substr(root.size() + 1);
    if (rel != kStateName) out.push_back(rel);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Appends a line to each of `files` (paths relative to `root`).
void append_to(const std::string& root, const std::vector<std::string>& files, const char* line) {
  for (const std::string& f : files) {
    FILE* fp = fopen((root + "/" + f).c_str(), "a");
    REQUIRE(fp);
    fputs(line, fp);
    fclose(fp);
  }
}

// A restore of `name` into `t` that succeeds and leaves exactly the tree
// `ref` there; its figures.
RestoreStats restore_exactly(const Library& lib, const std::string& name, const std::string& t, const std::string& ref) {
  RestoreStats st = restore(lib, name, t, ropts());
  CHECK(st.failures.empty());
  auto d = tree_diffs(ref, t);
  CHECK_MESSAGE(d.empty(), fx::join_lines(d));
  return st;
}

// Another version of a source tree: a line appended to every 9th plain file;
// the files changed.
std::vector<std::string> change_every_9th(const std::string& src) {
  std::vector<std::string> files = plain_files(src), changed;
  for (size_t i = 0; i < files.size(); i += 9) changed.push_back(files[i]);
  append_to(src, changed, "in env b\n");
  return changed;
}

// What a restore of `name` into `t` produces, restored there and moved aside
// (to t + ".ref-" + name); `t` is left absent.
std::string reference_of(const Library& lib, const std::string& name, const std::string& t) {
  restore(lib, name, t, ropts());
  std::string ref = t + ".ref-" + name;
  REQUIRE(rename(t.c_str(), ref.c_str()) == 0);
  return ref;
}

// Flips bits of one byte in place (no truncation: the pack may be mapped).
void xor_byte(const std::string& path, uint64_t at, uint8_t mask) {
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) fx::die("open " + path);
  uint8_t b = 0;
  if (pread(fd, &b, 1, off_t(at)) != 1) fx::die("pread " + path);
  b ^= mask;
  if (pwrite(fd, &b, 1, off_t(at)) != 1) fx::die("pwrite " + path);
  close(fd);
}

void flip_byte_keep_mtime(const std::string& path) {
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  REQUIRE(st.st_size > 0);
  Bytes b = fx::read_file(path);
  b[b.size() / 2] ^= 0x20;
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(pwrite(fd, b.data(), b.size(), 0) == ssize_t(b.size()));
  timespec ts[2] = {st.st_atim, st.st_mtim};
  REQUIRE(futimens(fd, ts) == 0);
  close(fd);
}

} // namespace

TEST_CASE("restore: fresh, relocated into a shorter and a longer target, umask 077") {
  Env env;
  Library lib(env.lib_root);
  for (std::string target : {env.dir / "t", env.dir / "a-much-longer-directory-name-for-the-target/restored-env"}) {
    CAPTURE(target);
    fx::mkdirs(dir_name(target));
    std::string ref = make_reference(target, env.spec);
    mode_t old = umask(077);
    RestoreStats st = restore(lib, "env", target, ropts());
    umask(old);
    CHECK(st.fresh);
    CHECK(st.failures.empty());
    CHECK(st.files == env.info.files);
    CHECK(st.files_written == env.info.files);
    CHECK(st.links_written == env.info.symlinks + env.info.hardlinks);
    uint64_t ref_bytes = 0; // what was written: relocated sizes, each inode once
    std::set<ino_t> inodes;
    for (auto& e : std::filesystem::recursive_directory_iterator(ref)) {
      struct stat rs;
      if (lstat(e.path().c_str(), &rs) == 0 && S_ISREG(rs.st_mode) && inodes.insert(rs.st_ino).second) ref_bytes += uint64_t(rs.st_size);
    }
    CHECK(st.bytes_written == ref_bytes);
    auto d = tree_diffs(ref, target);
    CHECK_MESSAGE(d.empty(), fx::join_lines(d));
    for (auto& rel : env.info.self_path_files) {
      std::string text = fx::to_string(fx::read_file(target + "/" + rel));
      CHECK(text.find(target + "/bin") != std::string::npos);
      CHECK(text.find(env.src) == std::string::npos);
    }
    char buf[4096];
    ssize_t n = readlink((target + "/bin/activate-abs").c_str(), buf, sizeof buf);
    REQUIRE(n > 0);
    CHECK(std::string(buf, size_t(n)) == target + "/bin/activate");
    struct stat a, b;
    REQUIRE(stat((target + "/bin/pip").c_str(), &a) == 0);
    REQUIRE(stat((target + "/bin/pip3.11").c_str(), &b) == 0);
    CHECK(a.st_ino == b.st_ino);
    auto s = state_of(target);
    REQUIRE(s.has_value());
    CHECK(s->complete);
    CHECK(s->target == target);
    CHECK(s->library == env.lib_root);
    CHECK(s->name == "env");
    CHECK(s->catalog_digest == *lib.catalog_digest("env"));
    CHECK(encode_catalog(decode_catalog(s->catalog_raw(), "state")) == encode_catalog(lib.load_catalog("env")));
    CHECK(s->fence_ns > 0);
  }
}

TEST_CASE("restore: a dirty restore touches exactly what changed") {
  Env env;
  Library lib(env.lib_root);
  std::string t = env.dir / "t";
  std::string ref = make_reference(t, env.spec);
  restore(lib, "env", t, ropts());

  std::vector<std::string> files = plain_files(t);
  std::erase_if(files, [](const std::string& p) { return p.rfind("share/sort/", 0) == 0 || p.rfind("share/readonly/", 0) == 0; });
  REQUIRE(files.size() > 100);
  size_t want_written = 0, want_removed = 0;
  for (size_t i : {0, 10, 20}) { // appended
    FILE* f = fopen((t + "/" + files[i]).c_str(), "a");
    REQUIRE(f);
    fputs("appended\n", f);
    fclose(f);
    want_written++;
  }
  for (size_t i : {30, 40}) { // same size, mtime put back
    flip_byte_keep_mtime(t + "/" + files[i]);
    want_written++;
  }
  std::string chmodded = t + "/" + files[50];
  struct stat cst;
  REQUIRE(stat(chmodded.c_str(), &cst) == 0);
  REQUIRE(chmod(chmodded.c_str(), (cst.st_mode & 07777) == 0600 ? 0644 : 0600) == 0);
  for (size_t i : {60, 70}) { // deleted files
    REQUIRE(unlink((t + "/" + files[i]).c_str()) == 0);
    want_written++;
  }
  fx::remove_tree(t + "/share/sort"); // a deleted directory with 3 files
  want_written += 3;
  fx::write_file(t + "/stray.txt", "stray"); // strays
  fx::mkdirs(t + "/lib/stray-dir/deeper");
  fx::write_file(t + "/lib/stray-dir/deeper/y", "y");
  fx::write_file(t + "/share/readonly/stray", "in a read-only directory");
  want_removed += 3;
  REQUIRE(unlink((t + "/" + files[80]).c_str()) == 0); // a file replaced by a symlink
  fx::symlink_to("/etc/passwd", t + "/" + files[80]);
  REQUIRE(unlink((t + "/" + files[90]).c_str()) == 0); // and by a directory
  fx::mkdirs(t + "/" + files[90] + "/sub");
  want_written += 2;
  want_removed += 2;
  fx::remove_tree(t + "/share/empty"); // a directory replaced by a file
  fx::write_file(t + "/share/empty", "not a directory");
  want_removed++;
  REQUIRE(unlink((t + "/bin/python").c_str()) == 0); // a symlink retargeted
  fx::symlink_to("elsewhere", t + "/bin/python");
  want_removed++;
  REQUIRE(unlink((t + "/bin/pip3").c_str()) == 0); // a hardlink (of bin/pip) broken into a copy
  fx::write_file(t + "/bin/pip3", fx::read_file(t + "/bin/pip"), 0755);
  want_removed++;
  REQUIRE(chmod((t + "/share/doc").c_str(), 0700) == 0); // a directory's mode

  RestoreStats st = restore(lib, "env", t, ropts());
  CHECK_FALSE(st.fresh);
  CHECK(st.failures.empty());
  CHECK(st.files_written == want_written);
  CHECK(st.files_kept == st.files - want_written);
  CHECK(st.removed == want_removed);
  CHECK(st.files_compared >= 3); // the two same-size edits and the chmod
  CHECK(st.modes_fixed >= 2);    // the file and the directory
  CHECK(st.links_written == 2);  // the symlink and the hardlink
  CHECK(st.dirs_created == 3);   // share/sort, share/sort/a and share/empty
  auto d = tree_diffs(ref, t);
  CHECK_MESSAGE(d.empty(), fx::join_lines(d));
  CHECK(state_of(t)->complete);

  // Unchanged now: nothing written, nothing compared, the state file untouched.
  std::string before = stat_key(t + "/" + kStateName);
  RestoreStats again = restore(lib, "env", t, ropts());
  CHECK(again.files_written == 0);
  CHECK(again.files_compared == 0);
  CHECK(again.files_kept == again.files);
  CHECK(again.removed == 0);
  CHECK(again.modes_fixed == 0);
  CHECK(stat_key(t + "/" + kStateName) == before);

  RestoreOptions vc = ropts();
  vc.verify_content = true;
  RestoreStats full = restore(lib, "env", t, vc);
  CHECK(full.files_compared == full.files);
  CHECK(full.files_written == 0);
}

TEST_CASE("restore: the state file is trusted only when intact and for its own target") {
  Env env;
  Library lib(env.lib_root);
  std::string t = env.dir / "t";
  restore(lib, "env", t, ropts());
  std::string state = t + "/" + kStateName;
  // Without a state of its own a non-empty target is refused; --force
  // restores over it, comparing everything.
  RestoreOptions force = ropts();
  force.force = true;

  SUBCASE("damaged: refused, then with force everything is compared, nothing rewritten") {
    Bytes b = fx::read_file(state);
    b[b.size() / 2] ^= 1;
    fx::write_file(state, b);
    CHECK_FALSE(state_of(t).has_value());
    CHECK(fx::error_of([&] { restore(lib, "env", t, ropts()); }).find("holds no valid restore state") != std::string::npos);
    RestoreStats st = restore(lib, "env", t, force);
    CHECK(st.files_compared == st.files);
    CHECK(st.files_written == 0);
    REQUIRE(state_of(t).has_value());
    CHECK(state_of(t)->complete);
  }
  SUBCASE("missing: the same") {
    REQUIRE(unlink(state.c_str()) == 0);
    CHECK(fx::error_of([&] { restore(lib, "env", t, ropts()); }).find("use --force") != std::string::npos);
    RestoreStats st = restore(lib, "env", t, force);
    CHECK_FALSE(st.fresh);
    CHECK(st.files_compared == st.files);
    CHECK(st.files_written == 0);
  }
  SUBCASE("a temp state file left by a killed restore is removed") {
    std::string left = t + "/.tmp" + kStateName + "-999999";
    fx::write_file(left, "partial state");
    RestoreStats st = restore(lib, "env", t, ropts());
    CHECK(st.removed == 1);
    CHECK(st.files_written == 0);
    CHECK_FALSE(path_exists(left));
    CHECK(state_of(t)->complete);
  }
  SUBCASE("the target moved: relocated files are rewritten for the new path") {
    std::string moved = env.dir / "moved-to-a-longer-path";
    std::string ref = make_reference(moved, env.spec);
    REQUIRE(rename(t.c_str(), moved.c_str()) == 0);
    CHECK(fx::error_of([&] { restore(lib, "env", moved, ropts()); }).find("holds a restore state written for '" + t + "'") != std::string::npos);
    RestoreStats st = restore(lib, "env", moved, force);
    CHECK(st.files_written == env.info.self_path_files.size());
    CHECK(st.links_written == 1); // bin/activate-abs
    auto d = tree_diffs(ref, moved);
    CHECK_MESSAGE(d.empty(), fx::join_lines(d));
    CHECK(state_of(moved)->target == moved);
  }
}

TEST_CASE("restore: switching a target to another environment keeps what is common") {
  Env env;
  Library lib(env.lib_root);
  // B: the same source directory, changed (same roots, so relocations match).
  std::vector<std::string> files = plain_files(env.src);
  const size_t changed = change_every_9th(env.src).size();
  fx::write_file(env.src + "/share/only-in-b", "b");
  REQUIRE(unlink((env.src + "/" + files[5]).c_str()) == 0);
  PackOptions po;
  po.threads = 2;
  lib.add_tree(env.src, "b", po);

  std::string t = env.dir / "t";
  std::string ref_b = reference_of(lib, "b", t);
  restore(lib, "env", t, ropts());
  RestoreStats st = restore(lib, "b", t, ropts());
  CHECK(st.failures.empty());
  CHECK(st.files_written == changed + 1);
  CHECK(st.files_kept == st.files - changed - 1);
  CHECK(st.files_compared == 0); // same object, same relocation, untouched since: trusted
  CHECK(st.removed == 1);
  auto d = tree_diffs(ref_b, t);
  CHECK_MESSAGE(d.empty(), fx::join_lines(d));
  auto s = state_of(t);
  REQUIRE(s.has_value());
  CHECK(s->name == "b");
  CHECK(s->complete);
  // And back.
  RestoreStats back = restore(lib, "env", t, ropts());
  CHECK(back.files_written == changed + 1);
}

TEST_CASE("restore: an interrupted restore leaves the state incomplete; the next one repairs") {
  Env env(1100);
  Library lib(env.lib_root);
  std::string t = env.dir / "t";
  std::string ref = make_reference(t, env.spec);
  RestoreOptions o = ropts();
  o.threads = 1; // progress is reported by worker 0: with one worker, at the 1024th file
  o.progress = [](std::string_view phase, uint64_t done, uint64_t) {
    if (phase == "write" && done > 0) throw Error("simulated crash");
  };
  CHECK(fx::error_of([&] { restore(lib, "env", t, o); }) == "simulated crash");
  auto s = state_of(t);
  REQUIRE(s.has_value());
  CHECK_FALSE(s->complete);
  CHECK(s->fence_ns == 0); // nothing of it is trusted
  RestoreStats st = restore(lib, "env", t, ropts());
  CHECK_FALSE(st.fresh);
  CHECK(st.failures.empty());
  CHECK(st.files_written + st.files_kept == st.files);
  CHECK(st.files_written > 0);
  auto d = tree_diffs(ref, t);
  CHECK_MESSAGE(d.empty(), fx::join_lines(d));
  CHECK(state_of(t)->complete);
}

TEST_CASE("restore: a dirty restore of the catalog the state names, interrupted, keeps the fence and drops the catalog") {
  Env env(400);
  Library lib(env.lib_root);
  const std::vector<std::string> every9 = change_every_9th(env.src);
  PackOptions po;
  po.threads = 2;
  lib.add_tree(env.src, "b", po);
  std::string t = env.dir / "t";
  std::string ref_b = reference_of(lib, "b", t);
  std::string ref = make_reference(t, env.spec);

  restore(lib, "env", t, ropts());
  const std::optional<RestoreState> before = state_of(t);
  REQUIRE(before.has_value());
  REQUIRE(before->complete);
  REQUIRE_FALSE(before->catalog_stored.empty());
  std::vector<std::string> files = plain_files(t);
  files.resize(100);
  append_to(t, files, "changed\n");
  RestoreOptions o = ropts();
  o.threads = 1; // progress is reported by worker 0: with one worker, at the 64th file written
  o.progress = [](std::string_view phase, uint64_t done, uint64_t) {
    if (phase == "write" && done > 0) throw Error("simulated crash");
  };
  CHECK(fx::error_of([&] { restore(lib, "env", t, o); }) == "simulated crash");
  const std::optional<RestoreState> mid = state_of(t);
  REQUIRE(mid.has_value());
  CHECK_FALSE(mid->complete);
  CHECK(mid->fence_ns == before->fence_ns);
  CHECK(mid->catalog_digest == before->catalog_digest);
  CHECK(mid->catalog_stored.empty());
  CHECK(mid->catalog_raw_len == 0);

  SUBCASE("the same catalog again: what the fence covers is trusted") {
    RestoreStats st = restore_exactly(lib, "env", t, ref);
    CHECK(st.files_compared <= files.size()); // only what the interrupted restore rewrote
    CHECK(st.files_written + st.files_kept == st.files);
  }
  SUBCASE("another catalog: no catalog says what each path held, so every file of its size is compared") {
    RestoreStats st = restore_exactly(lib, "b", t, ref_b);
    CHECK(st.files_compared + every9.size() + files.size() >= st.files);
  }
  CHECK(state_of(t)->complete);
}

TEST_CASE("restore: every directory a dirty restore opened is closed when it returns") {
  Env env(300);
  Library lib(env.lib_root);
  std::string t = env.dir / "t";
  restore(lib, "env", t, ropts());
  auto open_fds = [] { return std::distance(std::filesystem::directory_iterator("/proc/self/fd"), {}); };
  const auto before = open_fds();
  std::vector<std::string> files = plain_files(t);
  files.resize(20);
  append_to(t, files, "changed\n");
  RestoreOptions o = ropts();
  o.wait = false; // a descriptor left open would hold the target's lock: an error, not a wait
  RestoreStats dirty = restore(lib, "env", t, o); // writes: its fence taken, the scan released while it passes
  CHECK(dirty.files_written == files.size());
  CHECK(open_fds() == before);
  RestoreStats noop = restore(lib, "env", t, o); // nothing to write: returns before any fence
  CHECK(noop.files_written == 0);
  CHECK(open_fds() == before);
}

TEST_CASE("restore: one restore per target") {
  Env env(20);
  Library lib(env.lib_root);
  std::string t = env.dir / "t";
  fx::mkdirs(t);
  Fd holder(open(t.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(flock(holder.get(), LOCK_EX) == 0);
  RestoreOptions nw = ropts();
  nw.wait = false;
  CHECK(fx::error_of([&] { restore(lib, "env", t, nw); }).find("being restored by another process") != std::string::npos);
  std::atomic<bool> done{false};
  std::string err;
  std::thread waiter([&] {
    err = fx::error_of([&] { restore(lib, "env", t, ropts()); });
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK_FALSE(done.load()); // still waiting for the lock
  REQUIRE(flock(holder.get(), LOCK_UN) == 0);
  waiter.join();
  CHECK(done);
  CHECK(err.empty());
  CHECK(state_of(t)->complete);
}

TEST_CASE("restore: refused targets") {
  Env env(10);
  Library lib(env.lib_root);
  fx::write_file(env.dir / "file", "x");
  CHECK(fx::error_of([&] { restore(lib, "env", env.dir / "file", ropts()); }).find("not a directory") != std::string::npos);
  CHECK(fx::to_string(fx::read_file(env.dir / "file")) == "x");
  std::string inside = env.lib_root + "/packs/inside";
  CHECK(fx::error_of([&] { restore(lib, "env", inside, ropts()); }).find("inside the library") != std::string::npos);
  CHECK_FALSE(path_exists(inside));
  CHECK(fx::error_of([&] { restore(lib, "env", env.dir.path(), ropts()); }).find("contains the library") != std::string::npos);
  CHECK(fx::error_of([&] { restore(lib, "nope", env.dir / "t", ropts()); }).find("no catalog named 'nope'") != std::string::npos);
  // Too long: the target plus the deepest catalog path would pass PATH_MAX.
  size_t longest = 0;
  for (auto& n : lib.load_catalog("env").nodes) longest = std::max(longest, n.path.size());
  std::string deep = env.dir / "deep";
  while (deep.size() + 1 + 200 + 1 + longest < 4096) deep += "/" + std::string(200, 'd');
  fx::mkdirs(deep);
  std::string target = deep + "/" + std::string(4096 - deep.size() - 1 - 1 - longest + 2, 't');
  REQUIRE(target.size() < 4096);
  CHECK(fx::error_of([&] { restore(lib, "env", target, ropts()); }).find("too long") != std::string::npos);
  CHECK_FALSE(path_exists(target));
  // A catalog may not use the state file's name.
  fx::mkdirs(env.dir / "reserved");
  fx::write_file(env.dir / "reserved/.hpak-state", "mine");
  PackOptions po;
  po.threads = 1;
  lib.add_tree(env.dir / "reserved", "reserved", po);
  CHECK(fx::error_of([&] { restore(lib, "reserved", env.dir / "r", ropts()); }).find("reserved name") != std::string::npos);
}

TEST_CASE("restore: a damaged object fails its file only with partial, and is repaired later") {
  Env env(40);
  Library lib(env.lib_root);
  Catalog cat = lib.load_catalog("env");
  const Node* victim = nullptr;
  for (auto& n : cat.nodes)
    if (n.path == "bin/python3.11") victim = &n;
  REQUIRE(victim != nullptr);
  auto ref_obj = lib.locate(victim->digest);
  REQUIRE(ref_obj.has_value());
  std::string pack = ref_obj->pack->path();
  const uint64_t at = ref_obj->rec.offset + 72 + ref_obj->rec.stored_len / 2;
  xor_byte(pack, at, 0x40);
  std::string t = env.dir / "t";
  std::string ref = make_reference(t, env.spec);
  // A space restored before the damage, whose copy of the file was then
  // changed in content and mode: --partial reports it, and does not trip over
  // fixing the mode of a file it could not write.
  std::string t2 = env.dir / "t2";
  xor_byte(pack, at, 0x40); // intact for now
  restore(lib, "env", t2, ropts());
  xor_byte(pack, at, 0x40);
  flip_byte_keep_mtime(t2 + "/bin/python3.11"); // same size: compared, then rewritten
  REQUIRE(chmod((t2 + "/bin/python3.11").c_str(), 0600) == 0);
  RestoreOptions partial = ropts();
  partial.partial = true;
  RestoreStats st2;
  CHECK(fx::error_of([&] { st2 = restore(lib, "env", t2, partial); }) == "");
  CHECK(st2.failures.size() == 1);
  CHECK_FALSE(state_of(t2)->complete);

  std::string e = fx::error_of([&] { restore(lib, "env", t, ropts()); });
  CHECK(e.find("bin/python3.11") != std::string::npos);
  CHECK(e.find(to_hex(victim->digest)) != std::string::npos);
  CHECK_FALSE(state_of(t)->complete);
  CHECK_FALSE(path_exists(t + "/bin/python3.11"));

  RestoreStats st = restore(lib, "env", t, partial);
  REQUIRE(st.failures.size() == 1);
  CHECK(st.failures[0].path == "bin/python3.11");
  CHECK(st.failures[0].digest == to_hex(victim->digest));
  CHECK_FALSE(state_of(t)->complete);
  CHECK_FALSE(path_exists(t + "/bin/python3.11"));
  auto d = tree_diffs(ref, t);
  CHECK(d == std::vector<std::string>{"only in " + ref + ": bin/python3.11"});

  xor_byte(pack, at, 0x40); // undone
  RestoreStats fixed = restore(lib, "env", t, ropts());
  CHECK(fixed.failures.empty());
  CHECK(fixed.files_written == 1);
  d = tree_diffs(ref, t);
  CHECK_MESSAGE(d.empty(), fx::join_lines(d));
  CHECK(state_of(t)->complete);
}

// Rewrites the library's only pack with `victim`'s object replaced by other
// bytes of the same size, its checksums made consistent (a forged entry, not
// damage): only a SHA-256 check of the content against its name can tell.
static void forge_object(Library& lib, const Digest& victim) {
  auto packs = lib.packs();
  REQUIRE(packs.size() == 1);
  const PackReader& old = *packs[0];
  std::string old_path = old.path();
  std::optional<PackResult> res;
  AtomicFile tmp(lib.tmp_dir() + "/forged", 0644);
  {
    PackWriter w(tmp.fd(), tmp.temp_path(), old.level());
    std::vector<IndexRecord> recs;
    for (uint64_t i = 0; i < old.index().count(); i++) recs.push_back(old.index().record_at(i));
    std::sort(recs.begin(), recs.end(), [](auto& a, auto& b) { return a.offset < b.offset; });
    for (auto& r : recs) {
      bool mirror = w.contains(r.digest);
      if (r.digest == victim) {
        Bytes forged(r.raw_len, uint8_t('X'));
        w.append(r.kind, Codec::Raw, r.digest, r.raw_len, forged);
      } else {
        w.append_copy(r, old.checked_stored(r), mirror);
      }
    }
    res = w.finish();
  }
  tmp.commit_as(tmp.temp_path() + ".done");
  lib.publish_pack(tmp.final_path(), *res);
  std::string stem = old_path.substr(0, old_path.size() - 5);
  REQUIRE(unlink(old_path.c_str()) == 0);
  REQUIRE(unlink((stem + ".hidx").c_str()) == 0);
  for (auto& e : std::filesystem::directory_iterator(lib.packs_dir())) // the midx layers: stale now
    if (e.path().extension() == ".midx") std::filesystem::remove(e.path());
}

TEST_CASE("restore: a forged object (intact checksums, wrong content) is caught by verify, not by default") {
  Env env(40);
  const Digest victim = [&] {
    Library lib(env.lib_root);
    Catalog cat = lib.load_catalog("env");
    for (auto& n : cat.nodes)
      if (n.path == "bin/python3.11") return n.digest;
    FAIL("no bin/python3.11");
    return Digest{};
  }();
  {
    Library lib(env.lib_root);
    forge_object(lib, victim);
  }
  Library lib(env.lib_root);
  // The default trusts names (hpak wrote them) and checks stored checksums:
  // the forged bytes pass those, as designed, and land in the file.
  std::string t = env.dir / "t";
  RestoreStats st = restore(lib, "env", t, ropts());
  CHECK(st.failures.empty());
  CHECK(fx::to_string(fx::read_file(t + "/bin/python3.11")).rfind("XXXXXXXX", 0) == 0);
  // --verify refuses it, naming path and object, and leaves no file behind.
  RestoreOptions v = ropts();
  v.verify = true;
  std::string t2 = env.dir / "t2";
  std::string e = fx::error_of([&] { restore(lib, "env", t2, v); });
  CHECK(e.find("bin/python3.11") != std::string::npos);
  CHECK(e.find(to_hex(victim)) != std::string::npos);
  CHECK(e.find("does not match its name") != std::string::npos);
  CHECK_FALSE(path_exists(t2 + "/bin/python3.11"));
  CHECK_FALSE(state_of(t2)->complete);
  // And `hpak verify LIB` names it with the catalog path it breaks.
  VerifyOptions vo;
  vo.threads = 2;
  LibraryVerifyReport r = verify_library(env.lib_root, vo);
  CHECK_FALSE(r.ok());
  REQUIRE(r.bad_objects.size() == 1);
  CHECK(r.bad_objects[0].digest == to_hex(victim));
  CHECK(r.bad_objects[0].paths == std::vector<std::string>{"env:bin/python3.11"});
}

// Runs `body` as an unprivileged user (a forked child when we are root);
// returns its exit status (0 = success).
static int as_unprivileged(const std::function<int()>& body) {
  if (geteuid() != 0) return body();
  fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) return 100;
  if (pid == 0) {
    if (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) _exit(101);
    int rc = 102;
    try {
      rc = body();
    } catch (const std::exception& e) {
      fprintf(stderr, "as_unprivileged: %s\n", e.what());
    }
    fflush(nullptr);
    _exit(rc);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 103;
}

TEST_CASE("restore: read-only directories of the catalog, for a user who is not root") {
  Env env(30);
  std::string home = env.dir / "home";
  fx::mkdirs(home, 0777);
  chmod(env.dir.path().c_str(), 0755);
  std::string t = home + "/t";
  std::string ref = make_reference(t, env.spec);
  int rc = as_unprivileged([&]() -> int {
    Library lib(env.lib_root);
    RestoreStats first = restore(lib, "env", t, ropts());
    if (!first.failures.empty()) return 1;
    // A file in the read-only directory changes, another is removed.
    FILE* f = fopen((t + "/share/readonly/data.txt").c_str(), "a");
    if (!f) return 2;
    fputs("changed\n", f);
    fclose(f);
    RestoreStats second = restore(lib, "env", t, ropts());
    if (second.files_written != 1) return 3;
    if (fx::read_file(t + "/share/readonly/data.txt") != fx::read_file(ref + "/share/readonly/data.txt")) return 4;
    struct stat st;
    if (stat((t + "/share/readonly").c_str(), &st) != 0 || (st.st_mode & 07777) != 0555) return 5;
    return 0;
  });
  CHECK(rc == 0);
  auto d = tree_diffs(ref, t);
  CHECK_MESSAGE(d.empty(), fx::join_lines(d));
}

TEST_CASE("restore: --verify-content fails on a forged object and leaves the file as it is") {
  Env env(40);
  const Digest victim = [&] {
    Library lib(env.lib_root);
    Catalog cat = lib.load_catalog("env");
    for (auto& n : cat.nodes)
      if (n.path == "bin/python3.11") return n.digest;
    FAIL("no bin/python3.11");
    return Digest{};
  }();
  std::string t = env.dir / "t";
  {
    Library lib(env.lib_root);
    restore(lib, "env", t, ropts());
  }
  const Bytes good = fx::read_file(t + "/bin/python3.11");
  {
    Library lib(env.lib_root);
    forge_object(lib, victim);
  }
  Library lib(env.lib_root);
  RestoreOptions vc = ropts();
  vc.verify_content = true; // without verify: the compare checks names all the same
  std::string e = fx::error_of([&] { restore(lib, "env", t, vc); });
  CHECK(e.find("bin/python3.11") != std::string::npos);
  CHECK(e.find(to_hex(victim)) != std::string::npos);
  CHECK(e.find("does not match its name") != std::string::npos);
  CHECK(fx::read_file(t + "/bin/python3.11") == good); // not replaced by the forged bytes
  // With partial: reported, left as it is, the state incomplete.
  vc.partial = true;
  RestoreStats st = restore(lib, "env", t, vc);
  REQUIRE(st.failures.size() == 1);
  CHECK(st.failures[0].path == "bin/python3.11");
  CHECK(st.failures[0].why.find("does not match its name") != std::string::npos);
  CHECK(st.files_written == 0);
  CHECK(fx::read_file(t + "/bin/python3.11") == good);
  CHECK_FALSE(state_of(t)->complete);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HPAK_RSS_MEANINGFUL 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HPAK_RSS_MEANINGFUL 0
#endif
#endif
#ifndef HPAK_RSS_MEANINGFUL
#define HPAK_RSS_MEANINGFUL 1
#endif

// Peak RSS growth (KiB) of `body` run in a forked child; -1 if it failed.
static long child_rss_growth_kib(const std::function<bool()>& body) {
  fflush(nullptr);
  int pipefd[2];
  if (pipe(pipefd) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    close(pipefd[0]);
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    bool ok = false;
    try {
      ok = body();
    } catch (const std::exception& e) {
      fprintf(stderr, "child: %s\n", e.what());
    }
    getrusage(RUSAGE_SELF, &after);
    long growth = ok ? after.ru_maxrss - before.ru_maxrss : -1;
    if (write(pipefd[1], &growth, sizeof growth) != ssize_t(sizeof growth)) _exit(2);
    _exit(0);
  }
  close(pipefd[1]);
  long growth = -1;
  if (read(pipefd[0], &growth, sizeof growth) != ssize_t(sizeof growth)) growth = -1;
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return growth;
}

TEST_CASE("restore: the dirty compare reads in bounded chunks, relocations straddling them included") {
  fx::TempDir dir("restore-chunks");
  std::string src = dir / "src", lib_root = dir / "lib";
  fx::mkdirs(src);
  // 40 MiB of text with the tree's own path at and across every 1 MiB
  // boundary (zstd decodes in 1 MiB chunks), and near the end.
  const size_t size = 40u << 20;
  std::string text;
  text.reserve(size + 4096);
  const std::string line = "import os, sys  # a line of a python module, repeated\n";
  const size_t before[] = {src.size() / 2, 1, 0, src.size() - 1, 7};
  size_t k = 0, next = (1u << 20) - before[0];
  while (text.size() < size) {
    if (text.size() + line.size() > next) {
      text.append(next - text.size(), '#');
      text += src; // starts `before[k % 5]` bytes before a 1 MiB boundary
      k++;
      next = (k + 1) * (1u << 20) - before[k % 5];
    } else {
      text += line;
    }
  }
  text += src;
  fx::write_file(src + "/big.py", text);
  fx::write_file(src + "/small.py", "x = '" + src + "'\n");
  Library::init(lib_root);
  {
    Library lib(lib_root);
    PackOptions po;
    po.threads = 2;
    lib.add_tree(src, "env", po);
  }
  Library lib(lib_root);
  for (std::string t : {std::string(dir / "t"), std::string(dir / "a-longer-target-path")}) {
    restore(lib, "env", t, ropts());
    std::string want = fx::to_string(fx::read_file(t + "/big.py"));
    REQUIRE(want.find(src) == std::string::npos);
    REQUIRE(want.find(t) != std::string::npos);
    RestoreOptions vc = ropts();
    vc.verify_content = true;
    RestoreStats st;
    long growth = child_rss_growth_kib([&] {
      st = restore(lib, "env", t, vc);
      return st.files_compared == 2 && st.files_written == 0;
    });
    CHECK(growth >= 0); // the compare found the relocated file equal
#if HPAK_RSS_MEANINGFUL
    CHECK_MESSAGE(growth < 24 * 1024, "peak RSS grew by " << growth << " KiB comparing a 40 MiB file");
#endif
    // A same-size change past the first chunks is found and repaired; the
    // small relocated file is written from the object bytes its compare kept
    // (relocated again, not copied from the compare's relocated stream).
    std::string want_small = fx::to_string(fx::read_file(t + "/small.py"));
    REQUIRE(want_small == "x = '" + t + "'\n");
    flip_byte_keep_mtime(t + "/big.py");
    flip_byte_keep_mtime(t + "/small.py");
    st = restore(lib, "env", t, vc);
    CHECK(st.files_written == 2);
    CHECK(fx::to_string(fx::read_file(t + "/big.py")) == want);
    CHECK(fx::to_string(fx::read_file(t + "/small.py")) == want_small);
  }
}

TEST_CASE("restore: a version 1 catalog (no kinds) restores as safely as a new one") {
  fx::TempDir dir("restore-v1");
  std::string src = dir / "a-source-path-with-room";
  fx::mkdirs(src + "/bin");
  fx::mkdirs(src + "/lib/__pycache__");
  std::string elf = std::string("\x7f" "ELF\x02\x01\x01\0", 8) + src + "/lib" + std::string("\0after\0", 7);
  std::string pyc = std::string("\xa7\x0d\x0d\x0a\0\0\0\0\0\0\0\0\0\0\0\0\xe3", 17) + src + "/lib/m.py";
  fx::write_file(src + "/bin/prog", elf);
  fx::write_file(src + "/lib/__pycache__/m.cpython-311.pyc", pyc);
  fx::write_file(src + "/bin/script", "#!" + src + "/bin/python\n");
  std::string lib_root = dir / "lib";
  Library::init(lib_root);
  {
    Library lib(lib_root);
    PackOptions po;
    po.threads = 2;
    po.catalog_version = 1; // as hpak before catalog format 2 wrote it
    lib.add_tree(src, "old", po);
  }
  Library lib(lib_root);
  REQUIRE(lib.load_catalog("old").version == 1);
  for (auto& n : lib.load_catalog("old").nodes) CHECK(n.reloc_kind == RelocKind::Unclassified);
  SUBCASE("longer: refused before anything is written") {
    std::string t = dir / "a-target-path-longer-than-the-source/t";
    CHECK_THROWS_WITH(restore(lib, "old", t, ropts()), doctest::Contains("'bin/prog' holds the packed path"));
    CHECK(access((dir / "a-target-path-longer-than-the-source").c_str(), F_OK) != 0);
    RestoreOptions keep = ropts();
    keep.keep_unrelocated = true;
    RestoreStats st = restore(lib, "old", t, keep);
    CHECK(st.kept_unrelocated == 2);
    CHECK(fx::to_string(fx::read_file(t + "/bin/prog")) == elf);
    CHECK(fx::to_string(fx::read_file(t + "/lib/__pycache__/m.cpython-311.pyc")) == pyc); // never spliced at another length
    CHECK(fx::to_string(fx::read_file(t + "/bin/script")) == "#!" + t + "/bin/python\n");
  }
  SUBCASE("shorter: the ELF patched in place, the .pyc as packed") {
    std::string t = dir / "s";
    RestoreStats st = restore(lib, "old", t, ropts());
    CHECK(st.relocated == 2);
    CHECK(st.kept_unrelocated == 1);
    std::string want = std::string("\x7f" "ELF\x02\x01\x01\0", 8) + t + "/lib" + std::string(src.size() - t.size(), '\0') +
                       std::string("\0after\0", 7);
    CHECK(fx::to_string(fx::read_file(t + "/bin/prog")) == want);
    CHECK(fx::to_string(fx::read_file(t + "/lib/__pycache__/m.cpython-311.pyc")) == pyc);
    // A dirty restore of the same catalog keeps everything.
    RestoreStats again = restore(lib, "old", t, ropts());
    CHECK(again.files_written == 0);
  }
}
