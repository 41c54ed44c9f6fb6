#!/usr/bin/env python3
"""CPU time of one process by thread, to say where a benchmark's CPU per request goes.

    thread-cpu.py snapshot PID > FILE           each thread's name and its user and system clock ticks, now
    thread-cpu.py per-request BEFORE AFTER N    µs per request by thread name between two snapshots, for N requests
                                                (user + system, and the system share: the kernel's work for it)

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
        ticks[task] = (name, int(fields[11]), int(fields[12]))  # utime, stime: fields 14 and 15 of stat
    return ticks


def read(path):
    entries = {}
    for line in open(path):
        task, user, system, name = line.rstrip("\n").split(" ", 3)
        entries[task] = (name, int(user), int(system))
    return entries


def by_thread_name(before, after):
    """{group: (user, system)} ticks used between two snapshots, threads grouped by name with digits dropped."""
    groups = {}
    for task, (name, user, system) in after.items():
        group = re.sub(r"\d+", "", name) or "(unnamed)"
        _, user_before, system_before = before.get(task, (name, 0, 0))
        total_user, total_system = groups.get(group, (0, 0))
        groups[group] = (total_user + user - user_before, total_system + system - system_before)
    return groups


def report(groups, count, unit, indent="    "):
    """Prints {name: (user, system)} ticks as µs per `unit` (count of them), largest first."""
    per_tick_us = 1e6 / os.sysconf("SC_CLK_TCK")
    for name, (user, system) in sorted(groups.items(), key=lambda item: -sum(item[1])):
        if user + system > 0:
            print(f"{indent}{(user + system) * per_tick_us / count:7.1f} µs per {unit}"
                  f" (system {system * per_tick_us / count:.1f}): {name}")


def main(argv):
    if len(argv) == 3 and argv[1] == "snapshot":
        for task, (name, user, system) in sorted(snapshot(argv[2]).items()):
            print(task, user, system, name)
    elif len(argv) == 5 and argv[1] == "per-request":
        report(by_thread_name(read(argv[2]), read(argv[3])), int(argv[4]), "request")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
