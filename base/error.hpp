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
#include <string_view>

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

// A failed system call: the message, and the errno it failed with (so a
// caller can tell a full disk from other failures).
class SystemError : public Error {
public:
  SystemError(const std::string& message, int err) : Error(message), err_(err) {}
  int code() const { return err_; }

private:
  int err_;
};

// Throws SystemError("<what>: <strerror(errno)>").
// strerror(3), with texts for the errno values Windows' C runtime does not name (EOPNOTSUPP, ELOOP...).
std::string error_text(int err);
[[noreturn]] void throw_errno(const std::string& what);
[[noreturn]] void throw_errno(const std::string& what, int err);

// True when `e` is a SystemError for lack of space (ENOSPC, EDQUOT).
bool is_out_of_space(const std::exception& e);

// A string as a message shows it: between single quotes, every control
// character escaped (\n, \t, \xNN), and when it is longer than `max_chars`
// bytes, its first `max_chars` and its length ("'aaa...' (5000 bytes)"), so
// that whatever a user or a hostile file put in a name, the message stays one
// short line.
std::string quoted(std::string_view s, size_t max_chars = 80);
// `s` with its control characters escaped as quoted() does (no quotes, no
// truncation): a message made of pieces that were not all quoted stays one line.
std::string escape_controls(std::string_view s);

} // namespace hpak
