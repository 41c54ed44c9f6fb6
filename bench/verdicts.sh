#!/usr/bin/env bash
# The verdicts benchmark (issue 6): clients POST /v1/receipts?wait_ms=N and get the verdict in the same round trip.
# One receipt-ingest, one receipt-verifier, embedded-kafka (librdkafka's mock cluster) and the fake App Store at
# 100 ms latency, all on this machine. bench/verdicts-client.py sends at a fixed rate (open loop, default 1,000
# requests/s) over keep-alive connections and prints p50/p99 of the HTTP round trip, measured from when each request
# was due. Also prints CPU per request of each process. Release build.
#
#   bench/verdicts.sh [--rate N] [--duration SECONDS] [--wait-ms N] [--latency-ms N] [--partitions N]
set -euo pipefail
cd "$(dirname "$0")/.."

RATE=1000
DURATION=20
WAIT_MS=5000
LATENCY_MS=100
PARTITIONS=8
while [ $# -gt 0 ]; do
    case "$1" in
        --rate) RATE="$2"; shift 2 ;;
        --duration) DURATION="$2"; shift 2 ;;
        --wait-ms) WAIT_MS="$2"; shift 2 ;;
        --latency-ms) LATENCY_MS="$2"; shift 2 ;;
        --partitions) PARTITIONS="$2"; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
for tool in curl python3; do
    command -v "$tool" >/dev/null || { echo "$tool is not installed (make deps)" >&2; exit 1; }
done

source bench/lib.sh
bench_build embedded-kafka fake-appstore receipt-verifier receipt-ingest

bench_workspace

wait_ready() {  # url what log
    for _ in $(seq 1 300); do
        if curl -sf "$1/readyz" >/dev/null; then return 0; fi
        sleep 0.1
    done
    echo "$2 never became ready:" >&2
    tail -20 "$3" >&2
    exit 1
}

TOPICS=""
for kind in submitted results retry dlq; do TOPICS="$TOPICS${TOPICS:+,}iap.receipts.$kind:$PARTITIONS"; done
LOG_LEVEL=warning "$BIN/embedded-kafka" --topics "$TOPICS" >"$WORK/kafka.out" 2>"$WORK/kafka.log" &
PIDS+=($!)
KAFKA_PID=$!
"$BIN/fake-appstore" --port 0 --latency-ms "$LATENCY_MS" --threads 2 >"$WORK/fake.out" 2>"$WORK/fake.log" &
PIDS+=($!)
FAKE_PID=$!
BOOTSTRAP="$(wait_for_line "$WORK/kafka.out" KAFKA_BOOTSTRAP_SERVERS)" || { cat "$WORK/kafka.log" >&2; exit 1; }
FAKE_URL="$(wait_for_line "$WORK/fake.out" FAKE_APPSTORE_URL)" || { cat "$WORK/fake.log" >&2; exit 1; }

KAFKA_BOOTSTRAP_SERVERS="$BOOTSTRAP" VERIFIER_METRICS_LISTEN=127.0.0.1:0 \
    APPLE_VERIFY_RECEIPT_URL="$FAKE_URL/verifyReceipt" \
    APPLE_SANDBOX_VERIFY_RECEIPT_URL="$FAKE_URL/sandbox/verifyReceipt" \
    ALLOWED_BUNDLE_IDS=com.example.game LOG_LEVEL=info KAFKA_SESSION_TIMEOUT_MS=6000 \
    "$BIN/receipt-verifier" 2>"$WORK/verifier.log" &
PIDS+=($!)
VERIFIER_PID=$!
VERIFIER_PORT="$(listening_port "$WORK/verifier.log")" || { cat "$WORK/verifier.log" >&2; exit 1; }
wait_ready "http://127.0.0.1:$VERIFIER_PORT" receipt-verifier "$WORK/verifier.log"

KAFKA_BOOTSTRAP_SERVERS="$BOOTSTRAP" INGEST_LISTEN=127.0.0.1:0 LOG_LEVEL=info "$BIN/receipt-ingest" \
    2>"$WORK/ingest.log" &
PIDS+=($!)
INGEST_PID=$!
INGEST_PORT="$(listening_port "$WORK/ingest.log")" || { cat "$WORK/ingest.log" >&2; exit 1; }
wait_ready "http://127.0.0.1:$INGEST_PORT" receipt-ingest "$WORK/ingest.log"

# One valid fake receipt (the fake App Store answers status 0 with this transaction after LATENCY_MS).
SCENARIO='{"scenario":"valid","bundle_id":"com.example.game",'
SCENARIO+='"transactions":[{"id":"1000000000000001","product":"com.example.gems"}]}'
export BENCH_RECEIPT="$(printf '%s' "$SCENARIO" | base64 -w0)"

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)"
echo "receipt-ingest :$INGEST_PORT -> embedded-kafka ($PARTITIONS partitions per topic) -> receipt-verifier ->" \
    "fake App Store at ${LATENCY_MS} ms -> results -> receipt-ingest"
echo "client: ${RATE} requests/s for ${DURATION}s (after 3 s warm-up), POST /v1/receipts?wait_ms=$WAIT_MS"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICKS=$(getconf CLK_TCK)
# The CPU window includes the warm-up; per-request figures divide by every request sent.
declare -A BEFORE
for name in INGEST VERIFIER KAFKA FAKE; do
    pid_var="${name}_PID"
    BEFORE[$name]=$(cpu_ticks "${!pid_var}")
done
python3 bench/thread-cpu.py snapshot "$INGEST_PID" >"$WORK/ingest-threads.before"
python3 bench/thread-cpu.py snapshot "$VERIFIER_PID" >"$WORK/verifier-threads.before"
# VERDICTS_PERF_OUTPUT=file: also profile receipt-ingest with perf during the run.
if [ -n "${VERDICTS_PERF_OUTPUT:-}" ]; then
    perf record -F 499 -g -p "$INGEST_PID" -o "$VERDICTS_PERF_OUTPUT" >/dev/null 2>&1 &
    PERF_PID=$!
fi
RESULT="$(python3 bench/verdicts-client.py --port "$INGEST_PORT" --rate "$RATE" --duration "$DURATION" --warmup 3 \
    --wait-ms "$WAIT_MS" --prefix "bench-$(date +%s)")"
if [ -n "${PERF_PID:-}" ]; then kill -INT "$PERF_PID"; wait "$PERF_PID" || true; fi
echo "$RESULT" | tr ' ' '\n' | sed 's/^/  /'
SENT=$(awk -v r="$RATE" -v d="$DURATION" 'BEGIN {print int(r * (d + 3))}')
for name in INGEST VERIFIER KAFKA FAKE; do
    pid_var="${name}_PID"
    used=$(( $(cpu_ticks "${!pid_var}") - ${BEFORE[$name]} ))
    echo "  cpu_us_per_request_$(echo "$name" | tr 'A-Z' 'a-z')=$(( used * 1000000 / TICKS / SENT ))"
done
for name in ingest verifier; do
    pid_var="$(echo "$name" | tr 'a-z' 'A-Z')_PID"
    python3 bench/thread-cpu.py snapshot "${!pid_var}" >"$WORK/$name-threads.after"
    echo "  $name CPU by thread:"
    python3 bench/thread-cpu.py per-request "$WORK/$name-threads.before" "$WORK/$name-threads.after" "$SENT" \
        | sed 's/^/  /'
done
curl -sf "http://127.0.0.1:$INGEST_PORT/metrics" | grep -E '^ingest_result_(waits_total|index_entries|messages_total)' \
    | sed 's/^/  /'
if grep -q '"level":"error"' "$WORK/verifier.log" "$WORK/ingest.log"; then
    echo "errors logged:"; grep -h '"level":"error"' "$WORK/verifier.log" "$WORK/ingest.log" | head -5 | sed 's/^/  /'
fi
P99="$(echo "$RESULT" | tr ' ' '\n' | grep '^p99_ms=' | cut -d= -f2)"
if awk -v p="$P99" 'BEGIN {exit !(p < 300)}'; then
    echo "OK: p99 round trip ${P99} ms < 300 ms"
else
    echo "MISSED: p99 round trip ${P99} ms (target < 300 ms)"
fi
