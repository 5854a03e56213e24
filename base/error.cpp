#include "base/error.hpp"

#include <cerrno>
#include <cstring>

namespace hpak {

static std::string corrupt_message(const std::string& where, uint64_t offset, const std::string& why) {
  std::string msg;
  if (!where.empty()) msg += "'" + where + "'";
  else msg += "buffer";
  msg += " at offset " + std::to_string(offset) + ": " + why;
  return msg;
}

Corrupt::Corrupt(const std::string& where, uint64_t offset, const std::string& why)
    : Error(corrupt_message(where, offset, why)), where_(where), offset_(offset), why_(why) {}

void throw_errno(const std::string& what) { throw_errno(what, errno); }

// strerror(3). Windows' C runtime has texts for the errno values up to
// EILSEQ only ("Unknown error" for the rest): the ones its os layer sets
// (base/os/windows) are named here.
std::string error_text(int err) {
#if defined(_WIN32)
  switch (err) {
  case ELOOP: return "Too many levels of symbolic links";
  case EOPNOTSUPP: return "Operation not supported";
  case EWOULDBLOCK: return "Resource temporarily unavailable";
  default: break;
  }
#endif
  return std::strerror(err);
}

void throw_errno(const std::string& what, int err) {
  throw SystemError(what + ": " + error_text(err), err);
}

// Windows' C runtime has no EDQUOT (a quota there is ERROR_DISK_QUOTA_EXCEEDED, for its os layer to map).
#ifdef EDQUOT
constexpr int kQuotaErrno = EDQUOT;
#else
constexpr int kQuotaErrno = ENOSPC;
#endif

bool is_out_of_space(const std::exception& e) {
  auto* s = dynamic_cast<const SystemError*>(&e);
  return s && (s->code() == ENOSPC || s->code() == kQuotaErrno);
}

std::string escape_controls(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c < 0x20 || c == 0x7f) {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += char(c);
    }
  }
  return out;
}

std::string quoted(std::string_view s, size_t max_chars) {
  if (s.size() <= max_chars) return "'" + escape_controls(s) + "'";
  return "'" + escape_controls(s.substr(0, max_chars)) + "...' (" + std::to_string(s.size()) + " bytes)";
}

} // namespace hpak
