#!/usr/bin/env python3
"""CPU time of one process by thread, to say where a benchmark's CPU per request goes.

    thread-cpu.py snapshot PID > FILE           each thread's name and user+system clock ticks, now
    thread-cpu.py per-request BEFORE AFTER N    µs per request by thread name between two snapshots, for N requests

Thread names group: digits are dropped (`rdk:broker1` and `rdk:broker2` count together). A thread that ended
between the snapshots is not counted (the whole process's figure, from /proc/PID/stat, still is)."""
import os
import re
import sys


def snapshot(pid):
    ticks = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = open(f"/proc/{pid}/task/{task}/stat").read()
        except OSError:
            continue  # ended while listing
        # The name is between the first "(" and the last ")" (it may hold spaces or parentheses).
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        ticks[task] = (name, int(fields[11]) + int(fields[12]))  # utime, stime: fields 14 and 15 of stat
    return ticks


def read(path):
    entries = {}
    for line in open(path):
        task, ticks, name = line.rstrip("\n").split(" ", 2)
        entries[task] = (name, int(ticks))
    return entries


def main(argv):
    if len(argv) == 3 and argv[1] == "snapshot":
        for task, (name, ticks) in sorted(snapshot(argv[2]).items()):
            print(task, ticks, name)
    elif len(argv) == 5 and argv[1] == "per-request":
        before, after, requests = read(argv[2]), read(argv[3]), int(argv[4])
        per_tick_us = 1e6 / os.sysconf("SC_CLK_TCK")
        groups = {}
        for task, (name, ticks) in after.items():
            group = re.sub(r"\d+", "", name) or "(unnamed)"
            groups[group] = groups.get(group, 0) + ticks - before.get(task, (name, 0))[1]
        for group, ticks in sorted(groups.items(), key=lambda item: -item[1]):
            if ticks > 0:
                print(f"    {ticks * per_tick_us / requests:7.1f} µs per request: {group}")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
