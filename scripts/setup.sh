#!/usr/bin/env bash
# Installs what building and testing hpak needs on Debian 12 (idempotent).
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config git
      libcli11-dev libzstd-dev libssl-dev libspdlog-dev libfmt-dev doctest-dev libxxhash-dev liburing-dev zlib1g-dev libzip-dev nlohmann-json3-dev
      clang libclang-rt-14-dev zstd strace hyperfine squashfs-tools rsync python3
      libcurl4-openssl-dev nginx-light curl
      openssh-client passwd util-linux)
missing=()
pkgs+=(dpkg-dev lintian man-db zsh) # packaging: dpkg-shlibdeps, lintian, man -l; zsh completion test
pkgs+=(xfsprogs) # mkfs.xfs, xfs_io: the reflink restore of tests/cli/test_large_files.sh and bench/large-files.sh XFS=1
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
