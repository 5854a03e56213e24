// A file of the base room including a header of a room above it: must not
// compile, because base's include root holds only base's headers (tests/layering).
#include "core/restore/restore.hpp"
int layering_violation() { return 0; }
