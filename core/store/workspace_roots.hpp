// The gc roots of writable workspaces (hpak mount --writable): a workspace
// shows and commits a catalog by its digest, which the name it was mounted by
// may stop naming (a `catalogs rm`, a new version under the name); while the
// workspace exists, gc must keep that catalog and its objects.
//
//   LIB/workspaces/<id>   one file per workspace (made on demand, like quarantine/)
//   <id>   ::= the first 32 hex digits of SHA-256(host "\n" workspace)
//   file   ::= "hpak-workspace-root 1\n" ("digest " HEX "\n") ("workspace " PATH "\n") ("host " NAME "\n")
//
// hpak mount --writable writes it (holding publish.lock shared from reading
// the name to writing the root, so gc's re-mark, under the exclusive lock,
// either sees the root or ran before the name was read: core/gc/gc.hpp);
// hpak umount --discard removes it. gc marks each root's catalog like a
// name's, and removes (under publish.lock exclusive, checked again there: no
// mount is then between writing a state and its root) a root whose workspace
// is known to be gone: on this host
// (the root's host is this host's name), the workspace's state file does not
// exist or no longer names this library and digest. A root of another host,
// or whose state cannot be read for another reason, stays a root.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/hash.hpp"
#include "core/store/layout.hpp"

namespace hpak::store {

struct WorkspaceRoot {
  std::string file;      // its path under LIB/workspaces
  Digest digest{};       // the catalog the workspace is a view of
  std::string workspace; // the workspace's real path on `host`
  std::string host;
};

std::string this_host();
std::string workspace_root_path(const Layout& layout, const std::string& host, const std::string& workspace);
// Durable when it returns (the file synced and renamed in, workspaces/ synced).
void write_workspace_root(const Layout& layout, bool shared, const std::string& workspace, const Digest& d);
// Removes this host's root of `workspace` (none: nothing to do).
void remove_workspace_root(const Layout& layout, const std::string& workspace);
// Every root (temp files skipped). Throws a one-line Error naming a file that
// is not a root (a gc must then stop: it may protect anything).
std::vector<WorkspaceRoot> read_workspace_roots(const Layout& layout);
// Whether the root's workspace is known to be gone (see above); `library_real`
// is the library's real path, as the workspace's state records it.
bool workspace_root_gone(const WorkspaceRoot& r, const std::string& library_real);

} // namespace hpak::store
