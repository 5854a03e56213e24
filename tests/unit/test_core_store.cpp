// core/store: the library's storage layer on a real directory: packs/ listed
// by kind, condemning and recovering packs, the locks (a second gc refused,
// waits reported, links and FIFOs refused), the marker and name files, and
// publishing a pack (idempotent, a torn leftover replaced, temp consumed).
#include <doctest/doctest.h>
#include <atomic>
#include <chrono>
#include <mutex>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "core/store/condemn.hpp"
#include "core/store/dir_stream.hpp"
#include "core/store/layout.hpp"
#include "core/store/lock.hpp"
#include "core/store/packs_listing.hpp"
#include "core/store/publish.hpp"
#include "base/diag.hpp"
#include "base/error.hpp"
#include "formats/pack_name.hpp"
#include "tree_fixture.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {

// A library directory with the folders and a marker.
store::Layout make_layout(const fx::TempDir& t, bool shared = false) {
  store::Layout l(t / "lib");
  store::create_dirs(l, shared);
  store::create_marker(l, {shared, -1});
  return l;
}

// Collects the engine's diagnostics while alive.
struct DiagCapture {
  std::mutex mu;
  std::vector<std::string> lines;
  DiagCapture() {
    set_diag_sink([this](DiagLevel, const std::string& s) {
      std::lock_guard lk(mu);
      lines.push_back(s);
    }, DiagLevel::Debug);
  }
  ~DiagCapture() { set_diag_sink(nullptr, DiagLevel::Debug); }
  bool saw(const std::string& part) {
    std::lock_guard lk(mu);
    for (auto& l : lines)
      if (l.find(part) != std::string::npos) return true;
    return false;
  }
};

} // namespace

TEST_CASE("store: list_packs sorts packs/ by kind") {
  fx::TempDir t("store");
  store::Layout l = make_layout(t);
  Digest a = fx::digest_filled(0x11), b = fx::digest_filled(0x22), c = fx::digest_filled(0x33);
  fx::write_file(l.pack_path(b), "b");
  fx::write_file(l.pack_path(a), "a");
  fx::write_file(l.index_path(a), "ia");
  fx::write_file(l.index_path(c), "ic"); // an index without its pack
  fx::write_file(store::condemned_path(l.index_path(b)), "x");
  fx::write_file(l.midx_path(), "m");
  fx::write_file(l.midx_layer_path(c), "m2");
  fx::write_file(l.packs_dir() + "/midx-XYZ.midx", "n");
  fx::write_file(l.packs_dir() + "/.tmp-pack-1234", "t");
  fx::write_file(l.packs_dir() + "/notes.txt", "n");
  fx::write_file(l.packs_dir() + "/pack-XYZ.hpak", "n");
  store::PacksListing got = store::list_packs(l);
  CHECK(got.pack_files == std::vector<Digest>{a, b});
  CHECK(got.index_files == std::vector<Digest>{a, c});
  CHECK(got.visible() == std::vector<Digest>{a, c});
  CHECK(got.has_pack_file(b));
  CHECK_FALSE(got.has_pack_file(c));
  CHECK(got.condemned == std::vector<std::string>{index_file_name(b) + ".condemned"});
  CHECK(got.temps == std::vector<std::string>{".tmp-pack-1234"});
  CHECK(got.other == std::vector<std::string>{"midx-XYZ.midx", "notes.txt", "pack-XYZ.hpak"});
  CHECK(got.has_midx);
  CHECK(got.midx_layers == std::vector<Digest>{c});
  CHECK(got.midx_files(l) == std::vector<std::string>{l.midx_layer_path(c), l.midx_path()});
}

TEST_CASE("store: a condemned pack is invisible, and recover_condemned brings it back") {
  fx::TempDir t("store");
  store::Layout l = make_layout(t);
  Digest a = fx::digest_filled(0x11), b = fx::digest_filled(0x22), gone = fx::digest_filled(0x44);
  for (Digest d : {a, b}) {
    fx::write_file(l.pack_path(d), "p");
    fx::write_file(l.index_path(d), "i");
  }
  REQUIRE(store::condemn_pack(l.pack_path(a)));
  REQUIRE(store::condemn_pack(l.pack_path(b)));
  CHECK(store::list_packs(l).visible().empty());
  // gc deleted b's pack but was killed before its index:
  REQUIRE(unlink(store::condemned_path(l.pack_path(b)).c_str()) == 0);
  // an orphan whose index is gone keeps its data:
  fx::write_file(store::condemned_path(l.pack_path(gone)), "orphan");
  CHECK(store::recover_condemned(l) == 1);
  store::PacksListing after = store::list_packs(l);
  CHECK(after.visible() == std::vector<Digest>{a});
  CHECK(after.pack_files == std::vector<Digest>{a, gone});
  CHECK(after.condemned.empty());
  CHECK(fx::to_string(fx::read_file(l.pack_path(gone))) == "orphan");
}

TEST_CASE("store: condemn_pack changes nothing when the pack cannot be renamed") {
  fx::TempDir t("store");
  store::Layout l = make_layout(t);
  Digest a = fx::digest_filled(0x11);
  fx::write_file(l.index_path(a), "i"); // no pack file
  CHECK_FALSE(store::condemn_pack(l.pack_path(a)));
  CHECK(path_exists(l.index_path(a)));
  CHECK_FALSE(path_exists(store::condemned_path(l.index_path(a))));
}

TEST_CASE("store: one gc lock at a time, naming the holder") {
  fx::TempDir t("store");
  store::Layout l = make_layout(t);
  std::optional<store::GcLock> first(std::in_place, l, false);
  std::string err = fx::error_of([&] { store::GcLock second(l, false); });
  CHECK(err.find("another gc or repair is running on '" + l.root() + "'") != std::string::npos);
  CHECK(err.find("pid " + std::to_string(getpid())) != std::string::npos);
  first.reset();
  CHECK(fx::error_of([&] { store::GcLock again(l, false); }).empty());
}

TEST_CASE("store: publish locks: shared beside shared, exclusive waits and says so") {
  fx::TempDir t("store");
  store::Layout l = make_layout(t);
  DiagCapture diag;
  std::optional<store::PublishLock> add1(std::in_place, l, false, false);
  { store::PublishLock add2(l, false, false); } // shared locks do not wait for each other
  CHECK_FALSE(diag.saw("waiting"));
  std::atomic<bool> taken{false};
  std::thread gc([&] {
    store::PublishLock excl(l, false, true);
    taken = true;
  });
  for (int i = 0; i < 500 && !diag.saw("waiting for exclusive lock"); i++) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  CHECK_FALSE(taken.load());
  CHECK(diag.saw("waiting for exclusive lock '" + l.publish_lock() + "'"));
  add1.reset();
  gc.join();
  CHECK(taken.load());
  CHECK(diag.saw("lock '" + l.publish_lock() + "' taken after"));
}

TEST_CASE("store: a lock file that is a symlink or a FIFO is refused, and nothing is written through it") {
  fx::TempDir t("store");
  store::Layout l = make_layout(t);
  fx::write_file(t / "victim", "keep");
  fx::symlink_to(t / "victim", l.gc_lock());
  CHECK_FALSE(fx::error_of([&] { store::GcLock g(l, false); }).empty());
  CHECK(fx::to_string(fx::read_file(t / "victim")) == "keep");
  REQUIRE(mkfifo(l.publish_lock().c_str(), 0644) == 0);
  CHECK_FALSE(fx::error_of([&] { store::PublishLock p(l, false, false); }).empty()); // and does not block
  CHECK_FALSE(fx::error_of([&] { store::check_locks_work(l, false); }).empty());
}

TEST_CASE("store: the marker records shared and level, and refuses other versions") {
  fx::TempDir t("store");
  store::Layout l(t / "lib");
  store::create_dirs(l, true);
  store::create_marker(l, {true, 7});
  store::Marker m = store::read_marker(l);
  CHECK(m.shared);
  CHECK(m.level == 7);
  struct stat st;
  REQUIRE(stat(l.packs_dir().c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 02775);
  store::create_marker(l, {false, 1}); // a second init does not replace the first's marker
  CHECK(store::read_marker(l).level == 7);
  store::write_marker(l, {false, -1});
  CHECK_FALSE(store::read_marker(l).shared);
  CHECK(store::read_marker(l).level == -1);
  fx::replace_file(l.marker(), fx::to_bytes("hpak-library 2\n"));
  CHECK(fx::error_of([&] { store::read_marker(l); }).find("has format 'hpak-library 2'") != std::string::npos);
  fx::replace_file(l.marker(), fx::to_bytes("hpak-library 1\nlevel 40\n"));
  CHECK(fx::error_of([&] { store::read_marker(l); }).find("names level 40") != std::string::npos);
  CHECK(fx::error_of([&] { store::read_marker(store::Layout(t / "none")); }).find("unable to open library") != std::string::npos);
}

TEST_CASE("store: name files: written, read back, absent, malformed") {
  fx::TempDir t("store");
  store::Layout l = make_layout(t);
  Digest d = fx::digest_filled(0x5a);
  store::write_name_file(l, false, "env", d);
  CHECK(store::read_name_file(l, "env") == d);
  CHECK_FALSE(store::read_name_file(l, "other"));
  fx::write_file(l.catalog_path("bad"), "hpak-catalog 1\nnot a digest\n");
  CHECK(fx::error_of([&] { store::read_name_file(l, "bad"); }).find("is malformed") != std::string::npos);
  REQUIRE(mkfifo(l.catalog_path("fifo").c_str(), 0644) == 0);
  CHECK_FALSE(fx::error_of([&] { store::read_name_file(l, "fifo"); }).empty()); // refused, not blocked on
}

TEST_CASE("store: publish_pack links the pack, writes its index, consumes the temp file, and is idempotent") {
  fx::TempDir t("store");
  store::Layout l = make_layout(t);
  const Bytes pack = fx::to_bytes("pretend pack bytes"), index = fx::to_bytes("pretend index");
  const Digest sum = fx::digest_filled(0x77);
  auto publish = [&] {
    std::string tmp = l.tmp_dir() + "/.tmp-pack-test";
    fx::write_file(tmp, pack);
    std::string name = store::publish_pack(l, false, tmp, sum, pack.size(), index);
    CHECK_FALSE(path_exists(tmp));
    return name;
  };
  CHECK(publish() == pack_file_name(sum));
  CHECK(fx::read_file(l.pack_path(sum)) == pack);
  CHECK(fx::read_file(l.index_path(sum)) == index);
  CHECK(publish() == pack_file_name(sum)); // the same pack again: nothing changes
  CHECK(fx::read_file(l.pack_path(sum)) == pack);
  // A torn leftover under the name (a power loss before its data was durable):
  fx::replace_file(l.pack_path(sum), Bytes());
  fx::replace_file(l.index_path(sum), Bytes());
  publish();
  CHECK(fx::read_file(l.pack_path(sum)) == pack);
  CHECK(fx::read_file(l.index_path(sum)) == index);
  CHECK(store::list_dir(l.tmp_dir()).empty());
}
