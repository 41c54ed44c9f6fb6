#!/usr/bin/env python3
"""bench/soak.sh's judge: reads the samples (bench/soak-tool.py sample) and the independent check's output
(bench/chaos-tool.py check), writes the report in Markdown with PASS or FAIL for every criterion, and the gnuplot
script of the plot. Python's standard library only.

  report       criteria (exit status 1 when one fails):
    one result per submission   the check: every acknowledged submission is on the topic and has exactly one
                                result (0 duplicates), the expected verdict, no violation outside the ledger's.
    every balance exact         the check's ledger half: every user's balance (997 users, GET /v1/users/{id}, and
                                the balances table) is what the topics say was bought minus what was refunded; no
                                dead letter; the ledger's stored offsets at the topics' ends.
    drained                     the verifiers' lag 0 on every partition and the ledger's stored offsets at the end.
    lag bounded                 after the warm-up, the verifiers' lag and the ledger's never above their bounds.
    memory (per process)        the least-squares slope of its memory over the last two thirds of the samples after
                                its warm-up, in MB per hour, at most --max-mb-per-hour; when it is over, the slope of
                                the last half of that window must be under it: a burst's high-water mark is a step
                                that then stays flat, a leak keeps the slope in every part. Those two thirds must
                                span --min-judged-s, or the process is not judged (and the run fails: run longer).
    fds, threads flat           the same rule, the trend over the window (slope x span) at most max(2, 5 % of the
                                level) descriptors or threads.
    machine quiet               the CPU the machine spent outside the soak's processes, mean after the warm-up, under
                                --max-other-cpu % of one core (the load average is reported with it).
    services stopped            every service exited 0 on SIGTERM.
    load delivered              the load generator sent the rate it was asked for: at most 1 % of the offered
                                submissions skipped because every connection was still waiting on the ingest (the
                                rate finder's rule; past it the machine was not holding the rate the title names).
  find-report  find-rate.md: the steps of bench/soak-tool.py find-rate, the rate found, and the same check of
               everything the steps sent (one result per submission, every balance exact, drained, clean stops).
  plot-script  gnuplot for the samples: memory, descriptors, threads, CPU, lag, throughput over time.
"""
import argparse
import csv
import json
import math
import sys

LEDGER_WORDS = ("ledger", "balance", "credited", "claimed by more than one user")


def read_rows(path):
    with open(path) as lines:
        header = lines.readline().strip().split(",")
        rows = [dict(zip(header, line.rstrip("\n").split(","))) for line in lines if line.strip()]
    return header, rows


def series(rows, column):
    return [(float(row["t_s"]), float(row[column])) for row in rows if row.get(column)]


def slope_per_hour(points):
    """Least-squares slope of (seconds, value) points, in units per hour."""
    if len(points) < 2:
        return 0.0
    mean_t = sum(t for t, _ in points) / len(points)
    mean_v = sum(v for _, v in points) / len(points)
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    return sum((t - mean_t) * (v - mean_v) for t, v in points) / spread * 3600 if spread else 0.0


def largest_rise(points, span_s):
    """(time, rise): the largest rise between a sample and a later one at most span_s seconds after it, and the time
    of the later one (where the step ends)."""
    best_at, best = None, 0.0
    for i, (t0, v0) in enumerate(points):
        for t1, v1 in points[i + 1:]:
            if t1 - t0 > span_s:
                break
            if v1 - v0 > best:
                best_at, best = t1, v1 - v0
    return best_at, best


def mean(values):
    values = list(values)
    return sum(values) / len(values) if values else float("nan")


def parse_check(path):
    """The check's summary (its JSON line) and its violations."""
    summary, violations, in_list = {}, [], False
    with open(path) as lines:
        text = lines.read()
    for line in text.splitlines():
        if line.startswith("summary "):
            summary = json.loads(line[len("summary "):])
        elif line.startswith("VIOLATIONS"):
            in_list = True
        elif in_list and line.startswith("  - "):
            violations.append(line[4:])
    return summary, violations, text


class Judge:
    def __init__(self, args):
        self.args = args
        self.criteria = []       # (criterion, measured, bound, PASS/FAIL)
        self.process_rows = []

    def add(self, criterion, measured, bound, passed):
        self.criteria.append((criterion, measured, bound, "PASS" if passed else "FAIL"))

    def trend(self, rows, column, allowance_of):
        """(verdict, passed, figures) for one column by the slope rule; allowance_of(level) in units per hour."""
        points = series(rows, column)
        if len(points) < 6:
            return f"not judged: {len(points)} samples after its warm-up (run longer)", False, {}
        third = len(points) // 3
        window = points[third:]
        span_s = window[-1][0] - window[0][0]
        late = window[len(window) // 2:]
        level = mean(v for _, v in window)
        figures = {"first": mean(v for _, v in points[:third]), "last": mean(v for _, v in points[-third:]),
                   "slope": slope_per_hour(window), "late_slope": slope_per_hour(late), "span_s": span_s,
                   "level": level}
        allowed = allowance_of(level, span_s)
        figures["allowed"] = allowed
        if span_s < self.args.min_judged_s:
            return f"not judged: {span_s:.0f} s of samples, {self.args.min_judged_s:.0f} needed (run longer)", False, \
                figures
        if figures["slope"] <= allowed:
            return "flat", True, figures
        if figures["late_slope"] <= allowed:
            return "step, then flat (a high-water mark)", True, figures
        # One step anywhere in the window (the largest rise within a minute: a burst's high-water mark) taken out,
        # the rest must be flat. A leak moves every part of the run, so removing its largest minute leaves its slope.
        step_at, step = largest_rise(window, span_s=60)
        if step > 0:
            levelled = [(t, v - (step if t >= step_at else 0.0)) for t, v in window]
            figures["without_step"] = slope_per_hour(levelled)
            if figures["without_step"] <= allowed:
                return (f"one step of {step:.1f} at {step_at:.0f} s, flat otherwise "
                        f"({figures['without_step']:+.2f}/h without it: a high-water mark)"), True, figures
        return "grows steadily (a leak, or a step too late in the run to tell)", False, figures

    def judge_processes(self, rows):
        args = self.args
        warmups = dict((name, float(value)) for name, _, value in (entry.partition("=") for entry in args.warmup_for))
        memory_ok = fds_ok = threads_ok = True
        for process in args.judge:
            after = [row for row in rows if float(row["t_s"]) >= warmups.get(process, args.warmup)]
            memory = self.trend(after, f"{process}_rss_mb", lambda level, span: args.max_mb_per_hour)
            # The heap in use (where the service reports it) tells a leak from the allocator keeping freed memory.
            heap = self.trend(after, f"{process}_heap_mb", lambda level, span: args.max_mb_per_hour)
            if not memory[1] and heap[2] and not heap[0].startswith("not judged"):
                memory = (memory[0] + (" while the heap in use grows too (a leak)" if not heap[1] else
                                       " while the heap in use stays flat (the allocator's free memory: "
                                       "fragmentation, not a leak)"), memory[1], memory[2])

            def count_allowance(level, span):
                return max(2.0, 0.05 * level) / (span / 3600) if span > 0 else math.inf

            fds = self.trend(after, f"{process}_fds", count_allowance)
            threads = self.trend(after, f"{process}_threads", count_allowance)
            memory_ok &= memory[1]
            fds_ok &= fds[1]
            threads_ok &= threads[1]
            cpu = mean(float(row[f"{process}_cpu_pct"]) for row in after if row.get(f"{process}_cpu_pct"))
            self.process_rows.append((process, warmups.get(process, args.warmup), memory, heap, fds, threads, cpu))
        processes = ", ".join(args.judge)
        self.add("memory: slope over the last two thirds", f"see the table ({processes})",
                 f"{args.max_mb_per_hour:g} MB/h, or a step that then stays flat", memory_ok)
        self.add("descriptors flat", "see the table", "trend ≤ max(2, 5 % of the level) over the window", fds_ok)
        self.add("threads flat", "see the table", "trend ≤ max(2, 5 % of the level) over the window", threads_ok)

    def judge_lag_and_machine(self, rows):
        args = self.args
        after = [row for row in rows if float(row["t_s"]) >= args.warmup]
        third = max(len(after) // 3, 1)
        for column, bound, name in (("verifier_lag", args.max_lag, "verifiers' lag"),
                                    ("ledger_lag", args.max_ledger_lag, "ledger's lag (stored offsets)")):
            values = [float(row[column]) for row in after if row.get(column)]
            if not values:
                self.add(f"{name} bounded", "no samples", f"≤ {bound:g} messages", False)
                continue
            last = [float(row[column]) for row in after[-third:] if row.get(column)]
            self.add(f"{name} bounded", f"max {max(values):.0f}, mean {mean(values):.0f}, last third mean "
                     f"{mean(last):.0f}; {len(values)} of {len(after)} samples read", f"≤ {bound:g} messages",
                     max(values) <= bound and len(values) >= 0.9 * len(after))
        other = [float(row["cpu_other_pct"]) for row in after if row.get("cpu_other_pct")]
        loads = [float(row["load1"]) for row in after if row.get("load1")]
        machine = [float(row["cpu_machine_pct"]) for row in after if row.get("cpu_machine_pct")]
        self.add("machine quiet (nothing else running)",
                 f"CPU outside the soak mean {mean(other):.0f} %, max {max(other, default=0):.0f} % of a core; "
                 f"machine busy {mean(machine):.0f} % of {args.cpus * 100} %; load average (1 min) mean "
                 f"{mean(loads):.2f}, max {max(loads, default=0):.2f} on {args.cpus} CPUs",
                 f"outside CPU mean ≤ {args.max_other_cpu:g} %", bool(other) and mean(other) <= args.max_other_cpu)
        return after

    def judge_load(self):
        """The load generator's own summary: how much of the offered load it could send."""
        if not self.args.load_summary:
            return
        with open(self.args.load_summary) as text:
            lines = text.read().strip().splitlines()
        try:
            summary = json.loads(lines[-1]) if lines else {}
        except ValueError:
            summary = {}
        sent, skipped = summary.get("sent", 0), summary.get("skipped", 0)
        offered = sent + skipped
        share = skipped / offered * 100 if offered else 100.0
        self.add("load delivered", f"{sent} of {offered} offered submissions sent, {skipped} skipped ({share:.1f} %)",
                 "≤ 1 % skipped (every connection waiting on the ingest)", offered > 0 and share <= 1.0)

    def judge_check(self):
        summary, violations, text = parse_check(self.args.check)
        ledger_violations = [v for v in violations if any(word in v for word in LEDGER_WORDS)]
        other_violations = [v for v in violations if v not in ledger_violations]
        acknowledged = summary.get("acknowledged", 0)
        duplicates = summary.get("duplicates")
        self.add("one result per submission",
                 f"{acknowledged} acknowledged, {summary.get('results', 0)} results, {duplicates} duplicates, "
                 f"{len(other_violations)} violations", "every 202 exactly one result, the expected verdict",
                 bool(summary) and acknowledged > 0 and duplicates == 0 and not other_violations)
        users = summary.get("users_checked", 0)
        self.add("every balance exact",
                 f"{users} users checked, {summary.get('balance_mismatches')} wrong; {summary.get('purchases')} "
                 f"purchases credited, {summary.get('refunded')} refunded; dead letters "
                 f"{summary.get('ledger_dead_letters')}; {len(ledger_violations)} ledger violations",
                 "every user's balance = bought − refunded", users >= 997 and summary.get("balance_mismatches") == 0
                 and not ledger_violations)
        return text, violations


def command_report(args):
    header, rows = read_rows(args.csv)
    judge = Judge(args)
    check_text, violations = judge.judge_check()
    judge.judge_load()
    judge.add("drained at the end", f"verifiers {'yes' if args.verifiers_drained else 'NO'}, ledger "
              f"{'yes' if args.ledger_drained else 'NO'}", "lag 0, stored offsets at the ends",
              args.verifiers_drained and args.ledger_drained)
    judge.judge_lag_and_machine(rows)
    judge.judge_processes(rows)
    judge.add("services stopped cleanly", "yes" if args.stopped else "NO", "every service exits 0 on SIGTERM",
              args.stopped)
    failed = [criterion for criterion, _, _, verdict in judge.criteria if verdict == "FAIL"]

    out = []
    out.append(f"# {args.title}\n")
    if args.note:
        out.append(f"**{args.note}**\n")
    out.append(f"**{'PASS' if not failed else 'FAIL'}**" + (f" ({', '.join(failed)})" if failed else "") + "\n")
    for line in args.setting:
        out.append(f"- {line}")
    out.append(f"- samples: {len(rows)} every {args.interval:g} s, {float(rows[-1]['t_s']) if rows else 0:.0f} s; "
               f"warm-up {args.warmup:g} s" + (f" ({', '.join(args.warmup_for)})" if args.warmup_for else ""))
    out.append(f"- memory threshold {args.max_mb_per_hour:g} MB/h: at {args.rate:g} submissions/s that is a leak of "
               f"{args.max_mb_per_hour * 1e6 / (args.rate * 3600) if args.rate else float('nan'):.1f} bytes per "
               "submission")
    out.append(f"- plot [{args.png}]({args.png}), samples [{args.csv_name}]({args.csv_name}), the independent check "
               f"[{args.check_name}]({args.check_name})" + (f", the rate steps [{args.find_csv}]({args.find_csv})"
                                                            if args.find_csv else "") + "\n")
    out.append("## Criteria\n")
    out.append("| criterion | measured | bound | verdict |")
    out.append("|---|---|---|---|")
    for criterion, measured, bound, verdict in judge.criteria:
        out.append(f"| {criterion} | {measured} | {bound} | **{verdict}** |")
    out.append("\n## Per process (after its warm-up; window = the last two thirds of those samples)\n")
    out.append("| process | warm-up | memory MB, first → last third | slope MB/h (window / its last half) | memory "
               "| heap in use MB (slope/h) | fds (trend/h) | threads (trend/h) | CPU % of a core |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    for process, warmup, memory, heap, fds, threads, cpu in judge.process_rows:
        m = memory[2]

        def short(result):
            figures = result[2]
            if not figures or result[0].startswith("not judged"):
                return "not judged"
            return (f"{figures['first']:.0f} → {figures['last']:.0f} ({figures['slope']:+.1f}/h): "
                    f"{'ok' if result[1] else 'FAIL'}, {result[0]}")

        out.append(f"| {process} | {warmup:.0f} s | "
                   + (f"{m['first']:.1f} → {m['last']:.1f} | {m['slope']:+.2f} / {m['late_slope']:+.2f} | "
                      if m else "– | – | ")
                   + f"{'PASS' if memory[1] else 'FAIL'}: {memory[0]} | {short(heap)} | {short(fds)} | "
                   + f"{short(threads)} | "
                   + ("–" if math.isnan(cpu) else f"{cpu:.0f}") + " |")
    out.append("\nPostgreSQL is sampled as the postmaster with all its processes: memory is the proportional share "
               "(Pss) of their private mappings summed, its shared buffer pool apart (mapped by every process, a "
               "fixed size that fills as the tables grow: `postgres_shared_mb` in the samples); threads are its "
               "processes. The other services' memory is their RSS; their heap in use is glibc's count of the bytes they "
               "hold from malloc (`process_heap_in_use_bytes`): a leak grows it, while resident memory that grows "
               "with the heap in use flat is the allocator keeping freed memory.\n")
    out.append("## The independent check (bench/chaos-tool.py check)\n")
    out.append("```")
    out.append(check_text.rstrip())
    out.append("```")
    with open(args.out, "w") as report:
        report.write("\n".join(out) + "\n")
    print("\n".join(out))
    return 1 if failed else 0


def step_cpu_table(samples_path, steps, cpus):
    """Where each step's CPU went (means over the judged half of the step): what the machine could not give."""
    header, rows = read_rows(samples_path)
    processes = [name[: -len("_cpu_pct")] for name in header if name.endswith("_cpu_pct")]
    out = ["\nCPU in the second half of each step (% of one core; the machine has "
           f"{cpus * 100} %):\n", "| offered /s | machine busy | outside the soak | " + " | ".join(processes) + " |",
           "|---|---|---|" + "---|" * len(processes)]
    for step in steps:
        low, high = float(step["judged_from_epoch"]), float(step["judged_to_epoch"])
        inside = [row for row in rows if row.get("epoch_s") and low <= float(row["epoch_s"]) <= high]

        def average(column):
            values = [float(row[column]) for row in inside if row.get(column)]
            return f"{mean(values):.0f}" if values else "–"

        out.append(f"| {step['rate']} | {average('cpu_machine_pct')} | {average('cpu_other_pct')} | "
                   + " | ".join(average(f"{p}_cpu_pct") for p in processes) + " |")
    return out


def command_find_report(args):
    """find-rate.md: the steps, the rate found, and the check of everything the steps sent."""
    with open(args.steps) as lines:
        steps = list(csv.DictReader(lines))
    judge = Judge(args)
    check_text, _ = judge.judge_check()
    judge.add("drained at the end", f"verifiers {'yes' if args.verifiers_drained else 'NO'}, ledger "
              f"{'yes' if args.ledger_drained else 'NO'}", "lag 0, stored offsets at the ends",
              args.verifiers_drained and args.ledger_drained)
    judge.add("services stopped cleanly", "yes" if args.stopped else "NO", "every service exits 0 on SIGTERM",
              args.stopped)
    failed = [criterion for criterion, _, _, verdict in judge.criteria if verdict == "FAIL"]
    out = [f"# Finding the rate: {args.sustained}/s sustained\n"]
    last = steps[-1] if steps else None
    if last and last.get("kept_up") != "True":
        out.append(f"The first step that did not keep up: {last['rate']}/s ({last['why_not']}).\n")
    elif steps:
        out.append("Every step kept up, up to the highest offered (raise SOAK_FIND_MAX).\n")
    for line in args.setting:
        out.append(f"- {line}")
    out.append("- a step keeps up when every submission is answered 202, at most 1 % are not sent for want of a "
               "free connection, the acknowledged rate is within 3 % of the offered one, and over its second half "
               "the verifiers' and the ledger's lag stay under the bound (2 s of traffic, at least 1,000 messages)")
    out.append("- plot [find-rate.png](find-rate.png), samples [find-samples.csv](find-samples.csv), steps "
               "[find-rate.csv](find-rate.csv), the check [find-check.txt](find-check.txt)\n")
    out.append("| offered /s | acknowledged /s | results /s | max lag verifiers | max lag ledger | bound "
               "| ingest p50 / p99 ms | not sent | load average | kept up |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    for step in steps:
        verdict = "yes" if step["kept_up"] == "True" else f"**no**: {step['why_not']}"
        out.append(f"| {step['rate']} | {step['acknowledged_per_s']} | {step['results_per_s']} | "
                   f"{step['max_verifier_lag']} | {step['max_ledger_lag']} | {step['lag_bound']} | "
                   f"{step['latency_p50_ms']} / {step['latency_p99_ms']} | {step['skipped']} | {step['load1_mean']} | "
                   f"{verdict} |")
    if args.samples:
        out.extend(step_cpu_table(args.samples, steps, args.cpus))
    out.append("\n## Everything the steps sent, checked after the drain\n")
    out.append(f"**{'PASS' if not failed else 'FAIL'}**" + (f" ({', '.join(failed)})" if failed else "") + "\n")
    out.append("| criterion | measured | bound | verdict |")
    out.append("|---|---|---|---|")
    for criterion, measured, bound, verdict in judge.criteria:
        out.append(f"| {criterion} | {measured} | {bound} | **{verdict}** |")
    out.append("\n```")
    out.append(check_text.rstrip())
    out.append("```")
    with open(args.out, "w") as report:
        report.write("\n".join(out) + "\n")
    print("\n".join(out))
    return 1 if failed else 0


def command_plot_script(args):
    header, _ = read_rows(args.csv)
    column = {name: index + 1 for index, name in enumerate(header)}
    every = [name[: -len("_rss_mb")] for name in header if name.endswith("_rss_mb")]
    judged = [name for name in every if name in args.judge] or every

    def plots(processes, figure):
        return ", ".join(f"'{args.csv}' using ($1/60):{column[f'{p}_{figure}']} with lines lw 2 title '{p}'"
                         for p in processes)

    def lines(*names_titles, axes=""):
        return ", ".join(f"'{args.csv}' using ($1/60):{column[name]} {axes}with lines lw 2 title '{title}'"
                         for name, title in names_titles)

    print(f"""set datafile separator ','
set terminal pngcairo size 1500,1300 font ',10'
set output '{args.png}'
set multiplot layout 3,2 title '{args.title}'
set xlabel 'minutes'
set key top left
set grid
set yrange [0:*]
set offsets 0, 0, graph 0.15, 0
set title 'memory (MB: RSS; postgres: its processes, the buffer pool apart)'
plot {plots(judged, 'rss_mb')}
set title 'open file descriptors'
plot {plots(judged, 'fds')}
set title 'threads (postgres: processes)'
plot {plots(judged, 'threads')}
set title 'CPU (% of one core)'
plot {plots(every, 'cpu_pct')}, \\
     '{args.csv}' using ($1/60):{column['cpu_other_pct']} with lines lw 3 dt 2 lc rgb 'red' title 'outside the soak'
set title 'consumer lag (messages)'
plot {lines(('verifier_lag', 'verifiers'), ('ledger_lag', 'ledger (stored offsets)'))}
set title 'throughput (per second)'
plot {lines(('accepted_per_s', 'submissions accepted'), ('results_per_s', 'results'),
            ('applied_per_s', 'ledger: messages applied'))}
unset multiplot""")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)

    report = commands.add_parser("report")
    report.add_argument("--csv", required=True)
    report.add_argument("--check", required=True, help="the output of chaos-tool.py check")
    report.add_argument("--out", required=True, help="the Markdown report")
    report.add_argument("--title", default="Soak")
    report.add_argument("--note", help="a line in bold under the title")
    report.add_argument("--setting", action="append", default=[], help="a line of the run's settings")
    report.add_argument("--rate", type=float, default=0)
    report.add_argument("--interval", type=float, default=10)
    report.add_argument("--cpus", type=int, default=1)
    report.add_argument("--warmup", type=float, default=300)
    report.add_argument("--warmup-for", action="append", default=[], help="process=seconds: its own warm-up")
    report.add_argument("--judge", action="append", default=[], help="processes the per-process criteria apply to")
    report.add_argument("--max-lag", type=float, required=True)
    report.add_argument("--max-ledger-lag", type=float, required=True)
    report.add_argument("--max-mb-per-hour", type=float, default=5)
    report.add_argument("--min-judged-s", type=float, default=600)
    report.add_argument("--max-other-cpu", type=float, default=15)
    report.add_argument("--verifiers-drained", action="store_true")
    report.add_argument("--ledger-drained", action="store_true")
    report.add_argument("--stopped", action="store_true", help="every service exited 0 on SIGTERM")
    report.add_argument("--png", default="soak.png")
    report.add_argument("--csv-name", default="soak.csv")
    report.add_argument("--check-name", default="check.txt")
    report.add_argument("--find-csv")
    report.add_argument("--load-summary", help="the load generator's summary (its last line is JSON)")

    find = commands.add_parser("find-report")
    find.add_argument("--steps", required=True, help="find-rate.csv")
    find.add_argument("--samples", help="find-samples.csv (the CPU of each step)")
    find.add_argument("--cpus", type=int, default=1)
    find.add_argument("--check", required=True)
    find.add_argument("--sustained", required=True)
    find.add_argument("--out", required=True)
    find.add_argument("--setting", action="append", default=[])
    find.add_argument("--verifiers-drained", action="store_true")
    find.add_argument("--ledger-drained", action="store_true")
    find.add_argument("--stopped", action="store_true")

    plot = commands.add_parser("plot-script")
    plot.add_argument("--csv", required=True)
    plot.add_argument("--png", required=True)
    plot.add_argument("--title", default="soak")
    plot.add_argument("--judge", action="append", default=[])

    args = parser.parse_args()
    handler = {"report": command_report, "find-report": command_find_report,
               "plot-script": command_plot_script}[args.command]
    sys.exit(handler(args) or 0)


if __name__ == "__main__":
    main()
