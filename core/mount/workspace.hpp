// The workspace of a writable mount (hpak mount --writable, hpak commit,
// hpak umount): a directory W holding
//   lower/  the mount point of the read-only FUSE view of the base catalog
//   upper/  overlayfs's upper layer: every file written, created or changed
//   work/   overlayfs's work directory
//   state   what the workspace is a view of (below), written atomically
// By default W is `<parent of DIR>/.<name of DIR>.hpak-ws` (created 0700).
//
// state ::= "hpak-workspace 1\n" ("library " PATH "\n") ("catalog " NAME "\n")
//           ("digest " HEX "\n") ("dir " PATH "\n") ("made " 0|1 "\n")
// `digest` is the catalog mounted (the name is only what it was called: a
// later change of the name does not move the base under the upper layer);
// `dir` is DIR's real path, the path the view is relocated to; `made` says
// whether the mount created W itself (umount --discard removes only what the
// mount created).
#pragma once

#include <optional>
#include <string>

#include "base/hash.hpp"

namespace hpak {

struct WorkspaceState {
  std::string library; // real path
  std::string catalog; // the name given at the first mount
  Digest digest{};     // the base catalog
  std::string dir;     // the view's real path
  bool made = false;   // W was created by the mount
};

std::string default_workspace(const std::string& real_dir);
inline std::string workspace_lower(const std::string& ws) { return ws + "/lower"; }
inline std::string workspace_upper(const std::string& ws) { return ws + "/upper"; }
inline std::string workspace_work(const std::string& ws) { return ws + "/work"; }
inline std::string workspace_state(const std::string& ws) { return ws + "/state"; }

std::string encode_workspace_state(const WorkspaceState& s);
// Throws a one-line Error naming `where` when the bytes are not a state.
WorkspaceState decode_workspace_state(const std::string& text, const std::string& where);
// nullopt when W/state does not exist.
std::optional<WorkspaceState> read_workspace_state(const std::string& ws);
void write_workspace_state(const std::string& ws, const WorkspaceState& s);

// Makes W (0700, unless it exists empty), lower/, upper/ (with `root_mode`:
// overlayfs shows the upper directory's mode on the view's root) and work/,
// then writes the state (`s.made` says whether W was made here). Throws a
// one-line Error when W exists and is not empty.
void make_workspace(const std::string& ws, WorkspaceState s, unsigned root_mode);
// Removes what make_workspace made: state, lower/, upper/ (the uncommitted
// changes) and work/, then W itself when the state says the mount made it,
// then its gc root in the library (core/store/workspace_roots.hpp; best effort).
// Never follows a symlink nor enters another mount (remove_entry).
void discard_workspace(const std::string& ws, const WorkspaceState& s);

// The overlay mounted at `real_dir` (the last mount there), from
// /proc/self/mountinfo: its lowerdir and upperdir options. nullopt when the
// last mount there is not an overlay.
struct OverlayMount {
  std::string lowerdir, upperdir, workdir;
};
std::optional<OverlayMount> overlay_at(const std::string& real_dir);
// The file system type of the last mount at `real_path` ("" if none).
std::string mount_type_at(const std::string& real_path);

// The workspace of the writable view at `real_dir`: from the overlay's
// upperdir when one is mounted there (it must be W/upper of a workspace with
// a state), else nullopt.
std::optional<std::string> workspace_of_view(const std::string& real_dir);

} // namespace hpak
