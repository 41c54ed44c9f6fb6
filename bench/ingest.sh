#!/usr/bin/env bash
# The ingest benchmark: wrk posts 2 KiB receipts over 64 keep-alive connections to receipt-ingest, which writes them
# to embedded-kafka (librdkafka's mock cluster, another process), all on this machine. Prints requests/s, latency
# percentiles, CPU per request, and checks that every 202 was acknowledged by Kafka: the count of 202s must not exceed
# the ingest's delivered counter nor the number of messages on the topic (kcat). Release build.
# With --notifications it posts App Store Server Notifications instead (POST /v1/apple/notifications, Apple's
# {"signedPayload"} body: 64 different notifications signed by the fake App Store, about 13 KB each, answered 200
# once Kafka has them) to the notifications topic.
#
#   bench/ingest.sh [--notifications] [--duration SECONDS] [--connections N] [--threads N]
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=20
CONNECTIONS=64
WRK_THREADS=2
NOTIFICATIONS=""
while [ $# -gt 0 ]; do
    case "$1" in
        --duration) DURATION="$2"; shift 2 ;;
        --connections) CONNECTIONS="$2"; shift 2 ;;
        --threads) WRK_THREADS="$2"; shift 2 ;;
        --notifications) NOTIFICATIONS=1; shift ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
for tool in wrk kcat curl; do
    command -v "$tool" >/dev/null || { echo "$tool is not installed (make deps)" >&2; exit 1; }
done

source bench/lib.sh
if [ -n "$NOTIFICATIONS" ]; then
    bench_build embedded-kafka receipt-ingest fake-appstore
    TOPIC=iap.notifications.submitted
    SUCCESS_STATUS=200
    command -v python3 >/dev/null || { echo "python3 is not installed (make deps)" >&2; exit 1; }
else
    bench_build embedded-kafka receipt-ingest
    TOPIC=iap.receipts.submitted
    SUCCESS_STATUS=202
fi

bench_workspace

wait_for() {  # wait_for FILE PATTERN WHAT
    for _ in $(seq 1 200); do
        if grep -q "$2" "$1" 2>/dev/null; then return 0; fi
        sleep 0.05
    done
    echo "$3 did not start:" >&2
    cat "$1" >&2
    exit 1
}

LOG_LEVEL=warning "$BIN/embedded-kafka" --topics "$TOPIC:4" >"$WORK/kafka.out" 2>"$WORK/kafka.log" &
PIDS+=($!)
KAFKA_PID=$!
wait_for "$WORK/kafka.out" '^KAFKA_BOOTSTRAP_SERVERS=' embedded-kafka
BOOTSTRAP="$(grep -m1 '^KAFKA_BOOTSTRAP_SERVERS=' "$WORK/kafka.out" | cut -d= -f2-)"

KAFKA_BOOTSTRAP_SERVERS="$BOOTSTRAP" INGEST_LISTEN=127.0.0.1:0 LOG_LEVEL=info "$BIN/receipt-ingest" \
    2>"$WORK/ingest.log" &
PIDS+=($!)
INGEST_PID=$!
wait_for "$WORK/ingest.log" '"msg":"HTTP server listening"' receipt-ingest
PORT="$(grep -m1 '"msg":"HTTP server listening"' "$WORK/ingest.log" | sed 's/.*"port":\([0-9]*\).*/\1/')"
URL="http://127.0.0.1:$PORT"
for _ in $(seq 1 100); do
    if curl -sf "$URL/readyz" >/dev/null; then break; fi
    sleep 0.1
done
curl -sf "$URL/readyz" >/dev/null || { echo "receipt-ingest never became ready" >&2; cat "$WORK/ingest.log" >&2; exit 1; }

export BENCH_RECEIPT="$(head -c 1536 /dev/urandom | base64 -w0)"
if [ -n "$NOTIFICATIONS" ]; then
    "$BIN/fake-appstore" mint-pki --out "$WORK/pki" >/dev/null
    export BENCH_NOTIFICATIONS_FILE="$WORK/notifications.txt"
    python3 bench/capture-notifications.py "$BIN/fake-appstore" "$WORK/pki" 64 >"$BENCH_NOTIFICATIONS_FILE"
    BODY_DESCRIPTION="$(head -1 "$BENCH_NOTIFICATIONS_FILE" | wc -c)-byte signed notifications"
else
    BODY_DESCRIPTION="${#BENCH_RECEIPT}-byte receipts"
fi
RUN_ID="$(date +%s)"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)"
echo "receipt-ingest $URL -> embedded-kafka $BOOTSTRAP ($TOPIC, 4 partitions), acks=all"
echo "wrk: $WRK_THREADS threads, $CONNECTIONS keep-alive connections, ${DURATION}s, $BODY_DESCRIPTION"

# Warm-up (connections, producer batches, allocator), not measured.
BENCH_RUN_ID="$RUN_ID-warmup" wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d2s -s bench/ingest.lua "$URL" >"$WORK/warmup.txt"
WARM_ACCEPTED="$(grep "^status $SUCCESS_STATUS:" "$WORK/warmup.txt" | awk '{print $3}')"

TICKS=$(getconf CLK_TCK)
CPU_BEFORE=$(awk '{print $14 + $15}' "/proc/$INGEST_PID/stat")
KAFKA_CPU_BEFORE=$(awk '{print $14 + $15}' "/proc/$KAFKA_PID/stat")
python3 bench/thread-cpu.py snapshot "$INGEST_PID" >"$WORK/threads.before"
BENCH_RUN_ID="$RUN_ID-run" wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --timeout 10s -s bench/ingest.lua "$URL" \
    | tee "$WORK/wrk.txt"
CPU_AFTER=$(awk '{print $14 + $15}' "/proc/$INGEST_PID/stat")
KAFKA_CPU_AFTER=$(awk '{print $14 + $15}' "/proc/$KAFKA_PID/stat")
python3 bench/thread-cpu.py snapshot "$INGEST_PID" >"$WORK/threads.after"
ACCEPTED="$(grep "^status $SUCCESS_STATUS:" "$WORK/wrk.txt" | awk '{print $3}')"
OTHER="$(grep '^other statuses:' "$WORK/wrk.txt" | awk '{print $3}')"
TOTAL=$((ACCEPTED + OTHER))
if [ "$TOTAL" -gt 0 ]; then
    echo "receipt-ingest CPU: $(( (CPU_AFTER - CPU_BEFORE) * 1000000 / TICKS / TOTAL )) µs per request;" \
        "embedded-kafka CPU: $(( (KAFKA_CPU_AFTER - KAFKA_CPU_BEFORE) * 1000000 / TICKS / TOTAL )) µs per request"
    echo "receipt-ingest CPU by thread:"
    python3 bench/thread-cpu.py per-request "$WORK/threads.before" "$WORK/threads.after" "$TOTAL"
fi

# Every 202 (200 for a notification) must be in Kafka. The cluster is fresh and only this ingest writes to it, so the sum of the partitions'
# end offsets (read with kcat, an independent client) counts every message Kafka acknowledged. (The mock cluster keeps
# only the last ~5 MB per partition, so the messages themselves cannot be read back after a run this size.)
# Requests still in flight when wrk stops are delivered (and counted) without wrk seeing their 202, so both counts
# may exceed wrk's.
sleep 1
if [ -n "$NOTIFICATIONS" ]; then DELIVERED_METRIC='ingest_notifications_total{outcome="accepted"}'
else DELIVERED_METRIC='ingest_kafka_deliveries_total{result="delivered"}'; fi
DELIVERED="$(curl -sf "$URL/metrics" | grep -F "$DELIVERED_METRIC" | awk '{print $2}')"
EXPECTED=$((WARM_ACCEPTED + ACCEPTED))
QUERY=()
for partition in 0 1 2 3; do QUERY+=(-t "$TOPIC:$partition:-1"); done
ON_TOPIC="$(kcat -b "$BOOTSTRAP" -Q "${QUERY[@]}" | awk '{sum += $4} END {print sum + 0}')"
echo "${SUCCESS_STATUS}s seen by wrk (warm-up + run): $EXPECTED; delivered per the ingest: $DELIVERED;" \
    "messages on the topic (sum of end offsets): $ON_TOPIC"
if [ "$DELIVERED" -lt "$EXPECTED" ] || [ "$ON_TOPIC" -lt "$EXPECTED" ]; then
    echo "FAIL: more ${SUCCESS_STATUS}s than messages Kafka acknowledged" >&2
    exit 1
fi
echo "OK: every $SUCCESS_STATUS was acknowledged by Kafka"
