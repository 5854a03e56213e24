#include "base/hash.hpp"

#include <new>
#include <openssl/evp.h>
#include <xxhash.h>

namespace hpak {

static const EVP_MD* sha256_md() {
  static const EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_) throw Error("out of memory creating a SHA-256 context");
  reset();
}
Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::reset() {
  if (EVP_DigestInit_ex(ctx_, sha256_md(), nullptr) != 1) throw Error("SHA-256 init failed");
}

void Sha256::update(ByteSpan data) {
  if (!data.empty() && EVP_DigestUpdate(ctx_, data.data(), data.size()) != 1) throw Error("SHA-256 update failed");
}

Digest Sha256::finish() {
  Digest d{};
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_, d.data(), &len) != 1 || len != d.size()) throw Error("SHA-256 final failed");
  reset();
  return d;
}

Digest Sha256::peek() const {
  EVP_MD_CTX* copy = EVP_MD_CTX_new();
  if (!copy || EVP_MD_CTX_copy_ex(copy, ctx_) != 1) {
    EVP_MD_CTX_free(copy);
    throw Error("SHA-256 copy failed");
  }
  Digest d{};
  unsigned int len = 0;
  int ok = EVP_DigestFinal_ex(copy, d.data(), &len);
  EVP_MD_CTX_free(copy);
  if (ok != 1) throw Error("SHA-256 final failed");
  return d;
}

Digest sha256(ByteSpan data) {
  Digest d{};
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), d.data(), &len, sha256_md(), nullptr) != 1) throw Error("SHA-256 failed");
  return d;
}

uint64_t xxh64(ByteSpan data) { return XXH3_64bits(data.data(), data.size()); }

Xxh3Stream::Xxh3Stream() : state_(XXH3_createState()) {
  if (!state_) throw std::bad_alloc();
  XXH3_64bits_reset(state_);
}

Xxh3Stream::~Xxh3Stream() { XXH3_freeState(state_); }

void Xxh3Stream::update(ByteSpan data) { XXH3_64bits_update(state_, data.data(), data.size()); }

uint64_t Xxh3Stream::digest() const { return XXH3_64bits_digest(state_); }

std::string to_hex(ByteSpan data) {
  static const char* digits = "0123456789abcdef";
  std::string s(data.size() * 2, '0');
  for (size_t i = 0; i < data.size(); i++) {
    s[2 * i] = digits[data[i] >> 4];
    s[2 * i + 1] = digits[data[i] & 15];
  }
  return s;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool is_hex(std::string_view s) {
  for (char c : s)
    if (hexval(c) < 0) return false;
  return !s.empty();
}

std::optional<Digest> digest_from_hex(std::string_view hex) {
  if (hex.size() != 64 || !is_hex(hex)) return std::nullopt;
  Digest d{};
  for (size_t i = 0; i < 32; i++) d[i] = uint8_t(hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]));
  return d;
}

} // namespace hpak
