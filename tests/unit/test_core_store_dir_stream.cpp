// core/store/dir_stream: listings are sorted and skip "." and "..", a reopen
// leaves the caller's directory offset alone, ownership of the fd is never
// leaked, and a read error is an error, not a shorter directory.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include "core/store/dir_stream.hpp"
#include "base/error.hpp"
#include "tree_fixture.hpp"

using namespace hpak;

namespace {
size_t open_fds() { return store::list_dir("/proc/self/fd").size(); }
} // namespace

TEST_CASE("dir_stream: list_dir is sorted and has no dot entries") {
  fx::TempDir t("dirs");
  for (const char* n : {"b", "a", ".hidden", "c"}) fx::write_file(t / n, "x");
  fx::mkdirs(t / "d");
  auto names = store::list_dir(t.path());
  CHECK(names == std::vector<std::string>{".hidden", "a", "b", "c", "d"});
  CHECK(store::list_dir(t / "d").empty());
}

TEST_CASE("dir_stream: reopen reads from the start and leaves the caller's fd as it was") {
  fx::TempDir t("dirs");
  for (int i = 0; i < 50; i++) fx::write_file(t / ("f" + std::to_string(i)), "x");
  Fd dir(open(t.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(dir);
  off_t before = lseek(dir.get(), 0, SEEK_CUR);
  CHECK(store::list_dir_at(dir.get(), t.path()).size() == 50);
  CHECK(store::list_dir_at(dir.get(), t.path()).size() == 50); // again: not at its end
  CHECK(lseek(dir.get(), 0, SEEK_CUR) == before);
  CHECK(fcntl(dir.get(), F_GETFD) >= 0); // still open
}

TEST_CASE("dir_stream: no descriptor is leaked, whether the stream ends, is abandoned or fails") {
  fx::TempDir t("dirs");
  fx::write_file(t / "a", "x");
  fx::write_file(t / "b", "x");
  const size_t base = open_fds();
  for (int i = 0; i < 20; i++) {
    store::DirStream d(t.path());
    CHECK(d.next()); // abandoned after one name
  }
  {
    int fd = open(t.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    store::DirStream owned(Fd(fd), t.path());
    while (owned.next()) {
    }
  }
  CHECK_THROWS_AS(store::DirStream(t / "a"), Error); // not a directory
  CHECK_THROWS_AS(store::DirStream(t / "none"), Error);
  CHECK(open_fds() == base);
}

TEST_CASE("dir_stream: errors name the directory") {
  fx::TempDir t("dirs");
  try {
    store::list_dir(t / "missing");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find(t / "missing") != std::string::npos);
  }
}
