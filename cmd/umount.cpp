// hpak umount DIR: unmounts what hpak mount mounted on DIR (fusermount3 -u),
// which ends its server.
#include <CLI/CLI.hpp>
#include <memory>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/command.hpp"
#include "base/error.hpp"
#include "base/os/file.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::string dir;
  bool lazy = false;
};

int run(const Options& o);

Runner setup(CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_option("dir", o->dir, "Mount point of an hpak mount")->required();
  app.add_flag("-z,--lazy", o->lazy, "Detach now even while files are open; the server ends when the last one closes");
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

int run(const Options& o) {
  std::string real;
  try {
    real = real_path(o.dir);
  } catch (const Error&) {
    throw Error("'" + o.dir + "' does not exist");
  }
  if (!is_hpak_mount(real)) throw Error("'" + o.dir + "' is not an hpak mount");
  std::string why = run_fusermount(o, real);
  if (!why.empty()) throw Error("unable to unmount '" + o.dir + "': " + why + (o.lazy ? "" : " (files open there? close them, or use --lazy)"));
  return kExitOk;
}
} // namespace

extern const Command cmd_umount{"umount", "Unmount what hpak mount mounted", setup};

} // namespace hpak::cmd
