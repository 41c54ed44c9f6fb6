#!/usr/bin/env python3
"""The independent half of bench/soak.sh and bench/chaos.sh: load, sampling, draining and checking, in Python's
standard library only (no Swift code of this repository is involved in what it concludes).

  load     POSTs submissions to the ingest at a fixed rate (and asks the fake App Store to send App Store Server
           Notifications to the ingest) until SIGTERM; records every answer.
  wallet   spends and grants (and replays of their keys) against the ledgers at a fixed rate until SIGUSR1, every
           request retried with its key until it has a final answer; records every final answer.
  sample   every N seconds: RSS, open file descriptors and threads of each process (/proc), consumer lag and
           counters (the services' /metrics), the load average; one CSV row per sample.
  drain    waits until the verifiers' consumer lag is 0 on every input partition and stays there.
  ledger-drain  waits until receipt-ledger's stored offsets (its consumer_offsets table) reach the end offsets of the
           topics it consumes.
  check    reads what kcat wrote from the topics (submissions, results, events, DLQ) and what the load generator
           saw, and checks: every 202 is on the submissions topic and has a result, each submission's results agree
           (outcome, reason, transactions) and are the expected verdict, every notification the ingest answered 200
           has an event, the readers saw every partition up to its end offset. Duplicates are counted and attributed
           to the fault that preceded them. With --ledger: every user's balance in receipt-ledger equals what the
           topics say was bought (each purchase, its credit_key, once) minus what was refunded, the ledger's
           dead_letters table is empty and its stored offsets reach the topics' ends. With --wallet as well: the
           wallet client's spends and grants each applied exactly once or not at all as answered, replays answered
           alike, the wallet's tables consistent, and balances = credits + grants - spends - take-backs (check_wallet).
           Exit status 1 on any violation.
  soak-report  pass criteria of a soak CSV (RSS and fds without a leak's trend after warm-up, lag bounded).

Submission ids say what the verdict must be: <run>-v-<n> is a valid purchase (verified), <run>-b-<n> another app's
receipt (rejected, bundle_mismatch), <run>-t-<n> a receipt without the expected transaction (rejected,
transaction_not_found), <run>-r-<n> a resubmission (same receipt, same user, a new submission id) of purchase <n - 17>
(verified, and credited once). Submission <n> buys gems_100 (100 gems) as user-<n mod 997> in transaction
5000000000000000 + n; one acknowledged valid purchase in REFUND_EVERY is refunded at once by a REFUND notification
(full refund) for its transaction. Fake receipts are the base64 of their scenario (Sources/FakeAppStore/README.md).
"""
import argparse
import asyncio
import base64
import concurrent.futures
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

EXPECTED = {"v": ("verified", None), "b": ("rejected", "bundle_mismatch"), "t": ("rejected", "transaction_not_found"),
            "r": ("verified", None)}
USERS = 997
RESUBMIT_DISTANCE = 17
REFUND_EVERY = 50


def purchase_of(submission_id):
    """(purchase number, user) a submission id of the load buys, or None for a receipt that buys nothing."""
    try:
        kind, number = submission_id.rsplit("-", 2)[-2], int(submission_id.rsplit("-", 1)[-1])
    except ValueError:
        return None
    if kind == "v":
        return number, f"user-{number % USERS}"
    if kind == "r":
        return number - RESUBMIT_DISTANCE, f"user-{(number - RESUBMIT_DISTANCE) % USERS}"
    return None


def now_ms():
    return int(time.time() * 1000)


# ---- load ---------------------------------------------------------------------------------------------------------
def submission_body(run, number):
    """The JSON body of submission `number` and its id; one in 20 is another app's, one in 50 misses its transaction."""
    """One in 40 resubmits the valid purchase RESUBMIT_DISTANCE before it (same receipt and user, a new id)."""
    purchase = number
    if number % 20 == 7:
        kind, bundle = "b", "com.other.app"
    elif number % 50 == 11:
        kind, bundle = "t", "com.example.game"
    elif number % 40 == 23 and number >= RESUBMIT_DISTANCE and (number - RESUBMIT_DISTANCE) % 50 != 11:
        kind, bundle, purchase = "r", "com.example.game", number - RESUBMIT_DISTANCE
    else:
        kind, bundle = "v", "com.example.game"
    transaction = str(5_000_000_000_000_000 + purchase)
    expected = str(6_000_000_000_000_000 + number) if kind == "t" else transaction
    scenario = {"scenario": "valid", "bundle_id": bundle, "transactions": [{"id": transaction, "product": "gems_100"}]}
    receipt = base64.b64encode(json.dumps(scenario, separators=(",", ":")).encode()).decode()
    submission_id = f"{run}-{kind}-{number}"
    body = json.dumps({"receipt_data": receipt, "submission_id": submission_id, "user_id": f"user-{purchase % USERS}",
                       "order_id": f"order-{number}", "expected_transaction_id": expected}, separators=(",", ":"))
    return submission_id, body.encode()


async def read_response(reader):
    """Status of one HTTP/1.1 response (body read and dropped) and whether the connection stays open."""
    status_line = await reader.readline()
    if not status_line:
        raise ConnectionError("connection closed before the answer")
    status = int(status_line.split()[1])
    length, chunked, close = 0, False, False
    while True:
        line = await reader.readline()
        if not line:
            raise ConnectionError("connection closed in the headers")
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("latin-1").partition(":")
        name, value = name.strip().lower(), value.strip().lower()
        if name == "content-length":
            length = int(value)
        elif name == "transfer-encoding" and "chunked" in value:
            chunked = True
        elif name == "connection" and value == "close":
            close = True
    if chunked:
        while True:
            size = int((await reader.readline()).split(b";")[0], 16)
            await reader.readexactly(size + 2)
            if size == 0:
                break
    elif length:
        await reader.readexactly(length)
    return status, close


class Load:
    def __init__(self, args):
        self.args = args
        url = urllib.parse.urlsplit(args.ingest)
        self.host, self.port = url.hostname, url.port or 80
        self.queue = asyncio.Queue(maxsize=max(int(args.rate), 100))
        self.out = open(args.out, "a", buffering=1 << 16)
        # The notification askers run on executor threads: a text file is not safe to write from two threads (their
        # buffered writes interleave and corrupt lines), so every write to it holds this lock.
        self.out_lock = threading.Lock()
        self.stopping = False
        self.statuses = {}
        self.skipped = 0
        self.sent = 0
        self.latencies_ms = []
        self.notifications = {"asked": 0, "delivered_first": 0, "failed_to_ask": 0, "refunds_asked": 0}
        self.refunds = []   # transaction ids of acknowledged purchases to refund (appended by the workers)

    def record(self, kind, key, status):
        with self.out_lock:
            self.out.write(f"{kind}\t{key}\t{status}\t{now_ms()}\n")
        if kind == "s":
            self.statuses[status] = self.statuses.get(status, 0) + 1

    async def pace(self):
        loop = asyncio.get_running_loop()
        start = loop.time()
        number = self.args.first_number
        issued = 0
        while not self.stopping:
            due = int((loop.time() - start) * self.args.rate)
            while issued < due:
                issued += 1
                if self.queue.full():
                    self.skipped += 1  # the ingest is not keeping up (or is down): this one is never sent
                else:
                    self.queue.put_nowait(submission_body(self.args.run, number))
                    self.sent += 1
                number += 1
            await asyncio.sleep(0.005)

    async def worker(self):
        reader = writer = None
        head = (f"POST /v1/receipts HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                "Content-Type: application/json\r\nContent-Length: ").encode()
        while True:
            item = await self.queue.get()
            if item is None:
                break
            submission_id, body = item
            try:
                if writer is None:
                    reader, writer = await asyncio.wait_for(asyncio.open_connection(self.host, self.port), 5)
                started = time.monotonic()
                writer.write(head + str(len(body)).encode() + b"\r\n\r\n" + body)
                status, close = await asyncio.wait_for(read_response(reader), self.args.request_timeout)
                self.latencies_ms.append((time.monotonic() - started) * 1000)
                self.record("s", submission_id, status)
                self.maybe_refund(submission_id, status)
                if close:
                    writer.close()
                    writer = None
            except (OSError, ConnectionError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError,
                    IndexError):
                # No answer: not acknowledged (it may still be on the topic; then it has a result too).
                self.record("s", submission_id, "error")
                if writer is not None:
                    writer.close()
                writer = None
                await asyncio.sleep(0.2)
        if writer is not None:
            writer.close()

    def maybe_refund(self, submission_id, status):
        """One acknowledged valid purchase in REFUND_EVERY is refunded at once (its result may come before or after)."""
        kind = submission_id.rsplit("-", 2)[-2]
        number = int(submission_id.rsplit("-", 1)[-1])
        if status == 202 and kind == "v" and number % REFUND_EVERY == 4 and self.args.fake:
            self.refunds.append(str(5_000_000_000_000_000 + number))

    async def notify(self):
        """Asks the fake App Store to sign and POST notifications to the ingest, retried on its schedule."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        issued = 0
        pending = set()
        target = self.args.ingest.rstrip("/") + "/v1/apple/notifications"
        while not self.stopping:
            due = int((loop.time() - start) * self.args.notification_rate)
            while issued < due:
                number = self.args.first_number + issued
                issued += 1
                query = urllib.parse.urlencode({
                    "url": target, "type": "DID_RENEW", "transaction_id": str(7_000_000_000_000_000 + number),
                    "original_transaction_id": str(7_100_000_000_000_000 + number % 1000),
                    "retry_schedule_seconds": self.args.notification_retry})
                task = loop.run_in_executor(None, self.ask_fake, query)
                pending.add(task)
                task.add_done_callback(pending.discard)
            while self.refunds:
                transaction = self.refunds.pop(0)
                query = urllib.parse.urlencode({
                    "url": target, "type": "REFUND", "transaction_id": transaction,
                    "original_transaction_id": transaction, "product_id": "gems_100",
                    "retry_schedule_seconds": self.args.notification_retry})
                self.notifications["refunds_asked"] += 1
                task = loop.run_in_executor(None, self.ask_fake, query)
                pending.add(task)
                task.add_done_callback(pending.discard)
            await asyncio.sleep(0.02)
        if pending:
            await asyncio.wait(pending, timeout=60)

    def ask_fake(self, query):
        with self.out_lock:
            self.notifications["asked"] += 1
        try:
            request = urllib.request.Request(self.args.fake.rstrip("/") + "/admin/notifications/send?" + query,
                                             method="POST", data=b"")
            with urllib.request.urlopen(request, timeout=60) as response:
                answer = json.loads(response.read())
            with self.out_lock:
                self.out.write(f"n\t{answer['notification_uuid']}\t{answer.get('delivered')}\t{now_ms()}\n")
                if answer.get("delivered"):
                    self.notifications["delivered_first"] += 1
        except (OSError, ValueError, KeyError):
            with self.out_lock:
                self.notifications["failed_to_ask"] += 1

    async def run(self):
        loop = asyncio.get_running_loop()
        # Each ask waits for the fake's first delivery attempt (seconds while the ingest is down): enough threads
        # that the refunds and notifications keep their pace meanwhile.
        loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(max_workers=24))
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)
        if self.args.duration:
            loop.call_later(self.args.duration, self.stop)
        workers = [asyncio.create_task(self.worker()) for _ in range(self.args.connections)]
        tasks = [asyncio.create_task(self.pace())]
        if self.args.fake and self.args.notification_rate > 0:
            tasks.append(asyncio.create_task(self.notify()))
        await asyncio.gather(*tasks)
        for _ in workers:
            await self.queue.put(None)
        await asyncio.wait(workers, timeout=self.args.request_timeout + 10)
        with self.out_lock:
            self.out.flush()
        latencies = sorted(self.latencies_ms)

        def percentile(share):
            return round(latencies[min(int(len(latencies) * share), len(latencies) - 1)], 1) if latencies else None

        summary = {"sent": self.sent, "skipped": self.skipped,
                   "latency_ms": {"p50": percentile(0.5), "p99": percentile(0.99), "max": percentile(1.0)},
                   "statuses": {str(key): value for key, value in sorted(self.statuses.items(), key=str)},
                   "notifications": self.notifications}
        print(json.dumps(summary), flush=True)

    def stop(self):
        self.stopping = True


def command_load(args):
    asyncio.run(Load(args).run())


# ---- wallet -------------------------------------------------------------------------------------------------------
WALLET_ITEM = "gems"
WALLET_DEFINITIVE_CODES = {"insufficient_balance", "idempotency_key_reused", "amount_overflow"}


async def read_answer(reader):
    """(status, headers {lower-case name: value}, body, close) of one HTTP/1.1 response with a Content-Length."""
    status_line = await reader.readline()
    if not status_line:
        raise ConnectionError("connection closed before the answer")
    status = int(status_line.split()[1])
    headers = {}
    while True:
        line = await reader.readline()
        if not line:
            raise ConnectionError("connection closed in the headers")
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return status, headers, body, headers.get("connection", "").lower() == "close"


class WalletLoad:
    """Spends and grants against every ledger (each request to one of them at random) while the faults hit them.

    Operation n is a grant in GRANT_EVERY (1 to 50 gems), else a spend (1 to 120 gems), of user-<u> for u drawn from
    the first --users users of the load (who also buy gems_100 through the submissions), with Idempotency-Key
    <run>-<kind>-<n>. An answer that is not final (the connection dropped or refused, a timeout, 503, 409
    idempotency_key_in_flight) is retried with the same key and body on a ledger at random until one is, also after
    the load stops (up to --settle seconds). One final answer in --replay-every is replayed 0.5 to 3 s later (same
    key, same body, any ledger), and that replay too until final. Every operation's final answer is one line of --out:

        w <kind> <user> <key> <amount> <replay 0|1> <status|unresolved> <code> <body digest> <replayed header 0|1>
          <balance in the answer> <attempts> <attempts without a final answer> <ms>
    """

    GRANT_EVERY = 12

    def __init__(self, args):
        self.args = args
        self.ledgers = [urllib.parse.urlsplit(url) for url in args.ledger]
        self.queue = asyncio.Queue(maxsize=max(int(args.rate), 50))
        self.out = open(args.out, "a", buffering=1)
        self.random = random.Random(args.seed)
        self.stopping = False
        self.settle_deadline = None
        self.replays = set()
        self.counts = {"operations": 0, "skipped": 0, "lost_attempts": 0, "unavailable_attempts": 0,
                       "in_flight_attempts": 0, "other_attempts": 0, "replays": 0, "replay_mismatches": 0, "unresolved": 0}
        self.finals = {}
        self.first_answers = {}   # key -> (status, digest) of the first operation's final answer

    def operation(self, number):
        kind = "grant" if number % self.GRANT_EVERY == 5 else "spend"
        user = f"user-{self.random.randrange(self.args.users)}"
        amount = self.random.randint(1, 50) if kind == "grant" else self.random.randint(1, 120)
        note = ("reason", "chaos") if kind == "grant" else ("reference", f"chaos-{number}")
        body = json.dumps({"item": WALLET_ITEM, "amount": amount, note[0]: note[1]}, separators=(",", ":")).encode()
        return {"kind": kind, "user": user, "key": f"{self.args.run}-{kind}-{number}", "amount": amount,
                "body": body, "replay": False}

    async def send(self, connections, index, operation):
        """One attempt on ledger `index` over its kept-alive connection: (status, headers, body)."""
        ledger = self.ledgers[index]
        if connections.get(index) is None:
            connections[index] = await asyncio.wait_for(asyncio.open_connection(ledger.hostname, ledger.port), 3)
        reader, writer = connections[index]
        path = f"/v1/users/{urllib.parse.quote(operation['user'], safe='')}/{operation['kind']}s"
        writer.write((f"POST {path} HTTP/1.1\r\nHost: {ledger.netloc}\r\nContent-Type: application/json\r\n"
                      f"Idempotency-Key: {operation['key']}\r\nContent-Length: {len(operation['body'])}\r\n\r\n"
                      ).encode() + operation["body"])
        status, headers, body, close = await asyncio.wait_for(read_answer(reader), self.args.request_timeout)
        if close:
            writer.close()
            connections[index] = None
        return status, headers, body

    async def perform(self, connections, operation):
        attempts = not_final = 0
        index = self.random.randrange(len(self.ledgers))
        while True:
            attempts += 1
            status, code, headers, body = "lost", "", {}, b""
            try:
                status, headers, body = await self.send(connections, index, operation)
                if status != 200:
                    code = json.loads(body).get("error", {}).get("code", "")
            except (OSError, ConnectionError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError,
                    IndexError, AttributeError):
                if connections.get(index) is not None:
                    connections[index][1].close()
                connections[index] = None
            if status == 200 or (isinstance(status, int) and 400 <= status < 500 and status != 409) \
                    or code in WALLET_DEFINITIVE_CODES:
                break
            not_final += 1
            counter = {"lost": "lost_attempts", 503: "unavailable_attempts", 409: "in_flight_attempts"}.get(
                status, "other_attempts")
            self.counts[counter] += 1
            if self.settle_deadline is not None and time.monotonic() > self.settle_deadline:
                status = "unresolved"
                self.counts["unresolved"] += 1
                break
            await asyncio.sleep(0.3)
            index = self.random.randrange(len(self.ledgers))
        balance = ""
        if status in (200, 409):
            try:
                answer = json.loads(body)
                balance = answer.get("balance", answer.get("error", {}).get("balance", ""))
            except ValueError:
                pass
        digest = hashlib.sha1(body).hexdigest()[:16] if status != "unresolved" else ""
        replayed = 1 if headers.get("idempotent-replayed") == "true" else 0
        self.out.write("\t".join(map(str, (
            "w", operation["kind"], operation["user"], operation["key"], operation["amount"],
            int(operation["replay"]), status, code, digest, replayed, balance, attempts, not_final, now_ms()))) + "\n")
        final = f"{operation['kind']} {status}{' ' + code if code else ''}"
        self.finals[final] = self.finals.get(final, 0) + 1
        if operation["replay"]:
            self.counts["replays"] += 1
            if self.first_answers.get(operation["key"]) != (status, digest) or not replayed:
                self.counts["replay_mismatches"] += 1
        elif status != "unresolved":
            self.first_answers[operation["key"]] = (status, digest)
            if not self.stopping and self.random.randrange(self.args.replay_every) == 0:
                handle = asyncio.get_running_loop().call_later(
                    self.random.uniform(0.5, 3), self.replay, {**operation, "replay": True})
                self.replays.add(handle)

    def replay(self, operation):
        if not self.stopping and not self.queue.full():
            self.queue.put_nowait(operation)

    async def worker(self):
        connections = {}
        while True:
            operation = await self.queue.get()
            if operation is None:
                break
            await self.perform(connections, operation)
        for connection in connections.values():
            if connection is not None:
                connection[1].close()

    async def pace(self):
        loop = asyncio.get_running_loop()
        start = loop.time()
        number = issued = 0
        while not self.stopping:
            due = int((loop.time() - start) * self.args.rate)
            while issued < due:
                issued += 1
                if self.queue.full():
                    self.counts["skipped"] += 1
                else:
                    self.queue.put_nowait(self.operation(number))
                    self.counts["operations"] += 1
                number += 1
            await asyncio.sleep(0.01)

    async def run(self):
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGUSR1, self.stop)
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.abandon)
        workers = [asyncio.create_task(self.worker()) for _ in range(self.args.connections)]
        await self.pace()
        for handle in self.replays:
            handle.cancel()
        if self.settle_deadline is None:
            self.settle_deadline = time.monotonic() + self.args.settle
        for _ in workers:
            await self.queue.put(None)
        await asyncio.wait(workers)
        self.out.flush()
        print(json.dumps({**self.counts, "final_answers": dict(sorted(self.finals.items()))}), flush=True)

    def stop(self):
        """SIGUSR1: no new requests; those made get their final answers (up to --settle seconds)."""
        self.stopping = True

    def abandon(self):
        """SIGTERM (a harness cleaning up): stop at once; what has no final answer yet is recorded unresolved."""
        self.stopping = True
        self.settle_deadline = time.monotonic()


def command_wallet(args):
    asyncio.run(WalletLoad(args).run())


# ---- sample -------------------------------------------------------------------------------------------------------
def proc_figures(pid):
    """RSS in MB, open fds and threads of `pid` from /proc; None values when it is gone."""
    try:
        rss_kb = threads = None
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    rss_kb = int(line.split()[1])
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        return (round(rss_kb / 1024, 1) if rss_kb is not None else None), fds, threads
    except (OSError, ValueError):
        return None, None, None


def scrape(url, timeout=3):
    """Prometheus text of `url` as [(name, labels text, value)]; [] when it does not answer."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            text = response.read().decode()
    except (OSError, ValueError):
        return None
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        name, _, labels = series.partition("{")
        try:
            samples.append((name, labels.rstrip("}"), float(value)))
        except ValueError:
            continue
    return samples


def metric_sum(samples, name, label_filter=""):
    return sum(value for sample_name, labels, value in samples or [] if sample_name == name and label_filter in labels)


def command_sample(args):
    processes = [entry.split("=", 1) for entry in args.proc]
    metrics = [entry.split("=", 1) for entry in args.metrics]
    running = [True]
    signal.signal(signal.SIGTERM, lambda *_: running.__setitem__(0, False))
    signal.signal(signal.SIGINT, lambda *_: running.__setitem__(0, False))
    columns = ["t_s"]
    for name, _ in processes:
        columns += [f"{name}_rss_mb", f"{name}_fds", f"{name}_threads"]
    columns += ["lag", "accepted_total", "results_total", "results_per_s", "events_total", "load1"]
    start = time.monotonic()
    previous = None
    with open(args.out, "w", buffering=1) as out:
        out.write(",".join(columns) + "\n")
        while running[0]:
            row = [f"{time.monotonic() - start:.1f}"]
            for _, pid in processes:
                row += ["" if value is None else str(value) for value in proc_figures(pid)]
            lag = accepted = results = events = 0.0
            for name, url in metrics:
                samples = scrape(url)
                if name.startswith("verifier"):
                    lag += sum(max(value, 0) for sample, _, value in samples or [] if sample == "kafka_consumer_lag")
                    results += metric_sum(samples, "verifier_results_total")
                    events += metric_sum(samples, "verifier_notification_events_total")
                else:
                    accepted += metric_sum(samples, "ingest_http_requests_total", 'code="202"')
            elapsed = time.monotonic()
            rate = (results - previous[1]) / (elapsed - previous[0]) if previous else 0.0
            previous = (elapsed, results)
            row += [str(int(lag)), str(int(accepted)), str(int(results)), f"{max(rate, 0):.0f}", str(int(events)),
                    f"{os.getloadavg()[0]:.2f}"]
            out.write(",".join(row) + "\n")
            deadline = time.monotonic() + args.interval
            while running[0] and time.monotonic() < deadline:
                time.sleep(0.2)


# ---- drain --------------------------------------------------------------------------------------------------------
def command_drain(args):
    """Lag 0 on every partition of every verifier, with all input partitions assigned, for `--stable` seconds."""
    deadline = time.monotonic() + args.timeout
    since = None
    last = ""
    while time.monotonic() < deadline:
        lag = 0
        assigned = 0
        answered = True
        each_owns = True
        for url in args.metrics:
            samples = scrape(url)
            if samples is None:
                answered = False
                break
            lag += sum(max(value, 0) for name, _, value in samples if name == "kafka_consumer_lag")
            owned = metric_sum(samples, "kafka_consumer_assigned_partitions")
            assigned += owned
            each_owns = each_owns and owned > 0
        state = f"lag {int(lag)}, assigned partitions {int(assigned)}/{args.partitions}"
        if answered and lag == 0 and assigned == args.partitions and (each_owns or not args.each):
            since = since or time.monotonic()
            if time.monotonic() - since >= args.stable:
                print(f"drained: {state}", flush=True)
                return 0
        else:
            since = None
        if state != last:
            last = state
        time.sleep(1)
    print(f"NOT drained after {args.timeout} s: {last}", flush=True)
    return 1


# ---- ledger-drain ---------------------------------------------------------------------------------------------
def psql(url, sql):
    """Rows (lists of text) of `sql` in the ledger's database, with psql; raises RuntimeError when it fails."""
    answer = subprocess.run(["psql", url, "-X", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-c", sql],
                            capture_output=True, text=True, timeout=60)
    if answer.returncode != 0:
        raise RuntimeError(answer.stderr.strip()[:200])
    return [line.split("\t") for line in answer.stdout.splitlines() if line]


def ledger_offsets_behind(args):
    """{"topic[partition]": (stored next offset, end offset)} for every partition the ledger has not applied to
    its end."""
    stored = {(topic, int(partition)): int(offset)
              for topic, partition, offset in psql(args.database_url,
                                                   "SELECT topic, partition, next_offset FROM consumer_offsets")}
    behind = {}
    for entry in args.ledger_topic:
        topic, _, partitions = entry.rpartition(":")
        ends = end_offsets(args.bootstrap, topic, int(partitions))
        if len(ends) != int(partitions):
            raise RuntimeError(f"kcat -Q answered {len(ends)} of {partitions} partitions of {topic}")
        for partition, end in ends.items():
            if stored.get((topic, partition), 0) < end:
                behind[f"{topic}[{partition}]"] = (stored.get((topic, partition), 0), end)
    return behind


def command_ledger_drain(args):
    """Waits until the ledger's stored offsets (committed with the rows they produced) reach every end offset."""
    deadline = time.monotonic() + args.timeout
    last = "not asked yet"
    while time.monotonic() < deadline:
        try:
            behind = ledger_offsets_behind(args)
            if not behind:
                print("ledger drained: stored offsets at the end of every partition", flush=True)
                return 0
            last = f"{sum(end - stored for stored, end in behind.values())} messages behind on {len(behind)} partitions"
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as error:
            last = f"could not read: {error}"
        time.sleep(1)
    print(f"ledger NOT drained after {args.timeout} s: {last}", flush=True)
    return 1


# ---- wait-notifications ---------------------------------------------------------------------------------------
def command_wait_notifications(args):
    """Waits until the fake App Store finished delivering every notification (delivered or out of retries), so that
    none is answered 200 after the check looked for its event."""
    deadline = time.monotonic() + args.timeout
    while True:
        with urllib.request.urlopen(args.fake.rstrip("/") + "/admin/notifications", timeout=30) as response:
            notifications = json.loads(response.read())["notifications"]
        open_ones = [entry for entry in notifications if not entry.get("finished")]
        if not open_ones:
            print(f"notifications: all {len(notifications)} finished delivering", flush=True)
            return 0
        if time.monotonic() >= deadline:
            print(f"notifications: {len(open_ones)} of {len(notifications)} still being retried after "
                  f"{args.timeout} s", flush=True)
            return 1
        time.sleep(1)


# ---- check --------------------------------------------------------------------------------------------------------
def read_tsv(path):
    """Lines `partition<TAB>offset<TAB>timestamp<TAB>payload` written by kcat -f '%p\\t%o\\t%T\\t%s\\n'."""
    if not path or not os.path.exists(path):
        return
    with open(path, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            parts = line.rstrip("\n").split("\t", 3)
            if len(parts) == 4 and parts[0].lstrip("-").isdigit():
                yield int(parts[0]), int(parts[1]), int(parts[2]), parts[3]


def end_offsets(bootstrap, topic, partitions):
    """The end offset (high watermark) of each partition, asked with kcat -Q (timestamp -1)."""
    command = ["kcat", "-Q", "-b", bootstrap]
    for partition in range(partitions):
        command += ["-t", f"{topic}:{partition}:-1"]
    output = subprocess.run(command, capture_output=True, text=True, timeout=30).stdout
    ends = {}
    for line in output.splitlines():
        # "<topic> [<partition>] offset <n>"
        parts = line.split()
        if len(parts) >= 4 and parts[2] == "offset":
            ends[int(parts[1].strip("[]"))] = int(parts[3])
    return ends


def digest(result):
    """What duplicates must agree on: outcome, reason, environment and the transactions (credit keys, credit)."""
    canonical = json.dumps([result.get("outcome"), result.get("reason"), result.get("environment"),
                            result.get("transactions")], sort_keys=True, separators=(",", ":"))
    return hashlib.sha1(canonical.encode()).hexdigest()[:16]


class Report:
    def __init__(self):
        self.violations = []
        self.lines = []

    def violation(self, text, examples=()):
        examples = list(examples)
        suffix = f" (e.g. {', '.join(map(str, examples[:5]))})" if examples else ""
        self.violations.append(text + suffix)

    def say(self, text):
        self.lines.append(text)


class LedgerExpectation:
    """What receipt-ledger must hold, from the topics alone (docs/CREDITING.md): each purchase (credit_key, as the
    results carry it) that a verified result lists as creditable with an item credit, `amount` x `quantity`, once,
    for its owner (the result's user_id, else client_id), unless a debit event (a full refund) names its key; a
    `credit` event adds its purchase when a result tied its original_transaction_id to an owner."""

    FULL = 100_000  # revocation_percentage of a full refund (thousandths of a percent)

    def __init__(self):
        self.purchases = {}          # credit_key -> {"owners": set, "item": str, "amount": int}
        self.submission_keys = {}    # submission_id -> credit keys its verified result credits
        self.owner_of_original = {}  # original_transaction_id -> owner
        self.credit_events = []      # (credit_key, original_transaction_id, item, amount)
        self.debited = set()         # credit keys with a full-refund debit event
        self.uncheckable = []        # events whose effect depends on the order the ledger saw them in

    @staticmethod
    def item_credit(transaction):
        credit = transaction.get("credit")
        if not isinstance(credit, dict) or "item" not in credit or not transaction.get("creditable"):
            return None
        if transaction.get("is_upgraded"):
            return None
        return credit["item"], int(credit["amount"]) * int(transaction.get("quantity") or 1)

    def add_result(self, result):
        if result.get("outcome") != "verified":
            return
        owner = result.get("user_id") or result.get("client_id")
        keys = []
        for transaction in result.get("transactions") or []:
            granted = self.item_credit(transaction)
            if granted is None or not owner:
                continue
            key = transaction["credit_key"]
            keys.append(key)
            entry = self.purchases.setdefault(key, {"owners": set(), "item": granted[0], "amount": granted[1]})
            entry["owners"].add(owner)
            if transaction.get("original_transaction_id"):
                self.owner_of_original.setdefault(transaction["original_transaction_id"], owner)
        self.submission_keys.setdefault(result["submission_id"], keys)

    def add_event(self, event):
        transaction = event.get("transaction") or {}
        kind = event.get("type")
        if kind == "debit":
            percentage = transaction.get("revocation_percentage")
            if percentage is not None and int(percentage) != self.FULL:
                # A partial refund before its credit refuses the credit, after it takes a share: order-dependent.
                self.uncheckable.append(f"{event['event_id']}: a partial refund")
            self.debited.add(transaction.get("credit_key"))
        elif kind == "recredit":
            self.uncheckable.append(f"{event['event_id']}: a recredit")
        elif kind == "credit":
            granted = self.item_credit(transaction)
            if granted is not None:
                self.credit_events.append((transaction["credit_key"], transaction.get("original_transaction_id"),
                                           *granted))

    def credited(self):
        """{credit_key: {"owners", "item", "amount"}} of every purchase the topics credit (refunded ones included)."""
        credited = dict(self.purchases)
        for key, original, item, amount in self.credit_events:
            owner = self.owner_of_original.get(original)
            if key not in credited and owner:
                credited[key] = {"owners": {owner}, "item": item, "amount": amount}
        return credited

    def balances(self, report):
        """{user: {item: amount}} expected, and figures for the report."""
        expected = {}
        contested = sorted(key for key, entry in self.purchases.items() if len(entry["owners"]) > 1)
        if contested:
            # The load never lets two users claim one purchase (the first claim would win, an order the topics do
            # not record): a finding about the load generator, and those balances cannot be predicted.
            report.violation(f"{len(contested)} purchases claimed by more than one user", contested)
        credited = self.credited()
        refunded = 0
        for key, entry in credited.items():
            if key in self.debited:
                refunded += 1
                continue
            for owner in entry["owners"]:
                items = expected.setdefault(owner, {})
                items[entry["item"]] = items.get(entry["item"], 0) + entry["amount"]
        return expected, {"purchases": len(credited), "refunded": refunded}


def fetch_json(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read())


def read_wallet_log(paths, report):
    """The wallet client's final answers (WalletLoad's lines), as dicts."""
    names = ("kind", "user", "key", "amount", "replay", "status", "code", "digest", "replayed", "balance",
             "attempts", "not_final", "at_ms")
    operations, unreadable = [], []
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as lines:
            for number, line in enumerate(lines, 1):
                parts = line.rstrip("\n").split("\t")
                if len(parts) != len(names) + 1 or parts[0] != "w":
                    unreadable.append(f"{path}:{number}")
                    continue
                entry = dict(zip(names, parts[1:]))
                for name in ("amount", "attempts", "not_final"):
                    entry[name] = int(entry[name])
                entry["replay"], entry["replayed"] = entry["replay"] == "1", entry["replayed"] == "1"
                entry["status"] = int(entry["status"]) if entry["status"].isdigit() else entry["status"]
                operations.append(entry)
    if unreadable:
        report.violation(f"{len(unreadable)} unreadable lines in the wallet client's record", unreadable)
    return operations


def check_wallet(args, report, expectation):
    """The spends and grants the wallet client made during the faults, against the ledger's database; returns
    {user: {item: balance}} expected (what the topics credited, plus what was granted, less what was spent and what
    refunds took) and figures for the summary.

    Client side: every operation got a final answer (retried with its key until it did); no key was refused as
    reused; a replay answered what its first request was finally answered (status and body), marked replayed; a 409
    insufficient_balance named a balance below the amount, a 200 a balance not below zero. Database side: the spends
    answered 200 are exactly the rows of wallet_requests with status 200 (same amounts), the 409s those with 409, the
    grants likewise; each spend's attributions (wallet_spends) add up to its amount, a refused spend has none; each
    applied spend and grant has one history entry of its amount, a refused one none; a grant lot per grant; a
    purchase lot per purchase the topics credit (a refunded one may have none: its refund came first), none else; a
    refund's take-back (wallet_clawbacks) only for a purchase the topics refunded that has a lot, one each, asking its
    whole amount, taking (wallet_takes) only purchased units of its owner's wallet, takes + unrecovered = asked, no
    debt; each lot's spent = its attributions, taken + covered = the takes from it; each wallet's balance = its lots'
    remaining less debt = its history's sum (never below zero on the way), its unrecovered = its take-backs'."""
    operations = read_wallet_log(args.wallet, report)
    first = {(op["user"], op["key"]): op for op in operations if not op["replay"]}
    replays = [op for op in operations if op["replay"]]

    unresolved = [op["key"] for op in operations if op["status"] == "unresolved"]
    if unresolved:
        report.violation(f"{len(unresolved)} wallet requests never got a final answer", unresolved)
    refused_keys = [f"{op['key']}: {op['status']} {op['code']}" for op in operations
                    if isinstance(op["status"], int) and op["status"] not in (200, 409)]
    if refused_keys:
        report.violation(f"{len(refused_keys)} wallet requests refused (the client never reuses a key)", refused_keys)
    mismatched = []
    for op in replays:
        original = first.get((op["user"], op["key"]))
        if original is None or (op["status"], op["digest"]) != (original["status"], original["digest"]) \
                or not op["replayed"]:
            mismatched.append(f"{op['key']}: replay {op['status']} {op['code']} replayed={op['replayed']}, first "
                              f"{original and original['status']} {original and original['code']}")
    if mismatched:
        report.violation(f"{len(mismatched)} replays did not answer their first answer", mismatched)
    applied_spends = {k: op["amount"] for k, op in first.items() if op["kind"] == "spend" and op["status"] == 200}
    refused_spends = {k: op["amount"] for k, op in first.items()
                      if op["kind"] == "spend" and op["status"] == 409 and op["code"] == "insufficient_balance"}
    applied_grants = {k: op["amount"] for k, op in first.items() if op["kind"] == "grant" and op["status"] == 200}
    unlikely = [f"{op['key']}: {op['status']} balance {op['balance']}, amount {op['amount']}" for op in first.values()
                if (op["status"] == 409 and op["code"] == "insufficient_balance" and op["balance"].lstrip("-").isdigit()
                    and int(op["balance"]) >= op["amount"])
                or (op["status"] == 200 and op["balance"].lstrip("-").isdigit() and int(op["balance"]) < 0)]
    if unlikely:
        report.violation(f"{len(unlikely)} wallet answers with a balance that contradicts them", unlikely)

    try:
        requests = psql(args.database_url,
                        "SELECT user_id, idempotency_key, operation, amount, status FROM wallet_requests")
        attributions = psql(args.database_url,
                            "SELECT user_id, idempotency_key, lot_key, amount FROM wallet_spends")
        lots = psql(args.database_url, "SELECT user_id, lot_key, book, item, kind, amount, spent, taken, covered "
                                       "FROM wallet_lot_states")
        clawbacks = psql(args.database_url, "SELECT user_id, clawback_key, book, item, coalesce(credit_key, ''), kind, "
                                            "requested, debt, unrecovered, reversed FROM wallet_clawbacks")
        takes = psql(args.database_url, "SELECT user_id, clawback_key, lot_key, amount FROM wallet_takes")
        balances = psql(args.database_url, "SELECT user_id, book, item, amount, debt, unrecovered FROM balances")
        history = psql(args.database_url, "SELECT user_id, book, item, kind, key, amount, balance_change, shortfall "
                                          "FROM wallet_history_entries ORDER BY user_id, book, item, seq")
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as error:
        report.violation(f"the ledger's wallet tables could not be read: {error}")
        return {}, {}

    def differ(what, expected, actual):
        wrong = [f"{key}: {actual.get(key)}, expected {expected.get(key)}"
                 for key in sorted(set(expected) | set(actual), key=str) if expected.get(key) != actual.get(key)]
        if wrong:
            report.violation(f"{what}: {len(wrong)} differ", wrong)

    # The requests recorded are exactly the client's final answers.
    recorded = {(status, operation): {} for status in ("200", "409") for operation in ("spend", "grant")}
    strange = []
    for user, key, operation, amount, status in requests:
        if (status, operation) in recorded:
            recorded[(status, operation)][(user, key)] = int(amount)
        else:
            strange.append(f"{user}/{key}: {operation} {status}")
    if strange:
        report.violation(f"{len(strange)} wallet requests recorded with an unexpected status", strange)
    differ("spends answered 200 vs wallet_requests with 200", applied_spends, recorded[("200", "spend")])
    differ("spends answered 409 vs wallet_requests with 409", refused_spends, recorded[("409", "spend")])
    differ("grants answered 200 vs wallet_requests with 200", applied_grants, recorded[("200", "grant")])
    differ("grants refused vs wallet_requests", {}, recorded[("409", "grant")])

    # Each applied spend's units gone exactly once (its attributions), a refused one's not at all.
    attributed, spent_from_lot = {}, {}
    for user, key, lot, amount in attributions:
        attributed[(user, key)] = attributed.get((user, key), 0) + int(amount)
        spent_from_lot[(user, lot)] = spent_from_lot.get((user, lot), 0) + int(amount)
    differ("spends answered 200 vs their attributions (wallet_spends)", applied_spends, attributed)

    # Lots: a purchase lot per credited purchase (of its owner), a grant lot per grant; nothing else.
    credited = expectation.credited()
    debited = expectation.debited
    lot_rows = {}
    unexpected_lots = []
    for user, lot_key, book, item, kind, amount, spent, taken, covered in lots:
        lot_rows[(user, lot_key)] = {"book": book, "item": item, "kind": kind, "amount": int(amount),
                                     "spent": int(spent), "taken": int(taken), "covered": int(covered)}
        if kind == "grant":
            if applied_grants.get((user, lot_key.removeprefix("grant:"))) != int(amount):
                unexpected_lots.append(f"{user}/{lot_key}: a grant lot of {amount} the client was not granted")
        else:
            entry = credited.get(lot_key)
            if entry is None or entry["owners"] != {user} or (entry["item"], entry["amount"]) != (item, int(amount)):
                unexpected_lots.append(f"{user}/{lot_key}: a purchase lot of {amount} {item} the topics do not "
                                       f"credit so ({entry and sorted(entry['owners'])})")
    missing_lots = [f"{user}/grant:{key}" for (user, key) in applied_grants if (user, f"grant:{key}") not in lot_rows]
    for key, entry in credited.items():
        if key not in debited and len(entry["owners"]) == 1 and (next(iter(entry["owners"])), key) not in lot_rows:
            missing_lots.append(f"{next(iter(entry['owners']))}/{key}")
    if unexpected_lots:
        report.violation(f"{len(unexpected_lots)} wallet lots nothing credited or granted", unexpected_lots)
    if missing_lots:
        report.violation(f"{len(missing_lots)} credits or grants without their wallet lot", missing_lots)

    # Take-backs: one per refunded purchase with a lot, asking its whole amount, taking only purchased units of the
    # owner's wallet (never a grant), takes + unrecovered = asked, no debt under LEDGER_CLAWBACK=floor.
    taken_by, taken_from_lot = {}, {}
    wrong_takes = []
    for user, clawback, lot, amount in takes:
        taken_by[(user, clawback)] = taken_by.get((user, clawback), 0) + int(amount)
        taken_from_lot[(user, lot)] = taken_from_lot.get((user, lot), 0) + int(amount)
    clawback_rows = {}
    wrong_clawbacks = []
    unrecovered_of_wallet, taken_of_user = {}, {}
    for user, key, book, item, credit_key, kind, requested, debt, unrecovered, reversed_ in clawbacks:
        clawback_rows[(user, key)] = credit_key
        lot = lot_rows.get((user, credit_key))
        took = taken_by.get((user, key), 0)
        problems = []
        if kind != "refund" or credit_key not in debited:
            problems.append(f"a {kind} take-back of {credit_key or 'nothing'}, which the topics did not refund")
        if lot is None or int(requested) != lot["amount"]:
            problems.append(f"asked {requested}, its purchase lot holds {lot and lot['amount']}")
        if int(debt) != 0 or reversed_ != "f":
            problems.append(f"debt {debt}, reversed {reversed_}")
        if took + int(unrecovered) != int(requested):
            problems.append(f"took {took} + unrecovered {unrecovered} != asked {requested}")
        if problems:
            wrong_clawbacks.append(f"{user}/{key}: " + "; ".join(problems))
        wallet = (user, book, item)
        unrecovered_of_wallet[wallet] = unrecovered_of_wallet.get(wallet, 0) + int(unrecovered)
        taken_of_user[(user, item)] = taken_of_user.get((user, item), 0) + took
    for user, clawback, lot, amount in takes:
        source = lot_rows.get((user, lot))
        owner = clawback_rows.get((user, clawback))
        if source is None or source["kind"] != "purchase" or owner is None:
            wrong_takes.append(f"{user}/{clawback}: {amount} from {lot} ({source and source['kind']})")
    per_purchase = {}
    for (user, key), credit_key in clawback_rows.items():
        per_purchase.setdefault(credit_key, []).append(key)
    for key in debited:
        entry = credited.get(key)
        if entry is None or len(entry["owners"]) != 1:
            continue
        has_lot = (next(iter(entry["owners"])), key) in lot_rows
        if has_lot and len(per_purchase.get(key, [])) != 1:
            wrong_clawbacks.append(f"{key}: refunded after its credit, {len(per_purchase.get(key, []))} take-backs")
    if wrong_clawbacks:
        report.violation(f"{len(wrong_clawbacks)} refunds' take-backs wrong", wrong_clawbacks)
    if wrong_takes:
        report.violation(f"{len(wrong_takes)} take-backs took from a lot that is not a purchase of the wallet",
                         wrong_takes)

    # Each lot: spent = its attributions, taken + covered = the takes from it.
    wrong_lots = []
    for (user, lot_key), lot in lot_rows.items():
        if lot["spent"] != spent_from_lot.get((user, lot_key), 0) \
                or lot["taken"] + lot["covered"] != taken_from_lot.get((user, lot_key), 0):
            wrong_lots.append(f"{user}/{lot_key}: spent {lot['spent']} (attributed "
                              f"{spent_from_lot.get((user, lot_key), 0)}), taken + covered "
                              f"{lot['taken'] + lot['covered']} (takes {taken_from_lot.get((user, lot_key), 0)})")
    if wrong_lots:
        report.violation(f"{len(wrong_lots)} lots disagree with their attributions or takes", wrong_lots)

    # History: one entry per applied spend and grant (of its amount), none for a refused spend; per wallet its sum is
    # the balance, never below zero on the way.
    entries = {}
    running, lowest = {}, {}
    for user, book, item, kind, key, amount, change, shortfall in history:
        entries.setdefault(kind, {})
        entries[kind][(user, key)] = entries[kind].get((user, key), 0) + int(change)
        wallet = (user, book, item)
        running[wallet] = running.get(wallet, 0) + int(change)
        lowest[wallet] = min(lowest.get(wallet, 0), running[wallet])
    differ("spends answered 200 vs their history entries", {k: -v for k, v in applied_spends.items()},
           entries.get("spend", {}))
    differ("grants answered 200 vs their history entries", applied_grants, entries.get("grant", {}))

    # Each wallet: lots' remaining less debt = balance = its history's sum; unrecovered = its take-backs'.
    remaining = {}
    for (user, _), lot in lot_rows.items():
        wallet = (user, lot["book"], lot["item"])
        remaining[wallet] = remaining.get(wallet, 0) + lot["amount"] - lot["spent"] - lot["taken"] - lot["covered"]
    wrong_wallets = []
    table = {}
    for user, book, item, amount, debt, unrecovered in balances:
        wallet = (user, book, item)
        table[wallet] = int(amount)
        if remaining.get(wallet, 0) - int(debt) != int(amount) or running.get(wallet, 0) != int(amount) \
                or unrecovered_of_wallet.get(wallet, 0) != int(unrecovered) or lowest.get(wallet, 0) < 0:
            wrong_wallets.append(f"{'/'.join(wallet)}: balance {amount}, lots remaining {remaining.get(wallet, 0)} "
                                 f"less debt {debt}, history sum {running.get(wallet, 0)} (lowest "
                                 f"{lowest.get(wallet, 0)}), unrecovered {unrecovered} (take-backs "
                                 f"{unrecovered_of_wallet.get(wallet, 0)})")
    for wallet in sorted(set(remaining) - set(table)):
        wrong_wallets.append(f"{'/'.join(wallet)}: lots without a balance")
    if wrong_wallets:
        report.violation(f"{len(wrong_wallets)} wallets inconsistent", wrong_wallets)

    # What each user must hold: what the topics credited (a refunded purchase only where its credit came first:
    # it has a lot) + grants - spends (the client's answers) - what refunds took.
    expected = {}
    def add(user, item, amount):
        items = expected.setdefault(user, {})
        items[item] = items.get(item, 0) + amount
    for key, entry in credited.items():
        if len(entry["owners"]) != 1:
            continue
        owner = next(iter(entry["owners"]))
        if key not in debited or (owner, key) in lot_rows:
            add(owner, entry["item"], entry["amount"])
    for (user, _), amount in applied_grants.items():
        add(user, WALLET_ITEM, amount)
    for (user, _), amount in applied_spends.items():
        add(user, WALLET_ITEM, -amount)
    for (user, item), took in taken_of_user.items():
        add(user, item, -took)
    expected = {user: {item: amount for item, amount in items.items() if amount != 0}
                for user, items in expected.items()}
    expected = {user: items for user, items in expected.items() if items}
    differ("balances (production) vs credits + grants - spends - take-backs",
           {(user, item): amount for user, items in expected.items() for item, amount in items.items()},
           {(user, item): amount for (user, book, item), amount in table.items() if book == "production" and amount})

    lost = [op for op in first.values() if op["not_final"] > 0]
    figures = {
        "wallet_spends_applied": len(applied_spends), "wallet_spends_refused": len(refused_spends),
        "wallet_grants": len(applied_grants), "wallet_replays": len(replays),
        "wallet_answers_lost_then_retried": len(lost),
    }
    applied_before_lost = sum(1 for op in lost if op["status"] == 200 and op["replayed"])
    report.say(f"wallet: {len(applied_spends)} spends applied ({sum(applied_spends.values())} gems), "
               f"{len(refused_spends)} refused (insufficient_balance), {len(applied_grants)} grants "
               f"({sum(applied_grants.values())} gems), {len(replays)} replays ({len(mismatched)} not the first "
               f"answer); {len(lost)} requests whose answer was lost or not final (dropped, refused, 503, in flight) "
               f"and retried with their key: {sum(1 for op in lost if op['status'] == 200)} applied "
               f"({applied_before_lost} of them by the attempt whose answer was lost: the retry answered the stored "
               f"answer), {sum(1 for op in lost if op['status'] == 409)} refused; {len(clawback_rows)} refunds' "
               f"take-backs ({sum(taken_by.values())} gems taken, "
               f"{sum(unrecovered_of_wallet.values())} unrecovered); {len(lot_rows)} lots, {len(table)} wallets "
               f"{'INCONSISTENT' if wrong_lots or wrong_wallets else 'consistent'}")
    return expected, figures


def check_ledger(args, report, expectation, accepted):
    """Every user's balance in the ledger against the topics' purchases minus refunds; dead letters; offsets."""
    if expectation.uncheckable:
        report.violation(f"{len(expectation.uncheckable)} events whose effect on a balance depends on order (the "
                         "load sends none)", expectation.uncheckable)
    expected, figures = expectation.balances(report)
    wallet_summary = {}
    if args.wallet:
        expected, wallet_summary = check_wallet(args, report, expectation)

    # The load's own record: every acknowledged purchase is credited to the user the load bought it for.
    misowned, acknowledged_keys = [], set()
    for submission_id in sorted(accepted):
        bought = purchase_of(submission_id)
        if bought is None:
            continue
        keys = expectation.submission_keys.get(submission_id)
        if not keys:
            misowned.append(f"{submission_id}: no creditable purchase in its result")
            continue
        for key in keys:
            acknowledged_keys.add(key)
            owners = expectation.purchases[key]["owners"]
            if owners != {bought[1]}:
                misowned.append(f"{submission_id}: {key} owned by {sorted(owners)}, bought by {bought[1]}")
    if misowned:
        report.violation(f"{len(misowned)} acknowledged purchases not credited to their buyer by the topics",
                         misowned)
    unacknowledged = len(set(expectation.purchases) - acknowledged_keys)

    # The ledger's answers, through its API, for every user the load could have bought for or the topics name.
    users = sorted(set(expected) | {f"user-{number}" for number in range(USERS)})
    wrong = []
    for user in users:
        try:
            answer = fetch_json(f"{args.ledger.rstrip('/')}/v1/users/{urllib.parse.quote(user, safe='')}")
        except (OSError, ValueError) as error:
            wrong.append(f"{user}: the ledger did not answer ({error})")
            continue
        held = {item: amount for item, amount in (answer.get("balances") or {}).items() if amount != 0}
        if held != expected.get(user, {}):
            wrong.append(f"{user}: ledger {held}, expected {expected.get(user, {})}")
    if wrong:
        report.violation(f"{len(wrong)} users' balances differ from what they bought minus what was refunded"
                         + (" (and spent, granted and taken back)" if args.wallet else ""), wrong)
    # And the table itself: no balance for anyone the topics do not name.
    strangers = []
    try:
        for user, item, amount in psql(args.database_url, "SELECT user_id, item, amount FROM balances"):
            if user not in users and int(amount) != 0:
                strangers.append(f"{user}: {item} {amount}")
        states = dict(psql(args.database_url, "SELECT status, count(*) FROM purchases GROUP BY status ORDER BY 1"))
        dead = psql(args.database_url,
                    "SELECT topic, partition, \"offset\", reason FROM dead_letters ORDER BY 1, 2, 3")
        behind = ledger_offsets_behind(args)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as error:
        report.violation(f"the ledger's database could not be read: {error}")
        return {"users_checked": len(users), "balance_mismatches": len(wrong)}
    if strangers:
        report.violation(f"{len(strangers)} balances of users nobody bought for", strangers)
    if dead:
        report.violation(f"{len(dead)} messages in the ledger's dead_letters", ["/".join(row) for row in dead])
    if behind:
        report.violation(f"the ledger's stored offsets are behind the end on {len(behind)} partitions",
                         [f"{name} {stored}/{end}" for name, (stored, end) in sorted(behind.items())])
    total = sum(sum(items.values()) for items in expected.values())
    report.say(f"ledger: {len(users)} users' balances checked ({len(expected)} hold something, {total} gems in all), "
               f"{len(wrong)} wrong; {figures['purchases']} purchases credited by the topics "
               f"({unacknowledged} of them without a 202: the client gave up after the ingest wrote them), "
               f"{figures['refunded']} refunded; purchase states {states}; dead letters {len(dead)}; stored offsets "
               f"{'at the end' if not behind else 'BEHIND'}")
    return {"users_checked": len(users), "balance_mismatches": len(wrong), "purchases": figures["purchases"],
            "refunded": figures["refunded"], "ledger_dead_letters": len(dead), **wallet_summary}


def command_check(args):
    report = Report()
    # What the load generator saw.
    accepted, answered_other, notification_asked = set(), {}, 0
    unreadable_load_lines = []
    for path in args.load:
        with open(path, encoding="utf-8", errors="replace") as lines:
            for number, line in enumerate(lines, 1):
                parts = line.rstrip("\n").split("\t")
                if len(parts) < 3 or parts[0] not in ("s", "n"):
                    unreadable_load_lines.append(f"{path}:{number}")
                    continue
                if parts[0] == "s":
                    if parts[2] == "202":
                        accepted.add(parts[1])
                    else:
                        answered_other[parts[2]] = answered_other.get(parts[2], 0) + 1
                elif parts[0] == "n":
                    notification_asked += 1
    report.say(f"load: {len(accepted)} submissions acknowledged (202); other answers {dict(sorted(answered_other.items()))}")
    if unreadable_load_lines:
        # The load generator's own record is damaged: what it was told cannot be checked in full.
        report.violation(f"{len(unreadable_load_lines)} unreadable lines in the load record", unreadable_load_lines)

    # The topics, as kcat read them.
    coverage_problems = []

    def read_topic(path, topic, partitions):
        """Every message kcat copied; records a coverage problem for every offset it did not see (the mock cluster
        writes no transaction markers and does not compact: offsets are contiguous from 0)."""
        next_offset = {}
        for partition, offset, timestamp, payload in read_tsv(path):
            expected = next_offset.get(partition, 0)
            if offset != expected:
                coverage_problems.append(f"{topic}[{partition}] offsets {expected}..{offset - 1} not read")
            next_offset[partition] = offset + 1
            yield partition, offset, timestamp, payload
        if args.bootstrap and topic:
            for partition, end in end_offsets(args.bootstrap, topic, partitions).items():
                if next_offset.get(partition, 0) < end:
                    coverage_problems.append(f"{topic}[{partition}] read up to {next_offset.get(partition, 0) - 1}, "
                                             f"end offset {end}")

    on_topic = set()
    for _, _, _, payload in read_topic(args.submissions, args.submissions_topic, args.submissions_partitions):
        try:
            on_topic.add(json.loads(payload)["submission_id"])
        except (ValueError, KeyError):
            continue
    results = {}
    result_count = 0
    duplicate_times = []
    ledger_expectation = LedgerExpectation()
    for _, _, timestamp, payload in read_topic(args.results, args.results_topic, args.results_partitions):
        try:
            result = json.loads(payload)
            submission_id = result["submission_id"]
        except (ValueError, KeyError):
            report.violation("a result that is not JSON with a submission_id", [payload[:80]])
            continue
        result_count += 1
        ledger_expectation.add_result(result)
        entry = results.get(submission_id)
        if entry is None:
            results[submission_id] = [1, {digest(result)}, (result.get("outcome"), result.get("reason"))]
        else:
            entry[0] += 1
            entry[1].add(digest(result))
            duplicate_times.append(timestamp)
    events = set()
    event_count = 0
    for _, _, _, payload in read_topic(args.events, args.events_topic, args.events_partitions):
        try:
            event = json.loads(payload)
            events.add(event["event_id"])
            event_count += 1
            ledger_expectation.add_event(event)
        except (ValueError, KeyError):
            report.violation("an event that is not JSON with an event_id", [payload[:80]])
    dead_letters = {}
    for _, _, _, payload in read_tsv(args.dlq):
        try:
            reason = json.loads(payload).get("reason", "?")
        except ValueError:
            reason = "?"
        dead_letters[reason] = dead_letters.get(reason, 0) + 1

    # Checks.
    if coverage_problems:
        report.violation("the independent reader did not see every message (a kcat follower fell more than the "
                         "mock cluster's 5 MB per partition behind and skipped ahead): the run proves nothing about "
                         "those", coverage_problems)
    not_on_topic = sorted(accepted - on_topic)
    if not_on_topic:
        report.violation(f"{len(not_on_topic)} acknowledged submissions are not on the submissions topic", not_on_topic)
    without_result = sorted(accepted - set(results))
    if without_result:
        report.violation(f"{len(without_result)} acknowledged submissions have no result", without_result)
    disagreeing = sorted(sid for sid, entry in results.items() if len(entry[1]) > 1)
    if disagreeing:
        report.violation(f"{len(disagreeing)} submissions have results that disagree", disagreeing)
    wrong = []
    for submission_id, entry in results.items():
        kind = submission_id.rsplit("-", 2)[-2] if submission_id.count("-") >= 2 else "?"
        expected = EXPECTED.get(kind)
        if expected and entry[2] != expected:
            wrong.append(f"{submission_id}: {entry[2][0]}/{entry[2][1]}")
    if wrong:
        report.violation(f"{len(wrong)} submissions have a wrong verdict", wrong)
    unknown = sorted(set(results) - on_topic)
    duplicates = result_count - len(results)
    report.say(f"topics: {len(on_topic)} submissions, {result_count} results for {len(results)} submissions "
               f"({duplicates} duplicates), {event_count} events ({len(events)} distinct), DLQ {dead_letters or 0}")
    if unknown:
        report.say(f"  {len(unknown)} results for submissions the reader did not see on the topic (read before "
                   "the follower started?)")

    # Notifications: every one the ingest answered 200 (any attempt, as the fake recorded it) has an event.
    if args.fake:
        with urllib.request.urlopen(args.fake.rstrip("/") + "/admin/notifications", timeout=30) as response:
            notifications = json.loads(response.read())["notifications"]
        accepted_notifications = {entry["notification_uuid"] for entry in notifications
                                  if any(attempt.get("http_status") == 200 for attempt in entry["attempts"])}
        never = [entry["notification_uuid"] for entry in notifications
                 if entry["notification_uuid"] not in accepted_notifications]
        missing = sorted(accepted_notifications - events)
        report.say(f"notifications: {len(notifications)} sent by the fake ({notification_asked} asked by the load), "
                   f"{len(accepted_notifications)} answered 200, {len(never)} never answered 200, "
                   f"{len(missing)} of the 200s without an event")
        if missing:
            report.violation(f"{len(missing)} notifications answered 200 have no event", missing)

    # Duplicates attributed to the fault that preceded them.
    if args.faults and os.path.exists(args.faults):
        faults = []
        with open(args.faults) as lines:
            for line in lines:
                parts = line.rstrip("\n").split("\t")
                if len(parts) >= 2 and parts[0].isdigit():
                    faults.append((int(parts[0]), parts[1]))
        faults.sort()
        per_fault = {}
        for timestamp in duplicate_times:
            cause = "before any fault"
            for fault_ms, name in faults:
                if fault_ms <= timestamp:
                    cause = name
                else:
                    break
            per_fault[cause] = per_fault.get(cause, 0) + 1
        kinds = {}
        for _, name in faults:
            kinds.setdefault(name.split("#")[0], []).append(name)
        report.say("faults and the duplicate results that followed each (until the next fault):")
        for kind, names in kinds.items():
            counts = [per_fault.get(name, 0) for name in names]
            report.say(f"  {kind}: {len(names)} x, duplicates {counts} (mean {sum(counts) / len(counts):.0f})")
        if "before any fault" in per_fault:
            report.say(f"  before any fault: {per_fault['before any fault']}")

    ledger_summary = {}
    if args.ledger:
        ledger_summary = check_ledger(args, report, ledger_expectation, accepted)

    for line in report.lines:
        print(line)
    summary = {"acknowledged": len(accepted), "results": result_count, "duplicates": duplicates,
               "events": event_count, **ledger_summary, "violations": len(report.violations)}
    print("summary " + json.dumps(summary))
    if report.violations:
        print(f"VIOLATIONS ({len(report.violations)}):")
        for violation in report.violations:
            print(f"  - {violation}")
        return 1
    print("violations: 0")
    return 0


# ---- soak-report --------------------------------------------------------------------------------------------------
def command_soak_report(args):
    with open(args.csv) as lines:
        header = lines.readline().strip().split(",")
        rows = [dict(zip(header, line.strip().split(","))) for line in lines if line.strip()]
    rows = [row for row in rows if float(row["t_s"]) >= args.warmup]
    if len(rows) < 6:
        print(f"soak report: only {len(rows)} samples after the {args.warmup} s warm-up; run longer")
        return 1
    third = len(rows) // 3
    first, last = rows[:third], rows[-third:]
    judged = rows[third:]          # the last two thirds after the warm-up: where a leak would show as a trend
    failures = []
    judged_span_s = float(judged[-1]["t_s"]) - float(judged[0]["t_s"])
    if judged_span_s < args.min_judged_s:
        # A trend "per 10 minutes" read off a minute or two is the allocator's noise scaled up, not a finding.
        failures.append(f"the judged span ({judged_span_s:.0f} s) is under {args.min_judged_s:.0f} s: trends not "
                        "judged, run longer")

    def mean(sample_rows, column):
        values = [float(row[column]) for row in sample_rows if row.get(column)]
        return sum(values) / len(values) if values else float("nan")

    def slope_per_10_min(sample_rows, column):
        """Least-squares slope of `column` over time, in units per 10 minutes."""
        points = [(float(row["t_s"]), float(row[column])) for row in sample_rows if row.get(column)]
        if len(points) < 2:
            return 0.0
        mean_t = sum(t for t, _ in points) / len(points)
        mean_v = sum(v for _, v in points) / len(points)
        spread = sum((t - mean_t) ** 2 for t, _ in points)
        return (sum((t - mean_t) * (v - mean_v) for t, v in points) / spread * 600) if spread else 0.0

    print(f"samples after warm-up: {len(rows)} ({float(rows[0]['t_s']):.0f} s .. {float(rows[-1]['t_s']):.0f} s); "
          f"trend = least-squares slope over the last two thirds ({len(judged)} samples), per 10 min")
    # A leak grows steadily and keeps setting new highs; a high-water mark (a buffer or pool grown once, at a load
    # spike) steps up and then stays. So RSS and fds fail only when their trend is at least --max-slope % of their
    # mean per 10 minutes AND the last third reaches above everything before it. fds and threads are small integers:
    # a trend must also amount to more than one descriptor over the judged span to count.
    for process in args.judge:
        for figure, unit in (("rss_mb", "MB"), ("fds", "fds"), ("threads", "threads")):
            column = f"{process}_{figure}"
            before, after = mean(first, column), mean(last, column)
            level = mean(judged, column)
            slope = slope_per_10_min(judged, column)
            slope_percent = slope / level * 100 if level else 0.0
            span_min = (float(judged[-1]["t_s"]) - float(judged[0]["t_s"])) / 60
            earlier = [float(row[column]) for row in rows[:-third] if row.get(column)]
            recent = [float(row[column]) for row in last if row.get(column)]
            new_high = bool(earlier and recent) and max(recent) > max(earlier)
            trending = slope_percent >= args.max_slope and (figure != "fds" or slope * span_min / 10 > 1)
            limit_hit = figure != "threads" and trending and new_high
            mark = "FAIL" if limit_hit else ("ok (high-water mark)" if trending and figure != "threads" else "ok")
            print(f"  {process:10s} {figure:8s} {before:9.1f} -> {after:9.1f} {unit:7s} trend {slope:+8.2f} {unit}"
                  f" ({slope_percent:+5.2f} %) per 10 min{', new high in the last third' if new_high else ''}  {mark}")
            if limit_hit and judged_span_s >= args.min_judged_s:
                failures.append(f"{column} trends {slope_percent:+.2f} % per 10 min and keeps reaching new highs")
    lags = [float(row["lag"]) for row in rows if row.get("lag")]
    print(f"  consumer lag after warm-up: max {max(lags):.0f}, mean {sum(lags) / len(lags):.0f} "
          f"(bound {args.max_lag}); last third mean {mean(last, 'lag'):.0f}")
    if max(lags) > args.max_lag:
        failures.append(f"lag reached {max(lags):.0f} (bound {args.max_lag})")
    loads = [float(row["load1"]) for row in rows if row.get("load1")]
    print(f"  load average (1 min): mean {sum(loads) / len(loads):.2f}, max {max(loads):.2f}")
    if failures:
        print("soak criteria FAILED: " + "; ".join(failures))
        return 1
    print(f"soak criteria met (RSS and fds without a trend of {args.max_slope} % per 10 min that keeps reaching new "
          "highs after warm-up, lag bounded)")
    return 0


def command_plot_script(args):
    """A gnuplot script for the soak CSV: RSS, fds, threads and lag/throughput over time."""
    with open(args.csv) as lines:
        header = lines.readline().strip().split(",")
    column = {name: index + 1 for index, name in enumerate(header)}
    processes = [name[: -len("_rss_mb")] for name in header if name.endswith("_rss_mb")]

    def plots(figure):
        return ", ".join(f"'{args.csv}' using ($1/60):{column[f'{p}_{figure}']} with lines lw 2 title '{p}'"
                         for p in processes)

    print(f"""set datafile separator ','
set terminal pngcairo size 1400,1000 font ',10'
set output '{args.png}'
set multiplot layout 2,2 title '{args.title}'
set xlabel 'minutes'
set key top left
set grid
set yrange [0:*]
set offsets 0, 0, graph 0.15, 0
set title 'RSS (MB)'
plot {plots('rss_mb')}
set title 'open file descriptors'
plot {plots('fds')}
set title 'threads'
plot {plots('threads')}
set title 'consumer lag (messages) and results/s'
set ytics nomirror
set y2tics
set y2range [0:*]
set y2label 'results/s'
plot '{args.csv}' using ($1/60):{column['lag']} with lines lw 2 title 'lag', \\
     '{args.csv}' using ($1/60):{column['results_per_s']} axes x1y2 with lines lw 1 title 'results/s'
unset multiplot""")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)

    load = commands.add_parser("load")
    load.add_argument("--ingest", required=True)
    load.add_argument("--rate", type=float, required=True)
    load.add_argument("--out", required=True)
    load.add_argument("--run", required=True, help="prefix of every submission id")
    load.add_argument("--duration", type=float, default=0, help="seconds (default: until SIGTERM)")
    load.add_argument("--connections", type=int, default=64)
    load.add_argument("--request-timeout", type=float, default=30)
    load.add_argument("--first-number", type=int, default=0)
    load.add_argument("--fake", help="fake App Store URL: also send notifications through it")
    load.add_argument("--notification-rate", type=float, default=0)
    load.add_argument("--notification-retry", default="1,2,4,8,15,30,30,30")

    sample = commands.add_parser("sample")
    sample.add_argument("--out", required=True)
    sample.add_argument("--interval", type=float, default=10)
    sample.add_argument("--proc", action="append", default=[], help="name=pid")
    sample.add_argument("--metrics", action="append", default=[], help="name=url (names starting 'verifier')")

    drain = commands.add_parser("drain")
    drain.add_argument("--metrics", action="append", default=[], help="a verifier's /metrics URL")
    drain.add_argument("--partitions", type=int, required=True, help="input partitions the group must own")
    drain.add_argument("--timeout", type=float, default=300)
    drain.add_argument("--stable", type=float, default=5)
    drain.add_argument("--each", action="store_true", help="also require every verifier to own partitions")

    ledger_drain = commands.add_parser("ledger-drain")
    ledger_drain.add_argument("--database-url", required=True)
    ledger_drain.add_argument("--bootstrap", required=True)
    ledger_drain.add_argument("--ledger-topic", action="append", default=[], help="topic:partitions it consumes")
    ledger_drain.add_argument("--ledger", help="(unused here; accepted so the same arguments serve check)")
    ledger_drain.add_argument("--timeout", type=float, default=300)

    wallet = commands.add_parser("wallet")
    wallet.add_argument("--ledger", action="append", required=True, help="a receipt-ledger's URL (each request to one "
                        "of them at random)")
    wallet.add_argument("--rate", type=float, required=True, help="spends and grants per second")
    wallet.add_argument("--users", type=int, default=250, help="spend as user-0 .. user-<N-1>")
    wallet.add_argument("--out", required=True)
    wallet.add_argument("--run", required=True, help="prefix of every Idempotency-Key")
    wallet.add_argument("--seed", type=int, default=0)
    wallet.add_argument("--connections", type=int, default=8)
    wallet.add_argument("--replay-every", type=int, default=10, help="one final answer in N is replayed")
    wallet.add_argument("--request-timeout", type=float, default=10)
    wallet.add_argument("--settle", type=float, default=60,
                        help="seconds after SIGUSR1 to get every request a final answer (SIGTERM: none)")

    wait_notifications = commands.add_parser("wait-notifications")
    wait_notifications.add_argument("--fake", required=True)
    wait_notifications.add_argument("--timeout", type=float, default=180)

    check = commands.add_parser("check")
    check.add_argument("--load", action="append", default=[], help="files the load generator wrote")
    check.add_argument("--submissions", required=True)
    check.add_argument("--results", required=True)
    check.add_argument("--events")
    check.add_argument("--dlq")
    check.add_argument("--faults")
    check.add_argument("--fake")
    check.add_argument("--bootstrap", help="check with kcat -Q that the readers reached every partition's end")
    check.add_argument("--submissions-topic", default="iap.receipts.submitted")
    check.add_argument("--submissions-partitions", type=int, default=4)
    check.add_argument("--results-topic", default="iap.receipts.results")
    check.add_argument("--results-partitions", type=int, default=4)
    check.add_argument("--events-topic", default="iap.purchase.events")
    check.add_argument("--events-partitions", type=int, default=4)
    check.add_argument("--ledger", help="receipt-ledger's URL: check every user's balance")
    check.add_argument("--database-url", help="the ledger's database (dead letters, stored offsets)")
    check.add_argument("--ledger-topic", action="append", default=[], help="topic:partitions the ledger consumes")
    check.add_argument("--wallet", action="append", default=[],
                       help="files the wallet client wrote: check its spends and grants, and balances with them")

    report = commands.add_parser("soak-report")
    report.add_argument("--csv", required=True)
    report.add_argument("--warmup", type=float, default=300)
    report.add_argument("--min-judged-s", type=float, default=600,
                        help="least span of the last two thirds of the samples for a trend to be judged")
    report.add_argument("--max-slope", type=float, default=1.0,
                        help="least-squares trend of RSS and fds, in %% of their level per 10 minutes, that fails")
    report.add_argument("--max-lag", type=float, required=True)
    report.add_argument("--judge", action="append", default=[], help="process names the criteria apply to")

    plot = commands.add_parser("plot-script")
    plot.add_argument("--csv", required=True)
    plot.add_argument("--png", required=True)
    plot.add_argument("--title", default="soak")

    args = parser.parse_args()
    handler = {"load": command_load, "wallet": command_wallet, "sample": command_sample, "drain": command_drain, "check": command_check,
               "wait-notifications": command_wait_notifications, "ledger-drain": command_ledger_drain,
               "soak-report": command_soak_report, "plot-script": command_plot_script}[args.command]
    sys.exit(handler(args) or 0)


if __name__ == "__main__":
    main()
