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
#include "core/util/zstd_codec.hpp"

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

struct PackInfo {
  const PackReader* reader;
  std::string name;
  uint64_t size = 0; // pack + index bytes
  int64_t age = 0;
  uint64_t objects = 0, live = 0, live_bytes = 0;
  bool young = false, merge = false, damaged_live = false;
  bool upgrade = false; // a v1 pack rewritten as v2 (GcOptions::upgrade)
};

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

std::string idx_of(const PackReader* p) { return index_path_for(p->path()); }

} // namespace

// A leftover (temp file, pack without index) younger than this may belong to
// an add in progress, whatever --grace says: removing it fails that add.
constexpr int64_t kLeftoverMinAge = 3600;

// Leftovers of writers (or gcs) that died long ago: temp files, and packs
// whose index was never published (invisible to everyone, so unreferenced).
// An orphan pack is removed like a superseded one (protocol step 6), under
// the exclusive publish lock: condemned (renamed to `.condemned`), then
// checked again, and put back if its index appeared meanwhile — a writer
// re-adding an identical pack (same content, same name) finds the orphan
// (link: EEXIST), publishes its index and sets a name on it. A writer whose
// index comes after the condemn checks its objects under the shared lock,
// finds the pack gone and writes them again. Only `.condemned` names are
// deleted, after the lock is released.
static void sweep_leftovers(const Library& lib, const GcOptions& opts, int64_t now, GcResult& res,
                            const std::function<void(const char*)>& step) {
  auto old_enough = [&](const std::string& p) {
    struct stat st;
    return lstat(p.c_str(), &st) == 0 && now - st.st_mtim.tv_sec > std::max<int64_t>(opts.grace_seconds, kLeftoverMinAge);
  };
  auto is_regular = [](const std::string& p) { // a symlink or FIFO planted in packs/ is not ours
    struct stat st;
    return lstat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  };
  auto has_index = [](const std::string& pack) {
    return path_exists(index_path_for(pack)) || path_exists(index_path_for(pack) + ".condemned");
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
  step("sweep");
  if (orphans.empty()) return;
  if (opts.dry_run) {
    res.tmp_removed += orphans.size();
    return;
  }
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

// The members of one v2 block (`recs`, all at one offset) into `w`, by the
// rule of formats/pack_format.hpp: the whole block verbatim while at least
// half of its raw bytes are live and none of its members is already written;
// otherwise only its live members, each into the writer's own blocks (the
// only recompression gc does). A v1 writer takes them as single entries.
static void copy_block_members(const PackReader& src, std::span<const IndexRecord> recs, PackWriter& w, const DigestSet& live,
                               const DigestSet& in_kept, GcResult& res, bool& damaged_live) {
  uint64_t off = recs[0].offset;
  bool any_live = false;
  for (auto& r : recs) any_live |= live.count(r.digest) && !in_kept.count(r.digest) && !w.contains(r.digest);
  if (!any_live) return;
  PackReader::Block bl;
  try {
    bl = src.checked_block(off);
  } catch (const Error& e) {
    damaged_live = true;
    res.warnings.push_back(std::string("damaged block not copied: ") + e.what());
    return;
  }
  uint64_t live_raw = 0;
  bool clash = false;
  for (auto& m : bl.members) {
    if (live.count(m.digest) && !in_kept.count(m.digest)) live_raw += m.raw_len;
    clash |= w.contains(m.digest) || in_kept.count(m.digest);
  }
  if (w.version() >= kPackVersion2 && !clash && live_raw * 2 >= bl.header.raw_len) {
    w.append_block_copy(bl.header, bl.members, bl.table, bl.payload);
    res.copied_objects += bl.members.size();
    res.copied_bytes += block_item_size(bl.header);
    return;
  }
  for (auto& r : recs) {
    if (!live.count(r.digest) || in_kept.count(r.digest) || w.contains(r.digest)) continue;
    try {
      Bytes raw = src.read(r);
      if (w.is_small(raw.size())) {
        w.append_small(r.digest, raw);
      } else {
        Bytes stored;
        Codec codec = Codec::Raw;
        if (src.level() > 0) zstd_compress(raw, src.level(), nullptr, stored);
        if (src.level() > 0 && stored.size() < raw.size()) codec = Codec::Zstd;
        else stored = raw;
        w.append(Kind::Blob, codec, r.digest, raw.size(), stored);
      }
      res.copied_objects++;
      res.copied_bytes += raw.size();
    } catch (const Error& e) {
      damaged_live = true;
      res.warnings.push_back(std::string("damaged entry not copied: ") + e.what());
    }
  }
}

GcResult gc(Library& lib, const GcOptions& opts) {
  GcLock lock(lib);
  GcResult res;
  auto step = [&](const char* s) {
    if (opts.on_step) opts.on_step(s);
  };
  if (!opts.dry_run && recover_condemned(lib) > 0) res.warnings.push_back("recovered indexes condemned by an interrupted gc");
  lib.refresh();
  const int64_t now = time(nullptr);

  // --unused: drop catalog names not restored for that long.
  std::vector<std::string> names = lib.catalog_names();
  std::vector<std::string> kept_names;
  for (auto& name : names) {
    if (opts.unused_seconds >= 0 && now - lib.last_used(name) > opts.unused_seconds) {
      res.dropped_catalogs.push_back(name);
      if (!opts.dry_run) lib.remove_catalog(name);
    } else {
      kept_names.push_back(name);
    }
  }
  // A dropped name must not come back after a power loss once its packs are gone.
  if (!opts.dry_run && !res.dropped_catalogs.empty()) sync_dir(lib.root() + "/catalogs");

  DigestSet live;
  mark(lib, kept_names, live, opts.progress);

  std::vector<PackInfo> packs;
  const std::vector<const PackReader*> visible = lib.packs();
  for (const PackReader* p : visible) {
    report(opts.progress, "scan", packs.size(), visible.size());
    PackInfo info;
    info.reader = p;
    info.name = base_name(p->path());
    struct stat st;
    int64_t mtime = now;
    if (lstat(idx_of(p).c_str(), &st) == 0) {
      mtime = st.st_mtim.tv_sec;
      info.size += uint64_t(st.st_size);
    }
    info.size += p->bytes().size();
    info.age = now - mtime;
    info.young = info.age < opts.grace_seconds;
    // Never copy another member's unverified bytes into a pack of ours (it
    // would then be trusted): a pack this user may not use is left alone.
    if (!lib.pack_usable(p)) info.young = true;
    const IndexView& v = p->index();
    DigestSet seen;
    for (uint64_t i = 0; i < v.count(); i++) {
      Digest d = v.digest_at(i);
      if (!seen.insert(d).second) continue;
      info.objects++;
      if (live.count(d)) {
        info.live++;
        IndexRecord r = v.record_at(i);
        // v2 records leave stored sizes to the pack: count raw bytes for block members.
        info.live_bytes += r.member != kNoMember ? r.raw_len + kBlockMemberSize : p->complete_or_same(r).stored_len + kEntryHeaderSize;
      }
    }
    res.bytes_before += info.size;
    packs.push_back(info);
  }
  res.packs_before = packs.size();
  report(opts.progress, "scan", packs.size(), visible.size());

  // Which old packs to rewrite: those with garbage, then a geometric roll-up.
  std::vector<PackInfo*> old;
  for (auto& p : packs)
    if (!p.young) old.push_back(&p);
  // Rewriting a pack costs copying its live bytes: do it when at least
  // min_garbage_pct of it is garbage (or all of it); smaller amounts wait.
  for (auto* p : old) {
    uint64_t pack_bytes = p->reader->bytes().size();
    uint64_t garbage = pack_bytes > p->live_bytes ? pack_bytes - p->live_bytes : 0;
    p->merge = p->live == 0 || (p->live < p->objects && garbage * 100 >= pack_bytes * uint64_t(opts.min_garbage_pct));
  }
  if (opts.upgrade)
    for (auto* p : old)
      if (p->reader->version() < kPackVersion2 && p->live > 0) p->merge = p->upgrade = true;
  std::sort(old.begin(), old.end(), [](auto* a, auto* b) { return a->live_bytes < b->live_bytes; });
  size_t roll = 0;
  uint64_t prefix = 0;
  for (size_t j = 0; j < old.size(); j++) {
    if (j > 0 && old[j]->live_bytes < 2 * prefix) roll = j + 1;
    prefix += old[j]->live_bytes;
  }
  if (roll >= 2)
    for (size_t j = 0; j < roll; j++) old[j]->merge = true;
  size_t merging = 0;
  for (auto* p : old) merging += p->merge;
  bool worthwhile = false;
  for (auto* p : old) worthwhile |= p->merge && (p->live < p->objects || merging >= 2 || p->upgrade);

  // Objects that stay reachable in packs we keep need no copy.
  DigestSet in_kept;
  for (auto& p : packs)
    if (!p.merge) {
      const IndexView& v = p.reader->index();
      for (uint64_t i = 0; i < v.count(); i++) in_kept.insert(v.digest_at(i));
    }

  for (auto& p : packs) {
    GcPackPlan plan;
    plan.pack = p.name;
    plan.size = p.size;
    plan.objects = p.objects;
    plan.live_objects = p.live;
    plan.live_bytes = p.live_bytes;
    if (p.young) {
      plan.action = "young";
      plan.why = "younger than the grace period (" + std::to_string(p.age) + " s old)";
    } else if (p.merge && worthwhile) {
      plan.action = p.live == 0 ? "delete" : p.live < p.objects ? "rewrite" : p.upgrade ? "upgrade" : "merge";
      plan.why = p.live < p.objects ? std::to_string(p.objects - p.live) + " unreferenced objects"
                 : p.upgrade        ? "pack format version 1, rewritten as version 2 (--upgrade)"
                                    : "small pack rolled up with others";
    } else {
      plan.action = "keep";
      plan.why = p.live < p.objects ? "garbage below threshold" : "all objects referenced";
    }
    res.packs.push_back(plan);
    res.objects_kept += p.live;
    if (p.merge && worthwhile) res.objects_dropped += p.objects - p.live;
  }

  if (!worthwhile || opts.dry_run) {
    res.packs_after = res.packs_before;
    res.bytes_after = res.bytes_before;
    if (opts.dry_run && worthwhile) {
      uint64_t freed = 0;
      for (auto& p : packs)
        if (p.merge) freed += p.size - p.live_bytes;
      res.bytes_after = res.bytes_before - freed;
      res.packs_after = res.packs_before - merging + (merging && res.objects_kept ? 1 : 0);
    }
  } else {
    // Copy live objects verbatim into one new pack, in pack then offset order.
    auto t0 = std::chrono::steady_clock::now();
    std::vector<PackInfo*> sources;
    for (auto& p : packs)
      if (p.merge) sources.push_back(&p);
    std::sort(sources.begin(), sources.end(), [](auto* a, auto* b) { return a->name < b->name; });
    std::optional<PackResult> written;
    std::string new_name;
    {
      AtomicFile tmp(lib.tmp_dir() + "/gc-pack", 0644);
      PackWriter w(tmp.fd(), tmp.temp_path(), sources.empty() ? 3 : sources[0]->reader->level());
      w.hash_in_background(); // copied spans point into the mapped sources, alive until finish()
      uint64_t done = 0, total = 0;
      for (auto* s : sources) total += s->reader->index().count();
      w.reserve(std::min<uint64_t>(total, res.objects_kept + 64));
      for (auto* s : sources) {
        const IndexView& v = s->reader->index();
        std::vector<IndexRecord> recs;
        for (uint64_t i = 0; i < v.count(); i++) recs.push_back(v.record_at(i));
        std::sort(recs.begin(), recs.end(), [](auto& a, auto& b) { return a.offset != b.offset ? a.offset < b.offset : a.member < b.member; });
        for (size_t k = 0; k < recs.size(); k++) {
          IndexRecord& r = recs[k];
          if (++done % 4096 == 0) report(opts.progress, "repack", done, total);
          if (r.member != kNoMember) {
            // A v2 block: its members are consecutive here.
            size_t e = k;
            while (e + 1 < recs.size() && recs[e + 1].offset == r.offset) e++;
            copy_block_members(*s->reader, std::span<const IndexRecord>(recs.data() + k, e - k + 1), w, live, in_kept, res, s->damaged_live);
            done += e - k;
            k = e;
            continue;
          }
          if (!live.count(r.digest) || in_kept.count(r.digest)) continue;
          bool mirror = w.contains(r.digest);
          if (mirror && r.kind != Kind::Catalog) continue;
          ByteSpan stored;
          try {
            r = s->reader->complete(r);
            if (w.is_small(r.raw_len) && r.kind == Kind::Blob) {
              // A v1 entry going into a v2 pack: its block (the one recompression).
              w.append_small(r.digest, s->reader->read(r));
              res.copied_objects++;
              res.copied_bytes += r.raw_len;
              continue;
            }
            stored = s->reader->checked_stored(r);
          } catch (const Error& e) {
            // A damaged copy is never spread; if no intact copy is written
            // by the end, the old pack is kept (see below).
            s->damaged_live = true;
            res.warnings.push_back(std::string("damaged entry not copied: ") + e.what());
            continue;
          }
          w.append_copy(r, stored, mirror);
          res.copied_objects++;
          res.copied_bytes += r.stored_len;
        }
      }
      report(opts.progress, "repack", total, total);
      // A damaged live object with an intact copy elsewhere does not pin its pack.
      for (auto* s : sources) {
        if (!s->damaged_live) continue;
        s->damaged_live = false;
        const IndexView& v = s->reader->index();
        for (uint64_t i = 0; i < v.count(); i++) {
          Digest d = v.digest_at(i);
          if (live.count(d) && !w.contains(d) && !in_kept.count(d)) s->damaged_live = true;
        }
        if (s->damaged_live) res.warnings.push_back("pack '" + s->name + "' kept: it holds the only (damaged) copy of a live object; run 'hpak repair'");
      }
      if (res.copied_objects > 0) {
        written = w.finish();
        tmp.commit_as(tmp.temp_path() + ".done");
        new_name = lib.publish_pack(tmp.final_path(), *written); // durable: pack, index, packs/ before any condemn
      }
    }
    res.copy_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    step("published");

    // Re-mark and condemn under the exclusive publish lock. No add is then
    // between checking its objects and setting its name, so the names read
    // here are every name whose objects must stay visible: a superseded pack
    // holding the only copy of an object one of them needs is kept. An add
    // that sets its name after this section checks its objects after it,
    // finds a condemned pack's objects gone, and writes them again.
    // Condemning renames the index, then the pack, to `.condemned` names, so
    // a writer that publishes an identical pack (same content, same name)
    // afterwards creates a new file, which gc never deletes.
    std::vector<PackInfo*> condemned_packs;
    {
      PublishLock publishing(lib, /*exclusive=*/true);
      lib.refresh();
      mark(lib, lib.catalog_names(), live, opts.progress); // the first mark's objects stay marked: cheap, conservative
      DigestSet safe;                       // in a visible pack this gc does not supersede
      std::set<std::string> superseded;
      for (auto* s : sources)
        if (s->name != new_name) superseded.insert(s->name); // (our output may be identical to a source)
      for (const PackReader* p : lib.packs()) {
        if (superseded.count(base_name(p->path()))) continue;
        const IndexView& v = p->index();
        for (uint64_t i = 0; i < v.count(); i++) safe.insert(v.digest_at(i));
      }
      for (auto* s : sources) {
        if (s->damaged_live || s->name == new_name) continue;
        const IndexView& v = s->reader->index();
        bool needed = false;
        for (uint64_t i = 0; i < v.count() && !needed; i++) needed = live.count(v.digest_at(i)) && !safe.count(v.digest_at(i));
        if (needed) {
          res.warnings.push_back("pack '" + s->name + "' kept: a catalog published during gc needs it");
          s->merge = false;
          res.objects_dropped -= s->objects - s->live;
          for (uint64_t i = 0; i < v.count(); i++) safe.insert(v.digest_at(i));
          continue;
        }
        std::string pack = s->reader->path(), idx = idx_of(s->reader);
        if (rename(idx.c_str(), condemned(idx).c_str()) != 0) continue;
        if (rename(pack.c_str(), condemned(pack).c_str()) != 0) {
          rename(condemned(idx).c_str(), idx.c_str()); // keep it then
          continue;
        }
        condemned_packs.push_back(s);
      }
    }
    step("condemned");
    for (auto* s : condemned_packs) {
      unlink(condemned(s->reader->path()).c_str());
      unlink(condemned(idx_of(s->reader)).c_str());
    }
    step("deleted");
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

  sweep_leftovers(lib, opts, now, res, step);
  return res;
}

} // namespace hpak
