#!/usr/bin/env bash
# The Debian package: CPack builds hpak_<version>-1_<arch>.deb from the build
# directory (output to a temp dir); its control file has the project's version
# and shared-library dependencies (dpkg-shlibdeps) that cover every library
# the binary needs; it holds the binary, the links, gzipped man pages, the
# completion files, a machine-readable copyright file and changelog.Debian.gz
# (packaging/changelog, its top entry for the project's version); extracted
# with dpkg-deb -x, the binary runs and `man -l` renders a page; lintian runs
# and reports no error. A tool missing (cpack, dpkg-deb, dpkg-shlibdeps,
# dpkg-parsechangelog, man, lintian) skips the test, or fails it under CI=true.
#   $1 = hpak binary (its directory is the build directory), $2 = source root
. "$(dirname "$0")/cli_lib.sh" "$@"
build=$(dirname "$hpak")
[ -f "$build/CPackConfig.cmake" ] || { echo "$test_name: skipped: no CPackConfig.cmake in '$build'"; exit 125; }
for tool in cpack dpkg-deb dpkg-shlibdeps dpkg-parsechangelog man lintian; do need_tool "$tool"; done

cmake --build "$build" --target hpak_install_files >"$work/build.log" 2>&1 || fail "building hpak_install_files: $(tail -20 "$work/build.log")"
(cd "$work" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/pkg") >"$work/cpack.log" 2>&1 ||
  fail "cpack: $(tail -30 "$work/cpack.log")"
debs=("$work"/pkg/hpak_*.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || fail "expected one hpak_*.deb, got: $(ls "$work/pkg")"
deb=${debs[0]}

# --- control: name, version from the project, dependencies -------------------------------
version=$(sed -nE 's/^project\(hpak VERSION ([0-9.]+).*/\1/p' "$src_root/CMakeLists.txt")
[ "$(dpkg-deb -f "$deb" Package)" = hpak ] || fail "package name: $(dpkg-deb -f "$deb" Package)"
[ "$(dpkg-deb -f "$deb" Version)" = "$version-1" ] || fail "version $(dpkg-deb -f "$deb" Version), project says $version"
[ "$(basename "$deb")" = "hpak_${version}-1_$(dpkg --print-architecture).deb" ] || fail "file name $(basename "$deb")"
depends=$(dpkg-deb -f "$deb" Depends)
# Every shared library the binary needs (NEEDED) comes from a package named in Depends.
needed=$(readelf -d "$hpak" | sed -nE 's/.*\(NEEDED\).*\[(.*)\]/\1/p')
[ -n "$needed" ] || fail "readelf found no NEEDED entries in $hpak"
dep_names=$(sed -E 's/\([^)]*\)//g; s/\|/,/g' <<<"$depends" | tr ',' '\n' | awk '{ print $1 }')
for so in $needed; do
  case $so in libasan* | libubsan* | libtsan* | ld-linux*) continue ;; esac
  lib=$(ldd "$hpak" | awk -v so="$so" '$1 == so { print $3 }')
  [ -n "$lib" ] || fail "ldd does not resolve $so"
  pkgs=$({ dpkg -S "$(realpath "$lib")" || dpkg -S "$lib"; } 2>/dev/null | sed -n 1p | sed 's/: \/.*//' | tr -d ',' | sed 's/:[a-z0-9]*//g')
  [ -n "$pkgs" ] || fail "no package owns $lib"
  found=
  # The package, or a virtual package it provides (libspdlog1.10 provides libspdlog1.10-fmt9).
  names="$pkgs $(for pkg in $pkgs; do dpkg-query -W -f='${Provides}\n' "$pkg" 2>/dev/null; done | sed -E 's/\([^)]*\)//g' | tr -d ',')"
  for pkg in $names; do grep -qxF "$pkg" <<<"$dep_names" && found=1; done
  [ -n "$found" ] || fail "$so ($lib, package $pkgs) is not in Depends: $depends"
done
# libcurl is loaded at run time (dlopen, not NEEDED): Depends names it all the same.
grep -q '^libcurl' <<<"$needed" && fail "hpak links libcurl at start (NEEDED: $needed); it is loaded when a transfer needs it"
grep -qxF libcurl4 <<<"$dep_names" || fail "libcurl4 (loaded at run time for remote libraries) is not in Depends: $depends"
grep -q '^libzip' <<<"$needed" && fail "hpak links libzip at start (NEEDED: $needed); it is loaded when an import opens a zip"
grep -qxF libzip4 <<<"$dep_names" || fail "libzip4 (loaded at run time for zipped rcc hololibs) is not in Depends: $depends"
echo "ok: $(basename "$deb"): Depends: $depends"

# --- contents ---------------------------------------------------------------------------------
dpkg-deb -x "$deb" "$work/root"
r=$work/root/usr
"$r/bin/hpak" --version >"$work/version.out" || fail "the packaged hpak does not run"
grep -q "^hpak $version\$" "$work/version.out" || fail "packaged hpak --version: $(cat "$work/version.out")"
[ "$(readlink "$r/bin/hpak-restore")" = hpak ] || fail "no hpak-restore link"
grep -q "hpak restore" <<<"$("$r/bin/hpak-restore" --help)" || fail "the hpak-restore link does not run restore"
[ -f "$r/share/bash-completion/completions/hpak" ] || fail "no bash completion"
[ -f "$r/share/zsh/vendor-completions/_hpak" ] || fail "no zsh completion"
grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' "$r/share/doc/hpak/copyright" || fail "no DEP-5 copyright"
# The hand-kept changelog, its top entry for this version.
gzip -dc "$r/share/doc/hpak/changelog.Debian.gz" >"$work/changelog" || fail "no changelog.Debian.gz"
cmp -s "$work/changelog" "$src_root/packaging/changelog" || fail "changelog.Debian.gz is not packaging/changelog"
top=$(dpkg-parsechangelog -l "$work/changelog" -S Version) || fail "dpkg-parsechangelog cannot read the changelog"
[ "$top" = "$version-1" ] || fail "the changelog's top entry is for $top, the package is $version-1"
[ "$(dpkg-parsechangelog -l "$work/changelog" -S Source)" = hpak ] || fail "the changelog is not for hpak"
for page in "$src_root"/man/*.[157]; do
  name=$(basename "$page")
  gz=$r/share/man/man${name##*.}/$name.gz
  [ -f "$gz" ] || fail "no $gz in the package"
  # gzip -9n: no name, no timestamp (bytes 4-7 zero), best compression (XFL = 2)
  [ "$(od -An -tx1 -j3 -N6 "$gz" | tr -d ' \n')" = "000000000002" ] || fail "$name.gz is not gzip -9n: $(od -An -tx1 -N10 "$gz")"
done
grep -q "hpak-restore" <<<"$(MANWIDTH=80 man -l "$r/share/man/man1/hpak-restore.1.gz" 2>"$work/man.err")" ||
  fail "man -l on the packaged hpak-restore.1.gz: $(cat "$work/man.err")"
grep -q . <<<"$(MANWIDTH=80 man -l "$r/share/man/man5/hpak-format.5.gz" 2>/dev/null)" || fail "man -l hpak-format.5.gz printed nothing"
# Owned by root, no group/world write.
dpkg-deb -c "$deb" | awk '$2 != "root/root" || ($1 !~ /^l/ && $1 ~ /^.....w|^........w/) { bad = 1; print } END { exit bad }' >"$work/perm.bad" ||
  fail "files not root/root or group/world-writable: $(head "$work/perm.bad")"
echo "ok: the extracted package runs, its links and man pages work"

# lintian: exit 0 (no error; warnings are shown), 2 when it reports an error, 1 when it failed to run.
lint=0
lintian --fail-on error --tag-display-limit 0 "$deb" >"$work/lintian.out" 2>&1 || lint=$?
cat "$work/lintian.out"
case $lint in
0) ;;
2) fail "lintian reports errors" ;;
*) fail "lintian did not run (exit $lint)" ;;
esac
grep -q '^E: ' "$work/lintian.out" && fail "lintian printed errors but exited 0"
echo "ok: lintian: no errors ($(grep -c '^W: ' "$work/lintian.out" || true) warnings)"
exit 0
