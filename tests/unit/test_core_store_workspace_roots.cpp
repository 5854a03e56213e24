// core/store/workspace_roots: the gc roots of writable workspaces written,
// read back, removed; a root whose workspace is gone (no state, or a state of
// another library or digest) told apart from one that stays (its state names
// them; another host's); a file that is not a root refused.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include "core/store/layout.hpp"
#include "core/store/publish.hpp"
#include "core/store/workspace_roots.hpp"
#include "base/error.hpp"
#include "tree_fixture.hpp"

using namespace hpak;

namespace {

Digest digest_of(const char* s) { return sha256(ByteSpan(reinterpret_cast<const uint8_t*>(s), strlen(s))); }

// A workspace's state as hpak mount --writable writes it (core/mount/workspace.hpp).
void write_state(const std::string& ws, const std::string& lib, const Digest& d) {
  mkdir(ws.c_str(), 0700);
  fx::write_file(ws + "/state", "hpak-workspace 1\nlibrary " + lib + "\ncatalog env\ndigest " + to_hex(d) + "\ndir /x\nmade 1\n");
}

} // namespace

TEST_CASE("workspace roots: written, read, gone when the workspace is, removed") {
  fx::TempDir t("wsroots");
  store::Layout l(t / "lib");
  store::create_dirs(l, false);
  CHECK(store::read_workspace_roots(l).empty()); // no workspaces/ yet
  const Digest d = digest_of("base"), other = digest_of("other");
  const std::string ws = t / "ws", lib = t / "lib";
  write_state(ws, lib, d);
  store::write_workspace_root(l, false, ws, d);
  auto roots = store::read_workspace_roots(l);
  REQUIRE(roots.size() == 1);
  CHECK(roots[0].digest == d);
  CHECK(roots[0].workspace == ws);
  CHECK(roots[0].host == store::this_host());
  CHECK(roots[0].file == store::workspace_root_path(l, store::this_host(), ws));
  CHECK_FALSE(store::workspace_root_gone(roots[0], lib));

  CHECK(store::workspace_root_gone(roots[0], t / "another-lib")); // the state names another library
  write_state(ws, lib, other);
  CHECK(store::workspace_root_gone(roots[0], lib)); // the workspace is now of another catalog
  write_state(ws, lib, d);
  store::WorkspaceRoot elsewhere = roots[0];
  elsewhere.host = store::this_host() + "-not";
  unlink((ws + "/state").c_str());
  CHECK(store::workspace_root_gone(roots[0], lib)); // no state: gone
  CHECK_FALSE(store::workspace_root_gone(elsewhere, lib)); // another host's: cannot be told, stays

  store::write_workspace_root(l, false, ws, other); // the same workspace again: one root, replaced
  roots = store::read_workspace_roots(l);
  REQUIRE(roots.size() == 1);
  CHECK(roots[0].digest == other);
  store::remove_workspace_root(l, ws);
  CHECK(store::read_workspace_roots(l).empty());
  store::remove_workspace_root(l, ws); // none: nothing to do
}

TEST_CASE("workspace roots: a file that is not a root is refused, temp files skipped") {
  fx::TempDir t("wsroots-bad");
  store::Layout l(t / "lib");
  store::create_dirs(l, false);
  mkdir(l.workspaces_dir().c_str(), 0755);
  fx::write_file(l.workspaces_dir() + "/.tmp-x-123", "anything");
  CHECK(store::read_workspace_roots(l).empty());
  fx::write_file(l.workspaces_dir() + "/0123", "hpak-workspace-root 1\nworkspace /w\n"); // no digest
  CHECK_THROWS_AS(store::read_workspace_roots(l), Error);
  fx::write_file(l.workspaces_dir() + "/0123", "junk\n");
  CHECK_THROWS_AS(store::read_workspace_roots(l), Error);
}
