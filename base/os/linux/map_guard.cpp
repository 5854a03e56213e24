#include "base/os/map_guard.hpp"

#include <atomic>
#include <csignal>
#include <cstdint>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>

namespace hpak::os {

namespace {
// A library of 10,000 packs maps a pack and an index file each.
constexpr size_t kSlots = 32768;

struct Slot {
  std::atomic<uintptr_t> begin{0}; // 0: free
  std::atomic<uintptr_t> end{0};
  std::atomic<bool> faulted{false};
};

Slot g_slots[kSlots];
std::atomic<size_t> g_hint{0};
struct sigaction g_previous {};
uintptr_t g_page_mask = 0;

void pass_on(int sig, siginfo_t* info, void* context) {
  if ((g_previous.sa_flags & SA_SIGINFO) && g_previous.sa_sigaction) {
    g_previous.sa_sigaction(sig, info, context);
    return;
  }
  if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
    return;
  }
  // Default disposition: returning re-executes the faulting read, which
  // now ends the process as SIGBUS would have.
  signal(sig, SIG_DFL);
}

Slot* slot_holding(uintptr_t addr) {
  for (auto& s : g_slots) {
    uintptr_t b = s.begin.load(std::memory_order_acquire);
    if (b && addr >= b && addr < s.end.load(std::memory_order_acquire)) return &s;
  }
  return nullptr;
}

bool zero_page_at(uintptr_t addr) {
  void* page = reinterpret_cast<void*>(addr & g_page_mask);
  size_t size = ~g_page_mask + 1;
  return mmap(page, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED;
}

void on_sigbus(int sig, siginfo_t* info, void* context) {
  auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  Slot* s = slot_holding(addr);
  if (s && zero_page_at(addr)) {
    s->faulted.store(true, std::memory_order_release);
    return;
  }
  pass_on(sig, info, context);
}

void install_handler() {
  g_page_mask = ~(uintptr_t(sysconf(_SC_PAGESIZE)) - 1);
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, &g_previous);
}
} // namespace

int guard_mapping(const void* addr, size_t size) {
  static std::once_flag installed;
  std::call_once(installed, install_handler);
  size_t start = g_hint.fetch_add(1, std::memory_order_relaxed);
  for (size_t i = 0; i < kSlots; i++) {
    size_t n = (start + i) % kSlots;
    uintptr_t expected = 0;
    Slot& s = g_slots[n];
    // Claim with a placeholder so the handler sees no half-written range.
    if (!s.begin.compare_exchange_strong(expected, UINTPTR_MAX, std::memory_order_acq_rel)) continue;
    s.faulted.store(false, std::memory_order_relaxed);
    s.end.store(reinterpret_cast<uintptr_t>(addr) + size, std::memory_order_release);
    s.begin.store(reinterpret_cast<uintptr_t>(addr), std::memory_order_release);
    g_hint.store(n + 1, std::memory_order_relaxed);
    return int(n);
  }
  return -1;
}

void unguard_mapping(int slot) {
  if (slot < 0) return;
  g_slots[slot].end.store(0, std::memory_order_release);
  g_slots[slot].begin.store(0, std::memory_order_release);
}

bool mapping_faulted(int slot) { return slot >= 0 && g_slots[slot].faulted.load(std::memory_order_acquire); }

} // namespace hpak::os
