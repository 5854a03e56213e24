#include "core/gc.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <set>
#include <sys/file.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/pack_writer.hpp"
#include "core/util/file.hpp"
#include "core/util/compress_rule.hpp"

namespace hpak {

using namespace formats;

// The process holding the flock on `fd`, from /proc/locks (Linux): "pid N
// (comm)", or "" when it cannot be told. The holder text in the file is only
// what the last hpak that held the lock wrote: stale once it exited, and never
// written by other holders (flock(1), an admin's script).
static std::string flock_holder(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return {};
  FILE* f = fopen("/proc/locks", "re");
  if (!f) return {};
  char line[512];
  std::string pid;
  while (fgets(line, sizeof line, f)) {
    // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" (waiters have "->")
    char type[32], adv[32], mode[32], dev_ino[128];
    long p = 0;
    if (strstr(line, "->")) continue;
    if (sscanf(line, "%*[^:]: %31s %31s %31s %ld %127s", type, adv, mode, &p, dev_ino) != 5) continue;
    unsigned maj = 0, min = 0;
    unsigned long long ino = 0;
    if (std::string(type) != "FLOCK" || sscanf(dev_ino, "%x:%x:%llu", &maj, &min, &ino) != 3) continue;
    if (ino != (unsigned long long)st.st_ino || maj != major(st.st_dev) || min != minor(st.st_dev)) continue;
    pid = std::to_string(p);
    break;
  }
  fclose(f);
  if (pid.empty()) return {};
  std::string comm;
  try {
    Bytes c = read_file("/proc/" + pid + "/comm");
    comm.assign(c.begin(), c.end());
    while (!comm.empty() && comm.back() == '\n') comm.pop_back();
  } catch (const Error&) {
  }
  return "pid " + pid + (comm.empty() ? "" : " (" + comm + ")");
}

// A lock file of LIB/locks is a library file like any other: opened without
// following a symlink (gc would write its holder line wherever one points) or
// blocking on a FIFO, and only if it is a regular file. `read_only_ok`: fall
// back to read-only for another user's file (flock needs no write access).
static int open_lock_file(const std::string& p, mode_t mode, bool read_only_ok) {
  const int flags = O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
  int fd = open(p.c_str(), O_RDWR | O_CREAT | flags, mode);
  if (fd < 0 && errno == EACCES && read_only_ok) fd = open(p.c_str(), O_RDONLY | flags);
  if (fd < 0) throw_open_error(p, errno, Follow::NoLinks);
  Fd guard(fd);
  require_regular(fd, p);
  return guard.release();
}

// flock(2) failing with one of these: the file system has no working locks
// (NFS mounted with nolock, some FUSE and network file systems). Adds, gc and
// repair rely on the locks to run safely beside each other (core/gc.hpp), so
// they refuse to run rather than run unprotected.
static bool locks_unsupported(int err) { return err == ENOLCK || err == EOPNOTSUPP || err == ENOSYS; }

[[noreturn]] static void throw_locks_unsupported(const std::string& p, int err) {
  throw Error("unable to lock '" + p + "': " + strerror(err) +
              "; adding to, gc and repair of a library need flock(2), which this file system does not provide (restoring needs no lock)");
}

void check_locks_work(const Library& lib) {
  std::string p = lib.root() + "/locks/publish.lock";
  Fd fd(open_lock_file(p, lib.shared() ? 0664 : 0644, /*read_only_ok=*/true));
  if (flock(fd.get(), LOCK_SH | LOCK_NB) == 0) return; // released with the fd
  if (locks_unsupported(errno)) throw_locks_unsupported(p, errno);
}

GcLock::GcLock(const Library& lib) {
  std::string p = lib.root() + "/locks/gc.lock";
  fd_ = open_lock_file(p, lib.shared() ? 0664 : 0644, /*read_only_ok=*/false);
  if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    if (err != EWOULDBLOCK && err != EINTR) {
      close(fd_);
      fd_ = -1;
      if (locks_unsupported(err)) throw_locks_unsupported(p, err);
      throw_errno("unable to lock '" + p + "'", err);
    }
    Bytes who = read_fd_bounded(fd_, p, 4096);
    std::string recorded(who.begin(), who.end());
    while (!recorded.empty() && recorded.back() == '\n') recorded.pop_back();
    std::string holder = flock_holder(fd_);
    // Trust the recorded "host H pid N" only when N is the holder /proc/locks names.
    if (!holder.empty() && !recorded.empty()) {
      std::string pid = holder.substr(0, holder.find(' ', 4));
      auto at = recorded.rfind(pid);
      if (at != std::string::npos && at + pid.size() == recorded.size()) holder = recorded + holder.substr(pid.size());
    } else if (holder.empty() && !recorded.empty()) {
      holder = "last recorded holder: " + recorded;
    }
    close(fd_);
    fd_ = -1;
    throw Error("another gc or repair is running on '" + lib.root() + "'" + (holder.empty() ? "" : " (" + holder + ")"));
  }
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  std::string who = "host " + std::string(host) + " pid " + std::to_string(getpid()) + "\n";
  if (ftruncate(fd_, 0) == 0) pwrite_all(fd_, ByteSpan(reinterpret_cast<const uint8_t*>(who.data()), who.size()), 0, p);
}

GcLock::~GcLock() {
  if (fd_ >= 0) close(fd_); // releases the flock
}

PublishLock::PublishLock(const Library& lib, bool exclusive) {
  std::string p = lib.root() + "/locks/publish.lock";
  fd_ = open_lock_file(p, lib.shared() ? 0664 : 0644, /*read_only_ok=*/true);
  auto give_up = [&](int err) {
    close(fd_);
    fd_ = -1;
    if (locks_unsupported(err)) throw_locks_unsupported(p, err);
    throw_errno("unable to lock '" + p + "'", err);
  };
  if (!exclusive) {
    while (flock(fd_, LOCK_SH) != 0)
      if (errno != EINTR) give_up(errno);
    return;
  }
  // gc waits for adds that are between checking their objects and setting
  // their name (milliseconds each), but not forever for a stopped one.
  for (int waited_ms = 0; flock(fd_, LOCK_EX | LOCK_NB) != 0; waited_ms += 10) {
    if (errno != EWOULDBLOCK && errno != EINTR) give_up(errno);
    if (waited_ms >= 60000) {
      std::string holder = flock_holder(fd_);
      close(fd_);
      fd_ = -1;
      throw Error("an add has been setting its catalog name for over 60 s" + (holder.empty() ? "" : " (" + holder + ")") +
                  "; gc aborted, nothing deleted");
    }
    usleep(10000);
  }
}

PublishLock::~PublishLock() {
  if (fd_ >= 0) close(fd_);
}

static std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) throw_errno("unable to read '" + dir + "'");
  while (auto* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// A condemned pack is renamed away entirely (index, then pack file), so that
// a writer publishing an identical pack (same content, same name) creates a
// new file that gc never deletes: gc unlinks only `*.condemned` names, which
// no writer ever creates.
static std::string condemned(const std::string& p) { return p + ".condemned"; }

// Makes a condemned pack visible again: pack first, then index (publish order).
// Replacing a same-named file a writer published meanwhile is harmless: the
// name is the SHA-256 of the content.
static void uncondemn(const std::string& pack_path) {
  std::string idx = index_path_for(pack_path);
  if (path_exists(condemned(pack_path)) && rename(condemned(pack_path).c_str(), pack_path.c_str()) != 0)
    throw_errno("unable to restore '" + pack_path + "'");
  if (rename(condemned(idx).c_str(), idx.c_str()) != 0) throw_errno("unable to restore '" + idx + "'");
}

size_t recover_condemned(const Library& lib) {
  size_t n = 0;
  auto ends_with = [](const std::string& s, const std::string& suffix) {
    return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  const std::string idx_suffix = ".hidx.condemned", pack_suffix = ".hpak.condemned";
  for (auto& name : list_dir(lib.packs_dir())) {
    if (!ends_with(name, idx_suffix)) continue;
    std::string base = lib.packs_dir() + "/" + name.substr(0, name.size() - idx_suffix.size());
    if (!path_exists(base + ".hpak") && !path_exists(condemned(base + ".hpak"))) {
      unlink(condemned(base + ".hidx").c_str()); // its pack was already deleted
      continue;
    }
    uncondemn(base + ".hpak");
    n++;
  }
  // A condemned pack whose index is gone (not left by hpak, but keep the data).
  for (auto& name : list_dir(lib.packs_dir())) {
    if (!ends_with(name, pack_suffix)) continue;
    std::string pack = lib.packs_dir() + "/" + name.substr(0, name.size() - std::string(".condemned").size());
    if (path_exists(pack)) unlink(condemned(pack).c_str());
    else rename(condemned(pack).c_str(), pack.c_str());
  }
  return n;
}

namespace {

std::string idx_of(const PackReader* p) { return index_path_for(p->path()); }

void step(const GcOptions& opts, const char* name) {
  if (opts.on_step) opts.on_step(name);
}

// Every digest the named catalogs need (catalog objects included). Throws if
// a catalog cannot be read: then nothing may be swept.
void mark(const Library& lib, const std::vector<std::string>& names, DigestSet& live, const Progress& progress) {
  uint64_t done = 0;
  for (auto& name : names) {
    report(progress, "mark", done++, names.size());
    std::optional<Digest> d;
    try {
      d = lib.catalog_digest(name);
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + "; gc aborted, nothing deleted");
    }
    if (!d) continue; // removed concurrently
    if (!live.insert(*d).second) continue;
    Catalog c;
    try {
      c = lib.load_catalog_by_digest(*d);
    } catch (const Error& e) {
      throw Error("catalog '" + name + "' is unreadable (" + e.what() + "); gc aborted, nothing deleted (see 'hpak verify' and 'hpak repair')");
    }
    for (auto& n : c.nodes)
      if (n.type == NodeType::File) live.insert(n.digest);
  }
  report(progress, "mark", names.size(), names.size());
}

// Step 2: packs and indexes a killed gc left condemned are made visible again.
void recover_interrupted(Library& lib, const GcOptions& opts, GcResult& res) {
  if (!opts.dry_run && recover_condemned(lib) > 0) res.warnings.push_back("recovered indexes condemned by an interrupted gc");
  lib.refresh();
}

// --unused: drops the catalog names not restored for that long; returns the others.
std::vector<std::string> drop_unused(Library& lib, const GcOptions& opts, int64_t now, GcResult& res) {
  std::vector<std::string> kept_names;
  for (auto& name : lib.catalog_names()) {
    if (opts.unused_seconds >= 0 && now - lib.last_used(name) > opts.unused_seconds) {
      res.dropped_catalogs.push_back(name);
      if (!opts.dry_run) lib.remove_catalog(name);
    } else {
      kept_names.push_back(name);
    }
  }
  // A dropped name must not come back after a power loss once its packs are gone.
  if (!opts.dry_run && !res.dropped_catalogs.empty()) sync_dir(lib.root() + "/catalogs");
  return kept_names;
}

// Step 3: the live set, from the names that stay.
DigestSet roots(Library& lib, const GcOptions& opts, int64_t now, GcResult& res) {
  DigestSet live;
  mark(lib, drop_unused(lib, opts, now, res), live, opts.progress);
  return live;
}

// One visible pack as the plan sees it. Only live objects are measured
// (complete_or_same reads an entry header: a page of the pack each).
GcPackInput describe_pack(const Library& lib, const PackReader* p, const DigestSet& live, int64_t now) {
  GcPackInput in;
  in.name = base_name(p->path());
  struct stat st;
  in.mtime = now;
  if (lstat(idx_of(p).c_str(), &st) == 0) {
    in.mtime = st.st_mtim.tv_sec;
    in.size += uint64_t(st.st_size);
  }
  in.pack_bytes = p->bytes().size();
  in.size += in.pack_bytes;
  in.usable = lib.pack_usable(p);
  in.version = p->version();
  const IndexView& v = p->index();
  DigestSet seen;
  for (uint64_t i = 0; i < v.count(); i++) {
    GcObject o{v.digest_at(i), 0};
    if (!seen.insert(o.digest).second) continue;
    if (live.count(o.digest)) {
      IndexRecord r = v.record_at(i);
      // v2 records leave stored sizes to the pack: count raw bytes for block members.
      o.bytes = r.member != kNoMember ? r.raw_len + kBlockMemberSize : p->complete_or_same(r).stored_len + kEntryHeaderSize;
    }
    in.objects.push_back(o);
  }
  return in;
}

std::vector<GcPackInput> describe_packs(const Library& lib, const std::vector<const PackReader*>& packs, const DigestSet& live,
                                        int64_t now, const Progress& progress) {
  std::vector<GcPackInput> out;
  for (const PackReader* p : packs) {
    report(progress, "scan", out.size(), packs.size());
    out.push_back(describe_pack(lib, p, live, now));
  }
  report(progress, "scan", out.size(), packs.size());
  return out;
}

// A dry run, or nothing worth doing: the library after the plan, predicted.
void predict_after(const GcPlan& plan, const GcOptions& opts, GcResult& res) {
  res.packs_after = res.packs_before;
  res.bytes_after = res.bytes_before;
  if (!opts.dry_run || plan.sources.empty()) return;
  uint64_t freed = 0;
  for (size_t i : plan.sources) freed += plan.packs[i].size - plan.packs[i].live_bytes;
  res.bytes_after = res.bytes_before - freed;
  res.packs_after = res.packs_before - plan.sources.size() + (res.objects_kept ? 1 : 0);
}

// Step 5's copy: the objects the plan needs, verbatim (entry checksum
// checked, no recompression), into one writer, in pack then offset order.
class Repacker {
public:
  Repacker(PackWriter& w, const GcPlan& plan, const DigestSet& live, GcResult& res, const Progress& progress, uint64_t total)
      : w_(w), plan_(plan), live_(live), res_(res), progress_(progress), total_(total) {}

  // Copies what the plan needs of `src`; false when a damaged object of it
  // was left behind.
  bool copy_pack(const PackReader& src) {
    bool damaged = false;
    const IndexView& v = src.index();
    std::vector<IndexRecord> recs;
    for (uint64_t i = 0; i < v.count(); i++) recs.push_back(v.record_at(i));
    std::sort(recs.begin(), recs.end(), [](auto& a, auto& b) { return a.offset != b.offset ? a.offset < b.offset : a.member < b.member; });
    for (size_t k = 0; k < recs.size(); k++) {
      if (++done_ % 4096 == 0) report(progress_, "repack", done_, total_);
      if (recs[k].member == kNoMember) {
        copy_entry(src, recs[k], damaged);
        continue;
      }
      size_t e = k; // a v2 block: its members are consecutive here
      while (e + 1 < recs.size() && recs[e + 1].offset == recs[k].offset) e++;
      copy_block(src, std::span<const IndexRecord>(recs.data() + k, e - k + 1), damaged);
      done_ += e - k;
      k = e;
    }
    return !damaged;
  }

  void report_done() { report(progress_, "repack", total_, total_); }

private:
  bool wanted(const Digest& d) const { return plan_.to_copy(d, live_); }
  void counted(uint64_t bytes, uint64_t objects = 1) {
    res_.copied_objects += objects;
    res_.copied_bytes += bytes;
  }
  // A damaged copy is never spread; if no intact copy is written by the
  // end, its pack is kept (pinned_by_damage).
  void damaged_entry(const char* what, const Error& e, bool& damaged) {
    damaged = true;
    res_.warnings.push_back(std::string(what) + e.what());
  }

  void copy_entry(const PackReader& src, IndexRecord r, bool& damaged) {
    if (!wanted(r.digest)) return;
    bool mirror = w_.contains(r.digest);
    if (mirror && r.kind != Kind::Catalog) return;
    ByteSpan stored;
    try {
      r = src.complete(r);
      if (w_.is_small(r.raw_len) && r.kind == Kind::Blob) {
        // A v1 entry going into a v2 pack: its block (the one recompression).
        w_.append_small(r.digest, src.read(r));
        counted(r.raw_len);
        return;
      }
      stored = src.checked_stored(r);
    } catch (const Error& e) {
      damaged_entry("damaged entry not copied: ", e, damaged);
      return;
    }
    w_.append_copy(r, stored, mirror);
    counted(r.stored_len);
  }

  // The members of one v2 block (`recs`, all at one offset), by the rule of
  // formats/pack_format.hpp: the whole block verbatim while at least half of
  // its raw bytes are live and none of its members is already written;
  // otherwise only its live members, each into the writer's own blocks (the
  // only recompression gc does). A v1 writer takes them as single entries.
  void copy_block(const PackReader& src, std::span<const IndexRecord> recs, bool& damaged) {
    bool any_wanted = false;
    for (auto& r : recs) any_wanted |= wanted(r.digest) && !w_.contains(r.digest);
    if (!any_wanted) return;
    PackReader::Block bl;
    try {
      bl = src.checked_block(recs[0].offset);
    } catch (const Error& e) {
      damaged_entry("damaged block not copied: ", e, damaged);
      return;
    }
    uint64_t live_raw = 0;
    bool clash = false;
    for (auto& m : bl.members) {
      if (wanted(m.digest)) live_raw += m.raw_len;
      clash |= w_.contains(m.digest) || plan_.kept_objects.count(m.digest);
    }
    if (w_.version() >= kPackVersion2 && !clash && live_raw * 2 >= bl.header.raw_len) {
      w_.append_block_copy(bl.header, bl.members, bl.table, bl.payload);
      counted(block_item_size(bl.header), bl.members.size());
      return;
    }
    for (auto& r : recs)
      if (wanted(r.digest) && !w_.contains(r.digest)) copy_member(src, r, damaged);
  }

  void copy_member(const PackReader& src, const IndexRecord& r, bool& damaged) {
    try {
      Bytes raw = src.read(r);
      if (w_.is_small(raw.size())) {
        w_.append_small(r.digest, raw);
      } else {
        Bytes frame;
        bool zstd = compress_if_smaller(raw, src.level(), frame);
        w_.append(Kind::Blob, zstd ? Codec::Zstd : Codec::Raw, r.digest, raw.size(), zstd ? frame : raw);
      }
      counted(raw.size());
    } catch (const Error& e) {
      damaged_entry("damaged entry not copied: ", e, damaged);
    }
  }

  PackWriter& w_;
  const GcPlan& plan_;
  const DigestSet& live_;
  GcResult& res_;
  const Progress& progress_;
  uint64_t total_, done_ = 0;
};

// A source that left a damaged object behind is kept (pinned) only when it
// holds the only copy of a live object: one with an intact copy in the new
// pack or in a pack that stays does not pin it.
bool pinned_by_damage(const PackReader& src, const std::string& name, const GcPlan& plan, const DigestSet& live,
                      const PackWriter& w, GcResult& res) {
  const IndexView& v = src.index();
  bool pinned = false;
  for (uint64_t i = 0; i < v.count(); i++) {
    Digest d = v.digest_at(i);
    if (plan.to_copy(d, live) && !w.contains(d)) pinned = true;
  }
  if (pinned) res.warnings.push_back("pack '" + name + "' kept: it holds the only (damaged) copy of a live object; run 'hpak repair'");
  return pinned;
}

// What step 5 left for step 6.
struct Repacked {
  std::string new_name;     // of the published pack ("" if nothing was copied)
  std::vector<bool> pinned; // per plan.sources: kept for a damaged live object
};

// Copies the live objects of the plan's sources into one new pack, published
// (pack, index, packs/ durable) before anything is condemned.
Repacked write_new_pack(Library& lib, const std::vector<const PackReader*>& packs, const GcPlan& plan, const DigestSet& live,
                        const GcOptions& opts, GcResult& res) {
  Repacked out;
  AtomicFile tmp(lib.tmp_dir() + "/gc-pack", 0644);
  PackWriter w(tmp.fd(), tmp.temp_path(), packs[plan.sources[0]]->level());
  w.hash_in_background(); // copied spans point into the mapped sources, alive until finish()
  uint64_t total = 0;
  for (size_t i : plan.sources) total += packs[i]->index().count();
  w.reserve(std::min<uint64_t>(total, res.objects_kept + 64));
  Repacker copier(w, plan, live, res, opts.progress, total);
  std::vector<bool> damaged;
  for (size_t i : plan.sources) damaged.push_back(!copier.copy_pack(*packs[i]));
  copier.report_done();
  for (size_t k = 0; k < plan.sources.size(); k++) {
    size_t i = plan.sources[k];
    out.pinned.push_back(damaged[k] && pinned_by_damage(*packs[i], plan.packs[i].pack, plan, live, w, res));
  }
  if (res.copied_objects > 0) {
    PackResult written = w.finish();
    tmp.commit_as(tmp.temp_path() + ".done");
    out.new_name = lib.publish_pack(tmp.final_path(), written); // durable: pack, index, packs/ before any condemn
  }
  return out;
}

// Step 5, timed (the temp file and the writer are gone when it returns).
Repacked repack(Library& lib, const std::vector<const PackReader*>& packs, const GcPlan& plan, const DigestSet& live,
                const GcOptions& opts, GcResult& res) {
  auto t0 = std::chrono::steady_clock::now();
  Repacked out = write_new_pack(lib, packs, plan, live, opts, res);
  res.copy_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

// Every object of a visible pack whose name is not in `superseded`.
DigestSet objects_outside(const Library& lib, const std::set<std::string>& superseded) {
  DigestSet safe;
  for (const PackReader* p : lib.packs()) {
    if (superseded.count(base_name(p->path()))) continue;
    const IndexView& v = p->index();
    for (uint64_t i = 0; i < v.count(); i++) safe.insert(v.digest_at(i));
  }
  return safe;
}

// Renames a pack's index, then the pack, to `.condemned` (readers stop
// seeing it); false, with both names as they were, when either fails.
bool condemn_pack(const PackReader* p) {
  std::string pack = p->path(), idx = idx_of(p);
  if (rename(idx.c_str(), condemned(idx).c_str()) != 0) return false;
  if (rename(pack.c_str(), condemned(pack).c_str()) != 0) {
    rename(condemned(idx).c_str(), idx.c_str()); // keep it then
    return false;
  }
  return true;
}

// Step 6: re-mark and condemn under the exclusive publish lock. No add is
// then between checking its objects and setting its name, so the names read
// here are every name whose objects must stay visible: a superseded pack
// holding the only copy of an object one of them needs is kept. An add that
// sets its name after this section checks its objects after it, finds a
// condemned pack's objects gone, and writes them again. Condemning renames
// the index, then the pack, to `.condemned` names, so a writer that publishes
// an identical pack (same content, same name) afterwards creates a new file,
// which gc never deletes. Returns the packs condemned.
std::vector<const PackReader*> condemn(Library& lib, const std::vector<const PackReader*>& packs, const GcPlan& plan,
                                       const Repacked& repacked, DigestSet& live, const GcOptions& opts, GcResult& res) {
  std::vector<const PackReader*> out;
  PublishLock publishing(lib, /*exclusive=*/true);
  lib.refresh();
  mark(lib, lib.catalog_names(), live, opts.progress); // the first mark's objects stay marked: cheap, conservative
  std::set<std::string> superseded;
  for (size_t i : plan.sources)
    if (plan.packs[i].pack != repacked.new_name) superseded.insert(plan.packs[i].pack); // (our output may be identical to a source)
  DigestSet safe = objects_outside(lib, superseded); // in a visible pack this gc does not supersede
  for (size_t k = 0; k < plan.sources.size(); k++) {
    const GcPackPlan& s = plan.packs[plan.sources[k]];
    const PackReader* p = packs[plan.sources[k]];
    if (repacked.pinned[k] || s.pack == repacked.new_name) continue;
    const IndexView& v = p->index();
    bool needed = false;
    for (uint64_t i = 0; i < v.count() && !needed; i++) needed = live.count(v.digest_at(i)) && !safe.count(v.digest_at(i));
    if (needed) {
      res.warnings.push_back("pack '" + s.pack + "' kept: a catalog published during gc needs it");
      res.objects_dropped -= s.objects - s.live_objects;
      for (uint64_t i = 0; i < v.count(); i++) safe.insert(v.digest_at(i));
    } else if (condemn_pack(p)) {
      out.push_back(p);
    }
  }
  return out;
}

// After the publish lock is released: gc deletes only `.condemned` names.
void delete_condemned(const std::vector<const PackReader*>& packs) {
  for (const PackReader* p : packs) {
    unlink(condemned(p->path()).c_str());
    unlink(condemned(idx_of(p)).c_str());
  }
}

// Step 7: the midx over the packs that remain, and their count and size.
void rebuild_midx(Library& lib, GcResult& res) {
  lib.write_midx();
  lib.refresh();
  res.packs_after = 0;
  for (const PackReader* p : lib.packs()) {
    res.packs_after++;
    struct stat st;
    res.bytes_after += p->bytes().size();
    if (lstat(idx_of(p).c_str(), &st) == 0) res.bytes_after += uint64_t(st.st_size);
  }
}

// A leftover (temp file, pack without index) younger than this may belong to
// an add in progress, whatever --grace says: removing it fails that add.
constexpr int64_t kLeftoverMinAge = 3600;

bool has_index(const std::string& pack) {
  return path_exists(index_path_for(pack)) || path_exists(index_path_for(pack) + ".condemned");
}

// Orphan packs, condemned under the exclusive publish lock and checked again:
// one whose index appeared meanwhile is put back. Deleted after the lock is
// released; counted in tmp_removed.
void remove_orphans(const Library& lib, const std::vector<std::string>& orphans, GcResult& res) {
  std::vector<std::string> condemned_orphans;
  {
    PublishLock publishing(lib, /*exclusive=*/true);
    for (auto& p : orphans) {
      if (has_index(p) || rename(p.c_str(), condemned(p).c_str()) != 0) continue;
      if (has_index(p)) { // published between the check and the rename: a pack again
        if (rename(condemned(p).c_str(), p.c_str()) != 0) res.warnings.push_back("unable to restore '" + p + "'");
        continue;
      }
      condemned_orphans.push_back(p);
    }
  }
  for (auto& p : condemned_orphans) {
    unlink(condemned(p).c_str());
    res.tmp_removed++;
  }
}

// Step 8, sweep: leftovers of writers (or gcs) that died long ago: temp
// files, and packs whose index was never published (invisible to everyone,
// so unreferenced). An orphan pack is removed like a superseded one (step 6),
// under the exclusive publish lock: condemned (renamed to `.condemned`), then
// checked again, and put back if its index appeared meanwhile — a writer
// re-adding an identical pack (same content, same name) finds the orphan
// (link: EEXIST), publishes its index and sets a name on it. A writer whose
// index comes after the condemn checks its objects under the shared lock,
// finds the pack gone and writes them again. Only `.condemned` names are
// deleted, after the lock is released.
void sweep_leftovers(const Library& lib, const GcOptions& opts, int64_t now, GcResult& res) {
  auto old_enough = [&](const std::string& p) {
    struct stat st;
    return lstat(p.c_str(), &st) == 0 && now - st.st_mtim.tv_sec > std::max<int64_t>(opts.grace_seconds, kLeftoverMinAge);
  };
  auto is_regular = [](const std::string& p) { // a symlink or FIFO planted in packs/ is not ours
    struct stat st;
    return lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  };
  auto remove_leftover = [&](const std::string& p) {
    if (!opts.dry_run) unlink(p.c_str());
    res.tmp_removed++;
  };
  for (auto& name : list_dir(lib.tmp_dir()))
    if (old_enough(lib.tmp_dir() + "/" + name)) remove_leftover(lib.tmp_dir() + "/" + name);
  std::vector<std::string> orphans;
  for (const char* sub : {"/packs", "/catalogs", "/used"}) {
    std::string dir = lib.root() + sub;
    for (auto& name : list_dir(dir)) {
      std::string p = dir + "/" + name;
      bool pack = sub == std::string("/packs") && name.size() > 5 && name.compare(name.size() - 5, 5, ".hpak") == 0;
      if (pack && is_regular(p) && !has_index(p) && old_enough(p)) orphans.push_back(p);
      else if (name.rfind(".tmp-", 0) == 0 && old_enough(p)) remove_leftover(p);
    }
  }
  step(opts, "sweep");
  if (orphans.empty()) return;
  if (opts.dry_run) res.tmp_removed += orphans.size();
  else remove_orphans(lib, orphans, res);
}

GcPlanOptions plan_options(const GcOptions& opts) {
  GcPlanOptions o;
  o.grace_seconds = opts.grace_seconds;
  o.min_garbage_pct = opts.min_garbage_pct;
  o.upgrade = opts.upgrade;
  return o;
}

} // namespace

// The steps of the protocol in core/gc.hpp, in order.
GcResult gc(Library& lib, const GcOptions& opts) {
  GcLock lock(lib); // step 1
  GcResult res;
  recover_interrupted(lib, opts, res);
  const int64_t now = time(nullptr);
  DigestSet live = roots(lib, opts, now, res);

  const std::vector<const PackReader*> packs = lib.packs();
  const std::vector<GcPackInput> described = describe_packs(lib, packs, live, now, opts.progress);
  for (auto& p : described) res.bytes_before += p.size;
  res.packs_before = described.size();
  GcPlan plan = plan_gc(described, live, plan_options(opts), now);
  res.packs = plan.packs;
  res.objects_kept = plan.objects_kept;
  res.objects_dropped = plan.objects_dropped;

  if (plan.sources.empty() || opts.dry_run) {
    predict_after(plan, opts, res);
  } else {
    Repacked repacked = repack(lib, packs, plan, live, opts, res);
    step(opts, "published");
    std::vector<const PackReader*> condemned_packs = condemn(lib, packs, plan, repacked, live, opts, res);
    step(opts, "condemned");
    delete_condemned(condemned_packs);
    step(opts, "deleted");
    rebuild_midx(lib, res);
  }
  sweep_leftovers(lib, opts, now, res);
  return res;
}

} // namespace hpak
