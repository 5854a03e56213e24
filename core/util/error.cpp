#include "core/util/error.hpp"

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

void throw_errno(const std::string& what, int err) {
  throw SystemError(what + ": " + std::strerror(err), err);
}

bool is_out_of_space(const std::exception& e) {
  auto* s = dynamic_cast<const SystemError*>(&e);
  return s && (s->code() == ENOSPC || s->code() == EDQUOT);
}

} // namespace hpak
