# hpak for Windows (issue 30), cross-built with mingw-w64 by scripts/build-windows.sh against the libraries
# scripts/build-windows-deps.sh builds into HPAK_WIN_PREFIX (CMAKE_FIND_ROOT_PATH of its toolchain file).
#
# What builds for Windows: every room but mount (FUSE), with the os seam's Windows implementation
# (base/os/windows), hpak.exe from cmd/*.cpp but mount, umount and commit (with hpak bench's engine and
# hpak-gencorpus.exe), and the unit tests of base and formats
# as hpak_win_tests.exe, run under Wine by scripts/build-windows.sh with the CLI suite
# tests/windows/test_wine_cli.sh.

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
# CLI11 and fmt in their header-only modes; spdlog compiled once, into cmd/log.cpp.
add_library(hpak_win_cli INTERFACE)
target_include_directories(hpak_win_cli INTERFACE ${HPAK_WIN_HEADERS})
target_compile_definitions(hpak_win_cli INTERFACE SPDLOG_COMPILED_LIB SPDLOG_FMT_EXTERNAL FMT_HEADER_ONLY)
# libcurl (static, TLS by Schannel) and libzip from the prefix; zlib from libz-mingw-w64-dev.
find_path(CURL_INCLUDE_DIR curl/curl.h REQUIRED)
find_library(CURL_LIBRARY NAMES curl REQUIRED)
add_library(hpak_win_curl INTERFACE)
target_include_directories(hpak_win_curl INTERFACE ${CURL_INCLUDE_DIR})
target_compile_definitions(hpak_win_curl INTERFACE CURL_STATICLIB)
target_link_libraries(hpak_win_curl INTERFACE ${CURL_LIBRARY} ws2_32 wldap32 crypt32 secur32 bcrypt advapi32 iphlpapi normaliz)
find_library(HPAK_WIN_ZLIB NAMES libz.a REQUIRED) # static: not libz.dll.a
find_path(LIBZIP_INCLUDE_DIR zip.h REQUIRED)
find_library(LIBZIP_LIBRARY NAMES zip REQUIRED)
add_library(hpak_win_zip INTERFACE)
target_include_directories(hpak_win_zip INTERFACE ${LIBZIP_INCLUDE_DIR})
target_link_libraries(hpak_win_zip INTERFACE ${LIBZIP_LIBRARY} ${HPAK_WIN_ZLIB} hpak_win_zstd bcrypt advapi32)

# gmtime_r and localtime_r (mingw-w64's <time.h> defines them when asked).
add_compile_definitions(_POSIX_THREAD_SAFE_FUNCTIONS=200112L)

# Static runtime: hpak.exe and its tests need no DLL beside them.
add_link_options(-static -static-libgcc -static-libstdc++)

# The rooms (cmake/rooms.cmake, as on Linux) but mount, with the libraries above; the os room takes base/os/windows
# instead of base/os/linux.
set(HPAK_BASE_LIBS hpak_win_zstd hpak_win_xxhash OpenSSL::Crypto ws2_32 crypt32 bcrypt Threads::Threads)
# advapi32: GetSecurityInfo (base/os/windows/acl.cpp), GetUserNameW, RegGetValueW; psapi: GetProcessMemoryInfo
# (base/os/windows/machine.cpp, for hpak bench)
set(HPAK_OS_LIBS ntdll advapi32 psapi)
set(HPAK_OS_DIR windows)
set(HPAK_JSON hpak_win_json)
set(HPAK_CURL hpak_win_curl)
set(HPAK_ZIP_LIBS hpak_win_zip hpak_win_json)
set(HPAK_WITH_MOUNT OFF)
include(${CMAKE_SOURCE_DIR}/cmake/rooms.cmake)

# hpak.exe: every command but mount, umount and commit (FUSE, overlayfs); cmd/commands.cpp leaves them out of the table.
file(GLOB HPAK_CMD_SRC CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/cmd/*.cpp)
list(FILTER HPAK_CMD_SRC EXCLUDE REGEX "/cmd/(u?mount|commit)\\.cpp$")
add_executable(hpak ${HPAK_CMD_SRC})
target_include_directories(hpak PRIVATE ${CMAKE_SOURCE_DIR})
target_link_libraries(hpak PRIVATE hpak_core hpak_win_cli hpak_win_json)
set(HPAK_GEN_DIR ${CMAKE_BINARY_DIR}/generated)
file(CONFIGURE OUTPUT ${HPAK_GEN_DIR}/hpak_version.hpp
     CONTENT "// Generated from project(hpak VERSION ...) in CMakeLists.txt.\n#pragma once\n#define HPAK_VERSION \"@PROJECT_VERSION@\"\n"
     @ONLY)
target_include_directories(hpak PRIVATE ${HPAK_GEN_DIR})

# hpak bench (issue 30): the suite engine (as bench/CMakeLists.txt builds it on Linux; its processes, clock and machine
# through the os seam, base/os/machine.hpp) and hpak-gencorpus.exe beside hpak.exe (its files through the os seam).
# hpak-rccbase and hpak-ceiling are POSIX programs, not built here: bench leaves their rows out.
add_library(hpak_bench STATIC ${CMAKE_SOURCE_DIR}/bench/measure.cpp ${CMAKE_SOURCE_DIR}/bench/suites.cpp
            ${CMAKE_SOURCE_DIR}/bench/suite_restore.cpp ${CMAKE_SOURCE_DIR}/bench/suite_pack.cpp
            ${CMAKE_SOURCE_DIR}/bench/suite_read.cpp ${CMAKE_SOURCE_DIR}/bench/suite_gc.cpp)
target_include_directories(hpak_bench PUBLIC ${CMAKE_SOURCE_DIR})
target_link_libraries(hpak_bench PUBLIC hpak_core)
target_link_libraries(hpak PRIVATE hpak_bench)
add_executable(hpak-gencorpus ${CMAKE_SOURCE_DIR}/bench/gencorpus.cpp ${CMAKE_SOURCE_DIR}/bench/corpus_content.cpp)
target_include_directories(hpak-gencorpus PRIVATE ${CMAKE_SOURCE_DIR})
target_link_libraries(hpak-gencorpus PRIVATE hpak_os)
target_compile_options(hpak-gencorpus PRIVATE -O2)
add_dependencies(hpak hpak-gencorpus)

# The unit tests of base and formats, and of the os seam's Windows implementation (tests/windows/test_os_windows.cpp,
# on the disk of the Wine prefix's TEMP). The catalog test needs a real tree on disk (tests/unit/tree_fixture.hpp,
# POSIX calls): not yet.
file(GLOB HPAK_WIN_TEST_SRC CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/unit/test_base_*.cpp
     ${CMAKE_SOURCE_DIR}/tests/unit/test_formats_*.cpp)
list(FILTER HPAK_WIN_TEST_SRC EXCLUDE REGEX "test_formats_catalog_format\\.cpp$")
add_executable(hpak_win_tests ${CMAKE_SOURCE_DIR}/tests/windows/main.cpp ${CMAKE_SOURCE_DIR}/tests/windows/test_os_windows.cpp
               ${HPAK_WIN_TEST_SRC})
target_include_directories(hpak_win_tests PRIVATE ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/tests/unit)
target_link_libraries(hpak_win_tests PRIVATE hpak_base hpak_os hpak_formats hpak_win_doctest)
