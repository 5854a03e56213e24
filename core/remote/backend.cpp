#include "core/remote/backend.hpp"

namespace hpak::remote {

void throw_remote(RemoteErrc kind, const std::string& where, const std::string& reason, const std::string& message) {
  switch (kind) {
  case RemoteErrc::NotFound: throw RemoteNotFound(where, reason, message);
  case RemoteErrc::Denied: throw RemoteDenied(where, reason, message);
  case RemoteErrc::Transient: throw RemoteTransient(where, reason, message);
  case RemoteErrc::Protocol: throw RemoteProtocol(where, reason, message);
  case RemoteErrc::Unsupported: throw RemoteUnsupported(where, reason, message);
  }
  throw RemoteError(kind, where, reason, message);
}

namespace {
Bytes get_one(Backend& b, const GetRequest& r) {
  Bytes out;
  b.get_many({r}, [&](size_t, Bytes& body) { out = std::move(body); });
  return out;
}
} // namespace

Bytes Backend::get(const std::string& name, uint64_t max_size, bool fresh) {
  GetRequest r;
  r.name = name;
  r.max_size = max_size;
  r.fresh = fresh;
  return get_one(*this, r);
}

Bytes Backend::get_range(const std::string& name, uint64_t offset, uint64_t length, uint64_t object_size) {
  GetRequest r;
  r.name = name;
  r.ranged = true;
  r.offset = offset;
  r.length = length;
  r.object_size = object_size;
  return get_one(*this, r);
}

} // namespace hpak::remote
