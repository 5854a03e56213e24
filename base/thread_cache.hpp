// Per-thread objects (zstd contexts, buffers, caches) that live until their
// thread ends: `auto& x = per_thread([] { return Thing{...}; });` — one object
// per call site and thread, made by the lambda on the thread's first call.
//
// On Linux this is a plain thread_local. On Windows (issue 30), mingw-w64's
// GCC keeps thread_locals in emulated TLS, whose storage can be freed at
// thread exit before the destructors of the thread_locals in it run (they
// then read freed memory and crash): there the object is on the heap and a
// fiber-local storage callback (FlsAlloc) deletes it when its thread ends.
#pragma once

namespace hpak {

#if defined(_WIN32)
// Runs fn(arg) when the calling thread ends (base/thread_cache.cpp).
void at_thread_exit(void (*fn)(void*), void* arg);
#endif

template <class Make>
auto& per_thread(Make make) {
  using T = decltype(make());
#if defined(_WIN32)
  thread_local T* p = nullptr;
  if (!p) {
    p = new T(make());
    at_thread_exit([](void* x) { delete static_cast<T*>(x); }, p);
  }
  return *p;
#else
  thread_local T v = make();
  return v;
#endif
}

} // namespace hpak
