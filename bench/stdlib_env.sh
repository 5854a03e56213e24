# shellcheck shell=bash
# bench/stdlib_env.sh — sourced by the benches that mount or commit a copy of
# python3's standard library (bench/mount.sh, bench/mount-cache.sh,
# bench/commit.sh).

# stdlib_env DIR: copies python3's stdlib, without test/ and __pycache__/, to
# DIR/lib/NAME and sets `stdlib` (its path on this machine) and `py`.
stdlib_env() {
  py=$(command -v python3)
  stdlib=$("$py" -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')
  mkdir -p "$1/lib"
  (cd "$(dirname "$stdlib")" && tar --exclude="$(basename "$stdlib")/test" --exclude='__pycache__' -cf - "$(basename "$stdlib")") |
    tar -xf - -C "$1/lib"
}

# stdlib_library HPAK W: W/env, the stdlib byte-compiled, added as catalog
# `env` to the library W/lib; prints the tree's size and the load.
stdlib_library() {
  local hpak=$1 w=$2 files
  stdlib_env "$w/env"
  "$py" -m compileall -q -j 2 "$w/env/lib" >/dev/null || true
  "$hpak" pack -q "$w/env" --into "$w/lib" --name env >/dev/null
  files=$(find "$w/env" -type f | wc -l)
  echo "tree: $files files, $(du -sh "$w/env" | cut -f1); dir $w; load $(cut -d' ' -f1-3 /proc/loadavg)"
}

# unmount_views W: lazily unmounts every FUSE view W/m* still mounted.
unmount_views() {
  local m
  for m in "$1"/m*; do if mountpoint -q "$m" 2>/dev/null; then fusermount3 -u -z "$m" || true; fi; done
}
