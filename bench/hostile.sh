#!/usr/bin/env bash
# Hostile clients against receipt-ingest while a legitimate client keeps posting (issue 13, item 4). Starts
# embedded-kafka and receipt-ingest (release build, default settings), then bench/hostile.py runs each scenario in
# turn: slowloris, slow bodies, header floods, 10,000 idle keep-alive connections, endless chunked bodies, pipelined
# garbage, junk and oversized notifications. For each: the legitimate client's throughput and latency percentiles
# (1,000 POST /v1/receipts per second, measured from when each request was due), the ingest's peak RSS, open
# descriptors and threads (/proc), connections accepted, refused and timed out (/metrics), 503 server_busy answers;
# at the end every submission answered 202 is looked up on the topic with kcat. Exits 1 when a target is missed:
# legitimate p99 over 100 ms, a legitimate request not answered 202, RSS over the stated bound, a 202 not on the topic.
#
#   bench/hostile.sh [--scenarios baseline,slowloris,...] [--rate N] [--duration SECONDS-PER-SCENARIO]
#                    [--rss-bound-mb N]
#   HOSTILE_BIN=DIR bench/hostile.sh ...   (use receipt-ingest and embedded-kafka from DIR instead of building)
#
# The attackers need about 10,500 sockets: the soft `ulimit -n` is raised to the hard limit (at least 12,000 needed).
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in kcat curl python3; do
    command -v "$tool" >/dev/null || { echo "$tool is not installed (make deps)" >&2; exit 1; }
done

source bench/lib.sh
if [ -n "${HOSTILE_BIN:-}" ]; then
    BIN="$HOSTILE_BIN"
else
    bench_build embedded-kafka receipt-ingest
fi
TOPIC=iap.receipts.submitted
bench_workspace

HARD="$(ulimit -Hn)"
if [ "$HARD" != unlimited ] && [ "$HARD" -lt 12000 ]; then
    echo "the hard open-file limit is $HARD; the idle scenario needs about 10,500 sockets per process:" \
        "raise it (e.g. ulimit -Hn 65536 as root)" >&2
    exit 1
fi
ulimit -n "$HARD"

LOG_LEVEL=warning "$BIN/embedded-kafka" --topics "$TOPIC:4" >"$WORK/kafka.out" 2>"$WORK/kafka.log" &
PIDS+=($!)
BOOTSTRAP="$(wait_for_line "$WORK/kafka.out" KAFKA_BOOTSTRAP_SERVERS)" || {
    echo "embedded-kafka did not start:" >&2; cat "$WORK/kafka.log" >&2; exit 1; }

# Default limits (INGEST_MAX_CONNECTIONS, _PER_IP, timeouts, header and body limits): what is measured is what a
# deployment gets out of the box.
KAFKA_BOOTSTRAP_SERVERS="$BOOTSTRAP" INGEST_LISTEN=127.0.0.1:0 RESULT_INDEX_REPLAY_SECONDS=0 LOG_LEVEL=info \
    "$BIN/receipt-ingest" 2>"$WORK/ingest.log" &
PIDS+=($!)
INGEST_PID=$!
PORT="$(listening_port "$WORK/ingest.log")" || {
    echo "receipt-ingest did not start:" >&2; cat "$WORK/ingest.log" >&2; exit 1; }
URL="http://127.0.0.1:$PORT"
for _ in $(seq 1 100); do
    if curl -sf "$URL/readyz" >/dev/null; then break; fi
    sleep 0.1
done
curl -sf "$URL/readyz" >/dev/null || { echo "receipt-ingest never became ready" >&2; cat "$WORK/ingest.log" >&2; exit 1; }

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)," \
    "load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "receipt-ingest $URL (pid $INGEST_PID, $BIN) -> embedded-kafka $BOOTSTRAP ($TOPIC, 4 partitions)"
echo "open-file limits: this shell $(ulimit -n) (hard $HARD); receipt-ingest" \
    "$(awk '/Max open files/ {print $4 " (hard " $5 ")"}' "/proc/$INGEST_PID/limits")"
# The memory bound the attacks can reach (docs/OPERATIONS.md, "Hostile clients"): the RSS at start, plus ~24 KiB per
# connection (libmicrohttpd's 16 KiB block and per-connection state, with margin), plus the buffered-bodies bound.
# The producer queue and the result index are not filled here (Kafka keeps up, no verifier writes results).
START_RSS_KB="$(awk '/VmRSS/ {print $2}' "/proc/$INGEST_PID/status")"
BOUND_MB="$(grep -m1 '"msg":"receipt-ingest started"' "$WORK/ingest.log" | START_RSS_KB="$START_RSS_KB" python3 -c '
import json, os, sys
line = json.loads(sys.stdin.read())
keys = ["max_connections", "max_connections_per_ip", "header_timeout_seconds", "body_timeout_seconds",
        "idle_timeout_seconds", "max_header_bytes", "max_body_bytes", "max_buffered_bytes"]
print("ingest limits: " + ", ".join("%s=%s" % (key, line.get(key, "n/a")) for key in keys), file=sys.stderr)
connections = line.get("max_connections", 10000)
buffered = line.get("max_buffered_bytes", 64 << 20)
print(int(int(os.environ["START_RSS_KB"]) / 1024 + connections * 24 / 1024 + buffered / 2**20))')"
echo "RSS bound checked: start RSS $((START_RSS_KB / 1024)) MB + max_connections x 24 KiB + max_buffered_bytes =" \
    "$BOUND_MB MB"

status=0
python3 bench/hostile.py run --url "$URL" --pid "$INGEST_PID" --bootstrap "$BOOTSTRAP" --topic "$TOPIC" \
    --work "$WORK" --rss-bound-mb "$BOUND_MB" "$@" || status=$?
echo "ingest log: $(wc -l <"$WORK/ingest.log") lines, $(wc -c <"$WORK/ingest.log") bytes over the run"
if ! kill -0 "$INGEST_PID" 2>/dev/null; then echo "FAIL: receipt-ingest exited" >&2; status=1; fi
exit "$status"
