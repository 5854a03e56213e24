#include "core/restore/restore_state.hpp"

#include <cctype>
#include <cstring>

#include "base/os/sys.hpp"
#include "base/os/file.hpp"
#include "base/zstd_codec.hpp"

namespace hpak {

const BootId& current_boot_id() {
  static const BootId id = [] {
    BootId b{};
    try {
      Bytes text = read_file("/proc/sys/kernel/random/boot_id"); // "8-4-4-4-12" hex digits
      std::string hex;
      for (uint8_t c : text)
        if (isxdigit(c)) hex += char(c);
      if (hex.size() != 32) return BootId{};
      for (size_t i = 0; i < 16; i++) b[i] = uint8_t(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
    } catch (const std::exception&) {
      return BootId{};
    }
    return b;
  }();
  return id;
}

std::optional<RestoreState> read_state(int target_fd) {
  // Hostile like any file of the target: never through a symlink, never
  // blocking on a FIFO or a device, a regular file of bounded size only.
  int fd = os::open_at(target_fd, kStateName, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  Fd guard(fd);
  try {
    require_regular(fd, kStateName, kStateMaxSize);
    Bytes b = read_fd_bounded(fd, kStateName, kStateMaxSize);
    if (b.size() < 8) return std::nullopt;
    if (xxh64(ByteSpan(b.data(), b.size() - 8)) != get_u64(b.data() + b.size() - 8)) return std::nullopt;
    ByteReader r(ByteSpan(b.data(), b.size() - 8), kStateName);
    if (std::memcmp(r.bytes(4).data(), "HPRS", 4) != 0) return std::nullopt;
    uint32_t version = r.u32();
    if (version != 1 && version != 2) return std::nullopt;
    RestoreState s;
    s.complete = r.u8() == 1;
    s.catalog_codec = r.u8();
    r.bytes(6);
    s.fence_ns = int64_t(r.u64());
    s.boot_id = BootId{};
    if (version == 2) std::memcpy(s.boot_id.data(), r.bytes(16).data(), 16);
    std::memcpy(s.catalog_digest.data(), r.bytes(32).data(), 32);
    s.target = std::string(r.str(4096));
    s.library = std::string(r.str(4096));
    s.name = std::string(r.str(4096));
    uint64_t raw_len = r.u64();
    uint64_t stored_len = r.u64();
    // Bound the allocation by what the stored bytes can hold: every file node
    // of a catalog carries a 32-byte digest, incompressible, so no real
    // catalog shrinks 1000-fold. A state failing this is just unusable (the
    // restore then compares every file), never a multi-GiB allocation.
    if (s.catalog_codec > 1 || raw_len > (1ull << 32) || stored_len != r.remaining()) return std::nullopt;
    if (s.catalog_codec == 0 ? raw_len > stored_len * 1024 + 4096 : raw_len != stored_len) return std::nullopt;
    s.catalog_raw_len = raw_len;
    // The catalog stays in the buffer read (no second copy of it).
    const size_t at = size_t(r.bytes(stored_len).data() - b.data());
    b.resize(at + stored_len);
    b.erase(b.begin(), b.begin() + ptrdiff_t(at));
    s.catalog_stored = std::move(b);
    return s;
  } catch (const Error&) {
    return std::nullopt;
  }
}

Bytes RestoreState::catalog_raw() const {
  if (catalog_codec == 1) return catalog_stored;
  Bytes raw(catalog_raw_len);
  zstd_decompress(catalog_stored, raw, nullptr, kStateName);
  return raw;
}

void RestoreState::set_catalog_raw(ByteSpan raw) {
  catalog_codec = 0;
  catalog_raw_len = raw.size();
  catalog_stored.clear();
  zstd_compress(raw, 1, nullptr, catalog_stored);
}

void RestoreState::set_catalog_stored(formats::Codec codec, uint64_t raw_len, Bytes&& stored) {
  if (codec != formats::Codec::Raw && codec != formats::Codec::Zstd) throw Error("internal error: a catalog stored with a dictionary");
  catalog_codec = codec == formats::Codec::Raw ? 1 : 0;
  catalog_raw_len = raw_len;
  catalog_stored = std::move(stored);
}

namespace {

// Everything before the catalog's stored bytes.
Bytes state_header(const RestoreState& s, const StateMark& mark, uint64_t raw_len, uint64_t stored_len) {
  Bytes b;
  for (char c : {'H', 'P', 'R', 'S'}) put_u8(b, uint8_t(c));
  put_u32(b, 2);
  put_u8(b, mark.complete ? 1 : 0);
  put_u8(b, s.catalog_codec);
  for (int i = 0; i < 6; i++) put_u8(b, 0);
  put_u64(b, uint64_t(mark.fence_ns));
  put_bytes(b, s.boot_id);
  put_bytes(b, s.catalog_digest);
  put_str(b, s.target);
  put_str(b, s.library);
  put_str(b, s.name);
  put_u64(b, raw_len);
  put_u64(b, stored_len);
  return b;
}

} // namespace

void write_state(int target_fd, const std::string& target_shown, const RestoreState& s, StateMark mark) {
  const ByteSpan catalog = mark.with_catalog ? ByteSpan(s.catalog_stored) : ByteSpan();
  const Bytes head = state_header(s, mark, mark.with_catalog ? s.catalog_raw_len : 0, catalog.size());
  Xxh3Stream check;
  check.update(head);
  check.update(catalog);
  Bytes tail;
  put_u64(tail, check.digest());
  // temp + rename inside the target (relative to its fd, never through a path).
  std::string tmp = std::string(".tmp") + kStateName + "-" + std::to_string(os::pid());
  // A name left by a killed restore with our pid (or planted, even as a
  // hardlink to a file outside the target) is removed, never written through.
  os::unlink_at(target_fd, tmp.c_str(), 0);
  int fd = os::open_at(target_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw_errno("unable to write the restore state in '" + target_shown + "'");
  try {
    Fd guard(fd);
    for (ByteSpan part : {ByteSpan(head), catalog, ByteSpan(tail)}) write_all(fd, part, target_shown + "/" + tmp);
    if (os::close(guard.release()) != 0) throw_errno("unable to write the restore state in '" + target_shown + "'");
  } catch (const Error&) {
    os::unlink_at(target_fd, tmp.c_str(), 0); // ENOSPC mid-write: no temp file left behind
    throw;
  }
  if (os::rename_at(target_fd, tmp.c_str(), target_fd, kStateName) != 0) {
    int err = errno;
    os::unlink_at(target_fd, tmp.c_str(), 0);
    throw_errno("unable to write the restore state in '" + target_shown + "'", err);
  }
}

} // namespace hpak
