// Hashing: SHA-256 (object names, pack and index trailers) via OpenSSL libcrypto,
// which uses SHA-NI where the CPU has it; XXH3-64 (entry checksums of stored
// bytes, cheap enough to check on every read) via libxxhash.
//
// `Sha256` is not thread-safe; make one per thread. Free functions are.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <unordered_set>
#include <optional>
#include <string>
#include <string_view>

#include "base/bytes.hpp"

typedef struct evp_md_ctx_st EVP_MD_CTX;

struct XXH3_state_s; // <xxhash.h>

namespace hpak {

using Digest = std::array<uint8_t, 32>;

// Digests are uniformly distributed: their first bytes are a perfect hash.
struct DigestHash {
  size_t operator()(const Digest& d) const {
    size_t h;
    std::memcpy(&h, d.data(), sizeof h);
    return h;
  }
};
using DigestSet = std::unordered_set<Digest, DigestHash>;
template <class V>
using DigestMap = std::unordered_map<Digest, V, DigestHash>;

class Sha256 {
public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void reset();
  void update(ByteSpan data);
  Digest finish();           // resets afterwards
  Digest peek() const;       // digest of what was fed so far; state unchanged

private:
  EVP_MD_CTX* ctx_;
};

Digest sha256(ByteSpan data);
uint64_t xxh64(ByteSpan data); // XXH3-64, seed 0

// XXH3-64 (seed 0) over a stream of spans: digest() equals xxh64() of their
// concatenation. Owns its state (freed however the caller leaves).
class Xxh3Stream {
public:
  Xxh3Stream();
  ~Xxh3Stream();
  Xxh3Stream(const Xxh3Stream&) = delete;
  Xxh3Stream& operator=(const Xxh3Stream&) = delete;
  void update(ByteSpan data);
  uint64_t digest() const;

private:
  ::XXH3_state_s* state_;
};

std::string to_hex(ByteSpan data);
inline std::string to_hex(const Digest& d) { return to_hex(ByteSpan(d.data(), d.size())); }
std::optional<Digest> digest_from_hex(std::string_view hex);
bool is_hex(std::string_view s);

} // namespace hpak
