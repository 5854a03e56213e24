#include "core/store/workspace_roots.hpp"

#include <sstream>

#include "base/error.hpp"
#include "base/os/file.hpp"
#include "base/os/sys.hpp"
#include "core/store/dir_stream.hpp"

namespace hpak::store {

namespace {

constexpr const char* kRootMagic = "hpak-workspace-root 1";
constexpr uint64_t kMaxRootBytes = 64 << 10;

std::string text_of(const Bytes& b) { return std::string(b.begin(), b.end()); }

void make_workspaces_dir(const Layout& layout, bool shared) {
  const std::string d = layout.workspaces_dir();
  if (os::mkdir_path(d.c_str(), shared ? 02775 : 0755) == 0) {
    if (shared) os::chmod_path(d.c_str(), 02775);
    sync_dir(layout.root()); // the new folder's entry, before a root in it is relied on
  } else if (errno != EEXIST) {
    throw_errno("unable to create '" + d + "'");
  }
}

WorkspaceRoot decode_root(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kRootMagic) throw Error("'" + file + "' is not a workspace root");
  WorkspaceRoot r;
  r.file = file;
  bool have_digest = false;
  while (std::getline(in, line)) {
    size_t sp = line.find(' ');
    std::string key = line.substr(0, sp), val = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (key == "workspace") r.workspace = val;
    else if (key == "host") r.host = val;
    else if (key == "digest") {
      auto d = digest_from_hex(val);
      if (!d) throw Error("'" + file + "': malformed digest '" + val + "'");
      r.digest = *d;
      have_digest = true;
    }
  }
  if (!have_digest || r.workspace.empty()) throw Error("'" + file + "' is an incomplete workspace root");
  return r;
}

} // namespace

std::string this_host() {
  char host[256] = "";
  os::host_name(host, sizeof host - 1);
  return host;
}

std::string workspace_root_path(const Layout& layout, const std::string& host, const std::string& workspace) {
  const std::string key = host + "\n" + workspace;
  const Digest d = sha256(ByteSpan(reinterpret_cast<const uint8_t*>(key.data()), key.size()));
  return layout.workspaces_dir() + "/" + to_hex(d).substr(0, 32);
}

void write_workspace_root(const Layout& layout, bool shared, const std::string& workspace, const Digest& d) {
  make_workspaces_dir(layout, shared);
  const std::string host = this_host();
  const std::string text = std::string(kRootMagic) + "\ndigest " + to_hex(d) + "\nworkspace " + workspace + "\nhost " + host + "\n";
  AtomicFile f(workspace_root_path(layout, host, workspace), shared ? 0664 : 0644);
  f.write(ByteSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  f.commit(/*durable=*/true);
}

void remove_workspace_root(const Layout& layout, const std::string& workspace) {
  const std::string p = workspace_root_path(layout, this_host(), workspace);
  if (os::unlink_path(p.c_str()) != 0 && errno != ENOENT) throw_errno("unable to remove the workspace root '" + p + "'");
}

std::vector<WorkspaceRoot> read_workspace_roots(const Layout& layout) {
  std::vector<WorkspaceRoot> out;
  if (!path_exists(layout.workspaces_dir())) return out;
  for (const std::string& name : list_dir(layout.workspaces_dir())) {
    if (is_temp_name(name)) continue;
    const std::string p = layout.workspaces_dir() + "/" + name;
    Fd fd = open_regular_if_exists(p, Follow::NoLinks, kMaxRootBytes);
    if (!fd) continue; // removed meanwhile
    out.push_back(decode_root(text_of(read_fd_bounded(fd.get(), p, kMaxRootBytes)), p));
  }
  return out;
}

bool workspace_root_gone(const WorkspaceRoot& r, const std::string& library_real) {
  if (r.host != this_host()) return false;
  const std::string state = r.workspace + "/state";
  try {
    Fd fd = open_regular_if_exists(state, Follow::NoLinks, kMaxRootBytes);
    if (!fd) return true;
    const std::string text = "\n" + text_of(read_fd_bounded(fd.get(), state, kMaxRootBytes));
    return text.find("\nlibrary " + library_real + "\n") == std::string::npos ||
           text.find("\ndigest " + to_hex(r.digest) + "\n") == std::string::npos;
  } catch (const Error&) {
    return false; // unreadable for another reason (permissions, I/O): it stays a root
  }
}

} // namespace hpak::store
