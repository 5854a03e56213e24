// hpak umount DIR: unmounts what hpak mount mounted on DIR (fusermount3 -u),
// which ends its server. A writable view: the overlay on DIR, then the FUSE
// mount on its workspace's lower/; the workspace is kept unless --discard.
#include <CLI/CLI.hpp>
#include <memory>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/command.hpp"
#include "cmd/log.hpp"
#include "base/error.hpp"
#include "base/os/file.hpp"
#include "core/mount/workspace.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::string dir;
  std::string workspace;
  bool lazy = false, discard = false;
};

int run(const Options& o);

Runner setup(CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_option("dir", o->dir, "Mount point of an hpak mount")->required();
  app.add_flag("-z,--lazy", o->lazy, "Detach now even while files are open; the server ends when the last one closes");
  app.add_flag("--discard", o->discard,
               "A writable view: also remove its workspace, with the changes not committed (default: kept, for hpak commit or a later mount)");
  app.add_option("--workspace", o->workspace, "A writable view's workspace, when it is not the default one and DIR is no longer mounted");
  return [o] { return run(*o); };
}

// /proc/self/mounts escapes space, tab, newline and backslash as \ooo.
std::string unescape_mount_field(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '\\' && i + 3 < s.size() && isdigit((unsigned char)s[i + 1])) {
      out += char(std::stoi(s.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

// Whether `real` is the mount point of a file system hpak mount made.
bool is_hpak_mount(const std::string& real) {
  std::ifstream in("/proc/self/mounts");
  std::string dev, at, type, rest;
  bool found = false;
  while (in >> dev >> at >> type && std::getline(in, rest))
    if (unescape_mount_field(at) == real && type == "fuse.hpak") found = true; // the last mount there is the one seen
    else if (unescape_mount_field(at) == real) found = false;
  return found;
}

// Runs fusermount3 -u [-z] on `real`; "" on success, else why not (its last
// words: "Device or resource busy").
std::string run_fusermount(const Options& o, const std::string& real) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) throw_errno("unable to make a pipe");
  pid_t pid = fork();
  if (pid < 0) throw_errno("unable to run fusermount3");
  if (pid == 0) {
    dup2(p[1], 2);
    if (o.lazy) execlp("fusermount3", "fusermount3", "-u", "-z", "--", real.c_str(), (char*)nullptr);
    else execlp("fusermount3", "fusermount3", "-u", "--", real.c_str(), (char*)nullptr);
    dprintf(2, "unable to run fusermount3: %s (install fuse3)\n", strerror(errno));
    _exit(kExitError);
  }
  close(p[1]);
  std::string said;
  char buf[512];
  ssize_t n;
  while ((n = read(p[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0 && said.size() < 4096) said.append(buf, size_t(n));
  close(p[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
  size_t nl = said.rfind('\n');
  if (nl != std::string::npos) said = said.substr(nl + 1);
  size_t colon = said.rfind(": ");
  if (colon != std::string::npos) said = said.substr(colon + 2);
  return said.empty() ? "fusermount3 failed" : said;
}

// The writable view mounted over `real` when `real` is a workspace's lower/
// (an overlay on the state's dir with it as its lower layer), else nullopt.
// Unmounting the lower layer alone would leave the overlay reading nothing.
std::optional<std::string> view_over_lower(const std::string& real) {
  if (base_name(real) != "lower") return std::nullopt;
  const std::string ws = dir_name(real);
  std::optional<WorkspaceState> st;
  try {
    st = read_workspace_state(ws);
  } catch (const Error&) {
    return std::nullopt;
  }
  if (!st || workspace_lower(ws) != real) return std::nullopt;
  auto o = overlay_at(st->dir);
  if (!o || o->lowerdir != real) return std::nullopt;
  return st->dir;
}

void say_kept(const Options& o, const std::string& ws) {
  if (!global().quiet)
    printf("unmounted '%s'; its workspace '%s' is kept (hpak commit DIR --name NEW records it, hpak mount --writable resumes it, "
           "hpak umount --discard DIR removes it)\n",
           o.dir.c_str(), ws.c_str());
}

// A writable view: the overlay on DIR, then the FUSE mount on the workspace's lower/.
int unmount_view(const Options& o, const std::string& real, const std::string& ws) {
  if (umount2(real.c_str(), o.lazy ? MNT_DETACH : 0) != 0)
    throw_errno("unable to unmount '" + o.dir + "'" + (o.lazy || errno != EBUSY ? "" : " (files open there? close them, or use --lazy)"));
  std::string why = run_fusermount(o, workspace_lower(ws));
  if (!why.empty()) throw Error("unable to unmount the view's lower layer '" + workspace_lower(ws) + "': " + why);
  if (!o.discard) {
    say_kept(o, ws);
    return kExitOk;
  }
  discard_workspace(ws, *read_workspace_state(ws));
  if (!global().quiet) printf("unmounted '%s' and removed its workspace '%s'\n", o.dir.c_str(), ws.c_str());
  return kExitOk;
}

// A view no longer mounted on DIR: its workspace's lower layer if a cut-short
// umount left it mounted, and with --discard the workspace.
int finish_unmounted(const Options& o, const std::string& real) {
  std::string ws = o.workspace.empty() ? default_workspace(real) : real_path(o.workspace);
  auto st = read_workspace_state(ws);
  if (!st) throw Error("'" + o.dir + "' is not an hpak mount, and '" + ws + "' is not an hpak workspace");
  if (st->dir != real) throw Error("workspace '" + ws + "' is a view on '" + st->dir + "', not on '" + o.dir + "'");
  const bool lower_mounted = mount_type_at(workspace_lower(ws)) == "fuse.hpak";
  if (!lower_mounted && !o.discard)
    throw Error("'" + o.dir + "' is not mounted; its workspace '" + ws + "' is kept (hpak umount --discard removes it)");
  if (lower_mounted) {
    std::string why = run_fusermount(o, workspace_lower(ws));
    if (!why.empty()) throw Error("unable to unmount the view's lower layer '" + workspace_lower(ws) + "': " + why);
  }
  if (!o.discard) {
    say_kept(o, ws);
    return kExitOk;
  }
  discard_workspace(ws, *st);
  if (!global().quiet) printf("removed the workspace '%s' of '%s'\n", ws.c_str(), o.dir.c_str());
  return kExitOk;
}

int run(const Options& o) {
  std::string real;
  try {
    real = real_path(o.dir);
  } catch (const Error&) {
    throw Error("'" + o.dir + "' does not exist");
  }
  if (auto ws = workspace_of_view(real)) return unmount_view(o, real, *ws);
  if (overlay_at(real)) throw Error("'" + o.dir + "' is an overlay mount that hpak mount --writable did not make");
  if (auto view = view_over_lower(real))
    throw Error("'" + o.dir + "' is the lower layer of the writable view '" + *view + "': unmount the view instead (hpak umount " + *view + ")");
  if (!is_hpak_mount(real) && (o.discard || read_workspace_state(o.workspace.empty() ? default_workspace(real) : real_path(o.workspace))))
    return finish_unmounted(o, real);
  if (o.discard) throw Error("'" + o.dir + "' is a read-only hpak mount: --discard is for a writable view");
  if (!is_hpak_mount(real)) throw Error("'" + o.dir + "' is not an hpak mount");
  std::string why = run_fusermount(o, real);
  if (!why.empty()) throw Error("unable to unmount '" + o.dir + "': " + why + (o.lazy ? "" : " (files open there? close them, or use --lazy)"));
  return kExitOk;
}
} // namespace

extern const Command cmd_umount{"umount", "Unmount what hpak mount mounted", setup};

} // namespace hpak::cmd
