#!/usr/bin/env python3
"""Whether two `hpak gc --json` reports give the same figures: gc_same_figures.py A.json B.json

Prints "yes" and exits 0 when every field is equal but the timings (seconds,
copy_seconds), dry_run, and the age in a pack's "why" ("(12 s old)"); else
prints "no (" and the first three fields that differ, "name: A / B", ")" and
exits 1. Used by bench/scale.sh (a dry run against the real run) and
tests/cli/test_gc_threads.sh (gc on one worker against several).
"""
import json
import re
import sys

IGNORED = ("dry_run", "seconds", "copy_seconds")


def load(path):
    with open(path) as f:
        doc = json.load(f)
    for p in doc.get("packs", []):
        p["why"] = re.sub(r"\(\d+ s old\)", "(N s old)", p["why"])
    return doc


def main():
    if len(sys.argv) != 3:
        print("usage: gc_same_figures.py A.json B.json", file=sys.stderr)
        return 2
    a, b = load(sys.argv[1]), load(sys.argv[2])
    diff = [k for k in sorted(set(a) | set(b)) if k not in IGNORED and a.get(k) != b.get(k)]
    print("yes" if not diff else "no (" + ", ".join(f"{k}: {a.get(k)} / {b.get(k)}" for k in diff[:3]) + ")")
    return 0 if not diff else 1


if __name__ == "__main__":
    sys.exit(main())
