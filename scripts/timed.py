#!/usr/bin/env python3
"""Runs a command N times and prints one line per run for scripts/bench.sh:
wall seconds, user seconds, system seconds, peak RSS (KB), blocks read from
disk (512-byte units), as GNU time's '%e %U %S %M %I' does, but to the
microsecond: a small model's whole run takes a few milliseconds, below GNU
time's hundredths.

    scripts/timed.py N CMD [ARG...]

The command's output goes to /dev/null; a run that fails stops the script
with its exit status and the last line of its error output.
"""

import os
import subprocess
import sys
import tempfile
import time


def main() -> int:
    if len(sys.argv) < 3 or not sys.argv[1].isdigit():
        print("usage: timed.py N CMD [ARG...]", file=sys.stderr)
        return 2
    runs, cmd = int(sys.argv[1]), sys.argv[2:]
    with tempfile.TemporaryFile() as err:
        for _ in range(runs):
            err.seek(0)
            err.truncate()
            start = time.perf_counter()
            child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
            _, status, usage = os.wait4(child.pid, 0)
            wall = time.perf_counter() - start
            code = os.waitstatus_to_exitcode(status)
            if code != 0:
                err.seek(0)
                lines = err.read().decode(errors="replace").strip().splitlines()
                print(lines[-1] if lines else f"exit status {code}", file=sys.stderr)
                return code if code > 0 else 1
            print(
                f"{wall:.6f} {usage.ru_utime:.6f} {usage.ru_stime:.6f} "
                f"{usage.ru_maxrss} {usage.ru_inblock}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
