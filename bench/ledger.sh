#!/usr/bin/env bash
# The ledger benchmark: one receipt-ledger (release build) over a throwaway PostgreSQL (fsync off, as a benchmark of
# the ledger rather than of the disk; --durable: PostgreSQL's durable defaults, fsync and synchronous_commit on; same
# machine) and embedded-kafka (another process). Results are produced onto RESULTS_TOPIC with kcat, each crediting 10
# gems of a distinct purchase to one of 1,000 users. Four runs, each on a fresh topic and a fresh database:
#   "backlog, batched"          --count results preloaded, then a fresh ledger (LEDGER_BATCH_SIZE=--batch) drains
#                               them: applied/s from its first commit to its last.
#   "peer, backlog"             the same backlog drained by bench/ledger-peer.py, a plain-Python crediting service
#                               (confluent-kafka + psycopg, batches of --batch, offsets in the transaction, unnest
#                               inserts; far fewer rules than the ledger, see its header), then the ratios ledger / peer.
#   "backlog, one per transaction"  the ledger with LEDGER_BATCH_SIZE=1 (--single-count results): the gain of batching.
#   "paced"                     a running ledger, results produced at --rate per second for --seconds: p50/p99 of
#                               produce-to-commit latency (ledger_apply_latency_seconds, interpolated in its buckets).
# Every run checks the balances exactly (sum of all gems = 10 × results). A backlog run reports the service's CPU per
# result (its process, all threads) and PostgreSQL's: the CPU of the whole server (postmaster, every backend and
# background process, and the children it reaped) over the drain, less the benchmark's own polling connection; each
# run has the server to itself. Below each backlog figure: the service's CPU by thread (digits dropped from thread
# names), PostgreSQL's by process (backends, WAL writer, reaped autovacuum workers...), and for the ledger its batches
# (count, size, time in the database: a drain that spends much less than its length applying starved the worker).
# Prints the figures and the machine.
# Topics have 8 partitions: the mock cluster keeps only ~6 MB per partition and drops a larger backlog's oldest
# messages (a result here is ~700 bytes), which would read as missing credits.
# Needs Python's confluent-kafka and psycopg 3 (scripts/install-deps.sh installs them).
#
#   bench/ledger.sh [--count N] [--single-count N] [--batch N] [--rate N] [--seconds N] [--durable]
set -euo pipefail
cd "$(dirname "$0")/.."

COUNT=30000
SINGLE_COUNT=6000
BATCH=500
RATE=3000
SECONDS_PACED=20
DURABLE=0
while [ $# -gt 0 ]; do
    case "$1" in
        --count) COUNT="$2"; shift 2 ;;
        --single-count) SINGLE_COUNT="$2"; shift 2 ;;
        --batch) BATCH="$2"; shift 2 ;;
        --rate) RATE="$2"; shift 2 ;;
        --seconds) SECONDS_PACED="$2"; shift 2 ;;
        --durable) DURABLE=1; shift ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done

python="$(python3 -c 'import sys; print(sys.executable)')"  # the interpreter itself: its pid is the peer's
"$python" -c 'import confluent_kafka, psycopg' 2>/dev/null \
    || { echo "bench/ledger.sh needs confluent-kafka and psycopg: run scripts/install-deps.sh" >&2; exit 2; }

swift build -c release --product receipt-ledger >/dev/null
swift build -c release --product embedded-kafka >/dev/null
bin_dir="$(swift build -c release --show-bin-path)"
work="$(mktemp -d /tmp/ledger-bench.XXXXXX)"
pids=()
cleanup() {
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[$i]}" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
    if declare -F postgres_cluster_cleanup >/dev/null; then postgres_cluster_cleanup; fi
}
trap cleanup EXIT

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
pg_settings=(-c fsync=off -c synchronous_commit=off -c full_page_writes=off)
pg_mode="fsync off, synchronous_commit off"
if [ "$DURABLE" -eq 1 ]; then
    pg_settings=()
    pg_mode="durable defaults: fsync on, synchronous_commit on"
fi

# PostgreSQL, root-safe (the server refuses root: as root it runs as the `postgres` system user).
pg_bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"
pg_port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
[ "$(id -u)" -ne 0 ] || chmod 755 "$work"
# Under /tmp instead when the postgres user cannot reach $work (a private TMPDIR): scripts/throwaway-postgres.sh.
. scripts/throwaway-postgres.sh
postgres_cluster_dir "$work/pg"
pg_dir="$POSTGRES_CLUSTER_DIR"
as_postgres=("${POSTGRES_AS[@]}")
"${as_postgres[@]}" "$pg_bin/initdb" -D "$pg_dir/data" -U postgres --auth=trust -E UTF8 --no-sync >/dev/null
"${as_postgres[@]}" "$pg_bin/postgres" -D "$pg_dir/data" -p "$pg_port" -k "$pg_dir" -c listen_addresses=127.0.0.1 \
    "${pg_settings[@]}" 2>"$work/postgres.log" &
pids+=($!)
for _ in $(seq 1 100); do "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$pg_port" && break; sleep 0.1; done
postmaster_pid="$(head -1 "$pg_dir/data/postmaster.pid")"
echo "PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') ($pg_mode)"
psql_base=(psql -X -q -t -A -h 127.0.0.1 -p "$pg_port" -U postgres)

"$bin_dir/embedded-kafka" --brokers 1 --topics "r-batched:8,r-peer:8,r-single:8,r-paced:8,iap.purchase.events:4" \
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

# start_peer DB TOPIC BATCH: a fresh database and bench/ledger-peer.py over it; leaves its pid in PEER_PID.
start_peer() {
    "${psql_base[@]}" -d postgres -c "CREATE DATABASE $1" >/dev/null
    "$python" bench/ledger-peer.py --bootstrap "$bootstrap" --topic "$2" --group "bench-$1" --batch "$3" \
        --dsn "host=127.0.0.1 port=$pg_port user=postgres dbname=$1" 2>"$work/peer-$1.log" &
    PEER_PID=$!
    pids+=("$PEER_PID")
    for _ in $(seq 1 200); do grep -q '"ledger-peer started"' "$work/peer-$1.log" && break; sleep 0.1; done
    grep -q '"ledger-peer started"' "$work/peer-$1.log" || { echo "the peer did not start:" >&2; cat "$work/peer-$1.log" >&2; exit 1; }
}

applied() { "${psql_base[@]}" -d "$1" -c "SELECT coalesce(sum(next_offset), 0) FROM consumer_offsets" 2>/dev/null || echo 0; }
gems_total() { "${psql_base[@]}" -d "$1" -c "SELECT coalesce(sum(amount), 0) FROM balances WHERE item = 'gems'"; }

# measure DB N SERVICE_PID NAME: waits until the service at SERVICE_PID has applied N results to DB, polling its
# consumer_offsets every 20 ms over one connection. Prints applied/s (first commit to last), the service's CPU per
# result and PostgreSQL's (the whole server's CPU over the drain: postmaster, its live children, and the children it
# reaped, less the polling connection's backend), and writes "rate service_us postgres_us" to $work/DB.figures.
measure() {
    "$python" - "host=127.0.0.1 port=$pg_port user=postgres dbname=$1" "$2" "$3" "$postmaster_pid" "$4" \
        "$work/$1.figures" <<'PY'
import importlib.util, os, sys, time
import psycopg
spec = importlib.util.spec_from_file_location("thread_cpu", "bench/thread-cpu.py")
thread_cpu = importlib.util.module_from_spec(spec)
spec.loader.exec_module(thread_cpu)
dsn, count, service, postmaster, name, figures = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
tick_us = 1e6 / os.sysconf("SC_CLK_TCK")

def stat(pid):
    """(ppid, utime + stime, cutime + cstime, (utime, stime), (cutime, cstime)) of a process, in ticks; None when it
    is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    own, reaped = (int(fields[11]), int(fields[12])), (int(fields[13]), int(fields[14]))
    return int(fields[1]), sum(own), sum(reaped), own, reaped

def role(pid):
    """What a server process is, from its title ("postgres: walwriter", "postgres: postgres bench 127.0.0.1(...)")."""
    try:
        with open(f"/proc/{pid}/cmdline") as f:
            title = f.read().replace("\0", " ").strip()
    except OSError:
        return "(gone)"
    words = title.removeprefix("postgres:").split()
    if pid == poller:
        return "the bench's polling backend"
    if len(words) >= 2 and words[0] == "postgres":
        return "backends"
    return " ".join(w for w in words if not w.startswith("(")) or "postmaster"

def server_ticks(by_role):
    """The server's CPU so far: its live processes' own, and what its reaped children used; by_role gets the same
    as (user, system) ticks added up by role."""
    live = 0
    def add(name, user, system):
        user_so_far, system_so_far = by_role.get(name, (0, 0))
        by_role[name] = (user_so_far + user, system_so_far + system)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            s = stat(int(entry))
            if s is not None and s[0] == postmaster:
                live += s[1]
                add(role(int(entry)), *s[3])
    _, own, reaped, own_split, reaped_split = stat(postmaster)
    add("postmaster and reaped children (autovacuum workers)", own_split[0] + reaped_split[0],
        own_split[1] + reaped_split[1])
    return live + own + reaped

db = psycopg.connect(dsn, autocommit=True)
poller = db.execute("SELECT pg_backend_pid()").fetchone()[0]
def applied():
    try:
        return db.execute("SELECT coalesce(sum(next_offset), 0)::bigint FROM consumer_offsets").fetchone()[0]
    except psycopg.errors.UndefinedTable:
        return 0

roles_before, roles_after = {}, {}
threads_before = thread_cpu.snapshot(service)
service_before, server_before, poller_before = stat(service)[1], server_ticks(roles_before), stat(poller)[1]
first = first_count = None
last_progress, last_count = time.monotonic(), -1
while True:
    done = applied()
    now = time.monotonic()
    if first is None and done > 0:
        first, first_count = now, done
    if done >= count:
        break
    if done != last_count:
        last_progress, last_count = now, done
    elif now - last_progress > 120:
        sys.exit(f"{name}: no progress for 120 s at {done} of {count} results")
    time.sleep(0.02)
service_after, server_after, poller_after = stat(service)[1], server_ticks(roles_after), stat(poller)[1]
threads_after = thread_cpu.snapshot(service)
db.close()
rate = (count - first_count) / max(now - first, 1e-9)
service_us = (service_after - service_before) * tick_us / count
postgres_us = ((server_after - server_before) - (poller_after - poller_before)) * tick_us / count
print(f"  {count} results, {rate:,.0f} applied/s, {name} CPU {service_us:.0f} µs per result, "
      f"PostgreSQL CPU {postgres_us:.0f} µs per result", end="")
with open(figures, "w") as f:
    f.write(f"{rate} {service_us} {postgres_us}\n")
with open(figures + ".detail", "w") as out:
    sys.stdout = out
    print(f"    {name} CPU by thread:")
    thread_cpu.report(thread_cpu.by_thread_name(threads_before, threads_after), count, "result", indent="      ")
    print("    PostgreSQL CPU by process:")
    used = {role: (user - roles_before.get(role, (0, 0))[0], system - roles_before.get(role, (0, 0))[1])
            for role, (user, system) in roles_after.items()}
    thread_cpu.report(used, count, "result", indent="      ")
PY
}

# check_balances DB N: the gems credited are exactly 10 × N.
check_balances() {
    local total; total="$(gems_total "$1")"
    [ "$total" -eq $(($2 * 10)) ] || { echo; echo "balances wrong: $total gems, expected $(($2 * 10))" >&2; exit 1; }
    echo " (balances exact)"
}

# drain DB TOPIC BATCH N: preloaded backlog of N, a fresh ledger drains it.
drain() {
    local db="$1" topic="$2" batch="$3" count="$4"
    generate "$db" "$count" >"$work/$db.txt"
    kcat -P -b "$bootstrap" -t "$topic" -K $'\t' -l "$work/$db.txt"
    start_ledger "$db" "$topic" "$batch"
    measure "$db" "$count" "$LEDGER_PID" ledger
    check_balances "$db" "$count"
    cat "$work/$db.figures.detail"
    batch_figures "$LEDGER_PORT"
    kill -TERM "$LEDGER_PID"; wait "$LEDGER_PID" || true
}

# drain_peer DB TOPIC BATCH N: the same backlog drained by the Python peer.
drain_peer() {
    local db="$1" topic="$2" batch="$3" count="$4"
    generate "$db" "$count" >"$work/$db.txt"
    kcat -P -b "$bootstrap" -t "$topic" -K $'\t' -l "$work/$db.txt"
    start_peer "$db" "$topic" "$batch"
    measure "$db" "$count" "$PEER_PID" peer
    check_balances "$db" "$count"
    cat "$work/$db.figures.detail"
    kill -TERM "$PEER_PID"; wait "$PEER_PID" || true
}

# batch_figures PORT: how many batches the ledger at PORT committed, their average size and time in the database.
batch_figures() {
    curl -fsS "http://127.0.0.1:$1/metrics" | python3 -c '
import sys
values = {}
for line in sys.stdin:
    if line.startswith(("ledger_batch_messages_sum", "ledger_batch_messages_count", "ledger_batch_seconds_sum")):
        name, value = line.split()
        values[name] = float(value)
batches = values.get("ledger_batch_messages_count", 0)
size = values.get("ledger_batch_messages_sum", 0) / max(batches, 1)
seconds = values.get("ledger_batch_seconds_sum", 0) * 1000 / max(batches, 1)
applying = values.get("ledger_batch_seconds_sum", 0)
print(f"  {int(batches)} batches, {size:.0f} results and {seconds:.1f} ms each on average ({applying:.2f} s in all, summed over the two apply lanes, which overlap)")
'
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
echo "peer, backlog (bench/ledger-peer.py, batches of $BATCH):"
drain_peer peer r-peer "$BATCH" "$COUNT"
read -r ledger_rate ledger_us ledger_pg_us <"$work/batched.figures"
read -r peer_rate peer_us peer_pg_us <"$work/peer.figures"
python3 -c "
lr, lu, lp, pr, pu, pp = $ledger_rate, $ledger_us, $ledger_pg_us, $peer_rate, $peer_us, $peer_pg_us
ratio = lambda a, b: f'{a / b:.2f}' if b > 0 else 'n/a'
print(f'  ledger / peer: applied/s {ratio(lr, pr)}, service CPU per result {ratio(lu, pu)}, PostgreSQL CPU per result {ratio(lp, pp)}')
"
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
# The first result alone, then 2 s before the paced ones: kcat fetches the topic's metadata and connects to its
# leader on its first message, and what it was given meanwhile waits in its queue with its timestamp already taken.
# Without the pause the first ~750 results (0.25 s at 3,000/s) carried that wait as apply latency, which was the
# whole p99 (235-256 ms with the producer cold, 25 ms warm: docs/BENCHMARKS.md).
python3 - "$work/paced.txt" "$RATE" <<'PY' | kcat -P -b "$bootstrap" -t r-paced -K $'\t' -X linger.ms=5
import sys, time
path, rate = sys.argv[1], int(sys.argv[2])
tick = 0.01
per_tick = rate * tick
with open(path) as lines:
    sys.stdout.write(next(lines))
    sys.stdout.flush()
    time.sleep(2)
    start = time.monotonic()
    sent = 0
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
batch_figures "$LEDGER_PORT"
