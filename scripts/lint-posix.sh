#!/usr/bin/env bash
# The os seam lint (ctest `os_seam`, tests/CMakeLists.txt; issue 29):
#
#   scripts/lint-posix.sh [SOURCE_ROOT]     (default: this checkout)
#   scripts/lint-posix.sh --self-test       (proves it fails on a violation)
#
# Nothing of the engine above the os layer includes a POSIX header: every C and
# C++ file under base/, formats/, core/ and cmd/ outside base/os/ that includes
# <unistd.h>, <fcntl.h>, <sys/...>, <dirent.h>, <pwd.h>, <grp.h>, <spawn.h>,
# <poll.h>, <termios.h>, <sched.h> or <linux/...> is a finding, unless it is
# listed in scripts/posix-allowlist.txt ("PATH  REASON", one a line; # starts a
# comment). An allowlist entry without a reason, or for a file that no longer
# exists or no longer includes such a header, is a finding too: the list only
# shrinks. The system calls go through base/os/sys.hpp instead.
# Because the Linux implementation header declares the system's functions to whoever
# includes the seam, a file outside base/os (and the allowlist) that calls one of the
# system calls the seam wraps by its own name (openat, fstatat, flock, fsync, mmap,
# copy_file_range, fstatvfs, statx, memfd_create, geteuid, getpwuid, posix_spawn,
# fork, ...; comments and string literals aside) is a finding too.
# Exit: 0 clean; 1 findings (listed); 2 could not run.
set -euo pipefail

posix_re='^[[:space:]]*#[[:space:]]*include[[:space:]]*<(unistd\.h|fcntl\.h|sys/[^>]*|dirent\.h|pwd\.h|grp\.h|spawn\.h|poll\.h|termios\.h|sched\.h|linux/[^>]*)>'

call_re='(?<![\w.>:])(?:::)?(openat2?|fstatat|mkdirat|unlinkat|renameat2?|linkat|symlinkat|readlinkat|flock|fsync|fdatasync|mmap|munmap|madvise|posix_fadvise|copy_file_range|statvfs|fstatvfs|statfs|fstatfs|statx|memfd_create|geteuid|getuid|getpid|getpwuid|posix_spawnp?|fork|opendir|fdopendir|readdir|futimens|utimensat|ioctl|sysconf)\s*\('

# raw_calls FILE: the lines of FILE that call a wrapped system call by its own name
# (comments and string literals blanked first; line numbers kept).
raw_calls() {
  sed -E 's://.*$::; s/"([^"\\]|\\.)*"/""/g' "$1" | grep -nP "$call_re" || true
}

# lint ROOT: the check itself, on the tree at ROOT.
lint() {
  local root=$1 list findings=0 path reason file calls
  list=$root/scripts/posix-allowlist.txt
  declare -A allowed=()
  if [ -f "$list" ]; then
    while read -r path reason; do
      case $path in '' | '#'*) continue ;; esac
      if [ -z "$reason" ]; then
        echo "lint-posix: $list: '$path' has no reason"
        findings=1
      fi
      allowed[$path]=1
    done <"$list"
  fi
  while IFS= read -r -d '' file; do
    file=${file#"$root"/}
    case $file in base/os/*) continue ;; esac
    if grep -Eq "$posix_re" "$root/$file"; then
      if [ -n "${allowed[$file]:-}" ]; then
        allowed[$file]=used
        continue
      fi
      grep -En "$posix_re" "$root/$file" | sed "s|^|lint-posix: $file:|"
      findings=1
    fi
    [ -n "${allowed[$file]:-}" ] && continue
    calls=$(raw_calls "$root/$file")
    if [ -n "$calls" ]; then
      sed "s|^|lint-posix: $file: a system call outside the seam: |" <<<"$calls"
      findings=1
    fi
  done < <(find "$root/base" "$root/formats" "$root/core" "$root/cmd" -type f \
    \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.c' \) -print0 2>/dev/null)
  for path in "${!allowed[@]}"; do
    [ "${allowed[$path]}" = used ] && continue
    echo "lint-posix: $list: '$path' is listed but includes no POSIX header (or is gone): remove it"
    findings=1
  done
  if [ "$findings" != 0 ]; then
    echo "lint-posix: FAIL: a POSIX header outside base/os (system calls go through base/os/sys.hpp; CONTRIBUTING.md, 'The os layer')"
    return 1
  fi
  echo "lint-posix: ok"
}

# self_test: a tree with one violation of each kind fails; the same tree fixed passes.
self_test() {
  local tmp rc
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  mkdir -p "$tmp/base/os/linux" "$tmp/core/x" "$tmp/cmd" "$tmp/formats" "$tmp/scripts"
  printf '#include <unistd.h>\n' >"$tmp/base/os/linux/ok.cpp"
  printf '#include <cstdio>\n#include "base/os/sys.hpp"\n// flock(fd) in a comment\nint f() { puts("fsync(x)"); return hpak::os::fsync(0) + s.flock(1); }\n' >"$tmp/core/x/clean.cpp"
  printf '#include "base/os/sys.hpp"\nint g(int fd) { return ::fsync(fd); }\n' >"$tmp/core/x/raw.cpp"
  printf '#include <vector>\n  #  include <sys/stat.h>\n' >"$tmp/core/x/bad.hpp"
  printf '#include <fuse3/fuse.h>\n#include <fcntl.h>\n' >"$tmp/cmd/kept.cpp"
  printf '# comment\ncmd/kept.cpp  needs it (self-test)\nformats/gone.cpp  stale entry\n' \
    >"$tmp/scripts/posix-allowlist.txt"
  rc=0
  lint "$tmp" >"$tmp/out" || rc=$?
  if [ "$rc" != 1 ] || ! grep -q 'core/x/bad.hpp:2:' "$tmp/out" || ! grep -q "'formats/gone.cpp' is listed" "$tmp/out" \
    || ! grep -q 'core/x/raw.cpp: a system call outside the seam: 2:' "$tmp/out" \
    || grep -q 'kept.cpp:' "$tmp/out" || grep -q 'ok.cpp' "$tmp/out" || grep -q 'clean.cpp' "$tmp/out"; then
    echo "lint-posix: self-test FAIL: the violations were not reported as expected:"
    cat "$tmp/out"
    return 1
  fi
  rm "$tmp/core/x/bad.hpp" "$tmp/core/x/raw.cpp"
  printf 'cmd/kept.cpp  needs it (self-test)\n' >"$tmp/scripts/posix-allowlist.txt"
  if ! lint "$tmp" >"$tmp/out"; then
    echo "lint-posix: self-test FAIL: a clean tree was refused:"
    cat "$tmp/out"
    return 1
  fi
  echo "lint-posix: self-test ok"
}

if [ "${1:-}" = --self-test ]; then
  self_test
  exit
fi
root=$(cd "${1:-$(dirname "$0")/..}" && pwd) || exit 2
lint "$root"
