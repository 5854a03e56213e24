#!/usr/bin/env bash
# bench/dirty-vs-git.sh — the no-op and 1% dirty restore of a real tree against
# git's stat cache (issue 32), two hpak builds side by side, runs interleaved.
#
#   bench/dirty-vs-git.sh HPAK_BASE HPAK_NEW TREE WORKDIR [RUNS]
#
# On WORKDIR's file system: a library holding TREE for each build (packed by
# that build: the two may write different formats), one target restored by
# each build from its own, and a git work tree of TREE (committed). Each
# run, in this order:
#   noop   `hpak restore` of the unchanged target by each build; `git status --porcelain`
#   dirty  1% of the files (every 100th regular file in sorted order) get a
#          line appended in all three trees; then `hpak restore` by each build
#          and `git checkout -f`
# Prints the median (ms) of each row and the ratios to git (goal: <= 0.8).
# Each hpak build is a multi-call binary, so it must be named hpak (e.g.
# /tmp/base/hpak and /tmp/new/hpak). Threads: -j 2 (THREADS=...).
# CPU=1: each figure is the command's CPU time (user + sys, `perf stat -e
# task-clock`, ms) instead of its wall time: stable on a loaded machine.
set -euo pipefail
[[ $# -ge 4 ]] || { echo "usage: $0 HPAK_BASE HPAK_NEW TREE WORKDIR [RUNS]" >&2; exit 2; }
base=$1 new=$2 tree=$3 work=$4 runs=${5:-9} j=${THREADS:-2}
tmp=$(mktemp -d "$work/dirtygit.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
ms() { local a b; a=$(date +%s%N); "$@" >/dev/null 2>&1 || { echo "dirty-vs-git.sh: failed: $*" >&2; exit 1; }; b=$(date +%s%N); echo $(((b - a) / 1000000)); }
cpu_ms() {
  local out
  out=$(perf stat -x, -e task-clock -- "$@" 2>&1 >/dev/null) || { echo "dirty-vs-git.sh: failed: $*" >&2; exit 1; }
  awk -F, '/task-clock/ { printf "%.1f\n", $1 }' <<<"$out"
}
[[ ${CPU:-0} == 1 ]] && ms() { cpu_ms "$@"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for b in base new; do
  "${!b}" -q init "$tmp/L$b" >/dev/null
  "${!b}" -q pack "$tree" --into "$tmp/L$b" --name env >/dev/null
  "${!b}" -q restore "$tmp/L$b" env "$tmp/$b" -j "$j" >/dev/null
done
cp -a "$tree" "$tmp/git"
git -C "$tmp/git" init -q && git -C "$tmp/git" add -A && git -C "$tmp/git" -c user.name=b -c user.email=b@b commit -qm tree
mapfile -t files < <(cd "$tmp/base" && find . -type f ! -name .hpak-state | sort | awk 'NR % 100 == 0')
echo "# $tree: $(find "$tree" -type f | wc -l) files; ${#files[@]} changed per dirty run; $runs runs on $(stat -f -c %T "$work"); $([[ ${CPU:-0} == 1 ]] && echo "CPU (task-clock)" || echo "wall") ms; load $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$tmp/res"
for r in $(seq 1 "$runs"); do
  echo "noop_base $(ms "$base" -q restore "$tmp/Lbase" env "$tmp/base" -j "$j")" >>"$tmp/res"
  echo "noop_new $(ms "$new" -q restore "$tmp/Lnew" env "$tmp/new" -j "$j")" >>"$tmp/res"
  echo "noop_git $(ms git -C "$tmp/git" status --porcelain)" >>"$tmp/res"
  for f in "${files[@]}"; do for d in base new git; do echo "# run $r" >>"$tmp/$d/$f"; done; done
  echo "dirty_base $(ms "$base" -q restore "$tmp/Lbase" env "$tmp/base" -j "$j")" >>"$tmp/res"
  echo "dirty_new $(ms "$new" -q restore "$tmp/Lnew" env "$tmp/new" -j "$j")" >>"$tmp/res"
  echo "dirty_git $(ms git -C "$tmp/git" checkout -f -q)" >>"$tmp/res"
done
declare -A m
for k in noop_base noop_new noop_git dirty_base dirty_new dirty_git; do
  m[$k]=$(grep "^$k " "$tmp/res" | cut -d' ' -f2 | median)
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| job | base (ms) | new (ms) | git (ms) | base / git | new / git |\n|---|--:|--:|--:|--:|--:|\n'
printf '| no-op restore vs `git status` | %s | %s | %s | %.2f | %.2f |\n' "${m[noop_base]}" "${m[noop_new]}" "${m[noop_git]}" \
  "$(echo "${m[noop_base]} / ${m[noop_git]}" | bc -l)" "$(echo "${m[noop_new]} / ${m[noop_git]}" | bc -l)"
printf '| 1%% dirty restore vs `git checkout -f` | %s | %s | %s | %.2f | %.2f |\n' "${m[dirty_base]}" "${m[dirty_new]}" "${m[dirty_git]}" \
  "$(echo "${m[dirty_base]} / ${m[dirty_git]}" | bc -l)" "$(echo "${m[dirty_new]} / ${m[dirty_git]}" | bc -l)"
