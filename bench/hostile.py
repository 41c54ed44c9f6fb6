#!/usr/bin/env python3
"""Hostile clients against receipt-ingest, measured while a legitimate client keeps posting (bench/hostile.sh).

  hostile.py run --url URL --pid PID --bootstrap HOST:PORT --topic TOPIC --work DIR [--scenarios a,b] [--rate N]
  hostile.py legit --url URL --rate N --duration S --out FILE --ids FILE --run-id ID
  hostile.py attack SCENARIO --url URL --duration S --out FILE

`run` drives everything: for each scenario it starts the legitimate client (its own process: a fixed rate of
POST /v1/receipts over keep-alive connections from 127.0.0.1, every latency measured from the moment the request was
due, so a stalled server cannot hide behind a slow client) and the attacker (another process, asyncio, connecting
from 127.0.0.2 and up so that the per-IP limit sees several attackers), samples the ingest's RSS, open descriptors
and threads from /proc every 0.5 s, reads the ingest's connection counters from /metrics before and after, and
prints one line per scenario. At the end it checks with kcat (an independent Kafka client, following the topic from
the start) that every submission answered 202 is on the topic, and exits 1 if one is missing or a target is missed.
"""
import argparse
import asyncio
import base64
import json
import os
import random
import re
import resource
import subprocess
import sys
import time
import urllib.request

SCENARIOS = {
    # name: (duration s, description)
    "baseline": (15, "no attack"),
    "slowloris": (25, "3,000 connections from 6 IPs trickling a header line a second, never ending the head"),
    "slow-body": (40, "2,000 connections from 4 IPs announcing 200 kB notifications and sending 10 bytes a second"),
    "header-flood": (20, "64 connections, 1,500 req/s with 100 headers (5 kB), every 10th with one 10 kB or 32 kB "
                         "header"),
    "idle": (40, "10,000 keep-alive connections from 20 IPs, one request each, then idle (reconnected when closed)"),
    "chunked": (20, "32 connections streaming endless chunked notification bodies, 40 MB/s in all"),
    "garbage": (20, "32 connections sending pipelined garbage (binary, bad request lines, bad headers) in a loop"),
    "notif-junk": (20, "64 connections posting 3,000 junk notifications/s (not JSON, no signedPayload, not a JWS)"),
    "notif-oversized": (20, "32 connections posting notifications over 256 KiB, 1,000 req/s (declared or sent)"),
}

# ---------------------------------------------------------------------------------------------------------------
# HTTP helpers


def split_url(url):
    match = re.match(r"http://([^:/]+):(\d+)", url)
    return match.group(1), int(match.group(2))


async def read_response(reader):
    """Reads one response; returns (status, headers dict, body). Raises on EOF."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = await reader.readexactly(length) if length else b""
    return status, headers, body


def percentile(sorted_values, fraction):
    if not sorted_values:
        return None
    index = min(len(sorted_values) - 1, max(0, int(round(fraction * len(sorted_values) + 0.5)) - 1))
    return sorted_values[index]


class RateLimiter:
    """Token bucket shared by the coroutines of one process."""

    def __init__(self, rate):
        self.rate = rate
        self.tokens = 0.0
        self.last = time.monotonic()

    async def take(self, count=1):
        while True:
            now = time.monotonic()
            self.tokens = min(self.rate, self.tokens + (now - self.last) * self.rate)
            self.last = now
            if self.tokens >= count:
                self.tokens -= count
                return
            await asyncio.sleep(max(0.001, (count - self.tokens) / self.rate))


# ---------------------------------------------------------------------------------------------------------------
# The legitimate client


async def legit(args):
    host, port = split_url(args.url)
    loop = asyncio.get_running_loop()
    receipt = base64.b64encode(os.urandom(1536)).decode()
    queue = asyncio.Queue()
    latencies = []
    statuses = {}
    errors = {}
    accepted_ids = []
    started = loop.time()
    end = started + args.duration

    async def ticker():
        index = 0
        while True:
            now = loop.time()
            due_count = int((min(now, end) - started) * args.rate)
            while index < due_count:
                queue.put_nowait((index, started + index / args.rate))
                index += 1
            if now >= end:
                break
            await asyncio.sleep(0.001)
        for _ in range(args.connections):
            queue.put_nowait(None)

    async def worker():
        reader = writer = None
        while True:
            item = await queue.get()
            if item is None:
                break
            index, due = item
            submission_id = f"{args.run_id}-{index}"
            body = ('{"receipt_data":"%s","submission_id":"%s"}' % (receipt, submission_id)).encode()
            request = (
                b"POST /v1/receipts HTTP/1.1\r\nHost: ingest\r\nContent-Type: application/json\r\n"
                + (b"Authorization: Bearer " + args.api_key.encode() + b"\r\n" if args.api_key else b"")
                + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            try:
                if writer is None:
                    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 5)
                writer.write(request)
                status, headers, _ = await asyncio.wait_for(read_response(reader), 15)
                latencies.append(loop.time() - due)
                statuses[status] = statuses.get(status, 0) + 1
                if status == 202:
                    accepted_ids.append(submission_id)
                if headers.get("connection", "").lower() == "close":
                    writer.close()
                    reader = writer = None
            except Exception as error:  # the connection failed: counted, and a new one is opened for the next
                kind = type(error).__name__
                errors[kind] = errors.get(kind, 0) + 1
                if writer is not None:
                    writer.close()
                reader = writer = None

    workers = [asyncio.create_task(worker()) for _ in range(args.connections)]
    await ticker()
    await asyncio.gather(*workers)
    elapsed = loop.time() - started
    latencies.sort()
    result = {
        "due": int(args.duration * args.rate),
        "completed": len(latencies),
        "throughput": round(len(latencies) / elapsed, 1),
        "statuses": {str(key): value for key, value in sorted(statuses.items())},
        "errors": errors,
        "accepted": len(accepted_ids),
    }
    for name, fraction in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999)):
        value = percentile(latencies, fraction)
        result[name + "_ms"] = None if value is None else round(value * 1000, 2)
    result["max_ms"] = round(latencies[-1] * 1000, 2) if latencies else None
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result["cpu_s"] = round(usage.ru_utime + usage.ru_stime, 1)
    with open(args.ids, "w") as handle:
        handle.write("\n".join(accepted_ids) + ("\n" if accepted_ids else ""))
    with open(args.out, "w") as handle:
        json.dump(result, handle)


# ---------------------------------------------------------------------------------------------------------------
# Attackers


class AttackStats:
    def __init__(self):
        self.connected = 0
        self.connect_failed = 0
        self.closed_unanswered = 0  # closed by the server without an answer (refused, timed out, cut off)
        self.closed_answered = 0
        self.lifetimes = []
        self.responses = {}
        self.requests = 0
        self.bytes_sent = 0

    def response(self, status):
        self.responses[status] = self.responses.get(status, 0) + 1

    def closed(self, lifetime, answered):
        if answered:
            self.closed_answered += 1
        else:
            self.closed_unanswered += 1
        self.lifetimes.append(lifetime)

    def summary(self):
        lifetimes = sorted(self.lifetimes)
        return {
            "connected": self.connected,
            "connect_failed": self.connect_failed,
            "closed_unanswered": self.closed_unanswered,
            "closed_answered": self.closed_answered,
            "lifetime_p50_s": None if not lifetimes else round(percentile(lifetimes, 0.5), 2),
            "lifetime_max_s": None if not lifetimes else round(lifetimes[-1], 2),
            "requests": self.requests,
            "responses": {str(key): value for key, value in sorted(self.responses.items())},
            "mb_sent": round(self.bytes_sent / 1e6, 1),
        }


class Attack:
    def __init__(self, args):
        self.host, self.port = split_url(args.url)
        self.deadline = time.monotonic() + args.duration
        self.stats = AttackStats()
        self.sources = 1

    def source(self, index):
        return "127.0.0.%d" % (2 + index % self.sources)

    def running(self):
        return time.monotonic() < self.deadline

    async def connect(self, index):
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port, local_addr=(self.source(index), 0)), 5)
            self.stats.connected += 1
            return reader, writer
        except Exception:
            self.stats.connect_failed += 1
            await asyncio.sleep(0.2)
            return None, None

    async def send(self, writer, data):
        writer.write(data)
        self.stats.bytes_sent += len(data)
        await writer.drain()

    async def hold_trickling(self, index, head, piece, interval):
        """Connects, sends `head`, then `piece` every `interval` s until the server closes; reconnects."""
        await asyncio.sleep(random.random() * 2)  # spread the connects over two seconds
        while self.running():
            reader, writer = await self.connect(index)
            if writer is None:
                continue
            opened = time.monotonic()
            try:
                await self.send(writer, head)
                # No read per piece (a timer each would cost the attacker more than the server): the server's close
                # shows as end of stream, or as a failed write.
                while self.running() and not reader._eof and not writer.is_closing():
                    await asyncio.sleep(interval * (0.5 + random.random()))
                    await self.send(writer, piece)
            except (ConnectionError, OSError):
                pass
            if self.running():
                answered = len(reader._buffer) > 0
                self.stats.closed(time.monotonic() - opened, answered)
                await asyncio.sleep(0.1)
            writer.close()

    async def slowloris(self):
        self.sources = 6
        head = b"POST /v1/apple/notifications HTTP/1.1\r\nHost: ingest\r\nUser-Agent: slow\r\n"
        await asyncio.gather(*(self.hold_trickling(i, head, b"X-Trickle: x\r\n", 1.0) for i in range(3000)))

    async def slow_body(self):
        self.sources = 4
        head = (b"POST /v1/apple/notifications HTTP/1.1\r\nHost: ingest\r\nContent-Type: application/json\r\n"
                b"Content-Length: 200000\r\n\r\n{\"signedPayload\":\"")
        await asyncio.gather(*(self.hold_trickling(i, head, b"A" * 10, 1.0) for i in range(2000)))

    async def idle(self):
        self.sources = 20

        async def one(index):
            await asyncio.sleep(random.random() * 5)
            while self.running():
                reader, writer = await self.connect(index)
                if writer is None:
                    continue
                opened = time.monotonic()
                answered = False
                try:
                    await self.send(writer, b"GET /healthz HTTP/1.1\r\nHost: ingest\r\n\r\n")
                    status, _, _ = await asyncio.wait_for(read_response(reader), 10)
                    self.stats.requests += 1
                    self.stats.response(status)
                    answered = True
                    while self.running() and not reader._eof and not writer.is_closing():
                        await asyncio.sleep(1.0)
                except (ConnectionError, OSError, asyncio.IncompleteReadError, asyncio.TimeoutError):
                    pass
                if self.running():
                    self.stats.closed(time.monotonic() - opened, answered)
                    await asyncio.sleep(0.1 if answered else 0.3)
                writer.close()

        await asyncio.gather(*(one(i) for i in range(10_000)))

    async def request_loop(self, index, limiter, make_request):
        """Keep-alive requests from `make_request()` at the shared rate; reconnects whenever the server closes."""
        while self.running():
            reader, writer = await self.connect(index)
            if writer is None:
                continue
            opened = time.monotonic()
            answered = False
            try:
                while self.running():
                    await limiter.take()
                    await self.send(writer, make_request())
                    self.stats.requests += 1
                    status, headers, _ = await asyncio.wait_for(read_response(reader), 10)
                    answered = True
                    self.stats.response(status)
                    if headers.get("connection", "").lower() == "close":
                        break
            except (ConnectionError, OSError, asyncio.IncompleteReadError, asyncio.TimeoutError):
                pass
            if self.running():
                self.stats.closed(time.monotonic() - opened, answered)
            writer.close()

    async def header_flood(self):
        self.sources = 4
        limiter = RateLimiter(1500)
        many = b"".join(b"X-Flood-%03d: %s\r\n" % (i, b"v" * 34) for i in range(100))
        large = b"X-Large: " + b"h" * 10_000 + b"\r\n"
        huge = b"X-Huge: " + b"h" * 32768 + b"\r\n"
        counter = [0]

        def make():
            counter[0] += 1
            extra = {0: huge, 5: large}.get(counter[0] % 10, many)
            return b"GET /healthz HTTP/1.1\r\nHost: ingest\r\n" + extra + b"\r\n"

        await asyncio.gather(*(self.request_loop(i, limiter, make) for i in range(64)))

    async def notif_junk(self):
        self.sources = 4
        limiter = RateLimiter(3000)
        jws_like = base64.urlsafe_b64encode(b'{"alg":"none"}').rstrip(b"=") + b".eyJ4IjoxfQ.c2ln"
        bodies = [b"not json at all", b'{"unrelated":true}', b'{"signedPayload":42}', b'{"signedPayload":"a.b"}',
                  b'{"signedPayload":"' + jws_like + b'"}', b"[" * 64 + b"]" * 64, os.urandom(512)]
        counter = [0]

        def make():
            counter[0] += 1
            body = bodies[counter[0] % len(bodies)]
            return (b"POST /v1/apple/notifications HTTP/1.1\r\nHost: ingest\r\nContent-Type: application/json\r\n"
                    b"Content-Length: %d\r\n\r\n" % len(body)) + body

        await asyncio.gather(*(self.request_loop(i, limiter, make) for i in range(64)))

    async def notif_oversized(self):
        self.sources = 4
        limiter = RateLimiter(1000)
        sent_body = b"B" * 300_000

        async def one(index):
            count = 0
            while self.running():
                reader, writer = await self.connect(index)
                if writer is None:
                    continue
                opened = time.monotonic()
                answered = False
                count += 1
                try:
                    await limiter.take()
                    self.stats.requests += 1
                    if count % 2:  # declared, body never sent: refused from the head
                        await self.send(writer, b"POST /v1/apple/notifications HTTP/1.1\r\nHost: ingest\r\n"
                                                b"Content-Length: 10000000\r\n\r\n")
                    else:  # declared and sent anyway
                        await self.send(writer, b"POST /v1/apple/notifications HTTP/1.1\r\nHost: ingest\r\n"
                                                b"Content-Length: 300000\r\n\r\n" + sent_body)
                    status, _, _ = await asyncio.wait_for(read_response(reader), 10)
                    answered = True
                    self.stats.response(status)
                except (ConnectionError, OSError, asyncio.IncompleteReadError, asyncio.TimeoutError):
                    pass
                if self.running():
                    self.stats.closed(time.monotonic() - opened, answered)
                writer.close()

        await asyncio.gather(*(one(i) for i in range(32)))

    async def chunked(self):
        self.sources = 4
        limiter = RateLimiter(40_000_000)
        chunk = b"4000\r\n" + b"C" * 0x4000 + b"\r\n"

        async def one(index):
            while self.running():
                reader, writer = await self.connect(index)
                if writer is None:
                    continue
                opened = time.monotonic()
                answered = False
                try:
                    await self.send(writer, b"POST /v1/apple/notifications HTTP/1.1\r\nHost: ingest\r\n"
                                            b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
                    self.stats.requests += 1
                    reading = asyncio.ensure_future(read_response(reader))
                    try:
                        while self.running() and not reading.done():
                            await limiter.take(len(chunk))
                            await self.send(writer, chunk)
                    finally:
                        if not reading.done():
                            reading.cancel()
                        elif reading.exception() is None:
                            answered = True
                            self.stats.response(reading.result()[0])
                except (ConnectionError, OSError, asyncio.IncompleteReadError, asyncio.CancelledError):
                    pass
                if self.running():
                    self.stats.closed(time.monotonic() - opened, answered)
                writer.close()

        await asyncio.gather(*(one(i) for i in range(32)))

    async def garbage(self):
        self.sources = 4
        limiter = RateLimiter(2000)
        samples = [
            lambda: os.urandom(2048),
            lambda: b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 3 + b"\x00\x01\x02GARBAGE\r\n\r\n" * 20,
            lambda: b"FOO BAR BAZ QUX\r\n\r\n" * 50,
            lambda: b"POST /v1/apple/notifications HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
            lambda: b"POST /v1/apple/notifications HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 9"
                    b"\r\n\r\nhello" * 10,
            lambda: b"GET /healthz HTTP/1.1\r\nHost: x\r\nbroken header line\r\n\r\n" * 10,
            lambda: b"POST /v1/apple/notifications HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                    b"zz\r\nnot hex\r\n0\r\n\r\n",
        ]

        async def one(index):
            turn = index
            while self.running():
                await limiter.take()
                reader, writer = await self.connect(index)
                if writer is None:
                    continue
                opened = time.monotonic()
                answered = False
                turn += 1
                try:
                    await self.send(writer, samples[turn % len(samples)]())
                    self.stats.requests += 1
                    while True:
                        data = await asyncio.wait_for(reader.read(65536), 5)
                        if not data:
                            break
                        if not answered:
                            answered = True
                            match = re.match(rb"HTTP/1\.[01] (\d+)", data)
                            self.stats.response(int(match.group(1)) if match else "non-http")
                except (ConnectionError, OSError, asyncio.TimeoutError):
                    pass
                if self.running():
                    self.stats.closed(time.monotonic() - opened, answered)
                writer.close()

        await asyncio.gather(*(one(i) for i in range(32)))


async def attack(args):
    runner = Attack(args)
    scenario = {
        "slowloris": runner.slowloris, "slow-body": runner.slow_body, "idle": runner.idle,
        "header-flood": runner.header_flood, "notif-junk": runner.notif_junk,
        "notif-oversized": runner.notif_oversized, "chunked": runner.chunked, "garbage": runner.garbage,
    }[args.scenario]
    try:
        await asyncio.wait_for(scenario(), args.duration + 15)
    except asyncio.TimeoutError:
        pass
    summary = runner.stats.summary()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    summary["cpu_s"] = round(usage.ru_utime + usage.ru_stime, 1)
    with open(args.out, "w") as handle:
        json.dump(summary, handle)


# ---------------------------------------------------------------------------------------------------------------
# The orchestrator


def proc_sample(pid):
    status = open(f"/proc/{pid}/status").read()
    rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) // 1024
    threads = int(re.search(r"Threads:\s+(\d+)", status).group(1))
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return rss, fds, threads


def scrape(url):
    for _ in range(20):
        try:
            with urllib.request.urlopen(url + "/metrics", timeout=5) as response:
                text = response.read().decode()
            values = {}
            for line in text.splitlines():
                match = re.match(r'^(ingest_http_connections\w*|ingest_http_busy_refusals_total|'
                                 r'ingest_http_request_duration_seconds_bucket)(\{[^}]*\})? (\S+)$', line)
                if match:
                    values[match.group(1) + (match.group(2) or "")] = float(match.group(3))
            return values
        except Exception:
            time.sleep(0.5)
    return {}


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_percentiles(before, after, route="/v1/receipts"):
    """p50 and p99 upper bounds (bucket edges, ms) of the ingest's own request durations between two scrapes."""
    buckets = []
    for key, value in after.items():
        match = re.match(r'ingest_http_request_duration_seconds_bucket\{route="%s",le="([^"]+)"\}' % re.escape(route),
                         key)
        if match:
            edge = float("inf") if match.group(1) == "+Inf" else float(match.group(1))
            buckets.append((edge, value - before.get(key, 0)))
    buckets.sort()
    if not buckets or buckets[-1][1] <= 0:
        return None, None
    total = buckets[-1][1]

    def bound(fraction):
        for edge, count in buckets:
            if count >= fraction * total:
                return "inf" if edge == float("inf") else round(edge * 1000, 1)
        return None

    return bound(0.5), bound(0.99)


def settle(pid, idle_fds, limit=40):
    """Waits until the ingest holds no more descriptors than when idle (attack connections gone), at most `limit` s."""
    deadline = time.time() + limit
    while time.time() < deadline:
        if proc_sample(pid)[1] <= idle_fds + 4:
            return True
        time.sleep(0.5)
    return False


def run(args):
    here = os.path.abspath(__file__)
    scenarios = args.scenarios.split(",") if args.scenarios else list(SCENARIOS)
    os.makedirs(args.work, exist_ok=True)
    run_id = "hostile-%d" % int(time.time())
    consumed = os.path.join(args.work, "topic-keys.txt")
    consumer = subprocess.Popen(
        ["kcat", "-C", "-q", "-u", "-b", args.bootstrap, "-t", args.topic, "-o", "beginning", "-f", "%k\n"],
        stdout=open(consumed, "w"), stderr=subprocess.DEVNULL)
    rss, fds, threads = proc_sample(args.pid)
    idle_fds = fds
    print(f"ingest pid {args.pid} at start: RSS {rss} MB, {fds} fds, {threads} threads; "
          f"ulimit -n {os.sysconf('SC_OPEN_MAX')} (this process)")
    header = ("%-16s %7s %7s %7s %8s %6s %5s %6s %6s %6s %5s %5s %8s %7s %9s %5s" % (
        "scenario", "legit/s", "p50ms", "p99ms", "maxms", "202", "fail", "srvp99", "RSSMB", "fds", "cpu%", "load",
        "accepted", "refused", "timedout", "503"))
    rows = []
    all_ids = []
    failures = []
    for name in scenarios:
        duration = args.duration or SCENARIOS[name][0]
        print(f"\n--- {name}: {SCENARIOS[name][1]} ({duration} s)", flush=True)
        before = scrape(args.url)
        legit_out = os.path.join(args.work, f"legit-{name}.json")
        ids_out = os.path.join(args.work, f"ids-{name}.txt")
        attack_out = os.path.join(args.work, f"attack-{name}.json")
        attacker = None
        if name != "baseline":
            # Niced: a real attacker uses its own machines' CPUs, not the server's; here it shares the server's cores.
            attacker = subprocess.Popen(["nice", "-n", "10", sys.executable, here, "attack", name, "--url", args.url,
                                         "--duration", str(duration + 3), "--out", attack_out])
            time.sleep(3)  # the attack is in place before the measurement starts
        cpu_before = cpu_seconds(args.pid)
        started = time.time()
        legit_process = subprocess.Popen([sys.executable, here, "legit", "--url", args.url, "--rate", str(args.rate),
                                          "--connections", str(args.connections), "--duration", str(duration),
                                          "--out", legit_out, "--ids", ids_out, "--run-id", f"{run_id}-{name}"]
                                         + (["--api-key", args.api_key] if args.api_key else []))
        samples = []
        while legit_process.poll() is None:
            try:
                samples.append(proc_sample(args.pid))
            except (FileNotFoundError, ProcessLookupError):
                print("FAIL: the ingest process is gone", file=sys.stderr)
                sys.exit(1)
            time.sleep(0.5)
        load = os.getloadavg()[0]
        ingest_cpu = round(100 * (cpu_seconds(args.pid) - cpu_before) / (time.time() - started))
        after = scrape(args.url)
        server_p50, server_p99 = server_percentiles(before, after)
        if attacker is not None:
            attacker.wait()
        # Leftover attack connections (the ones the server had not yet seen closed) would count in the next scenario.
        settled = settle(args.pid, idle_fds)
        after = scrape(args.url)
        legit_result = json.load(open(legit_out))
        attack_result = json.load(open(attack_out)) if attacker is not None else {}
        all_ids += [line.strip() for line in open(ids_out) if line.strip()]

        def delta(key):
            if key not in after:
                return "n/a"
            return int(after[key] - before.get(key, 0))

        timed_out = "n/a"
        if 'ingest_http_connections_timed_out_total{phase="head"}' in after:
            timed_out = "%s/%s" % (delta('ingest_http_connections_timed_out_total{phase="head"}'),
                                   delta('ingest_http_connections_timed_out_total{phase="body"}'))
        failed = legit_result["completed"] - legit_result["statuses"].get("202", 0) + sum(
            legit_result["errors"].values())
        row = {
            "scenario": name, "legit": legit_result, "attack": attack_result,
            "rss_max_mb": max(s[0] for s in samples), "fds_max": max(s[1] for s in samples),
            "threads_max": max(s[2] for s in samples), "load1": round(load, 2), "ingest_cpu_percent": ingest_cpu,
            "server_p50_ms": server_p50, "server_p99_ms": server_p99, "settled": settled,
            "server": {"accepted": delta("ingest_http_connections_accepted_total"),
                       "refused": delta("ingest_http_connections_refused_total"), "timed_out_head_body": timed_out,
                       "busy_refusals": delta("ingest_http_busy_refusals_total")},
        }
        rows.append(row)
        print("legit:", json.dumps(legit_result))
        if attack_result:
            print("attacker:", json.dumps(attack_result))
        print("server:", json.dumps(row["server"]),
              f"RSS max {row['rss_max_mb']} MB, fds max {row['fds_max']}, threads max {row['threads_max']}, "
              f"ingest CPU {ingest_cpu}% (of one core), server-side /v1/receipts p50 <= {server_p50} ms, "
              f"p99 <= {server_p99} ms, load {row['load1']}" + ("" if settled else ", attack connections still open"),
              flush=True)
        if legit_result["p99_ms"] is None or legit_result["p99_ms"] > args.p99_target_ms:
            failures.append(f"{name}: legitimate p99 {legit_result['p99_ms']} ms over {args.p99_target_ms} ms")
        if failed:
            failures.append(f"{name}: {failed} legitimate requests not answered 202 "
                            f"({legit_result['statuses']}, errors {legit_result['errors']})")
        if row["rss_max_mb"] > args.rss_bound_mb:
            failures.append(f"{name}: RSS {row['rss_max_mb']} MB over the stated bound {args.rss_bound_mb} MB")

    # Every 202 on the topic: wait for kcat to catch up (the topic holds only this run's submissions).
    expected = set(all_ids)
    deadline = time.time() + 60
    found = set()
    while time.time() < deadline:
        found = {line.strip() for line in open(consumed) if line.strip()}
        if expected <= found:
            break
        time.sleep(1)
    consumer.terminate()
    consumer.wait()
    found = {line.strip() for line in open(consumed) if line.strip()}
    missing = expected - found

    print("\nsummary (legit: %d req/s on %d keep-alive connections from 127.0.0.1, latency from the due time; "
          "srvp99: the ingest's own p99 bucket bound for /v1/receipts; cpu%%: the ingest's CPU, 100 = one core; "
          "timedout: connections closed past their head/body deadline)" % (args.rate, args.connections))
    print(header)
    for row in rows:
        legit_result = row["legit"]
        server = row["server"]
        failed = legit_result["completed"] - legit_result["statuses"].get("202", 0) + sum(
            legit_result["errors"].values())
        print("%-16s %7s %7s %7s %8s %6s %5s %6s %6s %6s %5s %5s %8s %7s %9s %5s" % (
            row["scenario"], legit_result["throughput"], legit_result["p50_ms"], legit_result["p99_ms"],
            legit_result["max_ms"], legit_result["statuses"].get("202", 0), failed, row["server_p99_ms"],
            row["rss_max_mb"], row["fds_max"], row["ingest_cpu_percent"], round(row["load1"], 1),
            server["accepted"], server["refused"], server["timed_out_head_body"], server["busy_refusals"]))
    print(f"202s: {len(expected)}; on the topic (kcat, keys): {len(expected & found)}; missing: {len(missing)}")
    with open(os.path.join(args.work, "results.json"), "w") as handle:
        json.dump({"rows": rows, "accepted": len(expected), "missing": len(missing)}, handle, indent=1)
    if missing:
        failures.append(f"{len(missing)} submissions answered 202 are not on the topic, e.g. {sorted(missing)[:3]}")
    for failure in failures:
        print("FAIL:", failure, file=sys.stderr)
    if not failures:
        print("OK: every target held (p99, nothing accepted lost, RSS bound)")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run")
    p_run.add_argument("--url", required=True)
    p_run.add_argument("--pid", type=int, required=True)
    p_run.add_argument("--bootstrap", required=True)
    p_run.add_argument("--topic", required=True)
    p_run.add_argument("--work", required=True)
    p_run.add_argument("--scenarios", default="")
    p_run.add_argument("--rate", type=int, default=1000)
    p_run.add_argument("--connections", type=int, default=16)
    p_run.add_argument("--duration", type=int, default=0, help="per scenario (default: each scenario's own)")
    p_run.add_argument("--api-key", default="")
    p_run.add_argument("--p99-target-ms", type=float, default=100)
    p_run.add_argument("--rss-bound-mb", type=int, default=1024)
    p_legit = sub.add_parser("legit")
    p_legit.add_argument("--url", required=True)
    p_legit.add_argument("--rate", type=int, default=1000)
    p_legit.add_argument("--connections", type=int, default=16)
    p_legit.add_argument("--duration", type=float, default=20)
    p_legit.add_argument("--out", required=True)
    p_legit.add_argument("--ids", required=True)
    p_legit.add_argument("--run-id", required=True)
    p_legit.add_argument("--api-key", default="")
    p_attack = sub.add_parser("attack")
    p_attack.add_argument("scenario", choices=[name for name in SCENARIOS if name != "baseline"])
    p_attack.add_argument("--url", required=True)
    p_attack.add_argument("--duration", type=float, default=20)
    p_attack.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.command == "run":
        sys.exit(run(args))
    if args.command == "legit":
        asyncio.run(legit(args))
    else:
        asyncio.run(attack(args))


if __name__ == "__main__":
    main()
