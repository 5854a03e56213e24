// The single command table. To add a command: write cmd/<name>.cpp defining
// `const Command cmd_<name>`, declare it here, add it to the list, and write
// man/hpak-<name>.1.
#include "cmd/command.hpp"

namespace hpak::cmd {

extern const Command cmd_pack, cmd_unpack, cmd_verify, cmd_index, cmd_ls, cmd_cat, cmd_init, cmd_restore, cmd_catalogs, cmd_gc, cmd_repair;
extern const Command cmd_publish, cmd_fetch, cmd_import, cmd_sign, cmd_bench;
#if !defined(_WIN32)
// Not built for Windows (cmake/windows.cmake): mount, umount and commit (FUSE
// and overlayfs).
extern const Command cmd_mount, cmd_umount, cmd_commit;
#endif
extern const Command cmd_completion; // hidden: shell completion from this table

const std::vector<const Command*>& commands() {
  static const std::vector<const Command*> table = {
      &cmd_pack, &cmd_unpack, &cmd_verify, &cmd_index, &cmd_ls, &cmd_cat, &cmd_init, &cmd_restore, &cmd_catalogs, &cmd_gc, &cmd_repair, &cmd_bench,
      &cmd_publish, &cmd_fetch, &cmd_import, &cmd_sign,
#if !defined(_WIN32)
      &cmd_mount, &cmd_umount, &cmd_commit,
#endif
      &cmd_completion,
  };
  return table;
}

std::string not_built_here([[maybe_unused]] const std::string& name) {
#if defined(_WIN32)
  if (name == "mount" || name == "umount" || name == "commit")
    return "'" + name + "' is not in the Windows build (it needs FUSE and overlayfs: Linux only)";
#endif
  return "";
}

Global& global() {
  static Global g;
  return g;
}

} // namespace hpak::cmd
