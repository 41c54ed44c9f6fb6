#!/usr/bin/env bash
# The ingest benchmark: wrk posts 2 KiB receipts over 64 keep-alive connections to receipt-ingest, which writes them
# to embedded-kafka (librdkafka's mock cluster, another process), all on this machine. Prints requests/s, latency
# percentiles, CPU per request, and checks that every 202 was acknowledged by Kafka: the count of 202s must not exceed
# the ingest's delivered counter nor the number of messages on the topic (kcat). Release build.
# With --notifications it posts App Store Server Notifications instead (POST /v1/apple/notifications, Apple's
# {"signedPayload"} body: 64 different notifications signed by the fake App Store, about 13 KB each, answered 200
# once Kafka has them) to the notifications topic.
# The Python peer (issue 43): in the same run (receipts only), the same wrk load then goes to bench/ingest-peer.py
# (aiohttp + confluent-kafka, acks=all and idempotent, 202 only after the delivery report; one process, its own
# topic on the same embedded-kafka), measured and checked the same way (its 202s against its topic's end offsets),
# and the script prints ingest / peer: acked requests/s, p50 and p99, CPU µs per request. --rounds N alternates
# ingest and peer N times (each round warms up again) and ends with every round's ratios. --no-peer: the ingest alone.
#
#   bench/ingest.sh [--notifications] [--duration SECONDS] [--connections N] [--threads N] [--rounds N] [--no-peer]
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=20
CONNECTIONS=64
WRK_THREADS=2
NOTIFICATIONS=""
ROUNDS=1
PEER=1
while [ $# -gt 0 ]; do
    case "$1" in
        --duration) DURATION="$2"; shift 2 ;;
        --connections) CONNECTIONS="$2"; shift 2 ;;
        --threads) WRK_THREADS="$2"; shift 2 ;;
        --notifications) NOTIFICATIONS=1; shift ;;
        --rounds) ROUNDS="$2"; shift 2 ;;
        --no-peer) PEER=0; shift ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
for tool in wrk kcat curl; do
    command -v "$tool" >/dev/null || { echo "$tool is not installed (make deps)" >&2; exit 1; }
done

[ "$ROUNDS" -ge 1 ] 2>/dev/null || { echo "--rounds needs a whole number of at least 1" >&2; exit 2; }
if [ -n "$NOTIFICATIONS" ]; then PEER=0; fi
if [ "$PEER" -eq 1 ]; then
    python3 -c 'import confluent_kafka, aiohttp' 2>/dev/null || {
        echo "the peer (bench/ingest-peer.py) needs confluent-kafka and aiohttp: run scripts/install-deps.sh," \
            "or pass --no-peer" >&2
        exit 2
    }
fi

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
PEER_TOPIC=bench.peer.receipts.submitted

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

TOPICS="$TOPIC:4"
if [ "$PEER" -eq 1 ]; then TOPICS="$TOPICS,$PEER_TOPIC:4"; fi
LOG_LEVEL=warning "$BIN/embedded-kafka" --topics "$TOPICS" >"$WORK/kafka.out" 2>"$WORK/kafka.log" &
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

if [ "$PEER" -eq 1 ]; then
    # Started as the interpreter itself, so that $! is the peer's pid (its CPU is read from /proc).
    KAFKA_BOOTSTRAP_SERVERS="$BOOTSTRAP" INGEST_LISTEN=127.0.0.1:0 RECEIPTS_TOPIC="$PEER_TOPIC" \
        python3 bench/ingest-peer.py 2>"$WORK/peer.log" &
    PIDS+=($!)
    PEER_PID=$!
    wait_for "$WORK/peer.log" '"msg":"HTTP server listening"' "the peer (bench/ingest-peer.py)"
    PEER_URL="http://127.0.0.1:$(listening_port "$WORK/peer.log")"
    curl -sf "$PEER_URL/readyz" >/dev/null || { echo "the peer is not ready" >&2; cat "$WORK/peer.log" >&2; exit 1; }
fi

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
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)," \
    "load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "receipt-ingest $URL -> embedded-kafka $BOOTSTRAP ($TOPIC, 4 partitions), acks=all"
if [ "$PEER" -eq 1 ]; then
    echo "peer (bench/ingest-peer.py) $PEER_URL -> the same embedded-kafka ($PEER_TOPIC, 4 partitions), acks=all"
fi
echo "wrk: $WRK_THREADS threads, $CONNECTIONS keep-alive connections, ${DURATION}s, $BODY_DESCRIPTION"

TICKS=$(getconf CLK_TCK)

# end_offsets TOPIC: the sum of the topic's partitions' end offsets (kcat, an independent client): every message
# Kafka acknowledged on it.
end_offsets() {
    local query=() partition
    for partition in 0 1 2 3; do query+=(-t "$1:$partition:-1"); done
    kcat -b "$BOOTSTRAP" -Q "${query[@]}" | awk '{sum += $4} END {print sum + 0}'
}

# delivered_count: the ingest's own count of what Kafka acknowledged (its metrics).
delivered_count() {
    local metric='ingest_kafka_deliveries_total{result="delivered"}'
    if [ -n "$NOTIFICATIONS" ]; then metric='ingest_notifications_total{outcome="accepted"}'; fi
    curl -sf "$URL/metrics" | grep -F "$metric" | awk '{print $2}'
}

# machine_ticks: "busy all" clock ticks of every core since boot (/proc/stat; iowait counts as idle).
machine_ticks() {
    awk '/^cpu / {busy = $2 + $3 + $4 + $7 + $8 + $9; print busy, busy + $5 + $6}' /proc/stat
}

# measure NAME PID URL TOPIC ROUND: a 2 s warm-up, then the measured wrk run against URL; prints wrk's output, the
# CPU per request of the service (PID, all threads) and of embedded-kafka, the service's CPU by thread; checks that
# every success wrk saw is on TOPIC (and, for the ingest, in its delivered counter); writes
# "acked_per_second p50_ms p99_ms cpu_us_per_request" to $WORK/NAME-ROUND.figures.
measure() {
    local name="$1" pid="$2" url="$3" topic="$4" round="$5"
    local on_topic_before delivered_before=0
    on_topic_before="$(end_offsets "$topic")"
    if [ "$name" = receipt-ingest ]; then delivered_before="$(delivered_count)"; fi
    # Warm-up (connections, producer batches, allocator), not measured.
    BENCH_RUN_ID="$RUN_ID-$name-$round-warmup" wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d2s -s bench/ingest.lua "$url" \
        >"$WORK/warmup-$name-$round.txt"
    local warm_accepted cpu_before kafka_cpu_before cpu_after kafka_cpu_after
    warm_accepted="$(grep "^status $SUCCESS_STATUS:" "$WORK/warmup-$name-$round.txt" | awk '{print $3}')"
    cpu_before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    kafka_cpu_before=$(awk '{print $14 + $15}' "/proc/$KAFKA_PID/stat")
    python3 bench/thread-cpu.py snapshot "$pid" >"$WORK/threads.before"
    local machine_before machine_after
    machine_before="$(machine_ticks)"
    BENCH_RUN_ID="$RUN_ID-$name-$round" wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"${DURATION}s" --timeout 10s \
        -s bench/ingest.lua "$url" | tee "$WORK/wrk-$name-$round.txt"
    machine_after="$(machine_ticks)"
    cpu_after=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    kafka_cpu_after=$(awk '{print $14 + $15}' "/proc/$KAFKA_PID/stat")
    python3 bench/thread-cpu.py snapshot "$pid" >"$WORK/threads.after"
    local accepted other total cpu_us=0
    accepted="$(grep "^status $SUCCESS_STATUS:" "$WORK/wrk-$name-$round.txt" | awk '{print $3}')"
    other="$(grep '^other statuses:' "$WORK/wrk-$name-$round.txt" | awk '{print $3}')"
    total=$((accepted + other))
    if [ "$total" -gt 0 ]; then
        cpu_us=$(( (cpu_after - cpu_before) * 1000000 / TICKS / total ))
        echo "$name CPU: $cpu_us µs per request;" \
            "embedded-kafka CPU: $(( (kafka_cpu_after - kafka_cpu_before) * 1000000 / TICKS / total )) µs per request"
        echo "$name CPU by thread:"
        python3 bench/thread-cpu.py per-request "$WORK/threads.before" "$WORK/threads.after" "$total"
        # The whole machine over the run: how busy its cores were, and what went to everything else (wrk itself,
        # interrupts, other processes): on 2 cores the load generator shares the machine with the service.
        local busy_ticks all_ticks
        read -r busy_ticks all_ticks <<<"$(paste -d' ' <(echo "$machine_before") <(echo "$machine_after") |
            awk '{print $3 - $1, $4 - $2}')"
        echo "machine: $(( busy_ticks * 100 / all_ticks ))% of its $(nproc) cores busy;" \
            "everything but $name and embedded-kafka (wrk, the kernel's interrupts, others):" \
            "$(( (busy_ticks - (cpu_after - cpu_before) - (kafka_cpu_after - kafka_cpu_before)) * 1000000 / TICKS / total ))" \
            "µs per request"
    fi

    # Every 202 (200 for a notification) must be in Kafka. Only this service writes to its topic, so the growth of
    # the sum of the partitions' end offsets counts every message Kafka acknowledged for it. (The mock cluster keeps
    # only the last ~5 MB per partition, so the messages themselves cannot be read back after a run this size.)
    # Requests still in flight when wrk stops are delivered (and counted) without wrk seeing their 202, so both
    # counts may exceed wrk's.
    sleep 1
    local expected=$((warm_accepted + accepted)) on_topic delivered=""
    on_topic=$(($(end_offsets "$topic") - on_topic_before))
    if [ "$name" = receipt-ingest ]; then
        delivered=$(($(delivered_count) - delivered_before))
        echo "${SUCCESS_STATUS}s seen by wrk (warm-up + run): $expected; delivered per the ingest: $delivered;" \
            "messages on the topic (growth of the sum of end offsets): $on_topic"
    else
        echo "${SUCCESS_STATUS}s seen by wrk (warm-up + run): $expected;" \
            "messages on the topic (growth of the sum of end offsets): $on_topic"
    fi
    if { [ -n "$delivered" ] && [ "$delivered" -lt "$expected" ]; } || [ "$on_topic" -lt "$expected" ]; then
        echo "FAIL: $name answered more ${SUCCESS_STATUS}s than messages Kafka acknowledged" >&2
        exit 1
    fi
    echo "OK: every $SUCCESS_STATUS of $name was acknowledged by Kafka"
    python3 - "$WORK/wrk-$name-$round.txt" "$accepted" "$cpu_us" >"$WORK/$name-$round.figures" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
number, unit = re.search(r"requests in ([0-9.]+)(us|ms|s|m|h),", text).groups()
seconds = float(number) * {"us": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}[unit]
p50, p99 = re.search(r"^p50 ([0-9.]+) ms, p90 [0-9.]+ ms, p99 ([0-9.]+) ms", text, re.M).groups()
print(int(sys.argv[2]) / seconds, p50, p99, sys.argv[3])
PY
}

# ratio_line ROUND: ingest / peer of one round, printed and kept in $WORK/ratios.
ratio_line() {
    read -r rate p50 p99 cpu <"$WORK/receipt-ingest-$1.figures"
    read -r peer_rate peer_p50 peer_p99 peer_cpu <"$WORK/peer-$1.figures"
    python3 -c "
r, p50, p99, cpu, pr, pp50, pp99, pcpu = $rate, $p50, $p99, $cpu, $peer_rate, $peer_p50, $peer_p99, $peer_cpu
ratio = lambda a, b: f'{a / b:.2f}' if b > 0 else 'n/a'
print(f'  round $1: ingest / peer acked requests/s {r:,.0f} / {pr:,.0f} = {ratio(r, pr)}×; '
      f'p50 {p50:.2f} / {pp50:.2f} ms; p99 {p99:.2f} / {pp99:.2f} ms = {ratio(p99, pp99)}; '
      f'CPU µs per request {cpu:.0f} / {pcpu:.0f} = {ratio(cpu, pcpu)}')
" | tee -a "$WORK/ratios"
}

for ((round = 1; round <= ROUNDS; round++)); do
    if [ "$ROUNDS" -gt 1 ]; then echo; echo "== round $round of $ROUNDS"; fi
    if [ "$PEER" -eq 1 ]; then echo; echo "-- receipt-ingest"; fi
    measure receipt-ingest "$INGEST_PID" "$URL" "$TOPIC" "$round"
    if [ "$PEER" -eq 1 ]; then
        echo
        echo "-- peer (bench/ingest-peer.py)"
        measure peer "$PEER_PID" "$PEER_URL" "$PEER_TOPIC" "$round"
        echo
        ratio_line "$round"
    fi
done
if [ "$PEER" -eq 1 ] && [ "$ROUNDS" -gt 1 ]; then
    echo
    echo "== ingest / peer, every round"
    cat "$WORK/ratios"
fi
