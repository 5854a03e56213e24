// core/mount/commit: the base catalog with an overlayfs upper layer applied
// (merge_upper), on a hand-made upper layer: whiteouts (a 0/0 character
// device: needs root, else that case is left out), an opaque directory, a
// file replacing a directory, a symlink, a new file holding the view's path,
// and a base hard link whose first path was rewritten.
#include <doctest/doctest.h>
#include <fstream>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "core/mount/commit.hpp"
#include "tree_fixture.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {
Node node(NodeType t, std::string path, uint32_t mode = 0644) {
  Node n;
  n.type = t;
  n.path = fx::kept(path);
  n.mode = mode;
  n.size = 3;
  return n;
}

Catalog base_catalog() {
  Catalog c;
  c.name = "base";
  c.roots = {"/packed/env"};
  c.nodes.push_back(node(NodeType::Dir, "a", 0755));
  c.nodes.push_back(node(NodeType::File, "a/keep"));
  c.nodes.push_back(node(NodeType::File, "a/one"));
  Node two = node(NodeType::Hardlink, "a/two");
  two.target = "a/one";
  c.nodes.push_back(two);
  c.nodes.push_back(node(NodeType::Dir, "gone", 0755));
  c.nodes.push_back(node(NodeType::File, "gone/x"));
  c.nodes.push_back(node(NodeType::Dir, "opaque", 0755));
  c.nodes.push_back(node(NodeType::File, "opaque/old"));
  c.nodes.push_back(node(NodeType::Dir, "was_dir", 0755));
  c.nodes.push_back(node(NodeType::File, "was_dir/y"));
  for (auto& n : c.nodes)
    if (n.type == NodeType::File) n.digest = sha256(ByteSpan(reinterpret_cast<const uint8_t*>(n.path.data()), n.path.size()));
  return c;
}

void put(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

const Node* find(const Catalog& c, const std::string& path) {
  auto i = find_path(c, path);
  return i ? &c.nodes[*i] : nullptr;
}
} // namespace

TEST_CASE("merge_upper applies whiteouts, opaque directories, replacements and new files") {
  fx::TempDir t("commit");
  const std::string up = t.path() + "/upper", view = t.path() + "/view";
  REQUIRE(mkdir(up.c_str(), 0755) == 0);
  REQUIRE(mkdir((up + "/a").c_str(), 0755) == 0);
  put(up + "/a/one", "rewritten\n");
  put(up + "/a/new.cfg", "home = " + view + "\n");
  REQUIRE(symlink("one", (up + "/a/link").c_str()) == 0);
  const bool root = geteuid() == 0;
  if (root) REQUIRE(mknod((up + "/gone").c_str(), S_IFCHR | 0, makedev(0, 0)) == 0);
  REQUIRE(mkdir((up + "/opaque").c_str(), 0700) == 0);
  put(up + "/opaque/fresh", "f\n");
  bool opaque = setxattr((up + "/opaque").c_str(), "trusted.overlay.opaque", "y", 1, 0) == 0;
  put(up + "/was_dir", "now a file\n");

  CommitOptions o;
  o.upper = up;
  o.view_dir = view;
  o.shown = "view";
  MergedView m = merge_upper(base_catalog(), "new", o);
  const Catalog& c = m.catalog;
  CHECK(c.name == "new");
  // Nodes in catalog order: the encoder and decoder accept them.
  CHECK_NOTHROW(decode_catalog(encode_catalog(c), "merged"));
  CHECK(find(c, "a/keep"));
  REQUIRE(find(c, "a/one"));
  CHECK(find(c, "a/one")->type == NodeType::File);
  CHECK(find(c, "a/one")->digest == sha256(ByteSpan(reinterpret_cast<const uint8_t*>("rewritten\n"), 10)));
  // The hard link whose first path was rewritten keeps the old content.
  REQUIRE(find(c, "a/two"));
  CHECK(find(c, "a/two")->type == NodeType::File);
  CHECK(find(c, "a/two")->digest == find(base_catalog(), "a/one")->digest);
  // A new file holding the view's path: the view is a root, the file relocatable.
  REQUIRE(find(c, "a/new.cfg"));
  CHECK(c.roots == std::vector<std::string>{"/packed/env", view});
  CHECK(find(c, "a/new.cfg")->relocs.size() == 1);
  CHECK(find(c, "a/new.cfg")->reloc_kind == RelocKind::Text);
  REQUIRE(find(c, "a/link"));
  CHECK(find(c, "a/link")->target == "one");
  if (root) {
    CHECK_FALSE(find(c, "gone"));
    CHECK_FALSE(find(c, "gone/x"));
  }
  if (opaque) {
    CHECK_FALSE(find(c, "opaque/old"));
    CHECK(find(c, "opaque")->mode == 0700);
  }
  CHECK(find(c, "opaque/fresh"));
  REQUIRE(find(c, "was_dir"));
  CHECK(find(c, "was_dir")->type == NodeType::File);
  CHECK_FALSE(find(c, "was_dir/y"));
  CHECK(m.counts.hashed == 4);
  CHECK(m.upper_objects.size() == 4);
}

TEST_CASE("merge_upper keeps the base's roots when no new entry holds the view's path") {
  fx::TempDir t("commit");
  const std::string up = t.path() + "/upper";
  REQUIRE(mkdir(up.c_str(), 0755) == 0);
  put(up + "/plain", "no path here\n");
  CommitOptions o;
  o.upper = up;
  o.view_dir = t.path() + "/view";
  o.shown = "view";
  MergedView m = merge_upper(base_catalog(), "new", o);
  CHECK(m.catalog.roots == std::vector<std::string>{"/packed/env"});
  CHECK(m.counts.added == 1);
}

TEST_CASE("merge_upper refuses a FIFO and a redirect it cannot read") {
  fx::TempDir t("commit");
  const std::string up = t.path() + "/upper";
  REQUIRE(mkdir(up.c_str(), 0755) == 0);
  REQUIRE(mkfifo((up + "/fifo").c_str(), 0644) == 0);
  CommitOptions o;
  o.upper = up;
  o.view_dir = t.path() + "/view";
  o.shown = "view";
  CHECK_THROWS_WITH_AS(merge_upper(base_catalog(), "new", o), doctest::Contains("FIFO"), Error);
}

TEST_CASE("commit_view records the view as hashed; read again (past keep_upper_bytes), it names nothing when an upper file changed") {
  fx::TempDir t("commit");
  const std::string up = t.path() + "/upper", lib_dir = t.path() + "/lib";
  REQUIRE(mkdir(up.c_str(), 0755) == 0);
  REQUIRE(mkdir((up + "/a").c_str(), 0755) == 0);
  put(up + "/a/one", "one\n");
  Library::init(lib_dir);
  Library lib(lib_dir);
  Catalog base;
  base.name = "base";
  base.nodes.push_back(node(NodeType::Dir, "a", 0755));
  CommitOptions o;
  o.upper = up;
  o.view_dir = t.path() + "/view";
  o.shown = "view";

  CommitResult r = commit_view(lib, base, lib, "first", o);
  CHECK(r.counts.hashed == 1);
  CHECK(r.added.objects_written == 1);
  CHECK(lib.catalog_digest("first") == r.digest);
  Catalog got = lib.load_catalog("first");
  REQUIRE(find(got, "a/one"));
  CHECK(find(got, "a/one")->size == 4);

  // Rewritten once hashed (the end of the "hash" pass): the bytes hashed are kept and written, read once.
  put(up + "/a/two", "two\n");
  o.progress = [&](std::string_view phase, uint64_t done, uint64_t total) {
    if (phase == "hash" && done == total) put(up + "/a/two", "changed\n");
  };
  CommitResult kept = commit_view(lib, base, lib, "kept", o);
  Catalog k = lib.load_catalog("kept");
  REQUIRE(find(k, "a/two"));
  CHECK(find(k, "a/two")->size == 4); // "two\n", as hashed
  CHECK(kept.added.objects_written == 1);

  // Nothing kept: read again to be written, the change is found and nothing is named.
  put(up + "/a/two", "three\n");
  o.keep_upper_bytes = 0;
  CHECK_THROWS_WITH_AS(commit_view(lib, base, lib, "second", o), doctest::Contains("changed while being committed"), Error);
  CHECK_FALSE(lib.catalog_digest("second"));
}
