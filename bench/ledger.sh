#!/usr/bin/env bash
# The ledger benchmark: one receipt-ledger (release build) over a throwaway PostgreSQL (fsync off, as a benchmark of
# the ledger rather than of the disk; same machine) and embedded-kafka (another process). Results are produced onto
# RESULTS_TOPIC with kcat, each crediting 10 gems of a distinct purchase to one of 1,000 users. Three runs, each on a
# fresh topic and a fresh database:
#   "backlog, batched"          --count results preloaded, then a fresh ledger (LEDGER_BATCH_SIZE=--batch) drains
#                               them: applied/s from its first commit to its last.
#   "backlog, one per transaction"  the same with LEDGER_BATCH_SIZE=1 (--single-count results): the gain of batching.
#   "paced"                     a running ledger, results produced at --rate per second for --seconds: p50/p99 of
#                               produce-to-commit latency (ledger_apply_latency_seconds, interpolated in its buckets).
# Every run checks the balances exactly (sum of all gems = 10 × results). Prints the figures and the machine.
# Topics have 8 partitions: the mock cluster keeps only ~6 MB per partition and drops a larger backlog's oldest
# messages (a result here is ~700 bytes), which would read as missing credits.
#
#   bench/ledger.sh [--count N] [--single-count N] [--batch N] [--rate N] [--seconds N]
set -euo pipefail
cd "$(dirname "$0")/.."

COUNT=30000
SINGLE_COUNT=6000
BATCH=500
RATE=3000
SECONDS_PACED=20
while [ $# -gt 0 ]; do
    case "$1" in
        --count) COUNT="$2"; shift 2 ;;
        --single-count) SINGLE_COUNT="$2"; shift 2 ;;
        --batch) BATCH="$2"; shift 2 ;;
        --rate) RATE="$2"; shift 2 ;;
        --seconds) SECONDS_PACED="$2"; shift 2 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done

swift build -c release --product receipt-ledger >/dev/null
swift build -c release --product embedded-kafka >/dev/null
bin_dir="$(swift build -c release --show-bin-path)"
work="$(mktemp -d /tmp/ledger-bench.XXXXXX)"
pids=()
cleanup() {
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[$i]}" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"

# PostgreSQL, root-safe (the server refuses root: as root it runs as the `postgres` system user).
pg_bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"
pg_port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
mkdir -p "$work/pg"
as_postgres=()
if [ "$(id -u)" -eq 0 ]; then
    chown postgres:postgres "$work/pg"
    chmod 755 "$work"
    as_postgres=(setpriv --reuid=postgres --regid=postgres --init-groups --)
fi
"${as_postgres[@]}" "$pg_bin/initdb" -D "$work/pg/data" -U postgres --auth=trust -E UTF8 --no-sync >/dev/null
"${as_postgres[@]}" "$pg_bin/postgres" -D "$work/pg/data" -p "$pg_port" -k "$work/pg" -c listen_addresses=127.0.0.1 \
    -c fsync=off -c synchronous_commit=off -c full_page_writes=off 2>"$work/postgres.log" &
pids+=($!)
for _ in $(seq 1 100); do "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$pg_port" && break; sleep 0.1; done
psql_base=(psql -X -q -t -A -h 127.0.0.1 -p "$pg_port" -U postgres)

"$bin_dir/embedded-kafka" --brokers 1 --topics "r-batched:8,r-single:8,r-paced:8,iap.purchase.events:4" \
    >"$work/kafka.out" 2>"$work/kafka.log" &
pids+=($!)
for _ in $(seq 1 100); do grep -q '^KAFKA_BOOTSTRAP_SERVERS=' "$work/kafka.out" && break; sleep 0.1; done
bootstrap="$(grep -m1 '^KAFKA_BOOTSTRAP_SERVERS=' "$work/kafka.out" | cut -d= -f2-)"

# generate TAG N: N results as "key<TAB>json" lines, one distinct purchase each.
generate() {
    python3 - "$1" "$2" <<'PY'
import json, sys
tag, count = sys.argv[1], int(sys.argv[2])
for i in range(count):
    user = f"user-{i % 1000}"
    key = f"bench-{tag}-{i}"
    result = {"schema_version": 1, "submission_id": f"s-{key}", "user_id": user, "client_id": None, "order_id": None,
              "outcome": "verified", "reason": None, "source": "signed_transaction", "environment": "Production",
              "bundle_id": "com.example.game", "submission_fingerprint": "00", "attempts": 1, "verified_at_ms": 0,
              "transactions": [{"transaction_id": key, "original_transaction_id": key, "product_id": "gems_10",
                                "quantity": 1, "purchase_date_ms": 0, "expires_date_ms": None,
                                "app_account_token": None, "product_type": "consumable", "credit_key": key,
                                "creditable": True, "credit": {"item": "gems", "amount": 10}}]}
    print(f"{user}\t{json.dumps(result, separators=(',', ':'))}")
PY
}

# start_ledger DB TOPIC BATCH: a fresh database and a ledger over it; leaves its pid and port in LEDGER_PID/LEDGER_PORT.
start_ledger() {
    "${psql_base[@]}" -d postgres -c "CREATE DATABASE $1" >/dev/null
    LEDGER_DATABASE_URL="host=127.0.0.1 port=$pg_port user=postgres dbname=$1" LEDGER_LISTEN=127.0.0.1:0 \
        LEDGER_BATCH_SIZE="$3" RESULTS_TOPIC="$2" KAFKA_BOOTSTRAP_SERVERS="$bootstrap" KAFKA_FETCH_WAIT_MAX_MS=10 \
        LEDGER_GROUP_ID="bench-$1" "$bin_dir/receipt-ledger" 2>"$work/ledger-$1.log" &
    LEDGER_PID=$!
    pids+=("$LEDGER_PID")
    for _ in $(seq 1 200); do grep -q '"receipt-ledger started"' "$work/ledger-$1.log" && break; sleep 0.1; done
    LEDGER_PORT="$(grep -m1 '"receipt-ledger started"' "$work/ledger-$1.log" | sed -n 's/.*"port":\([0-9]*\).*/\1/p')"
}

applied() { "${psql_base[@]}" -d "$1" -c "SELECT coalesce(sum(next_offset), 0) FROM consumer_offsets" 2>/dev/null || echo 0; }
gems_total() { "${psql_base[@]}" -d "$1" -c "SELECT coalesce(sum(amount), 0) FROM balances WHERE item = 'gems'"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# drain DB TOPIC BATCH N: preloaded backlog of N, a fresh ledger drains it.
drain() {
    local db="$1" topic="$2" batch="$3" count="$4"
    generate "$db" "$count" >"$work/$db.txt"
    kcat -P -b "$bootstrap" -t "$topic" -K $'\t' -l "$work/$db.txt"
    start_ledger "$db" "$topic" "$batch"
    local ticks_before; ticks_before="$(cpu_ticks "$LEDGER_PID")"
    local first="" now
    while :; do
        local done_count; done_count="$(applied "$db")"
        now="$(date +%s.%N)"
        if [ -z "$first" ] && [ "$done_count" -gt 0 ]; then first="$now"; first_count="$done_count"; fi
        [ "$done_count" -ge "$count" ] && break
        sleep 0.05
    done
    local ticks_after; ticks_after="$(cpu_ticks "$LEDGER_PID")"
    local total; total="$(gems_total "$db")"
    [ "$total" -eq $((count * 10)) ] || { echo "balances wrong: $total gems, expected $((count * 10))" >&2; exit 1; }
    python3 -c "
import sys
n, first_count, t0, t1, ticks = $count, $first_count, $first, $now, $ticks_after - $ticks_before
rate = (n - first_count) / max(t1 - t0, 1e-9)
print(f'  {n} results, {rate:,.0f} applied/s, ledger CPU {ticks * 10000 / max(n, 1):.0f} µs per result (balances exact)')
"
    kill -TERM "$LEDGER_PID"; wait "$LEDGER_PID" || true
}

quantiles() {
    curl -fsS "http://127.0.0.1:$1/metrics" | python3 -c '
import sys
buckets = []
count = 0
for line in sys.stdin:
    if line.startswith("ledger_apply_latency_seconds_bucket"):
        bound = line.split("le=\"")[1].split("\"")[0]
        value = float(line.rsplit(" ", 1)[1])
        buckets.append((float("inf") if bound == "+Inf" else float(bound), value))
    elif line.startswith("ledger_apply_latency_seconds_count"):
        count = float(line.rsplit(" ", 1)[1])
def quantile(q):
    rank = q * count
    lower, below = 0.0, 0.0
    for bound, cumulative in buckets:
        if cumulative >= rank:
            if bound == float("inf"): return lower
            return lower + (bound - lower) * (rank - below) / max(cumulative - below, 1e-9)
        lower, below = bound, cumulative
    return lower
print(f"  {int(count)} results, p50 {quantile(0.5) * 1000:.0f} ms, p99 {quantile(0.99) * 1000:.0f} ms (interpolated in the histogram buckets)")
'
}

echo
echo "backlog, batched (LEDGER_BATCH_SIZE=$BATCH):"
drain batched r-batched "$BATCH" "$COUNT"
echo
echo "backlog, one per transaction (LEDGER_BATCH_SIZE=1):"
drain single r-single 1 "$SINGLE_COUNT"

echo
paced_count=$((RATE * SECONDS_PACED))
echo "paced: $RATE results/s for $SECONDS_PACED s (LEDGER_BATCH_SIZE=$BATCH):"
generate paced "$paced_count" >"$work/paced.txt"
start_ledger paced r-paced "$BATCH"
# Ready, and its partitions assigned (the group's first rebalance takes a few seconds on the mock cluster): what is
# measured is applying, not joining.
for _ in $(seq 1 300); do
    curl -fsS "http://127.0.0.1:$LEDGER_PORT/metrics" 2>/dev/null | grep -q '^kafka_consumer_assigned_partitions [1-9]' && break
    sleep 0.1
done
python3 - "$work/paced.txt" "$RATE" <<'PY' | kcat -P -b "$bootstrap" -t r-paced -K $'\t' -X linger.ms=5
import sys, time
path, rate = sys.argv[1], int(sys.argv[2])
tick = 0.01
per_tick = rate * tick
start = time.monotonic()
sent = 0
with open(path) as lines:
    for line in lines:
        sys.stdout.write(line)
        sent += 1
        if sent % max(int(per_tick), 1) == 0:
            sys.stdout.flush()
            wait = start + sent / rate - time.monotonic()
            if wait > 0: time.sleep(wait)
    sys.stdout.flush()
PY
for _ in $(seq 1 600); do [ "$(applied paced)" -ge "$paced_count" ] && break; sleep 0.1; done
total="$(gems_total paced)"
[ "$total" -eq $((paced_count * 10)) ] || { echo "balances wrong: $total gems, expected $((paced_count * 10))" >&2; exit 1; }
quantiles "$LEDGER_PORT"
curl -fsS "http://127.0.0.1:$LEDGER_PORT/metrics" | python3 -c '
import sys
values = {}
for line in sys.stdin:
    if line.startswith(("ledger_batch_messages_sum", "ledger_batch_messages_count", "ledger_batch_seconds_sum")):
        name, value = line.split()
        values[name] = float(value)
batches = values.get("ledger_batch_messages_count", 0)
size = values.get("ledger_batch_messages_sum", 0) / max(batches, 1)
seconds = values.get("ledger_batch_seconds_sum", 0) * 1000 / max(batches, 1)
print(f"  {int(batches)} batches, {size:.0f} results and {seconds:.1f} ms each on average")
'
