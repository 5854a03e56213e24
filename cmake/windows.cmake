# hpak for Windows (issue 30), cross-built with mingw-w64 by scripts/build-windows.sh against the libraries
# scripts/build-windows-deps.sh builds into HPAK_WIN_PREFIX (CMAKE_FIND_ROOT_PATH of its toolchain file).
#
# What builds for Windows today: the rooms with no system call in them, base (bytes, errors, hashes, zstd,
# parallel, diagnostics) and formats (every on-disk format), and their unit tests as hpak_win_tests.exe,
# run under Wine by scripts/build-windows.sh. The rooms above base/os need the os seam's Windows
# implementation (issue 29) before they and hpak.exe can follow.

find_path(ZSTD_INCLUDE_DIR zstd.h REQUIRED)
find_library(ZSTD_LIBRARY NAMES zstd_static zstd REQUIRED)
add_library(hpak_win_zstd INTERFACE)
target_include_directories(hpak_win_zstd INTERFACE ${ZSTD_INCLUDE_DIR})
target_link_libraries(hpak_win_zstd INTERFACE ${ZSTD_LIBRARY})

# xxHash: Debian ships no mingw build; its header holds the implementation, compiled once here.
find_path(XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
add_library(hpak_win_xxhash STATIC ${CMAKE_SOURCE_DIR}/cmake/windows/xxhash_impl.cpp)
target_include_directories(hpak_win_xxhash PUBLIC ${XXHASH_INCLUDE_DIR})

set(OPENSSL_USE_STATIC_LIBS TRUE)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
find_package(Threads REQUIRED)
# Header-only libraries, copied from the Debian -dev packages into the prefix by build-windows-deps.sh.
find_path(HPAK_WIN_HEADERS doctest/doctest.h REQUIRED)
add_library(hpak_win_json INTERFACE)
target_include_directories(hpak_win_json INTERFACE ${HPAK_WIN_HEADERS})
add_library(hpak_win_doctest INTERFACE)
target_include_directories(hpak_win_doctest INTERFACE ${HPAK_WIN_HEADERS})

# Static runtime: hpak.exe and its tests need no DLL beside them.
add_link_options(-static -static-libgcc -static-libstdc++)

hpak_room(base base LINK hpak_win_zstd hpak_win_xxhash OpenSSL::Crypto ws2_32 crypt32 bcrypt Threads::Threads)
hpak_room(formats formats LINK hpak_base PRIVATE_LINK hpak_win_json)

# The unit tests of those rooms. The catalog test needs a real tree on disk (tests/unit/tree_fixture.hpp,
# POSIX calls), so it waits for the os seam with the rooms above it.
file(GLOB HPAK_WIN_TEST_SRC CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/unit/test_base_*.cpp
     ${CMAKE_SOURCE_DIR}/tests/unit/test_formats_*.cpp)
list(FILTER HPAK_WIN_TEST_SRC EXCLUDE REGEX "test_formats_catalog_format\\.cpp$")
add_executable(hpak_win_tests ${CMAKE_SOURCE_DIR}/tests/windows/main.cpp ${HPAK_WIN_TEST_SRC})
target_include_directories(hpak_win_tests PRIVATE ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/tests/unit)
target_link_libraries(hpak_win_tests PRIVATE hpak_base hpak_formats hpak_win_doctest)
