// Error types shared by every layer.
//
// Two tiers, as in ccache: low-level helpers throw `Error` (a recoverable failure
// with a one-line, user-facing message: what, where, why); format readers throw
// `Corrupt` (a subclass) when on-disk bytes are malformed, naming the file and the
// byte offset. Only cmd/main.cpp catches and prints them. No printing happens here.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace hpak {

class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// Malformed or damaged on-disk data. `where` is the file (may be empty for
// in-memory buffers), `offset` the byte offset the problem was found at.
class Corrupt : public Error {
public:
  Corrupt(const std::string& where, uint64_t offset, const std::string& why);
  const std::string& where() const { return where_; }
  uint64_t offset() const { return offset_; }
  const std::string& why() const { return why_; }

private:
  std::string where_;
  uint64_t offset_;
  std::string why_;
};

// Throws Error("<what>: <strerror(errno)>").
[[noreturn]] void throw_errno(const std::string& what);
[[noreturn]] void throw_errno(const std::string& what, int err);

} // namespace hpak
