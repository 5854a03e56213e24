#!/usr/bin/env python3
"""Runs one command and records what it cost: scale_measure.py OUT.json CMD [ARG...]

The command inherits stdin, stdout and stderr; this script's exit status is
the command's (128 + N when signal N killed it). OUT.json gets one object:

  seconds        wall time, from start to exit
  rc             the exit status
  user, sys      CPU seconds the command spent in user space and in the
                 kernel, all its threads (getrusage of the child: exact)
  maxrss_kb      peak resident set (getrusage ru_maxrss of the child: exact)
  hwm_kb         VmHWM of /proc/PID/status at the last sample (a lower bound)
  anon_kb        peak RssAnon sampled (heap, stacks, anonymous maps)
  file_kb        peak RssFile + RssShmem sampled (mapped file pages; a file on
                 tmpfs is counted in RssShmem, on a disk file system in RssFile)
  samples        how many times /proc/PID/status was read
  wchar          bytes the process passed to write(2) and its kin (any file
                 system, tmpfs included; stdout too), from /proc/PID/io
  write_bytes    bytes it caused to be sent to a block device (0 on tmpfs)
  rchar, read_bytes   the same for reads

/proc/PID/io is read after the process exited and before it is reaped
(waitid WNOWAIT), so it holds every byte, those of threads that ended included.
Samples are taken every 2 ms: a peak shorter than that can be missed by anon_kb
and file_kb, never by maxrss_kb.
"""
import json
import os
import subprocess
import sys
import time

SAMPLE_SECONDS = 0.002


def status_fields(pid):
    """The kB fields of /proc/PID/status that matter here ({} once it is gone)."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("VmHWM", "RssAnon", "RssFile", "RssShmem"):
                    out[key] = int(rest.split()[0])
    except (FileNotFoundError, ProcessLookupError, ValueError):
        pass
    return out


def io_fields(pid):
    out = {}
    try:
        with open(f"/proc/{pid}/io") as f:
            for line in f:
                key, _, rest = line.partition(":")
                out[key.strip()] = int(rest)
    except (FileNotFoundError, PermissionError, ValueError):
        pass
    return out


def measure(cmd):
    t0 = time.monotonic()
    child = subprocess.Popen(cmd)
    peak = {"anon_kb": 0, "file_kb": 0, "hwm_kb": 0}
    samples = 0
    while os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        st = status_fields(child.pid)
        if st:
            samples += 1
            peak["anon_kb"] = max(peak["anon_kb"], st.get("RssAnon", 0))
            peak["file_kb"] = max(peak["file_kb"], st.get("RssFile", 0) + st.get("RssShmem", 0))
            peak["hwm_kb"] = max(peak["hwm_kb"], st.get("VmHWM", 0))
        time.sleep(SAMPLE_SECONDS)
    seconds = time.monotonic() - t0
    io = io_fields(child.pid)  # a zombie still has its counters
    _, status, usage = os.wait4(child.pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    rc = 128 - rc if rc < 0 else rc
    result = {"seconds": round(seconds, 4), "rc": rc, "user": round(usage.ru_utime, 4), "sys": round(usage.ru_stime, 4),
              "maxrss_kb": usage.ru_maxrss, "samples": samples}
    result.update(peak)
    for key in ("wchar", "write_bytes", "rchar", "read_bytes"):
        result[key] = io.get(key, 0)
    return result


def main():
    if len(sys.argv) < 3:
        print("usage: scale_measure.py OUT.json CMD [ARG...]", file=sys.stderr)
        return 2
    out, cmd = sys.argv[1], sys.argv[2:]
    try:
        result = measure(cmd)
    except OSError as e:
        print(f"scale_measure.py: cannot run '{cmd[0]}': {e.strerror}", file=sys.stderr)
        return 2
    with open(out, "w") as f:
        json.dump(result, f)
        f.write("\n")
    return result["rc"]


if __name__ == "__main__":
    sys.exit(main())
