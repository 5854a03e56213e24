// What `hpak --version` prints: hpak's version (the CMake project version),
// the on-disk format versions it reads and writes (formats/*.hpp), and the
// versions of the libraries it was built with and runs with.
#pragma once

#include <string>

namespace hpak::cmd {

std::string version_text();

} // namespace hpak::cmd
