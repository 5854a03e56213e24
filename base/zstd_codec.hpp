// zstd compression wrappers.
//
// Contexts are thread_local and reused (a fresh ZSTD_CCtx per small object costs
// more than compressing it). Decompression is always into a caller-provided
// buffer of the *declared* size: a frame that would produce more or fewer bytes
// is rejected, so a lying size can neither overflow memory nor pass silently.
#pragma once

#include <cstdint>
#include <string>
#include <functional>
#include <memory>

#include "base/bytes.hpp"

typedef struct ZSTD_CCtx_s ZSTD_CCtx;
typedef struct ZSTD_CDict_s ZSTD_CDict;
typedef struct ZSTD_DDict_s ZSTD_DDict;

namespace hpak {

// A dictionary usable for both directions (or, with `for_compression`
// false, for decompression only: cdict() is then null); immutable and
// thread-safe once built.
class ZstdDict {
public:
  ZstdDict(ByteSpan dict_bytes, int level, bool for_compression = true);
  ~ZstdDict();
  ZstdDict(const ZstdDict&) = delete;
  ZstdDict& operator=(const ZstdDict&) = delete;
  uint32_t id() const { return id_; }
  const ZSTD_CDict* cdict() const { return cdict_; }
  const ZSTD_DDict* ddict() const { return ddict_; }

private:
  ZSTD_CDict* cdict_ = nullptr;
  ZSTD_DDict* ddict_ = nullptr;
  uint32_t id_ = 0;
};

// Compresses `in` at `level` (with `dict` if given) into `out` (resized).
// Deterministic for the same input, level and dictionary.
void zstd_compress(ByteSpan in, int level, const ZstdDict* dict, Bytes& out);

// The same as zstd_compress, but the frame ends a zstd block at each of
// `cuts` (ascending offsets into `in`, each > 0 and < in.size()), so a
// reader decodes a prefix only up to the first cut past it: zstd decodes a
// block whole, whatever room the output has. The frame states its content
// size. Deterministic for the same input, cuts, level and dictionary.
void zstd_compress_cut(ByteSpan in, std::span<const size_t> cuts, int level, const ZstdDict* dict, Bytes& out);

// Decompresses one frame into exactly `out.size()` bytes. Throws Error with
// `what` in the message if the frame is malformed or its size differs.
void zstd_decompress(ByteSpan in, std::span<uint8_t> out, const ZstdDict* dict, const std::string& what);

// Compresses `in` with `base`'s bytes as its prefix (zstd --patch-from):
// long-distance matching on, a window covering both. `base.size() +
// in.size()` must be at most 2^27 bytes. Deterministic.
void zstd_compress_against(ByteSpan in, ByteSpan base, int level, Bytes& out);
// Decompresses such a frame with the same `base` into exactly `out.size()`
// bytes; the same checks and messages as zstd_decompress.
void zstd_decompress_against(ByteSpan in, ByteSpan base, std::span<uint8_t> out, const std::string& what);

// Dictionary ID the frame was compressed with (0 if none or unreadable).
uint32_t zstd_frame_dict_id(ByteSpan frame);

// Streaming decompression for objects too large to hold in memory: calls
// `sink` with consecutive chunks; fails if the total differs from `expected`.
void zstd_decompress_stream(ByteSpan in, uint64_t expected, const ZstdDict* dict, const std::string& what,
                            const std::function<void(ByteSpan)>& sink);
// The same over a frame that arrives in pieces: `next` gives the next piece
// of the frame (empty once there is no more), each valid until the next call;
// the same checks and messages.
void zstd_decompress_chunks(const std::function<ByteSpan()>& next, uint64_t expected, const ZstdDict* dict, const std::string& what,
                            const std::function<void(ByteSpan)>& sink);
// zstd_decompress's first checks, on the first bytes of a frame: that it is
// one, and that its declared size (when it declares one) is `expected`.
void zstd_check_frame_size(ByteSpan frame_start, uint64_t expected, const std::string& what);

// Streaming compression of an object too large to hold in memory, as one
// standard zstd frame of exactly `size` bytes, through zstd's own worker
// threads (at least one: the frame's bytes then do not depend on how many).
// Output goes to the sink given to each call, in chunks of a reused 4 MiB
// buffer. The context is freed with the object, also when a sink throws.
class ZstdStreamCompressor {
public:
  // `what` names the object in error messages.
  ZstdStreamCompressor(int level, uint64_t size, unsigned workers, std::string what);
  ~ZstdStreamCompressor();
  ZstdStreamCompressor(const ZstdStreamCompressor&) = delete;
  ZstdStreamCompressor& operator=(const ZstdStreamCompressor&) = delete;
  // Compresses the next bytes of the object.
  void feed(ByteSpan in, const std::function<void(ByteSpan)>& sink);
  // Ends the frame (after `size` bytes were fed).
  void finish(const std::function<void(ByteSpan)>& sink);

private:
  void run(ByteSpan in, bool end, const std::function<void(ByteSpan)>& sink);
  ZSTD_CCtx* c_;
  Bytes out_;
  std::string what_;
};

// Compresses samples of one input, reusing a context: the size zstd gives
// each at `level` with a window of 2^window_log bytes (a probe of how well a
// large file compresses). Deterministic.
class ZstdSampler {
public:
  ZstdSampler(int level, unsigned window_log, size_t max_sample, std::string what);
  ~ZstdSampler();
  ZstdSampler(const ZstdSampler&) = delete;
  ZstdSampler& operator=(const ZstdSampler&) = delete;
  size_t compressed_size(ByteSpan sample); // sample.size() <= max_sample

private:
  ZSTD_CCtx* c_;
  Bytes out_;
  std::string what_;
};

// The window (log2 of its bytes) zstd uses at `level` for `size` bytes.
unsigned zstd_window_log(int level, uint64_t size);

// Trains a dictionary from samples (concatenated in `samples`, sizes in
// `sizes`) of at most `capacity` bytes; returns empty on failure. Deterministic.
Bytes zstd_train_dict(const Bytes& samples, const std::vector<size_t>& sizes, size_t capacity, int level);

} // namespace hpak
