// base/zstd_codec: the streaming compressor makes one frame that
// decompresses to its input, the same bytes whatever the worker count, and
// frees its context when the sink throws mid-stream (run under ASan, a leak
// fails the test binary).
#include <doctest/doctest.h>
#include <stdexcept>

#include "base/zstd_codec.hpp"
#include "fixture_data.hpp"

using namespace hpak;

namespace {

// 12 MiB: text-like (compressible) then random (not), so the frame takes
// several 4 MiB output chunks.
Bytes stream_input() {
  fx::Rng rng(7);
  Bytes in = fx::make_content(rng, 6u << 20, true);
  Bytes noise = fx::make_content(rng, 6u << 20, false);
  in.insert(in.end(), noise.begin(), noise.end());
  return in;
}

Bytes compress_stream(ByteSpan in, int level, unsigned workers, size_t piece) {
  Bytes frame;
  auto sink = [&](ByteSpan chunk) { frame.insert(frame.end(), chunk.begin(), chunk.end()); };
  ZstdStreamCompressor z(level, in.size(), workers, "test");
  for (size_t at = 0; at < in.size(); at += piece) z.feed(in.subspan(at, std::min(piece, in.size() - at)), sink);
  z.finish(sink);
  return frame;
}

} // namespace

TEST_CASE("ZstdStreamCompressor: one frame of the input, bytes independent of workers and piece size") {
  Bytes in = stream_input();
  Bytes a = compress_stream(in, 3, 1, 8u << 20);
  Bytes b = compress_stream(in, 3, 3, 1u << 20);
  CHECK(a == b);
  CHECK(a.size() < in.size());
  Bytes back(in.size());
  zstd_decompress(a, back, nullptr, "frame");
  CHECK(back == in);
}

TEST_CASE("ZstdStreamCompressor: a sink throwing mid-stream leaks nothing") {
  Bytes in = stream_input();
  for (unsigned workers : {1u, 2u}) {
    CAPTURE(workers);
    int calls = 0;
    auto sink = [&](ByteSpan) {
      if (++calls == 1) throw std::runtime_error("disk full");
    };
    auto compress = [&] {
      ZstdStreamCompressor z(3, in.size(), workers, "test");
      for (size_t at = 0; at < in.size(); at += 1u << 20) z.feed(ByteSpan(in).subspan(at, 1u << 20), sink);
      z.finish(sink);
    };
    CHECK_THROWS_WITH_AS(compress(), "disk full", std::runtime_error);
    CHECK(calls == 1);
  }
}

TEST_CASE("ZstdSampler: the compressed size of each sample at an explicit window") {
  Bytes in = stream_input();
  ZstdSampler z(1, zstd_window_log(19, in.size()), 4u << 20, "test");
  size_t text = z.compressed_size(ByteSpan(in).first(4u << 20));
  size_t noise = z.compressed_size(ByteSpan(in).last(4u << 20));
  CHECK(text < (4u << 20) / 2);
  CHECK(noise >= (4u << 20) * 99 / 100);
  CHECK(z.compressed_size(ByteSpan(in).first(4u << 20)) == text); // reused: the same answer
  CHECK(zstd_window_log(1, 1u << 30) < zstd_window_log(19, 1u << 30));
}
