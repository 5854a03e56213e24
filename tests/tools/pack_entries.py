#!/usr/bin/env python3
"""pack_entries.py count-dict PACK | dict-payload PACK N

Reads a pack's entry headers (formats/pack_format.hpp: "HPEn" kind:u8 ...,
72 bytes, then the payload) by their magic, the way a test finds them:
  count-dict PACK      prints how many entries are dictionaries (kind 3);
  dict-payload PACK N  prints the file offset of 16 bytes into the payload of
                       the N-th dictionary entry (1-based), where a test can
                       damage it."""
import sys

MAGIC, HEADER, DICT = b"HPEn", 72, 3


def dict_entries(data):
    i = data.find(MAGIC)
    while i >= 0:
        if data[i + 4] == DICT:
            yield i
        i = data.find(MAGIC, i + 4)


def main():
    what, path = sys.argv[1], sys.argv[2]
    data = open(path, "rb").read()
    found = list(dict_entries(data))
    if what == "count-dict":
        print(len(found))
    elif what == "dict-payload":
        print(found[int(sys.argv[3]) - 1] + HEADER + 16)
    else:
        sys.exit("usage: pack_entries.py count-dict PACK | dict-payload PACK N")


main()
