#!/usr/bin/env bash
# The system calls of a fresh restore per file, under Wine's relay trace
# (issue 30, "the AV-friendly restore"), run by scripts/build-windows.sh:
#   bash tests/windows/test_wine_calls.sh HPAK_EXE [SMALL BIG [DIRS]]
# WINE (default wine64) and WINEPREFIX come from the caller.
#
# Two trees with the same directories, one with twice the files of the other
# (every fifth file read-only), are packed into a library; each is restored
# fresh (-j 1) under WINEDEBUG=+relay, and the NT system calls of hpak.exe's
# process counted (every ntdll Nt* call in the trace: what hpak.exe and
# kernel32 ask of the system). The calls per file are the difference of the
# two counts over the difference of their file counts, so what a restore does
# once (loading the library, the state file, the directories) cancels out.
# Asserted: at most 5 NT calls per file, exactly one NtCreateFile (one create,
# no temp file, no second open), and no rename. The table per call is printed
# (bench/RESULTS.md has it for 500 and 1,000 files). A third tree, as many
# files as the bigger one over DIRS more directories, gives the calls per
# directory the same way: at most 4 (one create whose handle is kept, its
# time set through it, a close), exactly one NtCreateFile.
suite=test_wine_calls
# shellcheck source=tests/windows/wine_lib.sh
source "$(dirname "$0")/wine_lib.sh" # exe, wine, W, fail/pass, finish (its $2 default is not used here)
small=${2:-25}
big=${3:-50}
extra_dirs=${4:-20}
wineserver=$(command -v wineserver || echo /usr/lib/wine/wineserver)

# shellcheck source=tests/windows/call_trees.sh
source "$(dirname "$0")/call_trees.sh"

# A running wineserver and a started prefix: the trace then holds hpak.exe's process only.
WINEDEBUG=-all "$wineserver" -p 60
WINEDEBUG=-all "$wine" cmd /c exit 0 >/dev/null 2>&1 || true

make_tree "$W/small" "$small"
make_tree "$W/big" "$big"
make_tree "$W/wide" "$big" "$extra_dirs"
WINEDEBUG=-all "$wine" "$exe" init "$W/lib" >/dev/null 2>&1 || fail "init"
for t in small big wide; do
  WINEDEBUG=-all "$wine" "$exe" pack -q --into "$W/lib" --name "$t" "$W/$t" >/dev/null 2>"$W/$t.pack.err" || fail "pack $t: $(head -c 200 "$W/$t.pack.err")"
done

# trace NAME: a fresh restore of catalog NAME into $W/t-NAME, its relay trace
# in $W/NAME.relay (--json: the summary is one write to stdout; the text one
# goes to stderr a byte a call through the C runtime).
trace() {
  WINEDEBUG=+pid,+relay "$wine" "$exe" restore -q --json -j 1 "$W/lib" "$1" "$W/t-$1" >/dev/null 2>"$W/$1.relay" ||
    fail "restore $1: $(grep -v ':Call \|:Ret \|:trace:' "$W/$1.relay" | tail -n 5)"
}
trace small
trace big
trace wide

# The NT calls per file, and the assertions; the table on stdout. Waits
# (NtDelayExecution, NtYieldExecution, NtWaitFor*: the restore's fence of
# 20 ms, timing) and the C runtime's writes of the summary are shown but not
# counted as calls per file; a rename is an
# NtSetInformationFile of class FileRenameInformation (10) or
# FileRenameInformationEx (65), counted apart.
python3 - "$W/small.relay" "$W/big.relay" "$small" "$big" "$W/wide.relay" "$extra_dirs" <<'EOF' >"$W/calls.txt" 2>&1 || fail "the counts below"
import collections, re, sys

def nt_calls(path):
    """Every ntdll Nt* call of the process that ran hpak.exe, by name; a
    write made inside a C runtime call (msvcrt, ucrtbase: the JSON summary,
    which the runtime writes a byte a call) is named apart."""
    pid, counts, stacks = None, collections.Counter(), collections.defaultdict(list)
    line_re = re.compile(r'^([0-9a-f]+):([0-9a-f]+):(Call|Ret ) ([A-Za-z0-9_]+)\.([A-Za-z0-9_]+)\(([^)]*)\)')
    with open(path, errors='replace') as f:
        for line in f:
            if pid is None and ':Call ' in line and 'hpak.exe"' in line:
                pid = line.split(':', 1)[0]
            m = line_re.match(line)
            if not m or (pid is not None and m.group(1) != pid):
                continue
            _, tid, kind, dll, name, args = m.groups()
            stack = stacks[tid]
            if kind == 'Ret ':
                while stack and stack.pop() != (dll, name):
                    pass
                continue
            stack.append((dll, name))
            if dll != 'ntdll' or not name.startswith('Nt'):
                continue
            if name == 'NtSetInformationFile' and args.split(',')[-1] in ('0000000a', '00000041'):
                name += ' (rename)'
            if name == 'NtWriteFile' and any(d in ('msvcrt', 'ucrtbase') for d, _ in stack):
                name += ' (C runtime)'
            counts[name] += 1
    return counts

def is_wait(name):  # or the C runtime's output
    return name in ('NtDelayExecution', 'NtYieldExecution') or name.startswith('NtWaitFor') or name.endswith('(C runtime)')

def calls(c):
    return sum(v for n, v in c.items() if not is_wait(n))

small, big = nt_calls(sys.argv[1]), nt_calls(sys.argv[2])
files = int(sys.argv[4]) - int(sys.argv[3])
per = {n: (big[n] - small[n]) / files for n in set(small) | set(big)}
total = (calls(big) - calls(small)) / files
for n in sorted(per, key=lambda n: (is_wait(n), -per[n], n)):
    if abs(per[n]) >= 0.005:
        print(f"  {n:32s} {per[n]:6.2f}" + ("  (not counted)" if is_wait(n) else ""))
print(f"  {'NT calls per file':32s} {total:6.2f}  ({calls(big)} - {calls(small)} over {files} files)")
wide, dirs = nt_calls(sys.argv[5]), int(sys.argv[6])
per_dir = {n: (wide[n] - big[n]) / dirs for n in set(big) | set(wide)}
dir_total = (calls(wide) - calls(big)) / dirs
print("  per directory:")
for n in sorted(per_dir, key=lambda n: (is_wait(n), -per_dir[n], n)):
    if abs(per_dir[n]) >= 0.005 and not is_wait(n):
        print(f"  {n:32s} {per_dir[n]:6.2f}")
print(f"  {'NT calls per directory':32s} {dir_total:6.2f}  ({calls(wide)} - {calls(big)} over {dirs} directories)")
bad = []
if dir_total > 4: bad.append(f"{dir_total:.2f} NT calls per directory, more than 4")
if abs(per_dir.get('NtCreateFile', 0) - 1) > 0.01: bad.append(f"{per_dir.get('NtCreateFile', 0):.2f} NtCreateFile per directory, not 1")
if total > 5: bad.append(f"{total:.2f} NT calls per file, more than 5")
if abs(per.get('NtCreateFile', 0) - 1) > 0.01: bad.append(f"{per.get('NtCreateFile', 0):.2f} NtCreateFile per file, not 1")
if per.get('NtSetInformationFile (rename)', 0) != 0: bad.append("renames per file")
if big['NtCreateFile'] < int(sys.argv[4]): bad.append("fewer NtCreateFile than files in the trace (is it hpak.exe's?)")
sys.exit("; ".join(bad) if bad else 0)
EOF
echo "NT calls per restored file (fresh restore, -j 1, $small and $big files; per directory: $extra_dirs more):"
cat "$W/calls.txt"
[ "$failures" -eq 0 ] && pass "at most 5 NT calls, one NtCreateFile and no rename per restored file; at most 4 NT calls and one NtCreateFile per directory"

# The restore is right: the same files, the read-only ones read-only.
if diff <(cd "$W/big" && find . -type f -printf '%P %m\n' | sort) \
  <(cd "$W/t-big" && find . -type f ! -name .hpak-state -printf '%P %m\n' | sed 's/ 6[46][46]$/ 644/' | sort) >"$W/modes.diff"; then
  pass "restored tree: same files, read-only ones read-only"
else
  fail "restored tree differs: $(head -3 "$W/modes.diff" | tr '\n' ' ')"
fi

finish
