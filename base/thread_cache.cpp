// base/thread_cache.hpp: the thread-exit callbacks of Windows (nothing on Linux).
#include "base/thread_cache.hpp"

#if defined(_WIN32)
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>

#include <utility>
#include <vector>

namespace hpak {

namespace {

using Exits = std::vector<std::pair<void (*)(void*), void*>>;

void WINAPI run_exits(void* p) {
  auto* exits = static_cast<Exits*>(p);
  if (!exits) return;
  for (auto it = exits->rbegin(); it != exits->rend(); ++it) it->first(it->second);
  delete exits;
}

DWORD exits_index() {
  static const DWORD index = FlsAlloc(run_exits);
  return index;
}

} // namespace

void at_thread_exit(void (*fn)(void*), void* arg) {
  auto* exits = static_cast<Exits*>(FlsGetValue(exits_index()));
  if (!exits) {
    exits = new Exits;
    FlsSetValue(exits_index(), exits);
  }
  exits->emplace_back(fn, arg);
}

} // namespace hpak
#endif
