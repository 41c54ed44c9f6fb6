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
# The Python peer (issue 43): after the verifier's paced and backlog runs, verifier-bench runs the same run again with
# bench/verifier-peer.py (confluent-kafka + asyncio + aiohttp, the same settings from the environment, the same fake
# App Store and the same receipt submissions, its own fresh topics and group) in place of the verifier, and the
# script prints verifier / peer for results/s and CPU µs per result. --rounds N repeats each verifier-then-peer pair N
# times (alternating, fresh topics each time) and ends with every round's ratios. --no-peer: the verifier alone. The
# peer verifies receipts only: with --proof signed-transaction it is not run.
#
#   bench/verifier.sh [--count N] [--rate N] [--in-flight N] [--latency-ms N] [--partitions N] [--brokers N]
#                     [--linger-ms N] [--only paced|backlog|notifications] [--proof receipt|signed-transaction]
#                     [--distinct N] [--backlog-count N] [--notification-count N] [--notification-partitions N]
#                     [--rounds N] [--no-peer]
#
# --brokers: mock brokers (default 1); --linger-ms: the submission producer's linger.ms (default 5, the Kafka module's).
# --proof signed-transaction: StoreKit 2 submissions instead of receipts. The script mints a PKI and an API key
# (fake-appstore mint-pki), the fake signs --distinct (default 1024) transactions with it, and the verifier checks each
# submission's signature locally and confirms it with the fake's Get Transaction Info (SIGNED_TRANSACTION_CONFIRM
# =always, APPLE_SERVER_API_MAX_RPS high enough never to pace: the bench measures the verifier, not Apple's limit).
# Its backlog run produces at most 8,000 submissions (--backlog-count): a signed transaction is ~5 KB and the mock
# cluster keeps only ~6 MB per partition, so a larger backlog loses its oldest submissions before the verifier reads
# them (a real broker keeps them).
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
PROOF=receipt
DISTINCT=1024
BACKLOG_COUNT=""
ROUNDS=1
PEER=1
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
        --proof) PROOF="$2"; shift 2 ;;
        --distinct) DISTINCT="$2"; shift 2 ;;
        --backlog-count) BACKLOG_COUNT="$2"; shift 2 ;;
        --rounds) ROUNDS="$2"; shift 2 ;;
        --no-peer) PEER=0; shift ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done

[ "$ROUNDS" -ge 1 ] 2>/dev/null || { echo "--rounds needs a whole number of at least 1" >&2; exit 2; }
if [ "$PROOF" != receipt ]; then PEER=0; fi
if [ "$PEER" -eq 1 ]; then
    python3 -c 'import confluent_kafka, aiohttp' 2>/dev/null || {
        echo "the peer (bench/verifier-peer.py) needs confluent-kafka and aiohttp: run scripts/install-deps.sh," \
            "or pass --no-peer" >&2
        exit 2
    }
fi

source bench/lib.sh
bench_build embedded-kafka fake-appstore receipt-verifier verifier-bench

bench_workspace

# Topic prefixes: bench-<run>-<round> for the verifier, bench-<run>-peer-<round> for the peer, bench-notifications.
PREFIXES="bench-notifications"
for run in paced backlog; do
    for ((round = 1; round <= ROUNDS; round++)); do
        PREFIXES="$PREFIXES bench-$run-$round"
        if [ "$PEER" -eq 1 ]; then PREFIXES="$PREFIXES bench-$run-peer-$round"; fi
    done
done
TOPICS=""
for prefix in $PREFIXES; do
    for kind in submitted results retry dlq notifications events; do
        partitions="$PARTITIONS"
        if [ "$prefix" = bench-notifications ] && [ "$kind" = notifications ]; then
            partitions="$NOTIFICATION_PARTITIONS"
        fi
        TOPICS="$TOPICS${TOPICS:+,}$prefix.$kind:$partitions"
    done
done
"$BIN/embedded-kafka" --brokers "$BROKERS" --topics "$TOPICS" >"$WORK/kafka.out" 2>"$WORK/kafka.log" &
PIDS+=($!)
FAKE_PKI_ARGS=()
BENCH_PROOF_ARGS=()
case "$PROOF" in
    receipt) ;;
    signed-transaction)
        "$BIN/fake-appstore" mint-pki --out "$WORK/pki" >"$WORK/mint-pki.out"
        read -r -a FAKE_PKI_ARGS <<<"$(grep '^FAKE_APPSTORE_ARGS=' "$WORK/mint-pki.out" | cut -d= -f2-)"
        while IFS='=' read -r name value; do export "$name=$value"; done <"$WORK/pki/settings.env"
        export SIGNED_TRANSACTION_CONFIRM=always APPLE_SERVER_API_MAX_RPS=1000000
        ;;
    *) echo "--proof is receipt or signed-transaction" >&2; exit 2 ;;
esac
"$BIN/fake-appstore" --port 0 --latency-ms "$LATENCY_MS" --threads 2 "${FAKE_PKI_ARGS[@]}" \
    >"$WORK/fake.out" 2>"$WORK/fake.log" &
PIDS+=($!)
BOOTSTRAP="$(wait_for_line "$WORK/kafka.out" KAFKA_BOOTSTRAP_SERVERS 180)" || { cat "$WORK/kafka.log" >&2; exit 1; }
FAKE_URL="$(wait_for_line "$WORK/fake.out" FAKE_APPSTORE_URL)" || { cat "$WORK/fake.log" >&2; exit 1; }
if [ "$PROOF" = signed-transaction ]; then
    # What devices hold: signed transactions of DISTINCT purchases (the fake knows every numeric id).
    for ((i = 0; i < DISTINCT; i++)); do
        curl -fsS "$FAKE_URL/admin/signed-transaction?id=$((3000000000000000 + i))" \
            | sed -n 's/.*"signed_transaction":"\([^"]*\)".*/\1/p'
        echo  # the answer has no final newline: one JWS per line
    done >"$WORK/signed-transactions.txt"
    BENCH_PROOF_ARGS=(--signed-transactions "$WORK/signed-transactions.txt")
fi

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)"
echo "embedded-kafka $BOOTSTRAP ($BROKERS brokers, $PARTITIONS partitions per topic), fake App Store $FAKE_URL at ${LATENCY_MS} ms," \
    "VERIFIER_MAX_IN_FLIGHT=$IN_FLIGHT, $COUNT submissions per run, producer linger.ms=$LINGER_MS, proof $PROOF"
if [ "$PROOF" = signed-transaction ]; then
    echo "signed transactions: $DISTINCT distinct purchases, verified locally and confirmed with Get Transaction Info" \
        "(SIGNED_TRANSACTION_CONFIRM=always, APPLE_SERVER_API_MAX_RPS=$APPLE_SERVER_API_MAX_RPS)"
fi
# submissions_run NAME PREFIX PROGRAM COUNT RATE: one verifier-bench run of PROGRAM (the verifier or the peer) on the
# topics PREFIX.*; prints its figures one per line (the peer's verifier_* keys as peer_*) and keeps its line in
# $WORK/PREFIX.figures.
submissions_run() {
    local name="$1" prefix="$2" program="$3" count="$4" rate="$5"
    echo "  $name:"
    "$BIN/verifier-bench" --bootstrap "$BOOTSTRAP" --fake-url "$FAKE_URL" --verifier "$program" \
        --topic-prefix "$prefix" --count "$count" --rate "$rate" --in-flight "$IN_FLIGHT" \
        --linger-ms "$LINGER_MS" --verifier-log "$WORK/$prefix.log" "${BENCH_PROOF_ARGS[@]}" \
        >"$WORK/$prefix.figures" || status=1
    if [ "$program" = "$PEER_PROGRAM" ]; then sed -i 's/\bverifier_/peer_/g' "$WORK/$prefix.figures"; fi
    tr ' ' '\n' <"$WORK/$prefix.figures" | sed 's/^/    /'
    if grep -q '"level":"error"' "$WORK/$prefix.log"; then
        echo "    $name errors:"; grep '"level":"error"' "$WORK/$prefix.log" | head -5 | sed 's/^/      /'
    fi
}

# ratio_line RUN ROUND: verifier / peer of one round's two runs (results/s, CPU per result), printed and kept in
# $WORK/ratios for the summary.
ratio_line() {
    python3 - "$WORK/bench-$1-$2.figures" "$WORK/bench-$1-peer-$2.figures" "$1" "$2" <<'PY' | tee -a "$WORK/ratios"
import sys
def figures(path):
    with open(path) as f:
        return dict(field.split("=", 1) for field in f.read().split() if "=" in field)
service, peer = figures(sys.argv[1]), figures(sys.argv[2])
def number(values, key):
    try:
        return float(values[key])
    except (KeyError, ValueError):
        return None
rate, peer_rate = number(service, "results_per_second"), number(peer, "results_per_second")
cpu, peer_cpu = number(service, "verifier_cpu_us_per_result"), number(peer, "peer_cpu_us_per_result")
def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "n/a"
complete = service.get("complete") == "true" and peer.get("complete") == "true"
print(f"  {sys.argv[3]} round {sys.argv[4]}: verifier / peer results/s {rate or 0:,.0f} / {peer_rate or 0:,.0f} = "
      f"{ratio(rate, peer_rate)}×; CPU µs per result {cpu or 0:,.0f} / {peer_cpu or 0:,.0f} = {ratio(cpu, peer_cpu)}"
      + ("" if complete else " (a run did not complete: not a figure)"))
PY
}

PEER_PROGRAM="$PWD/bench/verifier-peer.py"
status=0
for run in paced backlog notifications; do
    if [ -n "$ONLY" ] && [ "$ONLY" != "$run" ]; then continue; fi
    rate=0
    count="$COUNT"
    if [ "$run" = paced ]; then rate="$RATE"; fi
    if [ "$run" = backlog ]; then
        if [ -n "$BACKLOG_COUNT" ]; then count="$BACKLOG_COUNT"
        elif [ "$PROOF" = signed-transaction ] && [ "$COUNT" -gt 8000 ]; then count=8000; fi
    fi
    if [ "$run" = notifications ]; then
        echo "== $run"
        "$BIN/verifier-bench" --mode notifications --bootstrap "$BOOTSTRAP" --verifier "$BIN/receipt-verifier" \
            --topic-prefix "bench-$run" --count "$NOTIFICATION_COUNT" --in-flight "$IN_FLIGHT" \
            --linger-ms "$LINGER_MS" --verifier-log "$WORK/verifier-$run.log" | tr ' ' '\n' | sed 's/^/  /' || status=1
        if grep -q '"level":"error"' "$WORK/verifier-$run.log"; then
            echo "  verifier errors:"; grep '"level":"error"' "$WORK/verifier-$run.log" | head -5 | sed 's/^/    /'
        fi
        continue
    fi
    for ((round = 1; round <= ROUNDS; round++)); do
        if [ "$ROUNDS" -gt 1 ]; then echo "== $run, round $round of $ROUNDS"; else echo "== $run"; fi
        submissions_run receipt-verifier "bench-$run-$round" "$BIN/receipt-verifier" "$count" "$rate"
        if [ "$PEER" -eq 1 ]; then
            submissions_run "peer (bench/verifier-peer.py)" "bench-$run-peer-$round" "$PEER_PROGRAM" "$count" "$rate"
            ratio_line "$run" "$round"
        fi
    done
done
if [ "$PEER" -eq 1 ] && [ "$ROUNDS" -gt 1 ] && [ -s "$WORK/ratios" ]; then
    echo "== verifier / peer, every round"
    cat "$WORK/ratios"
fi
exit $status
