#!/usr/bin/env python3
"""Drifts a restored target the way a user might between restores, without
ever following a symlink (tests/cli/test_symlink_race.sh: the entries may be
swapped for symlinks to a canary at any moment, and the test itself must not
write through them).

    drift.py TARGET N

Every path is walked component by component with O_NOFOLLOW; modes are set
through an O_PATH descriptor of a regular file; anything that turns out to
be a symlink (or missing) is skipped.
"""
import os
import stat
import sys

root, n = sys.argv[1], sys.argv[2]


def parent_fd(rel):
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for comp in rel.split("/")[:-1]:
        try:
            nfd = os.open(comp, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        finally:
            os.close(fd)
        fd = nfd
    return fd


def chmod(rel, mode):
    try:
        pfd = parent_fd(rel)
        try:
            fd = os.open(rel.split("/")[-1], os.O_PATH | os.O_NOFOLLOW, dir_fd=pfd)
            try:
                if stat.S_ISREG(os.fstat(fd).st_mode):
                    os.chmod("/proc/self/fd/%d" % fd, mode)
            finally:
                os.close(fd)
        finally:
            os.close(pfd)
    except OSError:
        pass


def write(rel, data, create):
    try:
        pfd = parent_fd(rel)
        try:
            flags = os.O_WRONLY | os.O_NOFOLLOW | ((os.O_CREAT | os.O_EXCL) if create else 0)
            fd = os.open(rel.split("/")[-1], flags, 0o644, dir_fd=pfd)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        finally:
            os.close(pfd)
    except OSError:
        pass


chmod("README", 0o600)
chmod("bin/run", 0o711)
chmod("etc/env.conf", 0o644)
write("lib/python3/site-packages/pkg/sub0/stray-" + n, b"stray\n", True)
write("lib/python3/site-packages/pkg/sub0/mod2.py", b"Z", False)
