// core/remote/dir: the directory backend on a real temporary directory:
// put/get/get_range/list/remove, a put that is atomic (a reader never sees
// part of an object under its name, a put that fails leaves nothing), the
// error type of each failure, and hostile files refused.
#include <doctest/doctest.h>

#include <sys/file.h>
#include <sys/stat.h>

#include <atomic>
#include <thread>

#include "base/hash.hpp"
#include "core/remote/dir/dir_backend.hpp"
#include "core/remote/remote_url.hpp"
#include "tree_fixture.hpp"

using namespace hpak;
using namespace hpak::remote;

namespace {

ByteSpan span(const std::string& s) { return ByteSpan(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }
std::string text(const Bytes& b) { return std::string(b.begin(), b.end()); }

// A sink that keeps what it is given, and counts its starts.
struct Keep : BodySink {
  std::string got;
  int starts = 0;
  void start() override {
    got.clear();
    starts++;
  }
  void data(ByteSpan piece) override { got.append(piece.begin(), piece.end()); }
};

// Every name under `dir`, recursively (temp names included).
std::vector<std::string> files_under(const std::string& dir) {
  std::vector<std::string> out;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(std::filesystem::relative(e.path(), dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace

TEST_CASE("dir backend: put then get, get_range and list; remove; folders made as needed") {
  fx::TempDir t("remote-dir");
  DirBackend d(t / "www", Access::Write);
  CHECK(std::filesystem::is_directory(t / "www")); // opened for writing: created, with the layout's folders
  CHECK(std::filesystem::is_directory(t / "www/packs"));
  CHECK(std::filesystem::is_directory(t / "www/roots"));
  d.put("HPAKROOT", span("root v1\n"));
  d.put("packs/pack-a.hpak", span("0123456789"));
  d.put("packs/pack-a.hidx", span("idx"));
  d.put("roots/history", span("h"));
  CHECK(text(d.get("HPAKROOT", 100)) == "root v1\n");
  CHECK(text(fx::read_file(t / "www/packs/pack-a.hpak")) == "0123456789");
  CHECK(text(d.get_range("packs/pack-a.hpak", 3, 4)) == "3456");
  CHECK(text(d.get_range("packs/pack-a.hpak", 9, 1)) == "9");

  auto listed = d.list("packs/");
  REQUIRE(listed.size() == 2);
  CHECK(listed[0].name == "packs/pack-a.hidx");
  CHECK(listed[0].size == 3);
  CHECK(listed[1].name == "packs/pack-a.hpak");
  CHECK(listed[1].size == 10);
  CHECK(d.list("packs/pack-a.hp").size() == 1);
  CHECK(d.list("").size() == 4); // every object, in every folder
  CHECK(d.list("nothing/").empty());

  d.put("HPAKROOT", span("root v2\n")); // replaced whole
  CHECK(text(d.get("HPAKROOT", 100)) == "root v2\n");
  d.remove("packs/pack-a.hidx");
  d.remove("packs/pack-a.hidx"); // already gone: fine
  d.sync();
  CHECK(d.list("packs/").size() == 1);
  CHECK_FALSE(path_exists(t / "www/packs/pack-a.hidx"));
  CHECK(d.where("packs/x") == t / "www/packs/x");
  CHECK(d.stats().requests > 0);
}

TEST_CASE("dir backend: get_many delivers every read, into memory or a sink") {
  fx::TempDir t("remote-dir");
  DirBackend d(t.path(), Access::Write);
  d.put("a", span("alpha"));
  d.put("b", span("bravo!"));
  Keep sink;
  std::vector<GetRequest> reqs(3);
  reqs[0].name = "a";
  reqs[0].max_size = 5;
  reqs[1].name = "b";
  reqs[1].ranged = true;
  reqs[1].offset = 1;
  reqs[1].length = 3;
  reqs[2].name = "b";
  reqs[2].max_size = 6;
  reqs[2].sink = &sink;
  std::vector<std::string> got(3, "?");
  d.get_many(reqs, [&](size_t i, Bytes& body) { got[i] = text(body); });
  CHECK(got[0] == "alpha");
  CHECK(got[1] == "rav");
  CHECK(got[2] == ""); // the sink took it
  CHECK(sink.got == "bravo!");
  CHECK(sink.starts == 1);
  CHECK(d.stats().bytes == 5 + 3);
}

TEST_CASE("dir backend: a missing object is RemoteNotFound, naming its path") {
  fx::TempDir t("remote-dir");
  DirBackend d(t.path(), Access::Read);
  try {
    d.get("HPAKROOT", 100);
    FAIL("read a missing file");
  } catch (const RemoteNotFound& e) {
    CHECK(e.kind() == RemoteErrc::NotFound);
    CHECK(e.where() == t / "HPAKROOT");
    CHECK(std::string(e.what()) == "unable to read '" + t / "HPAKROOT" + "': no such file");
  }
  CHECK_THROWS_AS(d.get_range("packs/none.hpak", 0, 1), RemoteNotFound);
  DirBackend nowhere(t / "absent", Access::Read); // opened for reading: not created
  CHECK_FALSE(path_exists(t / "absent"));
  CHECK_THROWS_AS(nowhere.get("HPAKROOT", 10), RemoteNotFound);
  CHECK(nowhere.list("packs/").empty());
}

TEST_CASE("dir backend: what is not the object asked for is RemoteProtocol") {
  fx::TempDir t("remote-dir");
  DirBackend d(t.path(), Access::Write);
  d.put("small", span("12345"));
  CHECK_THROWS_AS(d.get_range("small", 3, 5), RemoteProtocol); // the file ends inside the range
  CHECK_THROWS_AS(d.get("small", 4), RemoteProtocol);          // larger than allowed
  fx::symlink_to(t / "small", t / "link");
  try {
    d.get("link", 100);
    FAIL("read through a symlink");
  } catch (const RemoteProtocol& e) {
    CHECK(std::string(e.what()).find("symbolic link") != std::string::npos);
  }
  REQUIRE(mkfifo((t / "fifo").c_str(), 0644) == 0);
  CHECK_THROWS_AS(d.get("fifo", 100), RemoteProtocol); // refused, never blocks
}

TEST_CASE("dir backend: a put checked against a digest that does not match writes nothing") {
  fx::TempDir t("remote-dir");
  DirBackend d(t.path(), Access::Write);
  d.put("packs/p", span("old"));
  Digest good = sha256(span("new"));
  Digest wrong = sha256(span("something else"));
  CHECK_THROWS_AS(d.put("packs/p", span("new"), &wrong), DigestMismatch);
  CHECK(text(fx::read_file(t / "packs/p")) == "old");              // the old object stays whole
  CHECK(files_under(t.path()) == std::vector<std::string>{"packs/p"}); // no temp file left
  d.put("packs/p", span("new"), &good);
  CHECK(text(fx::read_file(t / "packs/p")) == "new");
}

TEST_CASE("dir backend: a reader never sees part of an object under its name") {
  fx::TempDir t("remote-dir");
  DirBackend d(t.path(), Access::Write);
  const size_t size = 24u << 20; // written in 4 MiB chunks: a write in place would show a prefix
  Bytes a(size, 'a'), b(size, 'b');
  d.put("obj", a);
  std::atomic<bool> done{false};
  std::atomic<int> reads{0}, torn{0};
  std::thread reader([&] {
    DirBackend r(t.path(), Access::Read);
    while (!done) {
      Bytes got = r.get("obj", size);
      reads++;
      bool whole_a = got.size() == size && got.front() == 'a' && got.back() == 'a';
      bool whole_b = got.size() == size && got.front() == 'b' && got.back() == 'b';
      if (!whole_a && !whole_b) torn++;
    }
  });
  for (int i = 0; i < 4; i++) d.put("obj", i % 2 ? a : b);
  done = true;
  reader.join();
  CHECK(reads > 0);
  CHECK(torn == 0);
  for (const std::string& f : files_under(t.path())) CHECK(f == "obj"); // no temp left behind
}

TEST_CASE("dir backend: the listing leaves out temp names (puts under way)") {
  fx::TempDir t("remote-dir");
  DirBackend d(t.path(), Access::Write);
  d.put("packs/a", span("1"));
  fx::write_file(t / "packs/.tmp-a-123", "partial");
  fx::mkdirs(t / "packs/sub");
  fx::write_file(t / "packs/sub/b", "22");
  auto listed = d.list("packs/");
  REQUIRE(listed.size() == 2);
  CHECK(listed[0].name == "packs/a");
  CHECK(listed[1].name == "packs/sub/b");
  CHECK(listed[1].size == 2);
}

TEST_CASE("dir backend: the writer lock is held by one backend at a time") {
  fx::TempDir t("remote-dir");
  DirBackend first(t.path(), Access::Write);
  first.lock_writers(".hpak-publish.lock");
  CHECK(path_exists(t / ".hpak-publish.lock"));
  Fd other(::open((t / ".hpak-publish.lock").c_str(), O_RDWR | O_CLOEXEC));
  REQUIRE(other);
  CHECK(flock(other.get(), LOCK_EX | LOCK_NB) != 0); // taken
}

TEST_CASE("dir backend: opened from a URL, plain or file://, at the same place") {
  fx::TempDir t("remote-dir");
  BackendOptions opts;
  auto w = open_backend(parse_remote_url("file://" + t.path() + "/pub/"), opts, Access::Write);
  w->put("HPAKROOT", span("r"));
  auto r = open_backend(parse_remote_url(t / "pub"), opts, Access::Read);
  CHECK(text(r->get("HPAKROOT", 10)) == "r");
  CHECK(r->where("HPAKROOT") == t / "pub/HPAKROOT");
}
