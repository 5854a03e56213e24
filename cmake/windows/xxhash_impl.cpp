// The xxHash functions for the Windows build (cmake/windows.cmake): Debian ships no mingw libxxhash, and
// xxhash.h carries the implementation when XXH_IMPLEMENTATION is defined in one translation unit.
#define XXH_STATIC_LINKING_ONLY
#define XXH_IMPLEMENTATION
#include <xxhash.h>
