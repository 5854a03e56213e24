// A file of the base room including a base header: compiles (tests/layering).
#include "base/bytes.hpp"
int layering_ok() { return int(hpak::Bytes{1, 2}.size()); }
