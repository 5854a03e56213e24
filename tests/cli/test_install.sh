#!/usr/bin/env bash
# `cmake --install` into a DESTDIR: bin/hpak and an hpak-<cmd> link for every
# command `hpak --help` lists, every man page gzipped under share/man/manN,
# the bash and zsh completion (identical to what `hpak completion` prints now),
# the copyright file and no Debian changelog (only the .deb has one); nothing
# outside the prefix; the installed binary and a link run, and `man -l` renders
# an installed page (man missing: skipped, or a failure under CI=true). The
# links' script also with absolute CMAKE_INSTALL_BINDIR and DATADIR.
#   $1 = hpak binary (its directory is the build directory), $2 = source root
. "$(dirname "$0")/cli_lib.sh" "$@"
build=$(dirname "$hpak")
[ -f "$build/cmake_install.cmake" ] || { echo "$test_name: skipped: '$build' is not a CMake build directory"; exit 125; }
need_tool man

# The generated files (completion, gzipped pages) are part of `all`; build them if missing.
cmake --build "$build" --target hpak_install_files >"$work/build.log" 2>&1 || fail "building hpak_install_files: $(tail -20 "$work/build.log")"
DESTDIR="$work/dest" cmake --install "$build" --prefix /opt/hp >"$work/install.log" 2>&1 || fail "cmake --install: $(tail -20 "$work/install.log")"
p=$work/dest/opt/hp
[ "$(ls "$work/dest")" = opt ] || fail "installed outside the prefix: $(ls "$work/dest")"

[ -x "$p/bin/hpak" ] || fail "no bin/hpak"
"$p/bin/hpak" --version >"$work/version.out" || fail "the installed hpak does not run"
# --version: the project's version, the format versions (formats/*.hpp), the libraries' versions.
version=$(sed -nE 's/^project\(hpak VERSION ([0-9.]+).*/\1/p' "$src_root/CMakeLists.txt")
pack_v=$(sed -nE 's/^constexpr uint16_t kPackVersion2 = ([0-9]+);.*/\1/p' "$src_root/formats/pack_format.hpp")
cat_v=$(sed -nE 's/^constexpr uint32_t kCatalogVersion = ([0-9]+);.*/\1/p' "$src_root/formats/catalog_format.hpp")
grep -qx "hpak $version" "$work/version.out" || fail "--version does not print 'hpak $version': $(cat "$work/version.out")"
grep -q "^formats read: pack 1-$pack_v, index 1-[0-9]*, multi-pack index [0-9]*, catalog 1-$cat_v\$" "$work/version.out" ||
  fail "--version lacks the format versions read: $(cat "$work/version.out")"
grep -q "^formats written: pack $pack_v (1 with pack --pack-version 1), index [0-9]*, multi-pack index [0-9]*, catalog $cat_v\$" "$work/version.out" ||
  fail "--version lacks the format versions written: $(cat "$work/version.out")"
grep -qE "^built with: zstd [0-9.]+, OpenSSL [0-9]+\.[0-9.]+.*, xxHash [0-9.]+, spdlog [0-9.]+, CLI11 [0-9.]+\$" "$work/version.out" ||
  fail "--version lacks the build-time library versions: $(cat "$work/version.out")"
grep -qE "^running with: zstd [0-9.]+, OpenSSL [0-9]+\.[0-9.]+.*, xxHash [0-9.]+\$" "$work/version.out" ||
  fail "--version lacks the run-time library versions: $(cat "$work/version.out")"
cmds=$("$hpak" --help | awk '/^[A-Za-z].*:$/ { s = $0; next } s == "Subcommands:" && /^ +[a-z]/ { print $1 }')
for c in $cmds; do
  [ "$(readlink "$p/bin/hpak-$c")" = hpak ] || fail "bin/hpak-$c is not a link to hpak"
  [ "$(readlink "$p/share/bash-completion/completions/hpak-$c")" = hpak ] || fail "no bash completion link for hpak-$c"
done
# shellcheck disable=SC2010 # bin/ holds hpak and its hpak-<cmd> links only: plain names
extra=$(cd "$p/bin" && ls | grep -v '^hpak$' | sed 's/^hpak-//' | sort)
[ "$extra" = "$(sort <<<"$cmds")" ] || fail "links in bin/ ($(echo $extra)) are not the commands ($(echo $cmds))"
grep -q "hpak ls" <<<"$("$p/bin/hpak-ls" --help)" || fail "the hpak-ls link does not run ls"

for page in "$src_root"/man/*.[157]; do
  name=$(basename "$page")
  sec=${name##*.}
  gz=$p/share/man/man$sec/$name.gz
  [ -f "$gz" ] || fail "no man page $gz"
  cmp -s <(gzip -dc "$gz") "$page" || fail "$gz is not $page"
done
grep -q "hpak-restore" <<<"$(MANWIDTH=80 man -l "$p/share/man/man1/hpak-restore.1.gz" 2>"$work/man.err")" ||
  fail "man -l on the installed hpak-restore.1.gz: $(cat "$work/man.err")"

cmp -s "$p/share/bash-completion/completions/hpak" <("$hpak" completion bash) || fail "installed bash completion differs from 'hpak completion bash'"
cmp -s "$p/share/zsh/vendor-completions/_hpak" <("$hpak" completion zsh) || fail "installed zsh completion differs from 'hpak completion zsh'"
grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' "$p/share/doc/hpak/copyright" || fail "no copyright file"
[ "$(ls "$p/share/doc/hpak")" = copyright ] || fail "share/doc/hpak holds more than the copyright file: $(ls "$p/share/doc/hpak")"
echo "ok: installed $(find "$p" -type f | wc -l) files and $(find "$p" -type l | wc -l) links under DESTDIR/opt/hp"

# The links' install script with absolute bin and data directories (GNUInstallDirs allows both):
# the links go there under DESTDIR, not under the prefix.
cat >"$work/links.cmake" <<EOF
set(HPAK_GEN_DIR "$build/generated")
set(CMAKE_INSTALL_BINDIR "/abs/bin")
set(CMAKE_INSTALL_DATADIR "/abs/data")
configure_file("$src_root/cmake/install_links.cmake.in" "$work/install_links.cmake" @ONLY)
set(CMAKE_INSTALL_PREFIX /opt/hp)
include("$work/install_links.cmake")
EOF
mkdir -p "$work/dest2/abs/bin" "$work/dest2/abs/data/bash-completion/completions"
DESTDIR="$work/dest2" cmake -P "$work/links.cmake" >"$work/links.log" 2>&1 || fail "install_links.cmake with absolute directories: $(cat "$work/links.log")"
for c in $cmds; do
  [ "$(readlink "$work/dest2/abs/bin/hpak-$c")" = hpak ] || fail "absolute BINDIR: no abs/bin/hpak-$c"
  [ "$(readlink "$work/dest2/abs/data/bash-completion/completions/hpak-$c")" = hpak ] || fail "absolute DATADIR: no completion link for hpak-$c"
done
[ ! -e "$work/dest2/opt" ] || fail "with absolute directories, links were made under the prefix: $(find "$work/dest2/opt")"
echo "ok: the links' script honours absolute CMAKE_INSTALL_BINDIR and CMAKE_INSTALL_DATADIR"
