// libzip's functions as rcc import calls them (the only user of libzip): from
// the library loaded when the first zip is opened (HPAK_ZIP_DLOPEN: Linux,
// where libzip.so.4 and what it pulls in, a second libcrypto among them, cost
// every hpak process their mapping and relocation at start), or linked in
// (Windows). Mirrors core/remote/http/curl_api.hpp.
#pragma once

#include <zip.h>

namespace hpak::zip {

// Every libzip function hpak uses, as zip_<name>.
#define HPAK_ZIP_FUNCTIONS(X)                                                                                           \
  X(open) X(discard) X(error_init_with_code) X(error_strerror) X(error_fini) X(get_num_entries) X(get_name)             \
  X(file_get_external_attributes) X(stat_init) X(stat_index) X(fopen_index) X(strerror) X(fread) X(fclose)             \
  X(file_get_error)

struct Api {
#define HPAK_ZIP_MEMBER(f) decltype(&::zip_##f) f = nullptr;
  HPAK_ZIP_FUNCTIONS(HPAK_ZIP_MEMBER)
#undef HPAK_ZIP_MEMBER
};

// The functions, libzip loaded on the first call; throws Error saying which
// library could not be loaded, and why.
const Api& api();

} // namespace hpak::zip
