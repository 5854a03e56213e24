#include "base/zstd_codec.hpp"

#define ZSTD_STATIC_LINKING_ONLY
#define ZDICT_STATIC_LINKING_ONLY
#include <zdict.h>
#include <zstd.h>

#include <algorithm>

#include "base/thread_cache.hpp"
#include <new>

namespace hpak {

namespace {
struct CCtxHolder {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ~CCtxHolder() { ZSTD_freeCCtx(c); }
};
struct DCtxHolder {
  ZSTD_DCtx* d = ZSTD_createDCtx();
  ~DCtxHolder() { ZSTD_freeDCtx(d); }
};
ZSTD_CCtx* cctx() {
  return per_thread([] { return CCtxHolder{}; }).c;
}
ZSTD_DCtx* dctx() {
  return per_thread([] { return DCtxHolder{}; }).d;
}
} // namespace

ZstdDict::ZstdDict(ByteSpan dict_bytes, int level, bool for_compression) {
  if (for_compression) cdict_ = ZSTD_createCDict(dict_bytes.data(), dict_bytes.size(), level);
  ddict_ = ZSTD_createDDict(dict_bytes.data(), dict_bytes.size());
  id_ = ZDICT_getDictID(dict_bytes.data(), dict_bytes.size());
  if ((for_compression && !cdict_) || !ddict_ || id_ == 0) {
    ZSTD_freeCDict(cdict_);
    ZSTD_freeDDict(ddict_);
    throw Error("invalid zstd dictionary");
  }
}

ZstdDict::~ZstdDict() {
  ZSTD_freeCDict(cdict_);
  ZSTD_freeDDict(ddict_);
}

void zstd_compress(ByteSpan in, int level, const ZstdDict* dict, Bytes& out) {
  out.resize(ZSTD_compressBound(in.size()));
  ZSTD_CCtx* c = cctx();
  size_t n;
  if (dict) {
    // The dictionary's tables attached, not copied into the context for
    // each input (zstd copies them above 32 KiB at level 3: a block's cost).
    ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
    ZSTD_CCtx_refCDict(c, dict->cdict());
    ZSTD_CCtx_setParameter(c, ZSTD_c_forceAttachDict, ZSTD_dictForceAttach);
    n = ZSTD_compress2(c, out.data(), out.size(), in.data(), in.size());
    ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
  } else {
    n = ZSTD_compressCCtx(c, out.data(), out.size(), in.data(), in.size(), level);
  }
  if (ZSTD_isError(n)) throw Error(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
  out.resize(n);
}

namespace {
// Feeds in[from, to) and ends it with `op` (a flush ends a zstd block).
void compress_span(ZSTD_CCtx* c, ByteSpan in, size_t from, size_t to, ZSTD_EndDirective op, ZSTD_outBuffer& ob) {
  ZSTD_inBuffer ib{in.data() + from, to - from, 0};
  for (;;) {
    size_t left = ZSTD_compressStream2(c, &ob, &ib, op);
    if (ZSTD_isError(left)) throw Error(std::string("zstd compression failed: ") + ZSTD_getErrorName(left));
    if (left == 0 && ib.pos == ib.size) return;
    if (ob.pos == ob.size) throw Error("internal error: zstd output past its bound");
  }
}
} // namespace

void zstd_compress_cut(ByteSpan in, std::span<const size_t> cuts, int level, const ZstdDict* dict, Bytes& out) {
  // Each flush may add a block header and tables: room for them beyond the bound.
  out.resize(ZSTD_compressBound(in.size()) + 64 * (cuts.size() + 1));
  ZSTD_CCtx* c = cctx();
  ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
  if (dict) {
    ZSTD_CCtx_refCDict(c, dict->cdict());
    ZSTD_CCtx_setParameter(c, ZSTD_c_forceAttachDict, ZSTD_dictForceAttach);
  }
  ZSTD_CCtx_setPledgedSrcSize(c, in.size());
  ZSTD_outBuffer ob{out.data(), out.size(), 0};
  size_t from = 0;
  try {
    for (size_t cut : cuts) {
      if (cut <= from || cut >= in.size()) throw Error("internal error: zstd cut out of order");
      compress_span(c, in, from, cut, ZSTD_e_flush, ob);
      from = cut;
    }
    compress_span(c, in, from, in.size(), ZSTD_e_end, ob);
  } catch (...) {
    ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
    throw;
  }
  ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
  out.resize(ob.pos);
}

void zstd_decompress(ByteSpan in, std::span<uint8_t> out, const ZstdDict* dict, const std::string& what) {
  zstd_check_frame_size(in, out.size(), what);
  size_t n;
  if (dict) n = ZSTD_decompress_usingDDict(dctx(), out.data(), out.size(), in.data(), in.size(), dict->ddict());
  else n = ZSTD_decompressDCtx(dctx(), out.data(), out.size(), in.data(), in.size());
  if (ZSTD_isError(n)) throw Error(what + ": zstd: " + ZSTD_getErrorName(n));
  if (n != out.size()) throw Error(what + ": decompressed to " + std::to_string(n) + " bytes, expected " + std::to_string(out.size()));
}

namespace {
unsigned window_log_for(uint64_t bytes) {
  unsigned log = 10;
  while (log < 27 && (uint64_t(1) << log) < bytes) log++;
  return log;
}
} // namespace

void zstd_compress_against(ByteSpan in, ByteSpan base, int level, Bytes& out) {
  if (base.size() + in.size() > (uint64_t(1) << 27)) throw Error("internal error: zstd_compress_against over 128 MiB");
  out.resize(ZSTD_compressBound(in.size()));
  ZSTD_CCtx* c = cctx();
  ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
  ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, int(window_log_for(base.size() + in.size())));
  ZSTD_CCtx_setParameter(c, ZSTD_c_enableLongDistanceMatching, 1);
  ZSTD_CCtx_refPrefix(c, base.data(), base.size());
  size_t n = ZSTD_compress2(c, out.data(), out.size(), in.data(), in.size());
  ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
  if (ZSTD_isError(n)) throw Error(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
  out.resize(n);
}

void zstd_decompress_against(ByteSpan in, ByteSpan base, std::span<uint8_t> out, const std::string& what) {
  zstd_check_frame_size(in, out.size(), what);
  ZSTD_DCtx* d = dctx();
  ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
  ZSTD_DCtx_refPrefix(d, base.data(), base.size());
  size_t n = ZSTD_decompressDCtx(d, out.data(), out.size(), in.data(), in.size());
  ZSTD_DCtx_refPrefix(d, nullptr, 0); // a frame that failed midway leaves it referenced: drop it
  if (ZSTD_isError(n)) throw Error(what + ": zstd: " + ZSTD_getErrorName(n));
  if (n != out.size()) throw Error(what + ": decompressed to " + std::to_string(n) + " bytes, expected " + std::to_string(out.size()));
}

uint32_t zstd_frame_dict_id(ByteSpan frame) { return ZSTD_getDictID_fromFrame(frame.data(), frame.size()); }

void zstd_decompress_stream(ByteSpan in, uint64_t expected, const ZstdDict* dict, const std::string& what,
                            const std::function<void(ByteSpan)>& sink) {
  bool given = false;
  zstd_decompress_chunks([&] { return given ? ByteSpan() : (given = true, in); }, expected, dict, what, sink);
}

void zstd_check_frame_size(ByteSpan frame_start, uint64_t expected, const std::string& what) {
  unsigned long long declared = ZSTD_getFrameContentSize(frame_start.data(), frame_start.size());
  if (declared == ZSTD_CONTENTSIZE_ERROR) throw Error(what + ": not a zstd frame");
  if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != expected)
    throw Error(what + ": zstd frame declares " + std::to_string(declared) + " bytes, entry declares " + std::to_string(expected));
}

namespace {
// The dictionary a streaming decompression referenced, dropped however it ends.
struct DictRef {
  ZSTD_DCtx* d;
  ~DictRef() { ZSTD_DCtx_refDDict(d, nullptr); }
};
} // namespace

void zstd_decompress_chunks(const std::function<ByteSpan()>& next, uint64_t expected, const ZstdDict* dict, const std::string& what,
                            const std::function<void(ByteSpan)>& sink) {
  ZSTD_DCtx* d = dctx();
  ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
  ZSTD_DCtx_refDDict(d, dict ? dict->ddict() : nullptr);
  DictRef ref{d};
  Bytes& buf = per_thread([] { return Bytes{}; }); // reused: 4 MiB per thread, allocated once
  buf.resize(4u << 20);
  ByteSpan chunk = next();
  ZSTD_inBuffer ib{chunk.data(), chunk.size(), 0};
  uint64_t total = 0;
  while (true) {
    ZSTD_outBuffer ob{buf.data(), buf.size(), 0};
    size_t ret = ZSTD_decompressStream(d, &ob, &ib);
    if (ZSTD_isError(ret)) throw Error(what + ": zstd: " + ZSTD_getErrorName(ret));
    total += ob.pos;
    if (total > expected) throw Error(what + ": decompresses to more than the declared " + std::to_string(expected) + " bytes");
    if (ob.pos) sink(ByteSpan(buf.data(), ob.pos));
    if (ret == 0) break;
    if (ib.pos == ib.size && (chunk = next()).size() > 0) ib = ZSTD_inBuffer{chunk.data(), chunk.size(), 0};
    if (ib.pos == ib.size && ob.pos < ob.size) throw Error(what + ": truncated zstd frame");
  }
  if (ib.pos != ib.size || next().size() > 0) throw Error(what + ": trailing bytes after zstd frame");
  if (total != expected) throw Error(what + ": decompressed to " + std::to_string(total) + " bytes, expected " + std::to_string(expected));
}

namespace {
ZSTD_CCtx* new_cctx() {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  if (!c) throw std::bad_alloc();
  return c;
}
} // namespace

ZstdStreamCompressor::ZstdStreamCompressor(int level, uint64_t size, unsigned workers, std::string what)
    : c_(new_cctx()), what_(std::move(what)) {
  ZSTD_CCtx_setParameter(c_, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(c_, ZSTD_c_nbWorkers, int(std::max(1u, workers))); // fails (0 stays) without libzstd MT
  ZSTD_CCtx_setPledgedSrcSize(c_, size);
  out_.resize(4u << 20);
}

ZstdStreamCompressor::~ZstdStreamCompressor() { ZSTD_freeCCtx(c_); }

void ZstdStreamCompressor::feed(ByteSpan in, const std::function<void(ByteSpan)>& sink) { run(in, false, sink); }

void ZstdStreamCompressor::finish(const std::function<void(ByteSpan)>& sink) { run(ByteSpan(), true, sink); }

void ZstdStreamCompressor::run(ByteSpan piece, bool end, const std::function<void(ByteSpan)>& sink) {
  ZSTD_inBuffer in{piece.data(), piece.size(), 0};
  size_t rem;
  do {
    ZSTD_outBuffer ob{out_.data(), out_.size(), 0};
    rem = ZSTD_compressStream2(c_, &ob, &in, end ? ZSTD_e_end : ZSTD_e_continue);
    if (ZSTD_isError(rem)) throw Error("zstd compression failed for '" + what_ + "': " + ZSTD_getErrorName(rem));
    if (ob.pos) sink(ByteSpan(out_.data(), ob.pos));
  } while (end ? rem != 0 : in.pos < in.size);
}

ZstdSampler::ZstdSampler(int level, unsigned window_log, size_t max_sample, std::string what)
    : c_(new_cctx()), what_(std::move(what)) {
  ZSTD_CCtx_setParameter(c_, ZSTD_c_compressionLevel, level);
  ZSTD_CCtx_setParameter(c_, ZSTD_c_windowLog, int(window_log));
  out_.resize(ZSTD_compressBound(max_sample));
}

ZstdSampler::~ZstdSampler() { ZSTD_freeCCtx(c_); }

size_t ZstdSampler::compressed_size(ByteSpan sample) {
  size_t n = ZSTD_compress2(c_, out_.data(), out_.size(), sample.data(), sample.size());
  if (ZSTD_isError(n)) throw Error("zstd compression failed for '" + what_ + "': " + ZSTD_getErrorName(n));
  return n;
}

unsigned zstd_window_log(int level, uint64_t size) { return ZSTD_getCParams(level, size, 0).windowLog; }

Bytes zstd_train_dict(const Bytes& samples, const std::vector<size_t>& sizes, size_t capacity, int level) {
  Bytes dict(capacity);
  ZDICT_fastCover_params_t p{};
  p.k = 200;
  p.d = 8;
  p.f = 20;
  p.steps = 0;
  p.nbThreads = 1; // determinism
  p.accel = 1;
  p.zParams.compressionLevel = level;
  p.zParams.notificationLevel = 0;
  size_t n = ZDICT_trainFromBuffer_fastCover(dict.data(), dict.size(), samples.data(), sizes.data(),
                                             unsigned(sizes.size()), p);
  if (ZDICT_isError(n)) return {};
  dict.resize(n);
  return dict;
}

} // namespace hpak
