// core/store/lock_scope: a mountinfo line is parsed into its fields (octal
// escapes undone, optional fields skipped), and the verdict -- are flock locks
// local to this host? -- is yes only for NFS whose super options carry
// local_lock=flock or local_lock=all (what nolock shows as). A CLI test of the
// refusal is not possible here: it needs an NFS mount; the pure function and
// the parser are what decide it, and mount_of is checked on a real file.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "core/store/lock_scope.hpp"
#include "base/os/file.hpp"
#include "tree_fixture.hpp"

using namespace hpak;
using store::kNfsSuperMagic;

namespace {
constexpr uint64_t kExt4SuperMagic = 0xEF53;
const char* kNfs4 =
    "412 29 0:52 / /mnt/lib rw,relatime shared:230 - nfs4 server:/export/lib "
    "rw,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,proto=tcp,timeo=600,retrans=2,sec=sys,"
    "clientaddr=10.0.0.2,local_lock=none,addr=10.0.0.1\n";
const char* kNfsNolock =
    "413 29 0:53 / /mnt/old rw,relatime shared:231 - nfs server:/export/old "
    "rw,vers=3,rsize=1048576,wsize=1048576,namlen=255,hard,nolock,proto=tcp,timeo=600,retrans=2,sec=sys,"
    "mountaddr=10.0.0.1,mountvers=3,mountport=20048,mountproto=udp,local_lock=all,addr=10.0.0.1\n";
const char* kExt4 = "29 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro\n";
const char* kEscaped = "501 29 0:60 /sub\\040dir /mnt/my\\040libs\\011x rw master:3 shared:9 - nfs4 srv:/a\\040b "
                       "rw,vers=4.1,local_lock=flock";
} // namespace

TEST_CASE("lock_scope: an nfs4 mountinfo line with local_lock=none") {
  auto m = store::parse_mountinfo_line(kNfs4);
  REQUIRE(m);
  CHECK(m->mount_id == 412);
  CHECK(m->major == 0);
  CHECK(m->minor == 52);
  CHECK(m->mount_point == "/mnt/lib");
  CHECK(m->fs_type == "nfs4");
  CHECK(m->source == "server:/export/lib");
  CHECK(m->super_options.find("local_lock=none") != std::string::npos);
  CHECK(m->super_options.back() != '\n');
  CHECK_FALSE(store::locks_host_local(kNfsSuperMagic, m->super_options));
}

TEST_CASE("lock_scope: nfs mounted with nolock shows local_lock=all: locks are host-local") {
  auto m = store::parse_mountinfo_line(kNfsNolock);
  REQUIRE(m);
  CHECK(m->mount_id == 413);
  CHECK(m->fs_type == "nfs");
  CHECK(store::locks_host_local(kNfsSuperMagic, m->super_options));
}

TEST_CASE("lock_scope: ext4 is never host-local, whatever its options say") {
  auto m = store::parse_mountinfo_line(kExt4);
  REQUIRE(m);
  CHECK(m->mount_id == 29);
  CHECK(m->major == 259);
  CHECK(m->minor == 2);
  CHECK(m->mount_point == "/");
  CHECK(m->source == "/dev/nvme0n1p2");
  CHECK(m->super_options == "rw,errors=remount-ro");
  CHECK_FALSE(store::locks_host_local(kExt4SuperMagic, m->super_options));
  CHECK_FALSE(store::locks_host_local(kExt4SuperMagic, "rw,local_lock=all"));
}

TEST_CASE("lock_scope: escaped paths, several optional fields, local_lock=flock") {
  auto m = store::parse_mountinfo_line(kEscaped);
  REQUIRE(m);
  CHECK(m->mount_id == 501);
  CHECK(m->mount_point == "/mnt/my libs\tx");
  CHECK(m->source == "srv:/a b");
  CHECK(m->super_options == "rw,vers=4.1,local_lock=flock");
  CHECK(store::locks_host_local(kNfsSuperMagic, m->super_options));
}

TEST_CASE("lock_scope: the verdict matches whole options only") {
  CHECK(store::locks_host_local(kNfsSuperMagic, "local_lock=all"));
  CHECK(store::locks_host_local(kNfsSuperMagic, "rw,local_lock=flock"));
  CHECK_FALSE(store::locks_host_local(kNfsSuperMagic, "rw,local_lock=posix"));
  CHECK_FALSE(store::locks_host_local(kNfsSuperMagic, "rw,local_lock=none"));
  CHECK_FALSE(store::locks_host_local(kNfsSuperMagic, "rw,xlocal_lock=all"));
  CHECK_FALSE(store::locks_host_local(kNfsSuperMagic, ""));
}

TEST_CASE("lock_scope: lines that are not mountinfo lines") {
  CHECK_FALSE(store::parse_mountinfo_line(""));
  CHECK_FALSE(store::parse_mountinfo_line("29 1 259:2 / / rw,relatime shared:1 ext4 /dev/x rw"));  // no "-"
  CHECK_FALSE(store::parse_mountinfo_line("x 1 259:2 / / rw - ext4 /dev/x rw"));                   // id
  CHECK_FALSE(store::parse_mountinfo_line("29 1 259-2 / / rw - ext4 /dev/x rw"));                  // dev
  CHECK_FALSE(store::parse_mountinfo_line("29 1 259:2 / / rw - ext4"));                            // no source
  CHECK(store::parse_mountinfo_line("29 1 259:2 / / rw - ext4 /dev/x"));                           // no super options
}

TEST_CASE("lock_scope: mount_of finds the mount of a real file by its mount id") {
  fx::TempDir t("lock_scope");
  fx::write_file(t / "f", "x");
  Fd fd(open((t / "f").c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(fd.get() >= 0);
  struct statx sx;
  REQUIRE(statx(fd.get(), "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) == 0);
  auto m = store::mount_of(fd.get());
  REQUIRE(m);
  if (sx.stx_mask & STATX_MNT_ID) CHECK(m->mount_id == sx.stx_mnt_id);
  CHECK_FALSE(m->fs_type.empty());
  CHECK((t.path() + "/").rfind(m->mount_point == "/" ? "/" : m->mount_point + "/", 0) == 0);
}
