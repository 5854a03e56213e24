#include "base/parallel.hpp"

namespace hpak {

unsigned default_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n ? n : 1;
}

} // namespace hpak
