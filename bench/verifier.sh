#!/usr/bin/env bash
# The verifier benchmark: one receipt-verifier (VERIFIER_MAX_IN_FLIGHT=512) against embedded-kafka (librdkafka's
# mock cluster, another process) and the fake App Store at 100 ms latency, all on this machine. verifier-bench feeds
# 100,000 submissions into the topic and follows the results topic. Two runs, each with fresh topics and a fresh
# verifier: "paced" (submissions produced at --rate per second: latency under a steady load) and "backlog" (all
# produced as fast as Kafka takes them: the verifier's top throughput; latency there is mostly queueing).
# Prints results/s, p50/p99 submission-to-result latency, verifier CPU µs per result and peak RSS. Release build.
# A third run, "notifications", preloads --notification-count signed App Store Server Notifications (DID_RENEW: a
# signed payload holding a signed transaction and a signed renewal info, three distinct JWS to verify each) into
# the notifications topic, then starts a fresh verifier and measures how fast it drains them into purchase events
# (events/s from the first event to the last, verifier CPU µs per event, peak RSS).
#
#   bench/verifier.sh [--count N] [--rate N] [--in-flight N] [--latency-ms N] [--partitions N] [--brokers N]
#                     [--linger-ms N] [--notification-count N] [--notification-partitions N]
#                     [--only paced|backlog|notifications]
#
# --brokers: mock brokers (default 1); --linger-ms: the submission producer's linger.ms (default 5, the Kafka module's).
set -euo pipefail
cd "$(dirname "$0")/.."

COUNT=100000
RATE=3500
IN_FLIGHT="${VERIFIER_MAX_IN_FLIGHT:-512}"
LATENCY_MS=100
PARTITIONS=8
BROKERS=1
LINGER_MS=5
NOTIFICATION_COUNT=20000
# The mock cluster keeps about 5 MB per partition (~340 notifications of ~15 KB): enough partitions for the preload.
NOTIFICATION_PARTITIONS=64
ONLY=""
while [ $# -gt 0 ]; do
    case "$1" in
        --count) COUNT="$2"; shift 2 ;;
        --rate) RATE="$2"; shift 2 ;;
        --in-flight) IN_FLIGHT="$2"; shift 2 ;;
        --latency-ms) LATENCY_MS="$2"; shift 2 ;;
        --partitions) PARTITIONS="$2"; shift 2 ;;
        --brokers) BROKERS="$2"; shift 2 ;;
        --linger-ms) LINGER_MS="$2"; shift 2 ;;
        --notification-count) NOTIFICATION_COUNT="$2"; shift 2 ;;
        --notification-partitions) NOTIFICATION_PARTITIONS="$2"; shift 2 ;;
        --only) ONLY="$2"; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done

source bench/lib.sh
bench_build embedded-kafka fake-appstore receipt-verifier verifier-bench

bench_workspace


TOPICS=""
for run in paced backlog notifications; do
    for kind in submitted results retry dlq notifications events; do
        partitions="$PARTITIONS"
        if [ "$run" = notifications ] && [ "$kind" = notifications ]; then partitions="$NOTIFICATION_PARTITIONS"; fi
        TOPICS="$TOPICS${TOPICS:+,}bench-$run.$kind:$partitions"
    done
done
"$BIN/embedded-kafka" --brokers "$BROKERS" --topics "$TOPICS" >"$WORK/kafka.out" 2>"$WORK/kafka.log" &
PIDS+=($!)
"$BIN/fake-appstore" --port 0 --latency-ms "$LATENCY_MS" --threads 2 >"$WORK/fake.out" 2>"$WORK/fake.log" &
PIDS+=($!)
BOOTSTRAP="$(wait_for_line "$WORK/kafka.out" KAFKA_BOOTSTRAP_SERVERS)" || { cat "$WORK/kafka.log" >&2; exit 1; }
FAKE_URL="$(wait_for_line "$WORK/fake.out" FAKE_APPSTORE_URL)" || { cat "$WORK/fake.log" >&2; exit 1; }

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)"
echo "embedded-kafka $BOOTSTRAP ($BROKERS brokers, $PARTITIONS partitions per topic), fake App Store $FAKE_URL at ${LATENCY_MS} ms," \
    "VERIFIER_MAX_IN_FLIGHT=$IN_FLIGHT, $COUNT submissions per run, producer linger.ms=$LINGER_MS"
status=0
for run in paced backlog notifications; do
    if [ -n "$ONLY" ] && [ "$ONLY" != "$run" ]; then continue; fi
    rate=0
    if [ "$run" = paced ]; then rate="$RATE"; fi
    echo "== $run"
    if [ "$run" = notifications ]; then
        "$BIN/verifier-bench" --mode notifications --bootstrap "$BOOTSTRAP" --verifier "$BIN/receipt-verifier" \
            --topic-prefix "bench-$run" --count "$NOTIFICATION_COUNT" --in-flight "$IN_FLIGHT" \
            --linger-ms "$LINGER_MS" --verifier-log "$WORK/verifier-$run.log" | tr ' ' '\n' | sed 's/^/  /' || status=1
    else
        "$BIN/verifier-bench" --bootstrap "$BOOTSTRAP" --fake-url "$FAKE_URL" --verifier "$BIN/receipt-verifier" \
            --topic-prefix "bench-$run" --count "$COUNT" --rate "$rate" --in-flight "$IN_FLIGHT" \
            --linger-ms "$LINGER_MS" --verifier-log "$WORK/verifier-$run.log" | tr ' ' '\n' | sed 's/^/  /' \
            || status=1
    fi
    if grep -q '"level":"error"' "$WORK/verifier-$run.log"; then
        echo "  verifier errors:"; grep '"level":"error"' "$WORK/verifier-$run.log" | head -5 | sed 's/^/    /'
    fi
done
exit $status
