// The one interface to where a published library lives (man/hpak-format.5,
// "REMOTE LAYOUT"): a directory, an HTTP(S) server, an S3 bucket. Fetch and
// publish see a remote only through it; each kind is one folder of
// core/remote/ and one row of the scheme table (core/remote/schemes.hpp).
//
// Objects are named by relative paths ("HPAKROOT", "packs/pack-<hex>.hpak";
// core/remote/remote_layout.hpp gives every name). What each call may throw
// besides an Error of the local system (a spool file, a full disk):
//
//   call        NotFound  Denied  Transient  Protocol  Unsupported
//   get            x        x        x          x
//   get_range      x        x        x          x
//   get_many       x        x        x          x
//   put                     x        x          x          x
//   list                    x        x          x          x
//   remove                  x        x          x          x
//
// Every one is a RemoteError (an hpak::Error): its message is one line naming
// the object's URL (or path) and the reason; kind() tells them apart.
// Transient errors were already retried by the backend (HTTP: `attempts`).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/bytes.hpp"
#include "base/error.hpp"
#include "base/hash.hpp"

namespace hpak::remote {

enum class RemoteErrc {
  NotFound,    // no such object (HTTP 404/410, ENOENT): a remote gc may have removed it
  Denied,      // credentials refused (HTTP 401/403, EACCES)
  Transient,   // a reset, a timeout, a 5xx, a 429 ... still failing after the retries
  Protocol,    // an answer that is not what was asked (compressed, short, too long, another range)
  Unsupported, // the backend cannot do this (no listing over HTTP, no writes over HTTP)
};

class RemoteError : public Error {
public:
  // `message`: the whole one-line message; `where`: the object's URL or path;
  // `reason`: why, alone ("HTTP 404", "no such file").
  RemoteError(RemoteErrc kind, std::string where, std::string reason, const std::string& message)
      : Error(message), kind_(kind), where_(std::move(where)), reason_(std::move(reason)) {}
  RemoteErrc kind() const { return kind_; }
  const std::string& where() const { return where_; }
  const std::string& reason() const { return reason_; }

private:
  RemoteErrc kind_;
  std::string where_, reason_;
};

// One type per kind, to catch the one a caller handles.
template <RemoteErrc K>
class RemoteErrorOf : public RemoteError {
public:
  RemoteErrorOf(std::string where, std::string reason, const std::string& message)
      : RemoteError(K, std::move(where), std::move(reason), message) {}
};
using RemoteNotFound = RemoteErrorOf<RemoteErrc::NotFound>;
using RemoteDenied = RemoteErrorOf<RemoteErrc::Denied>;
using RemoteTransient = RemoteErrorOf<RemoteErrc::Transient>;
using RemoteProtocol = RemoteErrorOf<RemoteErrc::Protocol>;
using RemoteUnsupported = RemoteErrorOf<RemoteErrc::Unsupported>;

// Throws the RemoteError type of `kind`.
[[noreturn]] void throw_remote(RemoteErrc kind, const std::string& where, const std::string& reason, const std::string& message);

// Where a body goes instead of memory (an index written to its file as it
// arrives). start() opens each attempt, data() takes each piece in order;
// an Error thrown by either fails the read at once (no retry).
class BodySink {
public:
  virtual ~BodySink() = default;
  virtual void start() = 0;
  virtual void data(ByteSpan piece) = 0;
};

// One read of get_many: a whole object, or bytes [offset, offset + length) of it.
struct GetRequest {
  std::string name;
  bool ranged = false;
  uint64_t offset = 0, length = 0; // ranged
  uint64_t object_size = 0;        // ranged: the whole object's size, when known (an HTTP server
                                   // that ignores Range is then read by whole objects)
  uint64_t max_size = 0;           // whole: refuse a larger object
  BodySink* sink = nullptr;        // whole: the bytes go there (done() then gets an empty body)
  bool fresh = false;              // whole: bypass caches (the root, the only mutable object)
};

struct RemoteEntry {
  std::string name; // relative to the remote's base, like every name here
  uint64_t size = 0;
};

struct BackendStats {
  uint64_t requests = 0; // reads and writes sent (HTTP: attempts)
  uint64_t retries = 0;
  uint64_t bytes = 0;    // bytes received, discarded ones included
};

class Backend {
public:
  virtual ~Backend() = default;

  // The object's URL or path, for messages.
  virtual std::string where(const std::string& name) const = 0;

  // Every read of `reqs`, in parallel where the transport can; `done(i, body)`
  // gets each body (exactly `length` bytes when ranged) as it completes, in
  // any order. An exception from `done` propagates (reads still running are
  // dropped first).
  virtual void get_many(const std::vector<GetRequest>& reqs, const std::function<void(size_t, Bytes&)>& done) = 0;
  // The whole object (at most `max_size` bytes).
  Bytes get(const std::string& name, uint64_t max_size, bool fresh = false);
  // Bytes [offset, offset + length) of the object (`object_size`: see GetRequest).
  Bytes get_range(const std::string& name, uint64_t offset, uint64_t length, uint64_t object_size = 0);

  // Writes the object atomically (a reader sees the old object or the whole
  // new one, never part of it) and durably (it survives a power loss once
  // put returns). With `want`, the SHA-256 of the bytes as they are read is
  // checked first: a mismatch writes nothing and throws DigestMismatch.
  virtual void put(const std::string& name, ByteSpan bytes, const Digest* want = nullptr) = 0;
  // The objects whose names start with `prefix`, sorted by name.
  virtual std::vector<RemoteEntry> list(const std::string& prefix) = 0;
  // Removes the object; one that is not there is not an error.
  virtual void remove(const std::string& name) = 0;
  // The removes so far survive a power loss.
  virtual void sync() {}
  // Holds the remote's writer lock named `name` for the backend's life (one
  // publish at a time); a backend that has none takes the writer on trust.
  virtual void lock_writers(const std::string& name) { (void)name; }

  virtual BackendStats stats() const { return {}; }
};

// put's `want` did not match the bytes.
class DigestMismatch : public Error {
public:
  using Error::Error;
};

} // namespace hpak::remote
