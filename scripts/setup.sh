#!/usr/bin/env bash
# Installs what building and testing hpak needs on Debian 12 (idempotent).
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config git
      libcli11-dev libzstd-dev libssl-dev libspdlog-dev libfmt-dev doctest-dev libxxhash-dev liburing-dev zlib1g-dev libzip-dev nlohmann-json3-dev
      clang libclang-rt-14-dev zstd strace hyperfine squashfs-tools rsync python3
      libcurl4-openssl-dev nginx-light curl openssl
      openssh-client passwd util-linux)
missing=()
pkgs+=(dpkg-dev lintian man-db zsh) # packaging: dpkg-shlibdeps, lintian, man -l; zsh completion test
pkgs+=(xfsprogs) # mkfs.xfs, xfs_io: the reflink restore of tests/cli/test_large_files.sh and bench/large-files.sh XFS=1
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm (the S3 test server): Debian's, unless a node with its own npm
# (e.g. NodeSource's package, which conflicts with Debian's npm) is installed.
command -v npm >/dev/null || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# An S3-compatible server that checks SigV4 signatures, for tests/cli/test_remote_s3.sh:
# @20minutes/s3rver from the npm registry, into the checkout's .cache (not global).
s3rver_dir="$(cd "$(dirname "$0")/.." && pwd)/.cache/s3rver"
if [ ! -d "$s3rver_dir/node_modules/@20minutes/s3rver" ]; then
  mkdir -p "$s3rver_dir"
  (cd "$s3rver_dir" && npm install --no-audit --no-fund --no-save --loglevel=error --engine-strict=false @20minutes/s3rver@5.0.0) ||
    echo "setup: npm install of @20minutes/s3rver failed; test_remote_s3 will be skipped" >&2
fi
