// An rcc hololib to import from (hpak import): a directory holding
// `library/` and `catalog/`, or a `hololib.zip` written by `rcc holotree
// export` (the same names inside the zip). Read-only; every byte may be hostile.
//
//   library/<d[0:2]>/<d[2:4]>/<d[4:6]>/<d>   one object: gzip, zstd or raw bytes
//   catalog/<name>                            one catalog (gzip'd JSON, see formats/rcc_catalog.hpp)
//   catalog/<name>.info                       plain JSON sidecar (ignored)
//   catalog/compress.no                       marks a library of raw SipHash-named objects
//
// Zip entries named with "..", an absolute path (or drive letter) or stored
// as symlinks are refused when the zip is opened, whether used or not;
// backslashes count as separators (rcc on Windows writes them).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/bytes.hpp"

namespace hpak {

// The source is damaged or hostile (as opposed to unreadable): `hpak import`
// exits 1 for these and 2 for other errors.
class RccRefused : public Error {
public:
  using Error::Error;
};

// Stored or decoded bytes went past the cap their caller gave
// (RccSource::read_*, rcc_decode); callers that know what the cap stood for
// catch it and say so.
class RccTooLarge : public RccRefused {
public:
  RccTooLarge(const std::string& msg, uint64_t cap) : RccRefused(msg), cap_(cap) {}
  uint64_t cap() const { return cap_; }

private:
  uint64_t cap_;
};

class RccSource {
public:
  // Opens a directory or a zip file; throws Error if it is neither.
  static std::unique_ptr<RccSource> open(const std::string& path);
  virtual ~RccSource() = default;

  const std::string& where() const { return where_; }
  // True if the source says its objects are raw and SipHash-named (rcc's compress.no).
  virtual bool compress_no() const = 0;
  // Catalog file names under catalog/ (sorted; *.info, compress.no and
  // subdirectories left out).
  virtual std::vector<std::string> catalog_names() const = 0;
  // The stored bytes of catalog/<name>, at most `cap` (else RccTooLarge).
  virtual Bytes read_catalog(const std::string& name, uint64_t cap) const = 0;
  virtual bool has_object(const std::string& hex) const = 0;
  // The stored bytes of library/../<hex>, at most `cap` (else RccTooLarge);
  // nullopt if absent. Thread-safe.
  virtual std::optional<Bytes> read_object(const std::string& hex, uint64_t cap) const = 0;

  // "library/ab/cd/ef/<hex>".
  static std::string object_name(const std::string& hex);

protected:
  std::string where_;
};

// Decodes stored rcc bytes by their magic: gzip (1F 8B, members may be
// concatenated), zstd (28 B5 2F FD, frames may be concatenated) or raw.
// Stops and throws RccTooLarge naming `what` once the output exceeds `cap`
// (a size lie or a bomb), RccRefused if the compressed data is malformed.
Bytes rcc_decode(ByteSpan stored, uint64_t cap, const std::string& what);
// The size rcc_decode would return, counted through a small buffer (so a bomb
// is refused without its memory); throws as rcc_decode does.
uint64_t rcc_decoded_size(ByteSpan stored, uint64_t cap, const std::string& what);

} // namespace hpak
