#!/usr/bin/env python3
"""similar_modules.py ROOT PACKAGES FILES: writes PACKAGES x FILES small
(300-1,500 byte) modules under ROOT/node_modules/pkgNN/lib/mNN.js, each made of
phrases drawn from one shared set, as the sources of one ecosystem share
idioms: what a 64 KiB block alone learns little of and a trained zstd
dictionary is for. Deterministic (seeded)."""
import os
import random
import sys

root, packages, files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(32)
LETTERS = "abcdefghijklmnopqrstuvwxyz"
words = ["".join(rnd.choice(LETTERS) for _ in range(rnd.randint(3, 10))).encode() for _ in range(3000)]
phrases = [b" ".join(rnd.choice(words) for _ in range(rnd.randint(3, 8))) for _ in range(1500)]

for p in range(packages):
    d = os.path.join(root, "node_modules", f"pkg{p:02d}", "lib")
    os.makedirs(d)
    for f in range(files):
        body = bytearray()
        while len(body) < rnd.randint(300, 1500):
            body += rnd.choice(phrases) + b";\n"
        with open(os.path.join(d, f"m{f:02d}.js"), "wb") as fh:
            fh.write(body)
