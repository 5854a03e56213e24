// libcurl's functions as hpak calls them: from the library loaded when the
// first transfer needs it (HPAK_CURL_DLOPEN: Linux, where libcurl.so.4 and the
// ~25 libraries it pulls in cost every process about 3 ms of CPU to map at
// start, measured with `perf stat` on an empty program linked with and without
// -lcurl), or linked in (Windows: a static libcurl).
#pragma once

#include <curl/curl.h>

namespace hpak::curl {

// Every libcurl function hpak uses, as curl_<name>.
#define HPAK_CURL_FUNCTIONS(X)                                                                                          \
  X(global_init) X(easy_init) X(easy_cleanup) X(easy_setopt) X(easy_getinfo) X(easy_perform) X(easy_strerror)           \
  X(multi_init) X(multi_cleanup) X(multi_setopt) X(multi_add_handle) X(multi_remove_handle) X(multi_perform)             \
  X(multi_poll) X(multi_info_read) X(slist_append) X(slist_free_all) X(url) X(url_set) X(url_get) X(url_cleanup) X(free)

struct Api {
#define HPAK_CURL_MEMBER(f) decltype(&::curl_##f) f = nullptr;
  HPAK_CURL_FUNCTIONS(HPAK_CURL_MEMBER)
#undef HPAK_CURL_MEMBER
};

// The functions, libcurl loaded and curl_global_init run on the first call;
// throws Error saying which library could not be loaded, and why.
const Api& api();

} // namespace hpak::curl
