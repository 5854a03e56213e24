#!/usr/bin/env bash
# Installs, on Debian 12, what the calling command needs (idempotent; when all
# of it is installed it only asks dpkg, once, and touches nothing):
#
#   scripts/setup.sh             building hpak (scripts/build.sh, scripts/demo.sh)
#   scripts/setup.sh --package   that + the Debian package tools (scripts/package.sh)
#   scripts/setup.sh --test      that + every tool the test suite uses (scripts/test.sh):
#                                test servers, sanitizer and fuzzer runtimes, shellcheck,
#                                zsh, xfsprogs, Node.js + the S3 test server,
#                                mingw-w64 and Wine (the Windows build and its tests)
set -euo pipefail
usage() { echo "usage: scripts/setup.sh [--package | --test]" >&2; exit 2; }
want=build
case ${1:-} in
"") ;;
--package) want=package ;;
--test) want="test" ;;
*) usage ;;
esac
[ $# -le 1 ] || usage

# Building hpak: compiler, CMake + Ninja, the libraries CMakeLists.txt finds.
pkgs=(build-essential cmake ninja-build pkg-config
      libcli11-dev libzstd-dev libssl-dev libspdlog-dev libfmt-dev doctest-dev libxxhash-dev
      zlib1g-dev libzip-dev nlohmann-json3-dev libcurl4-openssl-dev libfuse3-dev)
if [ "$want" != build ]; then
  pkgs+=(dpkg-dev lintian man-db) # scripts/package.sh: dpkg-shlibdeps (CPack), lintian; man -l of the installed pages
fi
if [ "$want" = test ]; then
  pkgs+=(git python3 zstd strace hyperfine squashfs-tools rsync) # CLI suites and bench/ scripts
  pkgs+=(python3-venv)                                          # a real venv with pip (tests/cli/test_relocation.sh)
  pkgs+=(clang libclang-rt-14-dev)                              # the TSan build, the fuzzers
  pkgs+=(nginx-light curl openssl openssh-client)               # remote tests (HTTP server, TLS, SSH signatures)
  pkgs+=(passwd util-linux)                                     # useradd, setpriv, mount: shared-library and mount tests
  pkgs+=(zsh)                                                   # the zsh completion test
  pkgs+=(xfsprogs)                                              # mkfs.xfs, xfs_io: reflink restores (tests/cli/test_large_files.sh)
  pkgs+=(fuse3)                                                 # fusermount3: hpak umount, the mount tests (tests/cli/test_mount.sh)
  pkgs+=(shellcheck)                                            # the shell lint (scripts/lint-shell.sh)
  pkgs+=(g++-mingw-w64-x86-64-posix gcc-mingw-w64-x86-64-posix mingw-w64-tools libz-mingw-w64-dev wine64) # the Windows build, its tests under Wine
fi

# missing_packages PKG...: those of PKG not installed, one dpkg-query for all.
missing_packages() {
  local status
  status=$(dpkg-query -W -f='${Package} ${Status}\n' "$@" 2>/dev/null || true)
  local p
  for p in "$@"; do
    [[ $'\n'$status$'\n' == *$'\n'"$p install ok installed"$'\n'* ]] || echo "$p"
  done
}
mapfile -t missing < <(missing_packages "${pkgs[@]}")
# Node.js and npm (the S3 test server): Debian's, unless a node with its own npm
# (e.g. NodeSource's package, which conflicts with Debian's npm) is installed.
if [ "$want" = test ] && ! command -v npm >/dev/null; then missing+=(nodejs npm); fi
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  echo "setup: installing ${#missing[@]} packages (${want} set): ${missing[*]}"
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[ "$want" = test ] || exit 0

# An S3-compatible server that checks SigV4 signatures, for tests/cli/test_remote_s3.sh:
# @20minutes/s3rver from the npm registry, into the checkout's .cache (not global).
s3rver_dir="$(cd "$(dirname "$0")/.." && pwd)/.cache/s3rver"
if [ ! -d "$s3rver_dir/node_modules/@20minutes/s3rver" ]; then
  mkdir -p "$s3rver_dir"
  (cd "$s3rver_dir" && npm install --no-audit --no-fund --no-save --loglevel=error --engine-strict=false @20minutes/s3rver@5.0.0) ||
    echo "setup: npm install of @20minutes/s3rver failed; test_remote_s3 will be skipped" >&2
fi
