// base/os/file: open_regular and MappedFile on hostile files (a FIFO never
// hangs the open, a symlink is refused with Follow::NoLinks, sizes are
// bounded, reads stop at the bound even on a file that is not what fstat said).
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

#include "base/error.hpp"
#include "base/os/file.hpp"
#include "tree_fixture.hpp"

using namespace hpak;
using fx::TempDir;

namespace {

void write_text(const std::string& p, const std::string& text) {
  Fd fd(::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  REQUIRE(fd);
  write_all(fd.get(), ByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size()), p);
}

} // namespace

TEST_CASE("open_regular: regular files pass, FIFOs, devices and (NoLinks) symlinks are refused without blocking") {
  TempDir t("openreg");
  write_text(t / "file", "hello\n");
  REQUIRE(mkfifo((t / "fifo").c_str(), 0644) == 0);
  REQUIRE(symlink("file", (t / "link").c_str()) == 0);
  REQUIRE(symlink("/dev/zero", (t / "zero").c_str()) == 0);

  Bytes b = read_regular(t / "file", Follow::NoLinks, 4096);
  CHECK(std::string(b.begin(), b.end()) == "hello\n");
  CHECK(read_regular(t / "link", Follow::Links, 4096).size() == 6);

  std::string e = fx::error_of([&] { open_regular(t / "fifo", Follow::NoLinks); });
  CHECK(e.find("fifo': it is a FIFO, not a regular file") != std::string::npos);
  e = fx::error_of([&] { open_regular(t / "link", Follow::NoLinks); });
  CHECK(e.find("link': it is a symbolic link") != std::string::npos);
  e = fx::error_of([&] { open_regular(t / "zero", Follow::Links); });
  CHECK(e.find("a character device") != std::string::npos);
  e = fx::error_of([&] { open_regular(t / "zero", Follow::NoLinks); });
  CHECK(e.find("symbolic link") != std::string::npos);
  e = fx::error_of([&] { open_regular(t / "file", Follow::NoLinks, 5); });
  CHECK(e.find("6 bytes, more than the 5") != std::string::npos);
  e = fx::error_of([&] { open_regular(t.path(), Follow::NoLinks); });
  CHECK(e.find("a directory") != std::string::npos);

  CHECK(!open_regular_if_exists(t / "absent", Follow::NoLinks));
  e = fx::error_of([&] { open_regular(t / "absent", Follow::NoLinks); });
  CHECK(e.find("unable to open") != std::string::npos);

  e = fx::error_of([&] { MappedFile m(t / "fifo"); });
  CHECK(e.find("FIFO") != std::string::npos);
  e = fx::error_of([&] { MappedFile m(t / "link", Follow::NoLinks); });
  CHECK(e.find("symbolic link") != std::string::npos);
  MappedFile m(t / "link");
  CHECK(m.size() == 6);
}

TEST_CASE("read_fd_bounded stops at the bound on an endless file") {
  Fd fd(::open("/dev/zero", O_RDONLY | O_CLOEXEC));
  REQUIRE(fd);
  std::string e = fx::error_of([&] { read_fd_bounded(fd.get(), "/dev/zero", 10000); });
  CHECK(e.find("more than the 10000 bytes") != std::string::npos);
}

TEST_CASE("read_fd_bounded reads a regular file whole in one read, up to exactly its bound, and a pipe past 64 KiB") {
  TempDir t("readbounded");
  std::string text(200000, 'x');
  text[199999] = 'y';
  write_text(t / "f", text);
  Fd fd(::open((t / "f").c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(fd);
  Bytes b = read_fd_bounded(fd.get(), "f", text.size());
  CHECK(b.size() == text.size());
  CHECK(std::string(b.begin(), b.end()) == text);
  Fd again(::open((t / "f").c_str(), O_RDONLY | O_CLOEXEC));
  std::string e = fx::error_of([&] { read_fd_bounded(again.get(), "f", text.size() - 1); });
  CHECK(e.find("more than the 199999 bytes") != std::string::npos);
  write_text(t / "empty", "");
  Fd empty(::open((t / "empty").c_str(), O_RDONLY | O_CLOEXEC));
  CHECK(read_fd_bounded(empty.get(), "empty", 0).empty());

  int p[2];
  REQUIRE(::pipe(p) == 0);
  Fd rd(p[0]), wr(p[1]);
  std::string piped(300000, 'p'); // past the first 64 KiB buffer: it grows
  std::thread writer([&] {
    write_all(wr.get(), ByteSpan(reinterpret_cast<const uint8_t*>(piped.data()), piped.size()), "pipe");
    wr = Fd();
  });
  Bytes got = read_fd_bounded(rd.get(), "pipe", 1 << 20);
  writer.join();
  CHECK(got.size() == piped.size());
}

TEST_CASE("AtomicFile: its temp name records the writer, whose flock lasts until it is destroyed") {
  TempDir t("atomicwriter");
  std::string temp;
  {
    AtomicFile f(t / "out", 0644);
    temp = f.temp_path();
    auto w = temp_writer_of(base_name(temp));
    REQUIRE(w);
    CHECK(w->pid == long(getpid()));
    CHECK(w->this_host);
    CHECK_FALSE(unlocked_regular_file(temp)); // being written
    f.commit_as(temp + ".done");
    CHECK(temp_writer_of(base_name(temp) + ".done"));
    CHECK_FALSE(unlocked_regular_file(temp + ".done")); // committed, still ours
  }
  CHECK(unlocked_regular_file(temp + ".done")); // the writer is done with it
  CHECK_FALSE(temp_writer_of(".tmp-pack-0123456789abcdef"));     // an older hpak's name
  CHECK_FALSE(temp_writer_of(".tmp-x-0123456789abcdef-w12h0123abcZ")); // not a tag
  CHECK_FALSE(temp_writer_of("pack-abc-w12h01234567"));            // not a temp name
  auto other = temp_writer_of(".tmp-x-0123456789abcdef-w12h00000000");
  REQUIRE(other);
  CHECK(other->pid == 12);
  CHECK_FALSE(process_gone(long(getpid())));
}

TEST_CASE("MappedFile: pages a truncation took read as zeros and mark it shrunk, instead of SIGBUS") {
  TempDir dir("mapshrink");
  std::string p = dir / "f";
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  write_text(p, std::string(4 * page, 'x'));
  MappedFile m(p);
  REQUIRE(m.size() == 4 * page);
  CHECK(m.data()[3 * page] == 'x');
  CHECK_FALSE(m.shrunk());
  REQUIRE(::truncate(p.c_str(), off_t(page)) == 0);
  CHECK(m.data()[0] == 'x'); // still in the file
  CHECK(m.data()[3 * page + 5] == 0); // gone: a page of zeros, the process lives
  CHECK(m.data()[2 * page] == 0);
  CHECK(m.shrunk());
  MappedFile moved(std::move(m));
  CHECK(moved.shrunk());
  CHECK_FALSE(m.shrunk());
  MappedFile other(p); // a new mapping starts unmarked
  CHECK_FALSE(other.shrunk());
}

TEST_CASE("os::dup: a close-on-exec descriptor of the same open file (offset shared); dir_name and base_name") {
  TempDir t("osdup");
  write_text(t / "file", "hello\n");
  Fd a = open_read(t / "file");
  Fd b(os::dup(a.get()));
  REQUIRE(b);
  CHECK((::fcntl(b.get(), F_GETFD) & FD_CLOEXEC) != 0);
  char c;
  REQUIRE(os::read(a.get(), &c, 1) == 1);
  CHECK(os::seek(b.get(), 0, SEEK_CUR) == 1);

  CHECK(dir_name("a/b/c") == "a/b");
  CHECK(dir_name("/c") == "/");
  CHECK(dir_name("c") == ".");
  CHECK(base_name("a/b/c") == "c");
  CHECK(base_name("a\\b") == "a\\b"); // a backslash is a name's character on Linux
}

TEST_CASE("os::not_private_why: this user's file passes; a group or other bit of the mask is named") {
  TempDir t("private");
  write_text(t / "f", "x");
  Fd fd(::open((t / "f").c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(fd);
  REQUIRE(::fchmod(fd.get(), 0600) == 0);
  CHECK(os::not_private_why(fd.get(), 077) == "");
  REQUIRE(::fchmod(fd.get(), 0644) == 0);
  CHECK(os::not_private_why(fd.get(), 022) == "");
  CHECK(os::not_private_why(fd.get(), 077) == "group or others may use it");
  REQUIRE(::fchmod(fd.get(), 0602) == 0);
  CHECK(os::not_private_why(fd.get(), 022) == "group or others may write it");
  CHECK(os::not_private_why(-1, 022).find("it cannot be examined") == 0);
}

TEST_CASE("close_fds: closes exactly the descriptors listed, a run of consecutive numbers at once, never one between them") {
  // Ten descriptors in a row; the list holds all but the 4th and the 8th,
  // out of order and with -1 entries: the two left out must stay open.
  std::vector<int> all;
  for (int i = 0; i < 10; i++) all.push_back(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  for (int fd : all) REQUIRE(fd >= 0);
  std::vector<int> listed = {-1};
  for (int i = 9; i >= 0; i--)
    if (i != 3 && i != 7) listed.push_back(all[size_t(i)]);
  listed.push_back(-1);
  close_fds(listed);
  for (int fd : listed) CHECK(fd == -1);
  for (int i = 0; i < 10; i++) {
    const bool open = ::fcntl(all[size_t(i)], F_GETFD) != -1;
    CHECK_MESSAGE(open == (i == 3 || i == 7), "descriptor " << i << " of the ten");
  }
  ::close(all[3]);
  ::close(all[7]);
  std::vector<int> none;
  close_fds(none); // nothing to close: no call, no crash
  CHECK(none.empty());
}
