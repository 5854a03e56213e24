#!/usr/bin/env bash
# tests/layering/check.sh BUILD_DIR: an include across a layer fails the build
# (layering_violation must not compile, and fail for the include), while the
# same room's own include compiles (layering_ok).
set -euo pipefail
build=${1:?usage: check.sh BUILD_DIR}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
cmake --build "$build" --target layering_ok >"$out" 2>&1 || { cat "$out"; echo "FAIL: layering_ok does not build"; exit 1; }
if cmake --build "$build" --target layering_violation >"$out" 2>&1; then
  echo "FAIL: a base file including core/restore/restore.hpp compiled: the layers are not enforced"
  exit 1
fi
grep -q "core/restore/restore.hpp: No such file" "$out" || { cat "$out"; echo "FAIL: layering_violation failed for another reason"; exit 1; }
echo "layering: ok (an include across rooms fails the build)"
