// The Windows os seam (base/os/windows, issue 30) on a real disk under Wine:
// the POSIX behaviour each call promises (base/os/sys.hpp) where Windows
// differs by default — O_EXCL, O_DIRECTORY, removing and replacing a
// read-only file, flock between two descriptors, a locked file still read,
// listings, modes from attributes, *_at with "..", times.
#include <doctest/doctest.h>

#include <cerrno>
#include <cstdlib>
#include <set>
#include <string>

#include "base/os/file.hpp"
#include "base/os/fs_ops.hpp"
#include "base/os/sys.hpp"
#include "base/os/windows/win.hpp"

#include <aclapi.h>

using namespace hpak;

namespace {

// A new directory in the Wine prefix's TEMP, removed (remove_entry) when the test ends.
struct TempDir {
  std::string path;
  TempDir() {
    const char* t = std::getenv("TEMP");
    path = std::string(t ? t : ".") + "/hpak-os-test-XXXXXX";
    REQUIRE(os::make_temp_dir(path));
  }
  ~TempDir() {
    Fd parent(os::open_path(dir_name(path).c_str(), O_RDONLY | O_DIRECTORY));
    if (parent) remove_entry(parent.get(), base_name(path), path);
  }
};

void put(const std::string& path, const std::string& text, os::Mode mode = 0644) {
  int fd = os::open_path(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  REQUIRE(fd >= 0);
  REQUIRE(os::write(fd, text.data(), text.size()) == long(text.size()));
  REQUIRE(os::close(fd) == 0);
}

std::string text_of(const std::string& path) {
  Bytes b = read_file(path);
  return std::string(b.begin(), b.end());
}

} // namespace

TEST_CASE("windows os: O_EXCL, O_DIRECTORY and ENOENT as POSIX says") {
  TempDir t;
  const std::string& d = t.path;
  put(d + "/a", "one");
  CHECK(os::open_path((d + "/a").c_str(), O_RDWR | O_CREAT | O_EXCL, 0644) == -1);
  CHECK(errno == EEXIST);
  CHECK(os::open_path((d + "/a").c_str(), O_RDONLY | O_DIRECTORY) == -1);
  CHECK(errno == ENOTDIR);
  CHECK(os::open_path((d + "/missing").c_str(), O_RDONLY) == -1);
  CHECK(errno == ENOENT);
  CHECK(os::open_path(d.c_str(), O_RDWR) == -1);
  CHECK(errno == EISDIR);
}

TEST_CASE("windows os: a read-only file is made, seen, replaced and removed as on POSIX") {
  TempDir t;
  const std::string& d = t.path;
  put(d + "/ro", "frozen", 0444); // created read-only; the creating handle still wrote
  CHECK(text_of(d + "/ro") == "frozen");
  os::FileStat st;
  REQUIRE(os::stat_path((d + "/ro").c_str(), st) == 0);
  CHECK(S_ISREG(st.st_mode));
  CHECK((st.st_mode & 0777) == 0444);
  put(d + "/new", "fresh");
  CHECK(os::rename_path((d + "/new").c_str(), (d + "/ro").c_str()) == 0); // replaces the read-only file
  CHECK(text_of(d + "/ro") == "fresh");
  REQUIRE(os::chmod_path((d + "/ro").c_str(), 0444) == 0);
  CHECK(os::unlink_path((d + "/ro").c_str()) == 0);
  CHECK(!path_exists(d + "/ro"));
}

// A fresh restore's file (core/restore/materialize.cpp): one create relative
// to the directory's handle, read-only from the start when the mode says so,
// written and given its mtime through that handle, closed.
TEST_CASE("windows os: the restore's create: one open makes a file, read-only or not, written and timed through its handle") {
  TempDir t;
  const std::string& d = t.path;
  Fd dir(os::open_path(d.c_str(), O_RDONLY | O_DIRECTORY));
  REQUIRE(dir);
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  for (os::Mode mode : {os::Mode(0444), os::Mode(0644)}) {
    const std::string name = mode == 0444 ? "ro" : "rw";
    int fd = os::open_at(dir.get(), name.c_str(), flags, mode);
    REQUIRE(fd >= 0);
    CHECK(os::write(fd, "content", 7) == 7);
    os::TimeSpec times[2] = {{1600000000, 0}, {1700000000, 500}};
    CHECK(os::set_times(fd, times) == 0);
    os::FileStat st;
    REQUIRE(os::fstat(fd, st) == 0);
    CHECK(os::close(fd) == 0);
    CHECK(S_ISREG(st.st_mode));
    REQUIRE(os::stat_at(dir.get(), name.c_str(), st, AT_SYMLINK_NOFOLLOW) == 0);
    CHECK((st.st_mode & 0777) == mode);
    CHECK(st.st_size == 7);
    CHECK(st.st_mtim.tv_sec == 1700000000);
    CHECK(text_of(d + "/" + name) == "content");
  }
  // An existing name, a directory's too, is EEXIST: the create never opens what is there.
  REQUIRE(os::mkdir_at(dir.get(), "sub", 0755) == 0);
  CHECK(os::open_at(dir.get(), "sub", flags, 0644) == -1);
  CHECK(errno == EEXIST);
  CHECK(os::open_at(dir.get(), "ro", flags, 0644) == -1);
  CHECK(errno == EEXIST);
}

TEST_CASE("windows os: rename over a file another descriptor holds open: replaced (POSIX semantics) or EACCES, never half done") {
  TempDir t;
  const std::string& d = t.path;
  put(d + "/old", "old");
  put(d + "/new", "new");
  int held = os::open_path((d + "/old").c_str(), O_RDONLY);
  REQUIRE(held >= 0);
  Fd guard(held);
  // Where the system has FILE_RENAME_FLAG_POSIX_SEMANTICS (Windows 10 1709+) the
  // name is replaced; without it (Wine 8) the rename fails with EACCES and
  // leaves both files as they were.
  if (os::rename_path((d + "/new").c_str(), (d + "/old").c_str()) == 0) {
    CHECK(text_of(d + "/old") == "new");
    CHECK(!path_exists(d + "/new"));
  } else {
    CHECK(errno == EACCES);
    CHECK(text_of(d + "/old") == "old");
    CHECK(text_of(d + "/new") == "new");
  }
  char buf[3];
  CHECK(os::pread(held, buf, 3, 0) == 3); // the descriptor still reads the file it opened
  CHECK(std::string(buf, 3) == "old");
}

TEST_CASE("windows os: *_at opens relative to the directory's handle, never what took the directory's old name") {
  TempDir t;
  const std::string& d = t.path;
  REQUIRE(os::mkdir_path((d + "/before").c_str(), 0755) == 0);
  put(d + "/before/f", "inside");
  int dfd = os::open_path((d + "/before").c_str(), O_RDONLY | O_DIRECTORY);
  REQUIRE(dfd >= 0);
  Fd guard(dfd);
  // Relative to the handle while the directory is where it was opened.
  os::FileStat st;
  CHECK(os::stat_at(dfd, "f", st, AT_SYMLINK_NOFOLLOW) == 0);
  CHECK(st.st_size == 6);
  CHECK(os::mkdir_at(dfd, "made", 0755) == 0);
  CHECK(path_exists(d + "/before/made"));
  CHECK(os::mkdir_at(dfd, "made", 0755) == -1);
  CHECK(errno == EEXIST);
  CHECK(os::open_at(dfd, "missing", O_RDONLY) == -1);
  CHECK(errno == ENOENT);
  // The directory moved away and an impostor in its old place: an open relative
  // to the handle reads the moved directory's file (Windows), or fails (Wine 8:
  // EBADF, it cannot follow the moved directory); never the impostor's.
  REQUIRE(os::rename_path((d + "/before").c_str(), (d + "/after").c_str()) == 0);
  REQUIRE(os::mkdir_path((d + "/before").c_str(), 0755) == 0);
  put(d + "/before/f", "impost");
  int fd = os::open_at(dfd, "f", O_RDONLY | O_NOFOLLOW);
  if (fd >= 0) {
    char buf[6];
    CHECK(os::read(fd, buf, 6) == 6);
    os::close(fd);
    CHECK(std::string(buf, 6) == "inside");
  } else {
    CHECK(errno == EBADF);
  }
}

TEST_CASE("windows os: *_at relative to a directory fd, '..' included; a directory is EISDIR to unlink, ENOTEMPTY to rmdir") {
  TempDir t;
  const std::string& d = t.path;
  REQUIRE(os::mkdir_path((d + "/sub").c_str(), 0755) == 0);
  int dfd = os::open_path((d + "/sub").c_str(), O_RDONLY | O_DIRECTORY);
  REQUIRE(dfd >= 0);
  Fd guard(dfd);
  int fd = os::open_at(dfd, "../top", O_WRONLY | O_CREAT | O_EXCL, 0644);
  REQUIRE(fd >= 0);
  os::close(fd);
  CHECK(path_exists(d + "/top"));
  REQUIRE(os::mkdir_at(dfd, "inner", 0755) == 0);
  put(d + "/sub/inner/f", "x");
  CHECK(os::unlink_at(dfd, "inner", 0) == -1);
  CHECK(errno == EISDIR);
  CHECK(os::unlink_at(dfd, "inner", AT_REMOVEDIR) == -1);
  CHECK(errno == ENOTEMPTY);
  os::FileStat st;
  REQUIRE(os::stat_at(dfd, "inner", st, AT_SYMLINK_NOFOLLOW) == 0);
  CHECK(S_ISDIR(st.st_mode));
  remove_entry(dfd, "inner", "inner");
  CHECK(!path_exists(d + "/sub/inner"));
}

TEST_CASE("windows os: a listing names every entry once, with its type") {
  TempDir t;
  const std::string& d = t.path;
  put(d + "/f1", "1");
  put(d + "/f2", "2");
  REQUIRE(os::mkdir_path((d + "/dir").c_str(), 0755) == 0);
  std::set<std::string> names;
  os::Dir* dir = os::dir_open(d.c_str());
  REQUIRE(dir);
  while (const char* n = os::dir_next(dir)) names.insert(n);
  CHECK(errno == 0);
  os::dir_close(dir);
  CHECK(names == std::set<std::string>{".", "..", "dir", "f1", "f2"});
  int fd = os::open_path(d.c_str(), O_RDONLY | O_DIRECTORY);
  REQUIRE(fd >= 0);
  Fd guard(fd);
  char buf[4096];
  std::set<std::string> dirs, files;
  for (long got; (got = read_dirents(fd, buf, sizeof buf)) > 0;)
    for (long off = 0; off < got;) {
      auto* e = reinterpret_cast<const RawDirent*>(buf + off);
      off += e->d_reclen;
      (e->d_type == DT_DIR ? dirs : files).insert(e->d_name);
    }
  CHECK(dirs == std::set<std::string>{".", "..", "dir"});
  CHECK(files == std::set<std::string>{"f1", "f2"});
}

TEST_CASE("windows os: flock excludes a second descriptor, and a locked file is still read") {
  TempDir t;
  const std::string& d = t.path;
  put(d + "/lock", "data");
  int a = os::open_path((d + "/lock").c_str(), O_RDWR);
  int b = os::open_path((d + "/lock").c_str(), O_RDONLY);
  REQUIRE(a >= 0);
  REQUIRE(b >= 0);
  Fd ga(a), gb(b);
  REQUIRE(os::flock(a, LOCK_EX | LOCK_NB) == 0);
  CHECK(os::flock(b, LOCK_SH | LOCK_NB) == -1);
  CHECK(errno == EWOULDBLOCK);
  char buf[4] = {};
  CHECK(os::read(b, buf, 4) == 4); // the lock is on a byte no read touches
  CHECK(std::string(buf, 4) == "data");
  REQUIRE(os::flock(a, LOCK_UN) == 0);
  CHECK(os::flock(b, LOCK_SH | LOCK_NB) == 0);
}

TEST_CASE("windows os: times set through the handle read back; a mapping reads the file") {
  TempDir t;
  const std::string& d = t.path;
  put(d + "/t", "mapped bytes");
  int fd = os::open_path((d + "/t").c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  Fd guard(fd);
  os::TimeSpec times[2] = {{1600000000, 0}, {1700000000, 123456700}};
  REQUIRE(os::set_times(fd, times) == 0);
  os::FileStat st;
  REQUIRE(os::fstat(fd, st) == 0);
  CHECK(st.st_mtim.tv_sec == 1700000000);
  CHECK(st.st_mtim.tv_nsec == 123456700);
  CHECK(st.st_size == 12);
  MappedFile m(d + "/t");
  CHECK(std::string(reinterpret_cast<const char*>(m.data()), m.size()) == "mapped bytes");
}

TEST_CASE("windows os: dup shares the open file (and its flock); chmod_nofollow; names split at '/' and '\\'") {
  TempDir t;
  const std::string& d = t.path;
  put(d + "/f", "data");
  int a = os::open_path((d + "/f").c_str(), O_RDWR);
  REQUIRE(a >= 0);
  Fd ga(a), gb(os::dup(a));
  REQUIRE(gb);
  REQUIRE(os::flock(a, LOCK_EX | LOCK_NB) == 0);
  ga = Fd(); // the lock stays with the duplicate (AtomicFile::commit relies on it)
  int c = os::open_path((d + "/f").c_str(), O_RDONLY);
  REQUIRE(c >= 0);
  Fd gc(c);
  CHECK(os::flock(c, LOCK_SH | LOCK_NB) == -1);

  Fd dir(os::open_path(d.c_str(), O_RDONLY | O_DIRECTORY));
  REQUIRE(dir);
  chmod_nofollow(dir.get(), "f", 0444, d + "/f");
  os::FileStat st;
  REQUIRE(os::stat_path((d + "/f").c_str(), st) == 0);
  CHECK((st.st_mode & 0222) == 0);
  chmod_nofollow(dir.get(), "f", 0644, d + "/f");

  CHECK(base_name("C:\\a\\b") == "b");
  CHECK(dir_name("C:\\a\\b") == "C:\\a");
  CHECK(base_name("C:/a/b") == "b");
}

TEST_CASE("windows os: copy_range is block cloning; a volume that cannot clone answers EOPNOTSUPP, nothing changed") {
  // Wine's file system (Linux's) has no FSCTL_GET_INTEGRITY_INFORMATION nor
  // FSCTL_DUPLICATE_EXTENTS_TO_FILE: the caller's fallback (a buffered copy) must be taken.
  TempDir t;
  const std::string& d = t.path;
  put(d + "/in", std::string(1 << 17, 'x'));
  Fd in(os::open_path((d + "/in").c_str(), O_RDONLY));
  Fd out(os::open_path((d + "/out").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644));
  REQUIRE(in);
  REQUIRE(out);
  REQUIRE(os::write(out.get(), "head", 4) == 4);
  os::Off off = 0;
  errno = 0;
  CHECK(os::copy_range(in.get(), &off, out.get(), 1 << 16) == -1);
  CHECK(errno == EOPNOTSUPP);
  CHECK(off == 0);
  os::FileStat st;
  REQUIRE(os::fstat(out.get(), st) == 0);
  CHECK(st.st_size == 4);                             // not extended
  CHECK(os::seek(out.get(), 0, SEEK_CUR) == 4);       // nor moved
}

namespace {

// Replaces the DACL of the file open as `fd` (nullptr: no DACL at all), through a
// handle of it with WRITE_DAC (SetKernelObjectSecurity: NtSetSecurityObject); the
// Windows error, 0 on success.
DWORD set_dacl(int fd, PACL dacl) {
  HANDLE h = ReOpenFile(os::win::handle_of(fd), WRITE_DAC, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, 0);
  if (h == INVALID_HANDLE_VALUE) return GetLastError();
  SECURITY_DESCRIPTOR sd;
  InitializeSecurityDescriptor(&sd, SECURITY_DESCRIPTOR_REVISION);
  SetSecurityDescriptorDacl(&sd, TRUE, dacl, FALSE);
  DWORD rc = SetKernelObjectSecurity(h, DACL_SECURITY_INFORMATION, &sd) ? 0 : GetLastError();
  CloseHandle(h);
  return rc;
}

// A DACL of one allow ACE: `rights` for the well-known SID `type`. Freed with LocalFree.
PACL dacl_allowing(WELL_KNOWN_SID_TYPE type, DWORD rights) {
  BYTE sid[SECURITY_MAX_SID_SIZE];
  DWORD n = sizeof sid;
  REQUIRE(CreateWellKnownSid(type, nullptr, sid, &n));
  EXPLICIT_ACCESSW ea{};
  ea.grfAccessPermissions = rights;
  ea.grfAccessMode = SET_ACCESS;
  ea.Trustee.TrusteeForm = TRUSTEE_IS_SID;
  ea.Trustee.ptstrName = reinterpret_cast<LPWSTR>(sid);
  PACL acl = nullptr;
  REQUIRE(SetEntriesInAclW(1, &ea, nullptr, &acl) == ERROR_SUCCESS);
  return acl;
}

} // namespace

TEST_CASE("windows os: not_private_why reads the owner and DACL: this user's directory and file pass, as does a read ACE for Everyone; a write ACE for Everyone and no DACL are refused") {
  TempDir t;
  Fd dir(os::open_path(t.path.c_str(), O_RDONLY | O_DIRECTORY));
  REQUIRE(dir);
  CHECK(os::not_private_why(dir.get(), 077) == "");
  put(t.path + "/f", "x");
  Fd f(os::open_path((t.path + "/f").c_str(), O_RDONLY));
  REQUIRE(f);
  CHECK(os::not_private_why(f.get(), 077) == "");
  // DACLs set through a handle of the file (Wine keeps them: they read back).
  PACL everyone_reads = dacl_allowing(WinWorldSid, GENERIC_READ);
  REQUIRE(set_dacl(f.get(), everyone_reads) == ERROR_SUCCESS);
  LocalFree(everyone_reads);
  CHECK(os::not_private_why(f.get(), 077) == "");
  PACL everyone_writes = dacl_allowing(WinWorldSid, FILE_APPEND_DATA);
  REQUIRE(set_dacl(f.get(), everyone_writes) == ERROR_SUCCESS);
  LocalFree(everyone_writes);
  std::string why = os::not_private_why(f.get(), 077);
  CHECK(why.find("(S-1-1-0) may write it (its DACL allows it)") != std::string::npos);
  // No DACL: refused (Wine stores it as an ACE letting Everyone do anything, which is refused as such).
  REQUIRE(set_dacl(f.get(), nullptr) == ERROR_SUCCESS);
  why = os::not_private_why(f.get(), 077);
  CHECK((why == "it has no DACL (anyone may do anything to it)" || why.find("(S-1-1-0) may write it") != std::string::npos));
  // Not tested: another owner. Wine 8 reports setting one (SetKernelObjectSecurity,
  // OWNER_SECURITY_INFORMATION) a success, but the owner reads back as this user's.
}
