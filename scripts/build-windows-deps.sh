#!/usr/bin/env bash
# Cross-builds, with Debian's mingw-w64 toolchain, the libraries hpak.exe links
# (issue 30), from Debian's own source packages pinned to the versions the
# Linux build uses, into a cache folder: CACHE/prefix/{include,lib}. Nothing
# comes from anywhere but a build on this machine.
#
#   zstd, libzip       static, from `apt-get source` of the installed versions
#   OpenSSL libcrypto  static (no libssl: TLS is Windows' own, below): SHA-256
#                      and Ed25519 (SSHSIG signatures, which BCrypt lacks);
#                      algorithms hpak never calls left out
#   libcurl            static, TLS by Schannel (the Windows certificate store),
#                      HTTP/1.1 (no nghttp2 for mingw in Debian), HTTP(S) only
#   zlib               Debian's libz-mingw-w64-dev
#   headers            CLI11, fmt (header-only mode), spdlog (compiled into
#                      cmd/log.cpp), doctest, nlohmann-json, xxHash: copied
#                      from the Debian -dev packages
#
#   scripts/build-windows-deps.sh [CACHE]     default: .cache/win64 of the checkout
#
# Idempotent: a library already built for the same version is not built again
# (a stamp file per library records the version).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=$(realpath -m "${1:-$root/.cache/win64}")
prefix=$cache/prefix
src=$cache/src
mkdir -p "$prefix/include" "$prefix/lib" "$src"
host=x86_64-w64-mingw32
jobs=$(nproc)

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
need=(g++-mingw-w64-x86-64-posix gcc-mingw-w64-x86-64-posix mingw-w64-tools libz-mingw-w64-dev dpkg-dev cmake ninja-build perl
      libcli11-dev libspdlog-dev libfmt-dev doctest-dev nlohmann-json3-dev libxxhash-dev libzstd-dev libssl-dev libcurl4-openssl-dev libzip-dev)
missing=()
for p in "${need[@]}"; do [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The posix thread model (std::thread, std::mutex) for the C++ compiler.
cc=$host-gcc-posix
cxx=$host-g++-posix

# A deb-src entry beside the deb ones, for `apt-get source` (the binary lists
# stay: the update below reads both).
if ! grep -rqs '^Types: deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
  sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources | $sudo tee /etc/apt/sources.list.d/hpak-windows-src.sources >/dev/null
  $sudo apt-get update -qq
fi

version_of() { dpkg-query -W -f='${Version}' "$1"; }
stamp_ok() { [ -f "$cache/$1.stamp" ] && [ "$(cat "$cache/$1.stamp")" = "$2" ]; }

# source_versions PACKAGE VERSION: VERSION first, then the other versions of
# source package PACKAGE the deb-src lists name, newest first.
source_versions() {
  echo "$2"
  apt-cache showsrc "$1" | awk '/^Version:/ { print $2 }' | sort -u | grep -vxF "$2" | sort -r -V
}

# fetch_source PACKAGE VERSION: the unpacked source tree of source package
# PACKAGE at the source version of binary version VERSION (a binNMU's +bN
# dropped), from `apt-get source`; its path on stdout. When that version's
# source is not on the mirror (a security update whose pool it lacks), the
# newest source version it has, said on stderr: the build can then differ from
# the Linux one by that update.
fetch_source() {
  local pkg=$1 want=${2%+b*} ver up dir
  while read -r ver; do
    up=${ver#*:}
    up=${up%-*}
    dir=$src/$pkg-$up
    if [ -f "$dir/.hpak-source-version" ] && [ "$(cat "$dir/.hpak-source-version")" = "$ver" ]; then echo "$dir"; return; fi
    rm -rf "$dir"
    if (cd "$src" && apt-get source -qq "$pkg=$ver" >/dev/null 2>&1) && [ -d "$dir" ]; then
      echo "$ver" >"$dir/.hpak-source-version"
      [ "$ver" = "$want" ] || echo "build-windows-deps: $pkg $want: its source is not on the mirror; built from $ver" >&2
      echo "$dir"
      return
    fi
  done < <(source_versions "$pkg" "$want")
  echo "build-windows-deps: apt-get source $pkg: no version of its source could be fetched" >&2
  exit 1
}

toolchain=$cache/mingw.cmake
cat >"$toolchain" <<EOF
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER $cc)
set(CMAKE_CXX_COMPILER $cxx)
set(CMAKE_RC_COMPILER $host-windres)
set(CMAKE_FIND_ROOT_PATH /usr/$host $prefix)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
EOF

build_zstd() {
  local ver dir
  ver=$(version_of libzstd-dev)
  stamp_ok zstd "$ver" && return
  dir=$(fetch_source libzstd "$ver")
  cmake -S "$dir/build/cmake" -B "$cache/b-zstd" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DZSTD_BUILD_SHARED=OFF -DZSTD_BUILD_STATIC=ON -DZSTD_BUILD_PROGRAMS=OFF \
    -DZSTD_BUILD_TESTS=OFF -DZSTD_MULTITHREAD_SUPPORT=ON >/dev/null
  ninja -C "$cache/b-zstd" install >/dev/null
  echo "$ver" >"$cache/zstd.stamp"
  cp "$dir/.hpak-source-version" "$cache/zstd.source"
}

build_openssl() {
  local ver dir
  ver=$(version_of libssl-dev)
  stamp_ok openssl "$ver" && return
  dir=$(fetch_source openssl "$ver")
  # libcrypto alone (no libssl, no apps), without the algorithms and formats
  # hpak never calls (with curl HTTP-only: 880 -> 698 s of CPU for all four).
  (cd "$dir" && ./Configure mingw64 no-shared no-tests no-engine no-module no-legacy no-dso no-comp \
    no-cms no-ts no-ocsp no-srp no-ct no-idea no-seed no-camellia no-aria no-sm2 no-sm3 no-sm4 no-mdc2 \
    no-whirlpool no-rc2 no-rc4 no-rc5 no-bf no-cast no-md4 no-rmd160 no-siphash no-gost no-ec2m \
    --cross-compile-prefix=$host- --prefix="$prefix" --libdir=lib CC=gcc-posix CXX=g++-posix >/dev/null &&
    make -s build_generated >/dev/null && make -s -j"$jobs" libcrypto.a >/dev/null)
  mkdir -p "$prefix/include/openssl"
  cp "$dir"/include/openssl/*.h "$prefix/include/openssl/"
  cp "$dir/libcrypto.a" "$prefix/lib/"
  echo "$ver" >"$cache/openssl.stamp"
  cp "$dir/.hpak-source-version" "$cache/openssl.source"
}

build_curl() {
  local ver dir
  ver=$(version_of libcurl4-openssl-dev)
  stamp_ok curl "$ver" && return
  dir=$(fetch_source curl "$ver")
  cmake -S "$dir" -B "$cache/b-curl" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DBUILD_SHARED_LIBS=OFF -DBUILD_CURL_EXE=OFF -DBUILD_TESTING=OFF \
    -DHTTP_ONLY=ON -DCURL_USE_SCHANNEL=ON -DCURL_USE_OPENSSL=OFF -DCURL_USE_LIBSSH2=OFF -DCURL_USE_LIBPSL=OFF -DUSE_NGHTTP2=OFF \
    -DCURL_DISABLE_LDAP=ON -DCURL_BROTLI=OFF -DCURL_ZSTD=OFF -DUSE_LIBIDN2=OFF -DENABLE_UNICODE=ON >/dev/null
  ninja -C "$cache/b-curl" install >/dev/null
  echo "$ver" >"$cache/curl.stamp"
  cp "$dir/.hpak-source-version" "$cache/curl.source"
}

build_libzip() {
  local ver dir
  ver=$(version_of libzip-dev)
  stamp_ok libzip "$ver" && return
  dir=$(fetch_source libzip "$ver")
  cmake -S "$dir" -B "$cache/b-libzip" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DBUILD_SHARED_LIBS=OFF -DBUILD_TOOLS=OFF -DBUILD_REGRESS=OFF -DBUILD_EXAMPLES=OFF \
    -DBUILD_DOC=OFF -DENABLE_BZIP2=OFF -DENABLE_LZMA=OFF -DENABLE_ZSTD=OFF -DENABLE_GNUTLS=OFF -DENABLE_MBEDTLS=OFF \
    -DENABLE_OPENSSL=OFF -DENABLE_WINDOWS_CRYPTO=OFF -DENABLE_COMMONCRYPTO=OFF >/dev/null
  ninja -C "$cache/b-libzip" install >/dev/null
  echo "$ver" >"$cache/libzip.stamp"
  cp "$dir/.hpak-source-version" "$cache/libzip.source"
}

copy_headers() {
  local d
  for d in CLI spdlog fmt doctest nlohmann; do
    rm -rf "${prefix:?}/include/$d"
    cp -a "/usr/include/$d" "$prefix/include/$d"
  done
  cp -a /usr/include/xxhash.h "$prefix/include/"
  [ -f /usr/include/xxh3.h ] && cp -a /usr/include/xxh3.h "$prefix/include/"
  return 0
}

# Each step is called on its own line, not in an && list: set -e does not
# apply inside a function called as the left side of &&.
echo "== windows dependencies into $prefix"
copy_headers
build_zstd
echo "   zstd: built from source $(cat "$cache/zstd.source")"
build_openssl
echo "   openssl (libcrypto): built from source $(cat "$cache/openssl.source")"
build_curl
echo "   curl (Schannel): built from source $(cat "$cache/curl.source")"
build_libzip
echo "   libzip: built from source $(cat "$cache/libzip.source")"
echo "   zlib from libz-mingw-w64-dev $(version_of libz-mingw-w64-dev)"
