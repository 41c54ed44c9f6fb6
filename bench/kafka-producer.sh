#!/usr/bin/env bash
# The Kafka producer benchmark: the Kafka module's producer (kafka-producer-bench) against `kcat -P`, on the same
# embedded cluster (embedded-kafka, 1 broker, 4 partitions per topic), with the same messages (200,000 x 1 KiB) and
# the same producer settings (the module's defaults: idempotent, linger.ms=5, batches up to 10,000 messages / 1 MB).
# Each round produces into a fresh topic; throughput is messages over the process's wall time (start, connect,
# produce, wait for every acknowledgement, exit), the same measure for both. Prints every round, the medians, and
# the ratio (target: the Swift producer reaches at least 80% of kcat), then the Swift producer's send-to-
# acknowledgement latency for messages sent one at a time (what the ingest's 202 waits for). Release build.
#
#   bench/kafka-producer.sh [--messages N] [--size BYTES] [--rounds N]
set -euo pipefail
cd "$(dirname "$0")/.."

MESSAGES=200000
SIZE=1024
ROUNDS=3
while [ $# -gt 0 ]; do
    case "$1" in
        --messages) MESSAGES="$2"; shift 2 ;;
        --size) SIZE="$2"; shift 2 ;;
        --rounds) ROUNDS="$2"; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
command -v kcat >/dev/null || { echo "kcat is required (apt-get install kcat)" >&2; exit 1; }

source bench/lib.sh
bench_build embedded-kafka kafka-producer-bench

WORK="$(mktemp -d)"
CLUSTER_PID=""
cleanup() {
    if [ -n "$CLUSTER_PID" ]; then kill "$CLUSTER_PID" 2>/dev/null || true; wait "$CLUSTER_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

TOPICS="latency:4"
for round in $(seq 1 "$ROUNDS"); do TOPICS="$TOPICS,swift-$round:4,kcat-$round:4"; done
"$BIN/embedded-kafka" --topics "$TOPICS" >"$WORK/cluster.out" 2>"$WORK/cluster.err" &
CLUSTER_PID=$!
for _ in $(seq 1 100); do
    grep -q '^KAFKA_BOOTSTRAP_SERVERS=' "$WORK/cluster.out" 2>/dev/null && break
    sleep 0.05
done
BOOTSTRAP="$(sed -n 's/^KAFKA_BOOTSTRAP_SERVERS=//p' "$WORK/cluster.out")"
[ -n "$BOOTSTRAP" ] || { echo "embedded-kafka did not start" >&2; cat "$WORK/cluster.err" >&2; exit 1; }

# The kcat input: one message per line, SIZE bytes each, distinct (a counter in front).
python3 - "$MESSAGES" "$SIZE" >"$WORK/messages.txt" <<'PY'
import sys
count, size = int(sys.argv[1]), int(sys.argv[2])
filler = "x" * size
out = sys.stdout
for i in range(count):
    prefix = str(i)
    out.write(prefix + filler[len(prefix):] + "\n")
PY

# The producer settings both clients use (KafkaProducer.defaultProperties, without statistics).
KCAT_PROPS=(-X enable.idempotence=true -X linger.ms=5 -X batch.num.messages=10000 -X batch.size=1000000
    -X queue.buffering.max.messages=100000 -X socket.nagle.disable=true)

now_ns() { date +%s%N; }
rate() { python3 -c "print(int($1 / ($2 / 1e9)))"; }
count_topic() {  # messages stored in a topic: the sum of its 4 partitions' end offsets (all start at 0)
    kcat -Q -b "$BOOTSTRAP" -t "$1:0:-1" -t "$1:1:-1" -t "$1:2:-1" -t "$1:3:-1" \
        | awk '{sum += $NF} END {print sum + 0}'
}

SWIFT_RATES=()
KCAT_RATES=()
for round in $(seq 1 "$ROUNDS"); do
    start=$(now_ns)
    "$BIN/kafka-producer-bench" --bootstrap "$BOOTSTRAP" --topic "swift-$round" --messages "$MESSAGES" --size "$SIZE" \
        >"$WORK/swift.out"
    swift_ns=$(( $(now_ns) - start ))

    start=$(now_ns)
    kcat -P -b "$BOOTSTRAP" -t "kcat-$round" "${KCAT_PROPS[@]}" -l "$WORK/messages.txt" 2>"$WORK/kcat.err"
    kcat_ns=$(( $(now_ns) - start ))

    swift_count=$(count_topic "swift-$round")
    kcat_count=$(count_topic "kcat-$round")
    if [ "$swift_count" != "$MESSAGES" ] || [ "$kcat_count" != "$MESSAGES" ]; then
        echo "round $round: stored swift=$swift_count kcat=$kcat_count, expected $MESSAGES each" >&2
        cat "$WORK/kcat.err" >&2
        exit 1
    fi
    SWIFT_RATES+=("$(rate "$MESSAGES" "$swift_ns")")
    KCAT_RATES+=("$(rate "$MESSAGES" "$kcat_ns")")
    echo "round $round: swift ${SWIFT_RATES[-1]} msg/s ($(sed 's/.*seconds=\([0-9.]*\).*/\1/' "$WORK/swift.out") s producing," \
        "process $(python3 -c "print(round($swift_ns/1e9,3))") s), kcat ${KCAT_RATES[-1]} msg/s" \
        "(process $(python3 -c "print(round($kcat_ns/1e9,3))") s)"
done

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
SWIFT_MEDIAN=$(median "${SWIFT_RATES[@]}")
KCAT_MEDIAN=$(median "${KCAT_RATES[@]}")
python3 - "$SWIFT_MEDIAN" "$KCAT_MEDIAN" "$SIZE" "$MESSAGES" <<'PY'
import sys
swift, kcat, size, messages = (int(v) for v in sys.argv[1:])
mib = lambda r: r * size / 1048576
print(f"messages={messages} size={size}")
print(f"swift_producer_messages_per_second={swift} ({mib(swift):.0f} MiB/s)")
print(f"kcat_messages_per_second={kcat} ({mib(kcat):.0f} MiB/s)")
print(f"ratio={swift / kcat:.2f} (target >= 0.80)")
PY
"$BIN/kafka-producer-bench" --bootstrap "$BOOTSTRAP" --topic latency --messages 100 --size "$SIZE" \
    --latency-samples 2000 | grep '^latency'
