#!/usr/bin/env python3
"""Open-loop load for bench/verdicts.sh: POST /v1/receipts?wait_ms=N at a fixed rate over keep-alive connections.

Request i is due at start + i / rate whatever happened to earlier ones (no coordinated omission): a free connection
is taken from a pool, or a new one opened when all are busy. The round trip is measured from the moment the request
was due to the end of its response, so client-side lag counts against the latency, never for it.

Prints one line of key=value pairs: counts by status, p50/p90/p99/max round trip in ms (200 = verdict within the
wait; 202 = no verdict within wait_ms), and how late the client sent (to show it kept the pace). For the verdicts, the
round trip is also split at the result's `verified_at_ms` (the verifier's clock; every process runs on this machine):
due -> verdict (the ingest, Kafka, the verifier and Apple's latency) and verdict -> answer (the result's way back
through Kafka and the ingest's follower).
"""

import argparse
import asyncio
import json
import os
import time


class Connection:
    def __init__(self, reader, writer):
        self.reader = reader
        self.writer = writer

    async def exchange(self, request):
        self.writer.write(request)
        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionError("closed by the server")
        status = int(status_line.split()[1])
        length = 0
        close = False
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            name = name.strip().lower()
            if name == "content-length":
                length = int(value.strip())
            elif name == "connection" and value.strip().lower() == "close":
                close = True
        body = await self.reader.readexactly(length) if length else b""
        return status, body, close


async def run(args):
    receipt = os.environ["BENCH_RECEIPT"]
    pool = []
    latencies = {}
    counts = {}
    lateness = []
    errors = []
    verdict_mismatches = 0
    to_verdict = []
    verdict_to_answer = []
    wall_minus_monotonic = time.time() - time.monotonic()

    async def open_connection():
        reader, writer = await asyncio.open_connection(args.host, args.port)
        return Connection(reader, writer)

    async def one(index, due, measured):
        nonlocal verdict_mismatches
        submission_id = f"{args.prefix}-{index}"
        body = json.dumps({"receipt_data": receipt, "submission_id": submission_id}).encode()
        request = (
            f"POST /v1/receipts?wait_ms={args.wait_ms} HTTP/1.1\r\nHost: bench\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode() + body
        connection = pool.pop() if pool else None
        try:
            if connection is None:
                connection = await open_connection()
            if measured:
                lateness.append(time.monotonic() - due)
            status, response, close = await connection.exchange(request)
        except (OSError, ConnectionError, asyncio.IncompleteReadError, ValueError) as error:
            if measured:
                errors.append(type(error).__name__)
            if connection is not None:
                connection.writer.close()
            return
        elapsed = time.monotonic() - due
        if close:
            connection.writer.close()
        else:
            pool.append(connection)
        if not measured:
            return
        counts[status] = counts.get(status, 0) + 1
        latencies.setdefault(status, []).append(elapsed)
        if status == 200:
            verdict = json.loads(response)
            if verdict.get("submission_id") != submission_id:
                verdict_mismatches += 1
            verified_at = verdict.get("verified_at_ms")
            if isinstance(verified_at, int):
                verified_at_monotonic = verified_at / 1000 - wall_minus_monotonic
                to_verdict.append(verified_at_monotonic - due)
                verdict_to_answer.append(due + elapsed - verified_at_monotonic)

    total_warmup = int(args.rate * args.warmup)
    total = total_warmup + int(args.rate * args.duration)
    tasks = set()
    start = time.monotonic() + 0.05
    for index in range(total):
        due = start + index / args.rate
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        task = asyncio.create_task(one(index, due, index >= total_warmup))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    sending_finished = time.monotonic()
    if tasks:
        await asyncio.wait(tasks, timeout=args.wait_ms / 1000 + 30)
    for connection in pool:
        connection.writer.close()

    def percentile(values, fraction):
        if not values:
            return float("nan")
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] * 1000

    everything = [value for values in latencies.values() for value in values]
    measured_seconds = sending_finished - (start + total_warmup / args.rate)
    fields = {
        "requests": total - total_warmup,
        "sent_per_s": round((total - total_warmup) / measured_seconds, 1) if measured_seconds > 0 else 0,
        "status_200": counts.get(200, 0),
        "status_202": counts.get(202, 0),
        "other_statuses": sum(count for status, count in counts.items() if status not in (200, 202)),
        "errors": len(errors),
        "unanswered": len(tasks),
        "verdict_id_mismatches": verdict_mismatches,
        "p50_ms": round(percentile(everything, 0.50), 1),
        "p90_ms": round(percentile(everything, 0.90), 1),
        "p99_ms": round(percentile(everything, 0.99), 1),
        "max_ms": round(max(everything) * 1000, 1) if everything else float("nan"),
        "p99_ms_of_200": round(percentile(latencies.get(200, []), 0.99), 1),
        "due_to_verdict_p50_ms": round(percentile(to_verdict, 0.50), 1),
        "due_to_verdict_p99_ms": round(percentile(to_verdict, 0.99), 1),
        "verdict_to_answer_p50_ms": round(percentile(verdict_to_answer, 0.50), 1),
        "verdict_to_answer_p99_ms": round(percentile(verdict_to_answer, 0.99), 1),
        "client_send_lag_p99_ms": round(percentile(lateness, 0.99), 1),
        "connections": len(pool),
    }
    if errors:
        fields["first_error"] = errors[0]
    print(" ".join(f"{key}={value}" for key, value in fields.items()), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--rate", type=float, default=1000)
    parser.add_argument("--duration", type=float, default=20, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=3, help="seconds at the same rate, not measured")
    parser.add_argument("--wait-ms", type=int, default=5000)
    parser.add_argument("--prefix", default="verdict-bench")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
