# SPDX-License-Identifier: MIT
"""Runs a command a few times and prints its median wall time, median CPU time (user + system) and
largest peak resident memory, as the bench/run-*.sh scripts report them.

CPU time is printed next to wall time because the machine these figures come from is shared: wall
time grows with other people's load, CPU time much less. Ratios against torch or numpy are taken
from the same run.

    python3 bench/measure.py [--runs N] [--json] LABEL -- COMMAND...
"""
import json
import os
import statistics
import subprocess
import sys
import time


def measure(command, runs):
    walls, cpus, peaks = [], [], []
    for _ in range(runs):
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        walls.append(time.perf_counter() - start)
        cpus.append(usage.ru_utime + usage.ru_stime)
        peaks.append(usage.ru_maxrss / 1024)
        code = os.waitstatus_to_exitcode(status)
        if code not in (0, 1, 2, 4):  # ckpt-inspect's verdict codes; anything else is a failure
            sys.exit(f"{' '.join(command)}: exit code {code}")
    return statistics.median(walls), statistics.median(cpus), max(peaks)


def main():
    args = sys.argv[1:]
    runs, as_json = 3, False
    while args and args[0].startswith("--"):
        if args[0] == "--runs":
            runs = int(args[1])
            args = args[2:]
        elif args[0] == "--json":
            as_json = True
            args = args[1:]
        else:
            break
    label = args[0]
    command = args[args.index("--") + 1:]
    wall, cpu, peak = measure(command, runs)
    if as_json:
        print(json.dumps({"label": label, "wall": wall, "cpu": cpu, "peak_mib": peak}))
    else:
        print(f"{label:52s} wall {wall:7.2f} s  cpu {cpu:7.2f} s  peak {peak:8.1f} MiB")


if __name__ == "__main__":
    main()
