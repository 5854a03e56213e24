// The single command table. To add a command: write cmd/<name>.cpp defining
// `const Command cmd_<name>`, declare it here, add it to the list, and write
// man/hpak-<name>.1.
#include "cmd/command.hpp"

namespace hpak::cmd {

extern const Command cmd_pack, cmd_unpack, cmd_verify, cmd_index, cmd_ls, cmd_cat, cmd_init, cmd_restore, cmd_catalogs, cmd_gc, cmd_repair, cmd_bench;
extern const Command cmd_publish, cmd_fetch, cmd_import, cmd_sign, cmd_mount, cmd_umount, cmd_commit;
extern const Command cmd_completion; // hidden: shell completion from this table

const std::vector<const Command*>& commands() {
  static const std::vector<const Command*> table = {
      &cmd_pack, &cmd_unpack, &cmd_verify, &cmd_index, &cmd_ls, &cmd_cat, &cmd_init, &cmd_restore, &cmd_catalogs, &cmd_gc, &cmd_repair, &cmd_bench,
      &cmd_publish, &cmd_fetch, &cmd_import, &cmd_sign, &cmd_mount, &cmd_umount, &cmd_commit,
      &cmd_completion,
  };
  return table;
}

Global& global() {
  static Global g;
  return g;
}

} // namespace hpak::cmd
