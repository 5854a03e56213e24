#!/usr/bin/env python3
"""Builds rcc-format hololibs from trees, for the tests of `hpak import`.

Written from rcc's documented format (v18 htfs; see ../shared/reference/
rcc-holotree.md and man/hpak-import.1), not from its code:

  library/<d[0:2]>/<d[2:4]>/<d[4:6]>/<d>  each object: gzip level 1 of the file's bytes
                                          (zstd or raw with --compress); d = SHA-256 (hex)
  catalog/<blueprint16hex>v12.linux_amd64 gzip of indented JSON:
      {rcc, identity, path, controller, space, platform, blueprint, lifted, tree}
      dir:  {name, symlink?, mode, subdirs{}, files{}, shadow?}
      file: {name, symlink?, size, mode, digest, rewrite[]}
  catalog/<name>.info                     the same header without the tree (plain JSON)
  hololib.zip (--zip): the same names, objects stored, the catalog last.

Lifting follows rcc: the walk follows symlinks (stat), records each link's
target, marks the subdirectories of a symlinked directory "shadow", computes
every file's digest and the offsets of the space's last path component
(`identity`) in it, and stores objects only for real files outside symlinked
directories. Modes are Go fs.FileMode numbers.

Subcommands:
  tree ROOT                 a test tree at ROOT (ROOT's path inside shebangs, text,
                            binaries and symlinks; empty files/dirs; modes)
  lift ROOT OUT [--zip Z] [--zip-deflate 1] [--compress gzip|zstd|raw] [--name N] [--damage KIND]
                            (OUT may already hold a hololib: its catalogs and objects stay;
                            --zip-deflate 1: zip entries deflated instead of stored)
  compare A B               exit 1 unless trees A and B are identical (types, modes
                            incl. setuid/setgid/sticky, bytes, link targets; a top-level
                            .hpak-state, hpak restore's record, is left out)
Damage kinds (hostile hololibs): bad-digest, wrong-size, missing-object,
malformed-json, size-lie, dotdot-entry, absolute-entry, symlink-entry, siphash,
other-path, shrunk-size (data.bin's catalog size far below its object's),
catalog-bomb (a catalog of a few hundred KiB that gunzips to 300 MiB of JSON
whitespace); bare-name (not hostile: a bare space name, which import leaves as
it is). bad-digest=PATH damages the object of the file at PATH (e.g. one two
paths share) instead of the first non-empty file.
"""
import gzip
import hashlib
import io
import json
import os
import stat
import subprocess
import sys
import zipfile

GO_DIR = 1 << 31
GO_SYMLINK = 1 << 27
GO_SETUID = 1 << 23
GO_SETGID = 1 << 22
GO_STICKY = 1 << 20
KILLFILE = {"__MACOSX", "__pycache__", ".pyc", ".git", ".hg", ".svn", ".gitignore"}


def go_mode(st):
    m = st.st_mode & 0o777
    if stat.S_ISDIR(st.st_mode):
        m |= GO_DIR
    if stat.S_ISLNK(st.st_mode):
        m |= GO_SYMLINK
    if st.st_mode & stat.S_ISUID:
        m |= GO_SETUID
    if st.st_mode & stat.S_ISGID:
        m |= GO_SETGID
    if st.st_mode & stat.S_ISVTX:
        m |= GO_STICKY
    return m


def offsets(data, needle):
    out, i = [], data.find(needle)
    while i >= 0:
        out.append(i)
        i = data.find(needle, i + 1)
    return out


def readlink(p):
    return os.readlink(p) if os.path.islink(p) else ""


class Lifter:
    def __init__(self, root):
        self.root = os.path.abspath(root)
        self.identity = os.path.basename(self.root).encode()
        self.objects = {}  # digest -> bytes, stored ones only

    def lift_dir(self, path, name, symlink, shadow):
        st = os.stat(path)
        d = {"name": name, "mode": go_mode(st), "subdirs": {}, "files": {}}
        if symlink:
            d["symlink"] = symlink
        if shadow:
            d["shadow"] = True
        child_shadow = shadow or bool(symlink)
        for entry in sorted(os.listdir(path)):
            if entry in KILLFILE or os.path.splitext(entry)[1] in KILLFILE:
                continue
            full = os.path.join(path, entry)
            info = os.stat(full)
            link = readlink(full)
            if stat.S_ISDIR(info.st_mode):
                d["subdirs"][entry] = self.lift_dir(full, entry, link, child_shadow)
            else:
                d["files"][entry] = self.lift_file(full, entry, info, link, store=not child_shadow and not link)
        return d

    def lift_file(self, full, name, info, link, store):
        with open(full, "rb") as f:
            data = f.read()
        digest = hashlib.sha256(data).hexdigest()
        if store:
            self.objects[digest] = data
        f = {"name": name, "size": info.st_size, "mode": go_mode(info), "digest": digest,
             "rewrite": offsets(data, self.identity)}
        if link:
            f["symlink"] = link
        return f

    def catalog(self):
        info = {"rcc": "v18.5.0", "identity": self.identity.decode(), "path": self.root, "controller": "rcc.test",
                "space": "user", "platform": "linux_amd64", "blueprint": "1a2b3c4d5e6f7a8b"}
        root = dict(info)
        root["lifted"] = True
        root["tree"] = self.lift_dir(self.root, "", "", False)
        return info, root


def compress(data, how):
    if how == "gzip":
        return gzip.compress(data, compresslevel=1, mtime=0)
    if how == "zstd":
        return subprocess.run(["zstd", "-q", "-1", "-c"], input=data, stdout=subprocess.PIPE, check=True).stdout
    return data


def object_name(digest):
    return "library/%s/%s/%s/%s" % (digest[:2], digest[2:4], digest[4:6], digest)


def first_file(tree, pred, prefix=""):
    """(path, entry) of the first stored file entry (sorted walk) matching pred."""
    for name in sorted(tree["files"]):
        f = tree["files"][name]
        if "symlink" not in f and pred(f):
            return prefix + name, f
    for name in sorted(tree["subdirs"]):
        d = tree["subdirs"][name]
        if "symlink" in d or d.get("shadow"):
            continue
        hit = first_file(d, pred, prefix + name + "/")
        if hit:
            return hit
    return None


def find_file(tree, path):
    """The file entry at PATH (slash-separated) in a catalog tree."""
    parts = path.split("/")
    for p in parts[:-1]:
        tree = tree["subdirs"][p]
    return tree["files"][parts[-1]]


def catalog_bomb():
    """gzip members: a JSON start, then 300 of 1 MiB of spaces each (Go reads members as one stream)."""
    pad = gzip.compress(b" " * (1 << 20), compresslevel=9, mtime=0)
    return gzip.compress(b'{"rcc": "v18.5.0", "tree": ', mtime=0) + pad * 300


def lift(root, out, zip_path=None, how="gzip", name=None, damage=None, deflate=False):
    lifter = Lifter(root)
    info, cat = lifter.catalog()
    objects = {d: compress(b, how) for d, b in lifter.objects.items()}
    entries = {}  # zip/dir name -> bytes
    catname = name or (info["blueprint"] + "v12." + info["platform"])
    if damage and damage.startswith("bad-digest="):
        f = find_file(cat["tree"], damage.split("=", 1)[1])
        raw = bytearray(lifter.objects[f["digest"]])
        raw[0] ^= 0xFF
        objects[f["digest"]] = compress(bytes(raw), how)
    elif damage == "shrunk-size":
        f = find_file(cat["tree"], "lib/pkg/sub/data.bin")
        f["size"] = 1000
    elif damage == "bad-digest":
        _, f = first_file(cat["tree"], lambda f: f["size"] > 0)
        raw = bytearray(lifter.objects[f["digest"]])
        raw[0] ^= 0xFF
        objects[f["digest"]] = compress(bytes(raw), how)
    elif damage == "wrong-size":
        _, f = first_file(cat["tree"], lambda f: f["size"] > 0)
        f["size"] += 1
    elif damage == "missing-object":
        _, f = first_file(cat["tree"], lambda f: f["size"] > 0)
        del objects[f["digest"]]
    elif damage == "size-lie":
        # The catalog says a few bytes; the object (2 KiB) inflates to 2 MiB of zeros.
        _, f = first_file(cat["tree"], lambda f: f["size"] > 0)
        objects[f["digest"]] = gzip.compress(b"\0" * (2 << 20), compresslevel=9, mtime=0)
    elif damage == "siphash":
        _, f = first_file(cat["tree"], lambda f: f["size"] > 0)
        f["digest"] = f["digest"][:32]
    elif damage in ("bare-name", "other-path"):
        _, f = first_file(cat["tree"], lambda f: len(f["rewrite"]) > 0)
        d = f["digest"]
        raw = lifter.objects[d]
        # the space name alone (a prompt), or ending a path other than the space's
        extra = b"\n" + (b"PS1=(" if damage == "bare-name" else b"/elsewhere/") + lifter.identity
        raw2 = raw + extra
        d2 = hashlib.sha256(raw2).hexdigest()
        f["digest"], f["size"] = d2, len(raw2)
        f["rewrite"] = f["rewrite"] + [len(raw2) - len(lifter.identity)]
        objects[d2] = compress(raw2, how)
    for d, b in objects.items():
        entries[object_name(d)] = b
    text = json.dumps(cat, indent=2, sort_keys=True).encode()
    if damage == "malformed-json":
        text = text[: len(text) // 2]
    entries["catalog/" + catname] = gzip.compress(text, compresslevel=1, mtime=0)
    if damage == "catalog-bomb":
        entries["catalog/" + catname] = catalog_bomb()
    entries["catalog/" + catname + ".info"] = json.dumps(info, indent=2).encode()
    if zip_path:
        write_zip(zip_path, entries, damage, deflate)
    if out:
        for n, b in entries.items():
            p = os.path.join(out, n)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(b)
    return catname


def write_zip(path, entries, damage, deflate=False):
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED) as z:
        names = sorted(n for n in entries if n.startswith("library/"))
        names += sorted(n for n in entries if n.startswith("catalog/"))  # the catalog last, as rcc does
        for n in names:
            z.writestr(n, entries[n])
        if damage == "dotdot-entry":
            z.writestr("library/../../escape", b"x")
        elif damage == "absolute-entry":
            z.writestr("/tmp/escape", b"x")
        elif damage == "symlink-entry":
            zi = zipfile.ZipInfo("library/aa/bb/cc/link")
            zi.create_system = 3
            zi.external_attr = (stat.S_IFLNK | 0o777) << 16
            z.writestr(zi, b"/etc/passwd")


def in_place(path, packed_at):
    """How a restore writes PATH into a binary whose strings held PACKED_AT
    (hpak's in-place kind): over the packed path and NUL-padded before the
    string's terminator when PATH is not longer, else left as packed
    (restore --keep-unrelocated). Returns (text, padding) for each string."""
    if packed_at is None or len(path) == len(packed_at):
        return path, b""
    if len(path) < len(packed_at):
        return path, b"\0" * (len(packed_at) - len(path))
    return packed_at, b""


def make_tree(root, packed_at=None):
    """A small environment-like tree whose files embed ROOT's own path; with
    PACKED_AT, the tree an hpak restore into ROOT of that tree packed (or
    imported) at PACKED_AT writes (its binary patched in place)."""
    r = os.path.abspath(root)
    os.makedirs(r)
    for d in ("bin", "lib/pkg/sub", "lib/empty", "share/doc", "etc/conf.d", "tmp"):
        os.makedirs(os.path.join(r, d))

    def put(rel, data, mode=0o644):
        p = os.path.join(r, rel)
        with open(p, "wb") as f:
            f.write(data)
        os.chmod(p, mode)

    rb = r.encode()
    elf = b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 8
    eb, pad = in_place(rb, None if packed_at is None else os.path.abspath(packed_at).encode())
    put("bin/python", elf + b"\0" + eb + b"/lib" + pad + b"\0" + bytes(range(255, -1, -1)) * 4 + eb + pad + b"\0tail", 0o755)
    put("bin/tool", b"#!" + rb + b"/bin/python\n# -*- coding: utf-8 -*-\nimport sys\nprint(sys.prefix)\n", 0o755)
    put("bin/pip", b"#!" + rb + b"/bin/python\nfrom pip import main\nmain()\n", 0o755)
    put("bin/setuid-helper", b"#!/bin/sh\necho helper\n", 0o4755)
    put("lib/pkg/__init__.py", b"")
    put("lib/pkg/mod.py", b"PREFIX = '" + rb + b"'\nLIB = '" + rb + b"/lib'\nDATA = '" + rb + b"/share'\n")
    put("lib/pkg/sub/data.bin", bytes((i * 7919) % 251 for i in range(70000)))
    put("lib/pkg/sub/same.txt", b"same content\n")
    put("lib/pkg/same-too.txt", b"same content\n")
    put("share/doc/README", b"plain text, no path\n" * 40)
    put("share/doc/empty", b"")
    put("etc/conf.d/prefix.conf", b"prefix=" + rb + b"\nprefix_again=" + rb + b"/etc\n", 0o600)
    put("etc/readonly.cfg", b"ro\n", 0o444)
    os.chmod(os.path.join(r, "etc/conf.d"), 0o2755)
    os.chmod(os.path.join(r, "tmp"), 0o1777)
    os.symlink("python", os.path.join(r, "bin/python3"))                  # relative file link
    os.symlink(r + "/bin/python", os.path.join(r, "bin/python-abs"))      # absolute, into the space
    os.symlink("lib", os.path.join(r, "lib64"))                           # relative directory link
    os.symlink(r + "/lib/pkg", os.path.join(r, "share/pkg-link"))         # absolute directory link


def describe(root):
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            rel = os.path.relpath(p, root)
            if rel == ".hpak-state":  # hpak restore's own record of the target
                continue
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", oct(stat.S_IMODE(st.st_mode)))
            else:
                with open(p, "rb") as f:
                    out[rel] = ("file", oct(stat.S_IMODE(st.st_mode)), hashlib.sha256(f.read()).hexdigest())
    return out


def compare(a, b):
    da, db = describe(a), describe(b)
    bad = sorted(k for k in set(da) | set(db) if da.get(k) != db.get(k))
    for k in bad[:20]:
        print("differs: %s: %s vs %s" % (k, da.get(k), db.get(k)), file=sys.stderr)
    return 1 if bad else 0


def main(argv):
    if len(argv) in (2, 4) and argv[0] == "tree":
        if len(argv) == 4 and argv[2] != "--packed-at":
            raise SystemExit("usage: tree ROOT [--packed-at SPACE]")
        make_tree(argv[1], argv[3] if len(argv) == 4 else None)
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        return compare(argv[1], argv[2])
    if len(argv) >= 3 and argv[0] == "lift":
        opts = {"--zip": None, "--zip-deflate": None, "--compress": "gzip", "--name": None, "--damage": None}
        rest = argv[3:]
        while rest:
            if rest[0] not in opts or len(rest) < 2:
                raise SystemExit("unknown option %r" % rest[0])
            opts[rest[0]] = rest[1]
            rest = rest[2:]
        out = None if argv[2] == "-" else argv[2]
        print(lift(argv[1], out, opts["--zip"], opts["--compress"], opts["--name"], opts["--damage"],
                   opts["--zip-deflate"] == "1"))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
