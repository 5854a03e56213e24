// base/os/fs_ops: the ctime fence in two steps (take, then wait). A change
// made before the take has a ctime below the fence's value; a change made
// after the wait, at or above it, even one made at once (the coarse clock's
// tick not passed when the fence was taken). A wait that returned early, or
// a value taken from the coarse clock without waiting, fails the second check
// within a few of the rounds.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>

#include "base/os/file.hpp"
#include "base/os/fs_ops.hpp"
#include "tree_fixture.hpp"

using namespace hpak;
using fx::TempDir;

namespace {

// Rewrites one byte in place (moves the file's ctime and mtime).
void poke(int fd) {
  REQUIRE(::pwrite(fd, "x", 1, 0) == 1);
}

int64_t ctime_of(int fd) {
  struct stat st {};
  REQUIRE(::fstat(fd, &st) == 0);
  return int64_t(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
}

int64_t coarse_now() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

} // namespace

TEST_CASE("ctime fence: changes before the take are below its value, changes after the wait at or above it") {
  TempDir t("fence");
  Fd before(::open((t / "before").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  Fd after(::open((t / "after").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  REQUIRE(before);
  REQUIRE(after);
  for (int round = 0; round < 200; round++) {
    poke(before.get());
    const CtimeFence f = take_ctime_fence();
    wait_ctime_fence(f);
    poke(after.get()); // at once: the first moment a caller may change the tree
    CHECK(ctime_of(before.get()) < f.value);
    CHECK(ctime_of(after.get()) >= f.value);
    CHECK(coarse_now() >= f.value); // what the wait is for
  }
}

TEST_CASE("ctime fence: ctime_fence() is the take and the wait at once") {
  TempDir t("fence1");
  Fd fd(::open((t / "f").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  REQUIRE(fd);
  poke(fd.get());
  const int64_t value = ctime_fence();
  CHECK(ctime_of(fd.get()) < value);
  poke(fd.get());
  CHECK(ctime_of(fd.get()) >= value);
}
