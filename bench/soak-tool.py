#!/usr/bin/env python3
"""bench/soak.sh's sampler and its rate finder, in Python's standard library only. What the load is and how the
topics and the ledger are checked is bench/chaos-tool.py's (imported, not copied).

  sample     every --interval seconds one CSV row: per process (a pid, a list of pids, or a process with all its
             descendants, such as PostgreSQL's postmaster and its backends) resident memory, open descriptors,
             threads and CPU (% of one core); the verifiers' consumer lag, the ledger's lag (its stored offsets in
             PostgreSQL, committed with the rows they produced, against the topics' end offsets, asked with kcat -Q:
             what is durably applied, not what the ledger says), and its own kafka_consumer_lag; counters and their
             rates; the machine's load average and the CPU the machine spent outside the sampled processes.
  find-rate  offers the ingest a rate in steps (--start, times --factor each step, for --step-s seconds each,
             without a pause), with every process of the system on the machine, and stops at the first step that
             does not keep up: every submission answered 202 and none skipped by the load generator for want of a
             connection (1 % allowed), the acknowledged rate within 3 % of the offered one, and over the second half
             of the step the verifiers' lag and the ledger's lag under --lag-s seconds of traffic (with a floor of
             --lag-floor messages: the ledger applies batches). Prints one line per step, writes them to --csv, and
             ends with SUSTAINED_RATE=<the highest step that kept up, 0 when none did>.
"""
import argparse
import csv
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("chaos_tool", os.path.join(HERE, "chaos-tool.py"))
chaos = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(chaos)

TICKS = os.sysconf("SC_CLK_TCK")


# ---- /proc --------------------------------------------------------------------------------------------------------
def read_stat(pid):
    """(ppid, utime + stime, cutime + cstime) in clock ticks from /proc/<pid>/stat; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            text = stat.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()   # the command name may hold spaces and parentheses
    return int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])


def descendants(root):
    """`root` and every process below it."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = read_stat(entry)
            if stat:
                children.setdefault(stat[0], []).append(int(entry))
    found, todo = [], [int(root)]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def status_fields(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            fields[name] = value.split()
    return fields


def tree_memory_kb(pid):
    """(own, shared) memory of one process of a tree, from /proc/<pid>/smaps: own = the proportional share (Pss) of
    its private mappings (pages a fork still shares with its parent split between them), shared = the resident part
    of its shared mappings (PostgreSQL's buffer pool: mapped by every process, a fixed size, filled as tables
    grow; counted once per tree, not per process)."""
    own = shared = 0
    is_shared = False
    with open(f"/proc/{pid}/smaps") as smaps:
        for line in smaps:
            head = line.split(None, 2)
            if not head:
                continue
            if "-" in head[0] and not head[0].endswith(":"):
                is_shared = len(head) > 1 and len(head[1]) == 4 and head[1][3] == "s"
            elif head[0] == "Pss:" and not is_shared:
                own += int(head[1])
            elif head[0] == "Rss:" and is_shared:
                shared += int(head[1])
    return own, shared


class Sampled:
    """One row's figures of a named process group: a single process (RSS), several (their RSS summed) or a tree
    (the Pss of its private mappings summed, the shared mappings apart: RSS would count PostgreSQL's buffer pool in
    every backend)."""

    def __init__(self, name, pids, tree):
        self.name, self.pids, self.tree = name, pids, tree
        self.previous_cpu = None

    def figures(self, elapsed):
        pids = descendants(self.pids[0]) if self.tree else self.pids
        rss_kb = fds = threads = cpu = shared_kb = 0
        alive = 0
        for pid in pids:
            try:
                stat = read_stat(pid)
                fields = status_fields(pid)
                fds += len(os.listdir(f"/proc/{pid}/fd"))
                if self.tree:
                    own, shared = tree_memory_kb(pid)
                    rss_kb += own
                    shared_kb = max(shared_kb, shared)
                else:
                    rss_kb += int(fields.get("VmRSS", ["0"])[0])
                threads += int(fields["Threads"][0])
            except (OSError, ValueError, KeyError, IndexError):
                continue
            if stat is None:
                continue
            alive += 1
            cpu += stat[1]
            if self.tree and pid == int(self.pids[0]):
                cpu += stat[2]   # children it reaped (backends that exited) keep counting
        if not alive:
            self.previous_cpu = None
            return None, None, None, None, 0, None
        cpu_pct = None
        if self.previous_cpu is not None and elapsed > 0:
            cpu_pct = max(cpu - self.previous_cpu, 0) / TICKS / elapsed * 100
        ticks = max(cpu - self.previous_cpu, 0) if self.previous_cpu is not None else 0
        self.previous_cpu = cpu
        return round(rss_kb / 1024, 1), fds, threads, cpu_pct, ticks, round(shared_kb / 1024, 1)


def machine_busy_ticks():
    with open("/proc/stat") as stat:
        values = [int(value) for value in stat.readline().split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return sum(values[:8]) - idle


def ledger_lag(args):
    """Messages the ledger has not durably applied (stored offsets vs end offsets), or None when unreadable."""
    if not args.database_url:
        return None
    try:
        behind = chaos.ledger_offsets_behind(args)
    except (RuntimeError, OSError, subprocess.TimeoutExpired):
        return None
    return sum(end - stored for stored, end in behind.values())


def verifier_lag(urls):
    lag = 0.0
    for url in urls:
        samples = chaos.scrape(url)
        if samples is None:
            return None
        lag += sum(max(value, 0) for name, _, value in samples if name == "kafka_consumer_lag")
    return lag


# ---- sample -------------------------------------------------------------------------------------------------------
def parse_groups(args):
    groups = []
    for entry in args.proc:
        name, _, pids = entry.partition("=")
        groups.append(Sampled(name, [int(pid) for pid in pids.split(",") if pid], tree=False))
    for entry in args.tree:
        name, _, pid = entry.partition("=")
        groups.append(Sampled(name, [int(pid)], tree=True))
    return groups


def command_sample(args):
    groups = parse_groups(args)
    running = [True]
    signal.signal(signal.SIGTERM, lambda *_: running.__setitem__(0, False))
    signal.signal(signal.SIGINT, lambda *_: running.__setitem__(0, False))
    myself = Sampled("sampler", [os.getpid()], tree=False)
    columns = ["t_s", "epoch_s"]
    for group in groups:
        columns += [f"{group.name}_{figure}" for figure in ("rss_mb", "fds", "threads", "cpu_pct")]
        if group.tree:
            columns.append(f"{group.name}_shared_mb")
    counters = ["accepted_total", "results_total", "applied_total", "events_total"]
    columns += ["verifier_lag", "ledger_lag", "ledger_metric_lag"] + counters
    columns += ["accepted_per_s", "results_per_s", "applied_per_s", "load1", "cpu_machine_pct", "cpu_other_pct"]
    # The ingest's verdict index, to tell a growing structure from the allocator's high-water mark in its memory.
    index_gauges = ["ingest_result_index_entries", "ingest_result_index_bytes", "ingest_result_index_pending",
                    "ingest_result_waiting_requests"]
    columns += index_gauges
    # Each service's heap in use and the free memory its allocator keeps (glibc's mallinfo2: process_heap_in_use_bytes,
    # process_heap_free_bytes): a leak grows the first; resident memory that grows while it stays flat is the
    # allocator keeping freed memory.
    heap_sources = ([("ingest", args.ingest)] if args.ingest else []) \
        + [(f"verifier{n}", url) for n, url in enumerate(args.verifier, start=1)] \
        + [(f"ledger{n}", url) for n, url in enumerate(args.ledger, start=1)]
    columns += [f"{name}_heap_mb" for name, _ in heap_sources]
    columns += [f"{name}_heap_free_mb" for name, _ in heap_sources]
    start = time.monotonic()
    previous_time, previous_counts, previous_busy = None, None, machine_busy_ticks()
    with open(args.out, "w", buffering=1) as out:
        out.write(",".join(columns) + "\n")
        while running[0]:
            now = time.monotonic()
            elapsed = now - previous_time if previous_time is not None else 0
            row = [f"{now - start:.1f}", f"{time.time():.0f}"]
            ours = 0
            for group in groups:
                rss, fds, threads, cpu_pct, ticks, shared = group.figures(elapsed)
                ours += ticks
                values = (rss, fds, threads, cpu_pct) + ((shared,) if group.tree else ())
                row += ["" if value is None else (f"{value:.1f}" if isinstance(value, float) else str(value))
                        for value in values]
            verifier_samples = [chaos.scrape(url) for url in args.verifier]
            ingest_samples = chaos.scrape(args.ingest) if args.ingest else None
            ledger_samples = [chaos.scrape(url) for url in args.ledger]
            v_lag = None if any(s is None for s in verifier_samples) else sum(
                max(value, 0) for samples in verifier_samples for name, _, value in samples
                if name == "kafka_consumer_lag")
            counts = {
                "accepted_total": chaos.metric_sum(ingest_samples, "ingest_http_requests_total", 'code="202"'),
                "results_total": sum(chaos.metric_sum(s, "verifier_results_total") for s in verifier_samples),
                "applied_total": sum(chaos.metric_sum(s, "ledger_messages_applied_total") for s in ledger_samples),
                "events_total": sum(chaos.metric_sum(s, "verifier_notification_events_total")
                                    for s in verifier_samples),
            }
            l_metric = None if not ledger_samples or any(s is None for s in ledger_samples) else sum(
                max(value, 0) for samples in ledger_samples for name, _, value in samples
                if name == "kafka_consumer_lag")
            l_lag = ledger_lag(args)
            row += ["" if v_lag is None else str(int(v_lag)), "" if l_lag is None else str(l_lag),
                    "" if l_metric is None else str(int(l_metric))]
            row += [str(int(counts[name])) for name in counters]
            for name in ("accepted_total", "results_total", "applied_total"):
                rate = (counts[name] - previous_counts[name]) / elapsed if previous_counts and elapsed else 0.0
                row.append(f"{max(rate, 0):.0f}")
            busy = machine_busy_ticks()
            self_ticks = myself.figures(elapsed)[4]
            machine = (busy - previous_busy) / TICKS / elapsed * 100 if elapsed else 0.0
            other = max(busy - previous_busy - ours - self_ticks, 0) / TICKS / elapsed * 100 if elapsed else 0.0
            previous_busy = busy
            row += [f"{os.getloadavg()[0]:.2f}", f"{machine:.0f}", f"{other:.0f}"]
            row += ["" if ingest_samples is None else str(int(chaos.metric_sum(ingest_samples, gauge)))
                    for gauge in index_gauges]
            scraped = dict(zip(args.verifier, verifier_samples)) | dict(zip(args.ledger, ledger_samples))
            if args.ingest:
                scraped[args.ingest] = ingest_samples
            for metric in ("process_heap_in_use_bytes", "process_heap_free_bytes"):
                for _, url in heap_sources:
                    samples = scraped.get(url)
                    heap = None if samples is None else chaos.metric_sum(samples, metric)
                    row.append("" if heap is None else f"{heap / 1048576:.1f}")
            out.write(",".join(row) + "\n")
            previous_time, previous_counts = now, counts
            deadline = now + args.interval
            while running[0] and time.monotonic() < deadline:
                time.sleep(0.2)


# ---- find-rate ----------------------------------------------------------------------------------------------------
def run_step(args, step, rate):
    """Offers `rate` for --step-s seconds; returns the step's figures and whether it kept up (and why not)."""
    out = args.load_out
    command = [sys.executable, os.path.join(HERE, "chaos-tool.py"), "load", "--ingest", args.ingest,
               "--rate", str(rate), "--out", out, "--run", f"find{step}", "--duration", str(args.step_s),
               "--first-number", str(step * 10_000_000)]
    if args.fake and args.notification_rate > 0:
        command += ["--fake", args.fake, "--notification-rate", str(args.notification_rate)]
    started, started_epoch = time.monotonic(), time.time()
    with open(f"{out}.step{step}.log", "w") as log:
        load = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True)
    v_lags, l_lags, loads = [], [], []
    results_at = {}
    while load.poll() is None:
        time.sleep(2)
        elapsed = time.monotonic() - started
        if elapsed < args.step_s / 2 or elapsed > args.step_s:
            continue
        v_lags.append(verifier_lag(args.verifier))
        l_lags.append(ledger_lag(args))
        loads.append(os.getloadavg()[0])
        samples = [chaos.scrape(url) for url in args.verifier]
        results_at[elapsed] = sum(chaos.metric_sum(s, "verifier_results_total") for s in samples)
    summary_text = load.stdout.read()
    try:
        summary = json.loads(summary_text.strip().splitlines()[-1])
    except (ValueError, IndexError):
        summary = {"sent": 0, "skipped": 0, "statuses": {}, "latency_ms": {}}
    acknowledged = summary["statuses"].get("202", 0)
    other = {status: count for status, count in summary["statuses"].items() if status != "202"}
    offered = summary.get("sent", 0) + summary.get("skipped", 0)
    times = sorted(results_at)
    results_per_s = ((results_at[times[-1]] - results_at[times[0]]) / (times[-1] - times[0])
                     if len(times) > 1 and times[-1] > times[0] else None)
    lag_bound = max(args.lag_s * rate, args.lag_floor)
    max_v = max((lag for lag in v_lags if lag is not None), default=None)
    max_l = max((lag for lag in l_lags if lag is not None), default=None)
    reasons = []
    if other:
        reasons.append(f"answers other than 202: {other}")
    if offered and summary.get("skipped", 0) > 0.01 * offered:
        reasons.append(f"{summary['skipped']} of {offered} not sent: all the load generator's connections were "
                       "waiting on the ingest")
    if acknowledged < 0.97 * rate * args.step_s:
        reasons.append(f"{acknowledged / args.step_s:.0f}/s acknowledged")
    if max_v is None or max_v > lag_bound:
        reasons.append(f"verifier lag {'unreadable' if max_v is None else int(max_v)} > {lag_bound:.0f}")
    if args.database_url and (max_l is None or max_l > lag_bound):
        reasons.append(f"ledger lag {'unreadable' if max_l is None else int(max_l)} > {lag_bound:.0f}")
    figures = {
        "step": step, "rate": rate, "acknowledged_per_s": round(acknowledged / args.step_s),
        "results_per_s": None if results_per_s is None else round(results_per_s),
        "max_verifier_lag": None if max_v is None else int(max_v), "max_ledger_lag": max_l,
        "lag_bound": round(lag_bound), "skipped": summary.get("skipped", 0), "other_answers": sum(other.values()),
        "latency_p50_ms": summary.get("latency_ms", {}).get("p50"),
        "latency_p99_ms": summary.get("latency_ms", {}).get("p99"),
        "load1_mean": round(sum(loads) / len(loads), 2) if loads else None,
        "kept_up": not reasons, "why_not": "; ".join(reasons),
        # The judged half of the step, for the CPU the samples show in it (soak-report.py find-report).
        "judged_from_epoch": round(started_epoch + args.step_s / 2),
        "judged_to_epoch": round(started_epoch + args.step_s),
    }
    return figures


def command_find_rate(args):
    rate, step, sustained, rows = float(args.start), 0, 0, []
    while rate <= args.max_rate:
        rate = round(rate)
        figures = run_step(args, step, rate)
        rows.append(figures)
        print(f"  step {step}: {rate}/s offered, {figures['acknowledged_per_s']}/s acknowledged, results "
              f"{figures['results_per_s']}/s, lag verifiers {figures['max_verifier_lag']} ledger "
              f"{figures['max_ledger_lag']} (bound {figures['lag_bound']}), ingest p99 {figures['latency_p99_ms']} ms,"
              f" load {figures['load1_mean']}: {'kept up' if figures['kept_up'] else 'NOT: ' + figures['why_not']}",
              flush=True)
        if not figures["kept_up"]:
            break
        sustained = rate
        step += 1
        rate = rate * args.factor
    with open(args.csv, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0].keys()) if rows else ["step"])
        writer.writeheader()
        writer.writerows(rows)
    print(f"SUSTAINED_RATE={sustained}", flush=True)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)

    def ledger_arguments(command):
        command.add_argument("--database-url", help="the ledger's database (its stored offsets)")
        command.add_argument("--bootstrap", help="the cluster (end offsets, kcat -Q)")
        command.add_argument("--ledger-topic", action="append", default=[], help="topic:partitions it consumes")
        command.add_argument("--verifier", action="append", default=[], help="a verifier's /metrics URL")

    sample = commands.add_parser("sample")
    sample.add_argument("--out", required=True)
    sample.add_argument("--interval", type=float, default=10)
    sample.add_argument("--proc", action="append", default=[], help="name=pid[,pid...] (RSS summed)")
    sample.add_argument("--tree", action="append", default=[], help="name=pid: it and its descendants")
    sample.add_argument("--ingest", help="the ingest's /metrics URL")
    sample.add_argument("--ledger", action="append", default=[], help="a ledger's /metrics URL")
    ledger_arguments(sample)

    find = commands.add_parser("find-rate")
    find.add_argument("--ingest", required=True, help="the ingest's base URL")
    find.add_argument("--fake")
    find.add_argument("--notification-rate", type=float, default=0)
    find.add_argument("--load-out", required=True, help="the load generator's record (appended)")
    find.add_argument("--csv", required=True)
    find.add_argument("--start", type=float, default=100)
    find.add_argument("--factor", type=float, default=1.25)
    find.add_argument("--max-rate", type=float, default=3000)
    find.add_argument("--step-s", type=float, default=60)
    find.add_argument("--lag-s", type=float, default=2)
    find.add_argument("--lag-floor", type=float, default=1000)
    ledger_arguments(find)

    args = parser.parse_args()
    handler = {"sample": command_sample, "find-rate": command_find_rate}[args.command]
    sys.exit(handler(args) or 0)


if __name__ == "__main__":
    main()
