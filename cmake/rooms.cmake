# The rooms, in dependency order (each links only rooms above it in this list), for every platform: included by
# CMakeLists.txt after it has found the libraries, and by cmake/windows.cmake. What differs by platform is named by
# the variables the includer sets first:
#   HPAK_BASE_LIBS    what base links (zstd, xxHash, OpenSSL's libcrypto, threads; on Windows its system libraries)
#   HPAK_OS_LIBS      what the os room links beyond base (ntdll on Windows; libdl on Linux, for load_library)
#   HPAK_OS_DIR       the os seam's implementation under base/os: linux or windows
#   HPAK_JSON         nlohmann-json (formats, import)
#   HPAK_CURL         libcurl (remote): on Linux its headers only, the library loaded on first use
#   HPAK_ZIP_LIBS     libzip and zlib (import): on Linux libzip's headers only, the library loaded on first use
#   HPAK_WITH_MOUNT   whether the mount room (FUSE) builds: not on Windows
#   HPAK_FUSE3        libfuse3 (mount)
hpak_room(base base LINK ${HPAK_BASE_LIBS})
hpak_room(os base/os LINK hpak_base ${HPAK_OS_LIBS} SUBDIRS ${HPAK_OS_DIR})
hpak_room(formats formats LINK hpak_os PRIVATE_LINK ${HPAK_JSON})
hpak_room(store core/store LINK hpak_os hpak_formats)
hpak_room(pack core/pack LINK hpak_store)
hpak_room(library core/library LINK hpak_pack)
hpak_room(verify core/verify LINK hpak_library)
hpak_room(restore core/restore LINK hpak_library)
hpak_room(trust core/trust LINK hpak_library)
hpak_room(gc core/gc LINK hpak_verify)
hpak_room(remote core/remote LINK hpak_trust ${HPAK_CURL} SUBDIRS dir http s3)
hpak_room(import core/import LINK hpak_library PRIVATE_LINK ${HPAK_ZIP_LIBS})
if(HPAK_WITH_MOUNT)
  hpak_room(mount core/mount LINK hpak_restore PRIVATE_LINK ${HPAK_FUSE3})
endif()

# The whole engine, for the command layer, the tests and the benchmarks.
get_property(HPAK_ROOMS GLOBAL PROPERTY HPAK_ROOMS)
add_library(hpak_core INTERFACE)
target_link_libraries(hpak_core INTERFACE ${HPAK_ROOMS})
