// core/restore_state: the boot id beside the ctime fence. The fence is trusted
// only in the boot that took it: after a reboot (a different boot id) or with
// an unknown one (a version 1 state, or no /proc), a dirty restore compares
// content, so a stale same-size file that survived a power loss is fixed.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/library/library.hpp"
#include "core/restore/restore.hpp"
#include "core/restore/restore_state.hpp"
#include "tree_fixture.hpp"

using namespace hpak;

namespace {

struct Space {
  fx::TempDir dir{"bootid"};
  std::string lib_root = dir / "lib";
  std::string src = dir / "src";
  std::string target = dir / "t";
  Space() {
    mkdir(src.c_str(), 0755);
    for (int i = 0; i < 5; i++) write(src + "/f" + std::to_string(i), "content " + std::to_string(i) + "\n");
    Library::init(lib_root);
    Library lib(lib_root);
    PackOptions po;
    po.threads = 1;
    lib.add_tree(src, "env", po);
    restore_now();
  }
  static void write(const std::string& path, const std::string& text) {
    Fd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    REQUIRE(fd);
    write_all(fd.get(), ByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size()), path);
  }
  static std::string read(const std::string& path) {
    Bytes b = read_file(path);
    return std::string(b.begin(), b.end());
  }
  RestoreStats restore_now() {
    Library lib(lib_root);
    RestoreOptions o;
    o.threads = 1;
    return restore(lib, "env", target, o);
  }
  RestoreState state() {
    Fd fd(open(target.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    auto s = read_state(fd.get());
    REQUIRE(s);
    return *s;
  }
  void set_state(const RestoreState& s) {
    Fd fd(open(target.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    write_state(fd.get(), target, s);
  }
  // What a power loss on data=writeback can leave: a file of the old size with
  // stale content, its ctime below the fence (simulated by a fence far ahead).
  void stale_file_below_fence(const BootId& boot) {
    write(target + "/f2", "CONTENT 2\n"); // same size as "content 2\n"
    RestoreState s = state();
    s.fence_ns = int64_t(4e18);
    s.boot_id = boot;
    set_state(s);
  }
};

} // namespace

TEST_CASE("restore state: records the running kernel's boot id") {
  BootId none{};
  CHECK(current_boot_id() != none); // Linux with /proc
  Space sp;
  RestoreState s = sp.state();
  CHECK(s.boot_id == current_boot_id());
  CHECK(s.fence_trusted());
}

TEST_CASE("restore state: the fence is trusted in the same boot (the stale file is not even looked at)") {
  Space sp;
  sp.stale_file_below_fence(current_boot_id());
  RestoreStats st = sp.restore_now();
  CHECK(st.files_written == 0);
  CHECK(Space::read(sp.target + "/f2") == "CONTENT 2\n"); // what the fence promises, and why it needs the boot id
}

TEST_CASE("restore state: after a reboot the restore compares content instead of trusting the fence") {
  Space sp;
  BootId other = current_boot_id();
  other[0] ^= 0xFF;
  sp.stale_file_below_fence(other);
  RestoreStats st = sp.restore_now();
  CHECK(st.files_written == 1);
  CHECK(Space::read(sp.target + "/f2") == "content 2\n");
  CHECK(sp.state().boot_id == current_boot_id());
}

TEST_CASE("restore state: an unknown boot id (zero: a version 1 state, or no /proc) is not trusted") {
  Space sp;
  sp.stale_file_below_fence(BootId{});
  CHECK_FALSE(sp.state().fence_trusted());
  RestoreStats st = sp.restore_now();
  CHECK(st.files_written == 1);
  CHECK(Space::read(sp.target + "/f2") == "content 2\n");
}

TEST_CASE("restore state: a version 1 state (no boot id) is read, with the boot id unknown") {
  Space sp;
  RestoreState s = sp.state();
  // Re-encode as version 1: drop the 16 boot id bytes after fence_ns (offset
  // 24), set the version, recompute the check.
  Bytes b = read_file(sp.target + "/" + kStateName);
  Bytes v1(b.begin(), b.begin() + 24);
  v1.insert(v1.end(), b.begin() + 40, b.end() - 8);
  v1[4] = 1;
  put_u64(v1, xxh64(v1));
  Space::write(sp.target + "/" + kStateName, std::string(v1.begin(), v1.end()));
  RestoreState old = sp.state();
  CHECK(old.boot_id == BootId{});
  CHECK(old.fence_ns == s.fence_ns);
  CHECK(old.name == s.name);
  CHECK(old.catalog_digest == s.catalog_digest);
  CHECK_FALSE(old.fence_trusted());
}

TEST_CASE("restore state: a FIFO, a symlink or an oversized file at .hpak-state is no state (never blocks, never read whole)") {
  Space sp;
  Fd tfd(open(sp.target.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(read_state(tfd.get()));
  const std::string st = sp.target + "/" + kStateName;
  unlink(st.c_str());
  REQUIRE(mkfifo(st.c_str(), 0644) == 0);
  CHECK_FALSE(read_state(tfd.get())); // O_NONBLOCK: a FIFO nobody writes does not hang it
  unlink(st.c_str());
  REQUIRE(symlink("/dev/zero", st.c_str()) == 0);
  CHECK_FALSE(read_state(tfd.get()));
  unlink(st.c_str());
  {
    Fd big(open(st.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    REQUIRE(big);
    REQUIRE(ftruncate(big.get(), off_t(kStateMaxSize + 1)) == 0); // sparse: costs no space
  }
  CHECK_FALSE(read_state(tfd.get()));
}
