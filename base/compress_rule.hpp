// The rule for an object's stored form: "compress, else store raw".
// An object is stored as a zstd frame only when the level asks for
// compression (level > 0; 0 means "store uncompressed", and zstd itself would
// read 0 as its default level) and the frame is smaller than the raw bytes.
// Otherwise it is stored raw.
#pragma once

#include "base/bytes.hpp"

namespace hpak {

// True: `stored` holds the zstd frame of `raw` at `level`, smaller than `raw`.
// False: store `raw` as it is (`stored` is left empty).
bool compress_if_smaller(ByteSpan raw, int level, Bytes& stored);

} // namespace hpak
