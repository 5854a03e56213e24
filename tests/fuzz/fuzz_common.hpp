// Helpers shared by the libFuzzer targets in tests/fuzz (header-only; each
// target is one translation unit).
//
// A target must never crash, hang, read out of bounds or allocate without
// bound on any input: hpak::Error (and its Corrupt subclass) is the one
// accepted way to refuse an input. Anything else (another exception type, a
// sanitizer report, a failed FUZZ_CHECK) is a finding.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "base/bytes.hpp"
#include "base/hash.hpp"

#define FUZZ_CHECK(cond, ...)                                                                 \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s: ", __FILE__, __LINE__, #cond);        \
      fprintf(stderr, __VA_ARGS__);                                                           \
      fprintf(stderr, "\n");                                                                  \
      abort();                                                                                \
    }                                                                                         \
  } while (0)

namespace fuzz {

// A copy of `data` whose last 32 bytes are replaced by the SHA-256 of the rest
// (index, midx trailers), so the fuzzer gets past the checksum to the parser.
inline hpak::Bytes with_sha256_trailer(const uint8_t* data, size_t size) {
  hpak::Bytes b(data, data + size);
  if (b.size() < 32) return b;
  hpak::Digest d = hpak::sha256(hpak::ByteSpan(b.data(), b.size() - 32));
  std::memcpy(b.data() + b.size() - 32, d.data(), 32);
  return b;
}

// Removes a tree that may hold directories without write or search permission.
inline void rm_rf_at(int parent, const char* name) {
  if (unlinkat(parent, name, 0) == 0 || errno == ENOENT) return;
  int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    fchmodat(parent, name, 0700, 0);
    fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return;
  }
  fchmod(fd, 0700);
  DIR* d = fdopendir(fd);
  if (!d) {
    close(fd);
    return;
  }
  std::vector<std::string> names;
  while (auto* e = readdir(d))
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
  for (auto& n : names) rm_rf_at(dirfd(d), n.c_str());
  closedir(d);
  unlinkat(parent, name, AT_REMOVEDIR);
}

// Names in a directory, "." and ".." aside.
inline std::vector<std::string> list_names(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (auto* e = readdir(d))
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) out.emplace_back(e->d_name);
  closedir(d);
  return out;
}

// A private scratch directory for this fuzzer process, removed at exit.
inline const std::string& scratch_dir(const char* tag) {
  static std::string dir = [tag] {
    // tmpfs if there is one: on a disk filesystem (ext4 with discard) every
    // unlink costs ~0.5 ms, which would dominate the fuzz_unpack loop.
    const char* base = getenv("HPAK_FUZZ_TMP");
    if (!base || !*base) base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/hpak-" + tag + "-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) {
      perror("mkdtemp");
      abort();
    }
    std::string d(buf.data());
    static std::string keep = d;
    atexit([] { rm_rf_at(AT_FDCWD, keep.c_str()); });
    return d;
  }();
  return dir;
}

inline void write_file(const std::string& path, const uint8_t* data, size_t size) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  FUZZ_CHECK(fd >= 0, "cannot create %s: %s", path.c_str(), strerror(errno));
  size_t done = 0;
  while (done < size) {
    ssize_t n = write(fd, data + done, size - done);
    FUZZ_CHECK(n > 0, "cannot write %s: %s", path.c_str(), strerror(errno));
    done += size_t(n);
  }
  close(fd);
}

} // namespace fuzz
