// core/mount/mount_tree: the inodes a mount serves, as a restore writes them.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include "core/mount/mount_tree.hpp"
#include "fixture_data.hpp"

using namespace hpak;
using namespace hpak::formats;

namespace {
Node node(NodeType t, std::string path, uint32_t mode, std::string target = "") {
  Node n;
  n.type = t;
  n.path = fx::kept(path);
  n.mode = mode;
  n.target = std::move(target);
  n.mtime_ns = 1600000000123456789;
  return n;
}

// The catalog: bin/, bin/tool (relocated text), bin/link -> ROOT/bin/tool,
// etc/, etc/a (set-uid), etc/b (hard link to etc/a), lib/ (empty).
Catalog sample() {
  const std::string root = "/packed/env";
  Catalog c;
  c.name = "env";
  c.roots = {root};
  c.nodes.push_back(node(NodeType::Dir, "bin", 0755));
  Node tool = node(NodeType::File, "bin/tool", 0755);
  std::string body = "#!" + root + "/bin/python\n";
  tool.size = body.size();
  tool.relocs = {make_reloc(2, 0)};
  tool.reloc_kind = RelocKind::Text;
  Node link = node(NodeType::Symlink, "bin/link", 0777, root + "/bin/tool");
  link.size = link.target.size();
  link.relocs = {make_reloc(0, 0)};
  c.nodes.push_back(link);
  c.nodes.push_back(tool);
  c.nodes.push_back(node(NodeType::Dir, "etc", 0750));
  Node a = node(NodeType::File, "etc/a", 04755);
  a.size = 7;
  c.nodes.push_back(a);
  Node b = node(NodeType::Hardlink, "etc/b", 04755, "etc/a");
  b.size = a.size;
  c.nodes.push_back(b);
  c.nodes.push_back(node(NodeType::Dir, "lib", 0700));
  return decode_catalog(encode_catalog(c), "sample"); // as a mount gets it: checked
}

MountTreeOptions at(std::string path) {
  MountTreeOptions o;
  o.relocate_to = RelocTo{std::move(path), false};
  o.root_mode = 0711;
  return o;
}
} // namespace

TEST_CASE("mount tree: lookups, types, modes and link counts as a restore leaves them") {
  MountTree t(sample(), at("/mnt/a-longer-mount-path"), "/mnt/a-longer-mount-path");
  const MountInode* root = t.inode(kMountRootIno);
  REQUIRE(root);
  CHECK(root->mode == (S_IFDIR | 0711));
  CHECK(root->nlink == 2 + 3); // bin, etc, lib
  auto bin = t.lookup(kMountRootIno, "bin");
  REQUIRE(bin);
  CHECK(S_ISDIR(t.inode(*bin)->mode));
  CHECK(t.parent(*bin) == kMountRootIno);
  auto tool = t.lookup(*bin, "tool");
  REQUIRE(tool);
  CHECK(t.inode(*tool)->size == std::string("#!/mnt/a-longer-mount-path/bin/python\n").size()); // spliced
  CHECK(t.inode(*tool)->mtime_ns == 1600000000123456789);
  auto link = t.lookup(*bin, "link");
  REQUIRE(link);
  CHECK(S_ISLNK(t.inode(*link)->mode));
  CHECK(t.link_target(*link) == "/mnt/a-longer-mount-path/bin/tool");
  CHECK(t.inode(*link)->size == t.link_target(*link).size());
  auto etc = t.lookup(kMountRootIno, "etc");
  REQUIRE(etc);
  auto a = t.lookup(*etc, "a"), b = t.lookup(*etc, "b");
  REQUIRE(a);
  REQUIRE(b);
  CHECK(*a == *b); // one inode
  CHECK(t.inode(*a)->nlink == 2);
  CHECK(t.inode(*a)->mode == (S_IFREG | 0755)); // set-uid dropped
  CHECK_FALSE(t.lookup(*etc, "c"));
  CHECK_FALSE(t.lookup(*a, "x")); // not a directory
  CHECK(t.entries(*bin).size() == 2);
  CHECK(t.entries(*bin)[0].name == "link"); // catalog (bytewise) order
  CHECK(t.entries(*a).empty());
  CHECK_FALSE(t.inode(0));
  CHECK_FALSE(t.inode(t.inode_count() + 1));
}

TEST_CASE("mount tree: set-id bits kept on request; no relocation serves the packed bytes") {
  MountTreeOptions o;
  o.preserve_setid = true;
  MountTree t(sample(), o, "x");
  auto etc = t.lookup(kMountRootIno, "etc");
  REQUIRE(etc);
  CHECK((t.inode(*t.lookup(*etc, "a"))->mode & 07777) == 04755);
  auto bin = t.lookup(kMountRootIno, "bin");
  CHECK(t.link_target(*t.lookup(*bin, "link")) == "/packed/env/bin/tool");
}

TEST_CASE("mount tree: an in-place binary refuses a longer mount path, unless kept unrelocated") {
  Catalog c = sample();
  for (Node& n : c.nodes)
    if (n.path == "bin/tool") n.reloc_kind = RelocKind::InPlace;
  CHECK_THROWS_WITH_AS(MountTree(c, at("/mnt/a-longer-mount-path"), "/mnt/m"), doctest::Contains("/mnt/m"), Error);
  MountTreeOptions keep = at("/mnt/a-longer-mount-path");
  keep.relocate_to.keep_blocked = true;
  MountTree t(c, keep, "/mnt/m");
  CHECK(t.relocation().kept == 1);
  auto tool = t.lookup(*t.lookup(kMountRootIno, "bin"), "tool");
  CHECK(t.inode(*tool)->size == c.nodes[2].size); // as packed
}
