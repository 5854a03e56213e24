# Install rules and the Debian package (CPack), included from CMakeLists.txt.
#
#   cmake --install build [--prefix P]      P/bin/hpak and an hpak-<cmd> link per command,
#                                           man pages (gzip -9n), bash and zsh completion, docs
#   cmake --build build --target package    build/hpak_<version>-1_<arch>.deb (or: bash scripts/package.sh)
#
# The completion files and the list of commands come from the built binary
# (hidden `hpak completion bash|zsh|commands`, walking the command table), so a
# new command or option is completed, linked and packaged without an edit here.
include(GNUInstallDirs)

set(HPAK_GEN_DIR ${CMAKE_BINARY_DIR}/generated)
file(CONFIGURE OUTPUT ${HPAK_GEN_DIR}/hpak_version.hpp
     CONTENT "// Generated from project(hpak VERSION ...) in CMakeLists.txt.\n#pragma once\n#define HPAK_VERSION \"@PROJECT_VERSION@\"\n"
     @ONLY)
target_include_directories(hpak PRIVATE ${HPAK_GEN_DIR})

find_program(HPAK_GZIP gzip REQUIRED)

# ---- completion files and the command list, from the built binary ------------
set(HPAK_COMPLETION_FILES)
foreach(kind bash zsh commands)
  set(out ${HPAK_GEN_DIR}/${kind})
  if(kind STREQUAL "bash")
    set(out ${HPAK_GEN_DIR}/hpak.bash)
  elseif(kind STREQUAL "zsh")
    set(out ${HPAK_GEN_DIR}/_hpak)
  endif()
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DHPAK=$<TARGET_FILE:hpak> -DSHELL_NAME=${kind} -DOUT=${out} -P ${CMAKE_SOURCE_DIR}/cmake/completion.cmake
    DEPENDS hpak ${CMAKE_SOURCE_DIR}/cmake/completion.cmake
    COMMENT "Generating ${kind} completion from the command table"
    VERBATIM)
  list(APPEND HPAK_COMPLETION_FILES ${out})
endforeach()

# ---- man pages and the Debian changelog, compressed as Debian wants (gzip -9n) --
file(GLOB HPAK_MAN_PAGES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/man/*.[157])
# packaging/changelog is kept by hand (Debian format); its top entry names the
# package's version, "<project version>-<Debian revision>" (tests/cli/test_package.sh checks it).
set(HPAK_CHANGELOG ${CMAKE_SOURCE_DIR}/packaging/changelog)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${HPAK_CHANGELOG})
file(STRINGS ${HPAK_CHANGELOG} HPAK_CHANGELOG_TOP LIMIT_COUNT 1)
if(NOT HPAK_CHANGELOG_TOP MATCHES "^hpak \\(([^)-]+)-([0-9]+)\\) ")
  message(FATAL_ERROR "packaging/changelog: the first line is not 'hpak (VERSION-REVISION) ...': ${HPAK_CHANGELOG_TOP}")
endif()
if(NOT CMAKE_MATCH_1 STREQUAL PROJECT_VERSION)
  message(WARNING "packaging/changelog: the top entry is for ${CMAKE_MATCH_1}, the project is ${PROJECT_VERSION}: add an entry")
endif()
set(HPAK_DEB_RELEASE ${CMAKE_MATCH_2})
# A placeholder (example.org is reserved): whoever publishes the package sets it.
set(HPAK_DEB_MAINTAINER "hpak developers <hpak@example.org>" CACHE STRING "Maintainer of the .deb (Name <address>)")
set(HPAK_GZ_FILES)
foreach(src ${HPAK_MAN_PAGES} ${HPAK_CHANGELOG})
  get_filename_component(name ${src} NAME)
  set(gz ${HPAK_GEN_DIR}/gz/${name}.gz)
  add_custom_command(OUTPUT ${gz}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${HPAK_GEN_DIR}/gz
    COMMAND sh -c "\"$1\" -9n -c \"$2\" > \"$3.tmp\" && mv \"$3.tmp\" \"$3\"" sh ${HPAK_GZIP} ${src} ${gz}
    DEPENDS ${src}
    VERBATIM)
  list(APPEND HPAK_GZ_FILES ${gz})
  if(name MATCHES "\\.([157])$")
    install(FILES ${gz} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${CMAKE_MATCH_1})
  endif()
endforeach()
add_custom_target(hpak_install_files ALL DEPENDS ${HPAK_COMPLETION_FILES} ${HPAK_GZ_FILES})

# ---- install ------------------------------------------------------------------
set(CMAKE_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
install(TARGETS hpak RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${HPAK_GEN_DIR}/hpak.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME hpak)
install(FILES ${HPAK_GEN_DIR}/_hpak DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
install(FILES ${CMAKE_SOURCE_DIR}/packaging/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The Debian changelog only in the .deb: component "deb", left out of a plain
# `cmake --install` (EXCLUDE_FROM_ALL) and named for CPack below.
install(FILES ${HPAK_GEN_DIR}/gz/changelog.gz DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME changelog.Debian.gz
        COMPONENT deb EXCLUDE_FROM_ALL)
configure_file(${CMAKE_SOURCE_DIR}/cmake/install_links.cmake.in ${HPAK_GEN_DIR}/install_links.cmake @ONLY)
install(SCRIPT ${HPAK_GEN_DIR}/install_links.cmake)

# ---- the Debian package ---------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME hpak)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${HPAK_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "content-addressed packs of file trees, restored with few syscalls")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "hpak packs software environments (Python, conda, npm trees of many small
 files) into HPAK packs: each file's bytes are one zstd-compressed object
 named by its SHA-256, located through a binary-searchable index. Packs live
 in a shared library of named catalogs, restored into target directories
 fresh or dirty (only what changed is touched), verified and garbage
 collected safely while others write.")
set(CPACK_DEBIAN_PACKAGE_RELEASE ${HPAK_DEB_RELEASE})
# One package with everything a plain install puts in (component Unspecified) and the changelog (deb).
set(CPACK_INSTALL_CMAKE_PROJECTS "${CMAKE_BINARY_DIR};hpak;Unspecified;/" "${CMAKE_BINARY_DIR};hpak;deb;/")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON) # needs dpkg-shlibdeps (dpkg-dev)
# libcurl.so.4 and libzip.so.4 are loaded at run time (core/remote/http/curl_api.hpp,
# core/import/zip_api.hpp): not NEEDED entries dpkg-shlibdeps can see, so named
# here (the detected ones are appended: libc6 alone with HPAK_STATIC_DEPS).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libcurl4 (>= 7.68), libzip4 (>= 1.7)")
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_FILE_NAME hpak) # overridden by DEB-DEFAULT; keeps other generators tidy
set(CPACK_SOURCE_IGNORE_FILES "/build.*/;/\\\\.git/")
include(CPack)
