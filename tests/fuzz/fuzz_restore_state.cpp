// Fuzzes read_state (TARGET/.hpak-state) on arbitrary file contents, as the
// input is and with a correct XXH3 check appended (so the fuzzer gets past
// the checksum to the parser), and decodes an accepted state's embedded
// catalog the way a dirty restore does.
//
// read_state must return nullopt (never throw, crash or allocate without
// bound) for anything it cannot use.
#include "core/restore/restore_state.hpp"
#include "fuzz_common.hpp"

using namespace hpak;

static void exercise(int dirfd, const std::string& path, const uint8_t* data, size_t size) {
  fuzz::write_file(path, data, size);
  std::optional<RestoreState> s = read_state(dirfd);
  if (!s) return;
  try {
    formats::decode_catalog(s->catalog_raw(), "fuzz/.hpak-state");
  } catch (const Error&) {
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = fuzz::scratch_dir("fuzz-state");
  static int dirfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  FUZZ_CHECK(dirfd >= 0, "open %s", dir.c_str());
  std::string path = dir + "/" + kStateName;
  exercise(dirfd, path, data, size);
  Bytes sealed(data, data + size);
  put_u64(sealed, xxh64(ByteSpan(data, size)));
  exercise(dirfd, path, sealed.data(), sealed.size());
  return 0;
}
