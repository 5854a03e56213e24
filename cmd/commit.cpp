// hpak commit DIR [--into LIB] --name NEW: records a writable view
// (hpak mount --writable) as a new catalog, hashing only what its upper layer
// holds (core/mount/commit.hpp). The workspace is the one the overlay mounted
// on DIR names, else DIR's default workspace (a view unmounted but kept).
#include <CLI/CLI.hpp>
#include <memory>

#include "base/hash.hpp"
#include "base/os/file.hpp"
#include "cmd/command.hpp"
#include "cmd/json.hpp"
#include "cmd/log.hpp"
#include "cmd/output.hpp"
#include "core/mount/commit.hpp"
#include "core/mount/workspace.hpp"
#include "core/pack/pack_trust.hpp"
#include "core/restore/materialize.hpp"

namespace hpak::cmd {

namespace {
struct Options {
  std::string dir, into, name, workspace;
  int level = -1;
  bool json = false;
};

int run(const Options& o);

Runner setup(CLI::App& app) {
  auto o = std::make_shared<Options>();
  app.add_option("dir", o->dir, "The writable view (hpak mount --writable), mounted or unmounted with its workspace kept")->required();
  app.add_option("--into", o->into, "Library to record the catalog in (default: the view's own library)");
  app.add_option("-n,--name", o->name, "Name of the new catalog")->required();
  app.add_option("--workspace", o->workspace, "The view's workspace, when DIR is not mounted and the workspace is not the default one");
  app.add_option("-l,--level", o->level, "zstd level of new objects (default: the library's own, else 3)")->check(CLI::Range(0, 19));
  app.add_flag("--json", o->json, "Print the summary as JSON");
  return [o] { return run(*o); };
}

// The workspace of the view at DIR, and its state.
std::pair<std::string, WorkspaceState> find_workspace(const Options& o, const std::string& real_dir) {
  std::string ws;
  if (auto mounted = workspace_of_view(real_dir)) ws = *mounted;
  else if (overlay_at(real_dir)) throw Error("'" + o.dir + "' is an overlay mount that hpak mount --writable did not make");
  else if (mount_type_at(real_dir) == "fuse.hpak") throw Error("'" + o.dir + "' is a read-only hpak mount; mount it with --writable to commit changes");
  else ws = o.workspace.empty() ? default_workspace(real_dir) : real_path(o.workspace);
  auto state = read_workspace_state(ws);
  if (!state) throw Error("'" + o.dir + "' is not a writable view: no workspace state at '" + workspace_state(ws) + "'");
  return {ws, *state};
}

// `path`'s real path, or `path` itself while nothing is there.
std::string real_or_given(const std::string& path) {
  try {
    return real_path(path);
  } catch (const Error&) {
    return path;
  }
}

void print_json(const Options& o, const std::string& into, const CommitResult& r, double secs) {
  JsonWriter w;
  w.begin_object().field("view", o.dir).field("library", into).field("name", o.name).field("digest", to_hex(r.digest));
  w.field("changed", r.counts.changed).field("added", r.counts.added).field("removed", r.counts.removed);
  w.field("files_hashed", r.counts.hashed).field("objects_written", r.added.objects_written);
  w.field("objects_present", r.added.objects_present).field("pack", r.added.pack_name).field("pack_bytes", r.added.pack_size);
  w.key("seconds").fixed(secs, 3);
  w.end().newline().print(stdout);
}

int run(const Options& o) {
  std::string real_dir;
  try {
    real_dir = real_path(o.dir);
  } catch (const Error&) {
    throw Error("view '" + o.dir + "' does not exist");
  }
  auto [ws, state] = find_workspace(o, real_dir);
  Library base_lib(state.library);
  log_library(base_lib);
  formats::Catalog base = base_lib.load_catalog_by_digest(state.digest);
  classify_old_catalog(base, base_lib);
  std::unique_ptr<Library> other;
  if (!o.into.empty() && real_or_given(o.into) != state.library) {
    if (!Library::is_library(o.into)) Library::init(o.into);
    other = std::make_unique<Library>(o.into);
  }
  Library& into = other ? *other : base_lib;
  CommitOptions co;
  co.upper = workspace_upper(ws);
  co.view_dir = state.dir;
  co.shown = o.dir;
  co.level = o.level >= 0 ? o.level : (into.default_level() < 0 ? 3 : into.default_level());
  co.progress = progress_bar();
  double t0 = now_seconds();
  CommitResult r = commit_view(base_lib, base, into, o.name, co);
  double secs = now_seconds() - t0;
  clear_progress();
  for (auto& w : r.added.warnings) warn(w);
  const std::string shown_lib = o.into.empty() ? state.library : o.into;
  if (o.json) print_json(o, shown_lib, r, secs);
  else if (!global().quiet)
    printf("committed '%s' as '%s' in '%s': %llu changed, %llu added, %llu removed; %llu files hashed, %llu objects written; %.2f s\n",
           o.dir.c_str(), o.name.c_str(), shown_lib.c_str(), (unsigned long long)r.counts.changed, (unsigned long long)r.counts.added,
           (unsigned long long)r.counts.removed, (unsigned long long)r.counts.hashed, (unsigned long long)r.added.objects_written, secs);
  return kExitOk;
}
} // namespace

extern const Command cmd_commit{"commit", "Record a writable view (hpak mount --writable) as a new catalog", setup};

} // namespace hpak::cmd
