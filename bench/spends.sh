#!/usr/bin/env bash
# The spend benchmark (issue 40): spends applied exactly once on a durable PostgreSQL (fsync, full_page_writes and
# synchronous_commit on: bench/lib.sh's POSTGRES_DURABLE=1; same machine), 64 concurrent clients over 1,000 users,
# receipt-ledger (release build; its wallet group-commits the spends waiting) side by side in the same run with
# bench/spend-peer.py, a plain-Python spend service (aiohttp + psycopg 3 async with a pool: a conditional UPDATE and
# an idempotency row per spend, one transaction each, no attribution), each over its own database of the same server.
#
# Set-up: every user is given gems first, by the ledger's grants API (POST /v1/users/{user_id}/grants) for the ledger
# and by INSERTs into the peer's balances for the peer: 10,000,000 each, except one user in 50 (user-7, user-57, ...)
# who gets 30 and soon runs out, so that some spends are refused (409 insufficient_balance, which must change nothing).
# Load: wrk (bench/spends.lua), --threads threads and --connections keep-alive connections, a 2 s warm-up and then
# --duration seconds of POST /v1/users/user-<random u>/spends {"item":"gems","amount":1..5} with a unique
# Idempotency-Key each, except that one request in 20 replays (same key, same body) the request its thread made 501
# requests earlier. The script sends for the duration and then waits for the answers in flight, so that every spend
# sent was answered; it counts, per user, the units and the number of spends answered 200 (not replays).
#
# Printed for each service: spends applied per second (200s that were not replays, over the time from the first
# request to the last answer), all answers per second, p50/p99 latency (wrk), the answers (applied, refused, replayed,
# key in flight, other), CPU per answered request of the service (its process, all threads) and of PostgreSQL (the
# whole server: postmaster, every backend and background process and the children it reaped, as bench/ledger.sh
# measures it; the other service is idle meanwhile), and of the client (wrk: its share of its threads' time says
# whether it could have been the bottleneck); the ledger's spend batches (count, mean size, time each); then the
# ratios ledger / peer. At the end, every balance is checked exactly: for each service and user, the balance equals
# what was given less the units of the spends answered 200 (warm-ups included), in the database (ledger: balances,
# its lots' remaining less debt, wallet_requests, wallet_spends, wallet_history; peer: balances, spend_requests) and,
# for the ledger, through GET /v1/users/{user_id}; every replay answered what its first request was answered; no
# answer was lost. Exit status 1 when anything is not exact.
#
#   bench/spends.sh [--duration SECONDS] [--connections N] [--threads N] [--users N] [--rounds N] [--peer-pool N]
#                   [--no-peer]
# --rounds N alternates ledger and peer N times (each round warms up again) and ends with every round's ratios.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=20
CONNECTIONS=64
WRK_THREADS=2
USERS=1000
ROUNDS=1
PEER=1
PEER_POOL=32
REPLAY_EVERY=20
REPLAY_DISTANCE=501
SCARCE_EVERY=50
RICH_GRANT=10000000
SCARCE_GRANT=30
while [ $# -gt 0 ]; do
    case "$1" in
        --duration) DURATION="$2"; shift 2 ;;
        --connections) CONNECTIONS="$2"; shift 2 ;;
        --threads) WRK_THREADS="$2"; shift 2 ;;
        --users) USERS="$2"; shift 2 ;;
        --rounds) ROUNDS="$2"; shift 2 ;;
        --peer-pool) PEER_POOL="$2"; shift 2 ;;
        --no-peer) PEER=0; shift ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
for tool in wrk curl psql python3; do
    command -v "$tool" >/dev/null || { echo "$tool is not installed (make deps)" >&2; exit 1; }
done
[ "$ROUNDS" -ge 1 ] 2>/dev/null || { echo "--rounds needs a whole number of at least 1" >&2; exit 2; }
python="$(python3 -c 'import sys; print(sys.executable)')"  # the interpreter itself: its pid is the peer's
"$python" -c 'import psycopg' 2>/dev/null \
    || { echo "bench/spends.sh needs psycopg: run scripts/install-deps.sh" >&2; exit 2; }
if [ "$PEER" -eq 1 ]; then
    "$python" -c 'import aiohttp, psycopg_pool' 2>/dev/null || {
        echo "the peer (bench/spend-peer.py) needs aiohttp and psycopg-pool: run scripts/install-deps.sh, or pass" \
            "--no-peer" >&2
        exit 2
    }
fi

source bench/lib.sh
bench_build embedded-kafka receipt-ledger
bench_workspace
POSTGRES_DURABLE=1 postgres_start
# PostgreSQL is stopped on every way out (bench_cleanup stops the other processes).
trap 'postgres_stop; bench_cleanup' EXIT
export POSTGRES_DURABLE=1  # postgres_run again (none here) would keep the durable settings
psql_base=(psql -X -q -t -A -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres)
"${psql_base[@]}" -d postgres -c "CREATE DATABASE ledger" -c "CREATE DATABASE peer" >/dev/null
dsn() { echo "host=127.0.0.1 port=$PG_PORT user=postgres dbname=$1"; }

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)," \
    "load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') (durable: fsync, full_page_writes and" \
    "synchronous_commit on), databases ledger and peer on one server"

# The ledger consumes results and events (none come here): embedded-kafka for it to start.
LOG_LEVEL=warning "$BIN/embedded-kafka" --topics "iap.receipts.results:1,iap.purchase.events:1" \
    >"$WORK/kafka.out" 2>"$WORK/kafka.log" &
PIDS+=($!)
BOOTSTRAP="$(wait_for_line "$WORK/kafka.out" KAFKA_BOOTSTRAP_SERVERS)" || { cat "$WORK/kafka.log" >&2; exit 1; }

LEDGER_DATABASE_URL="$(dsn ledger)" LEDGER_LISTEN=127.0.0.1:0 KAFKA_BOOTSTRAP_SERVERS="$BOOTSTRAP" \
    LEDGER_GROUP_ID=bench-spends LOG_LEVEL=info "$BIN/receipt-ledger" 2>"$WORK/ledger.log" &
LEDGER_PID=$!
PIDS+=("$LEDGER_PID")
LEDGER_URL="http://127.0.0.1:$(listening_port "$WORK/ledger.log")" \
    || { echo "receipt-ledger did not start:" >&2; cat "$WORK/ledger.log" >&2; exit 1; }
for _ in $(seq 1 300); do curl -fsS -o /dev/null "$LEDGER_URL/readyz" 2>/dev/null && break; sleep 0.1; done
curl -fsS -o /dev/null "$LEDGER_URL/readyz" \
    || { echo "receipt-ledger never became ready" >&2; tail -5 "$WORK/ledger.log" >&2; exit 1; }

if [ "$PEER" -eq 1 ]; then
    SPEND_PEER_DSN="$(dsn peer)" SPEND_PEER_LISTEN=127.0.0.1:0 SPEND_PEER_POOL="$PEER_POOL" \
        "$python" bench/spend-peer.py 2>"$WORK/peer.log" &
    PEER_PID=$!
    PIDS+=("$PEER_PID")
    PEER_URL="http://127.0.0.1:$(listening_port "$WORK/peer.log")" \
        || { echo "the peer did not start:" >&2; cat "$WORK/peer.log" >&2; exit 1; }
    curl -fsS -o /dev/null "$PEER_URL/readyz" || { echo "the peer is not ready" >&2; cat "$WORK/peer.log" >&2; exit 1; }
fi

# What each user is given first: user-<u> gets SCARCE_GRANT when u mod SCARCE_EVERY is 7, RICH_GRANT otherwise.
"$python" - "$USERS" "$SCARCE_EVERY" "$SCARCE_GRANT" "$RICH_GRANT" >"$WORK/initial.tsv" <<'PY'
import sys
users, every, scarce, rich = map(int, sys.argv[1:])
for u in range(users):
    print(f"user-{u}\t{scarce if u % every == 7 else rich}")
PY
# The ledger's through its grants API (32 at a time), each answer checked; the peer's by its own set-up (INSERTs).
"$python" - "$LEDGER_URL" "$WORK/initial.tsv" <<'PY'
import concurrent.futures, json, sys, urllib.request
url, path = sys.argv[1], sys.argv[2]
wanted = [line.split("\t") for line in open(path).read().splitlines()]

def grant(entry):
    user, amount = entry[0], int(entry[1])
    request = urllib.request.Request(
        f"{url}/v1/users/{user}/grants", method="POST",
        data=json.dumps({"item": "gems", "amount": amount, "reason": "bench set-up"}).encode(),
        headers={"Content-Type": "application/json", "Idempotency-Key": f"set-up-{user}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        answer = json.loads(response.read())
    if answer.get("balance") != amount:
        sys.exit(f"the ledger's set-up grant to {user} answered {answer}")

with concurrent.futures.ThreadPoolExecutor(32) as pool:
    list(pool.map(grant, wanted))
PY
if [ "$PEER" -eq 1 ]; then
    "${psql_base[@]}" -d peer -c "INSERT INTO balances (user_id, item, amount)
        SELECT 'user-' || u, 'gems', CASE WHEN u % $SCARCE_EVERY = 7 THEN $SCARCE_GRANT ELSE $RICH_GRANT END
        FROM generate_series(0, $USERS - 1) AS u" >/dev/null
fi
echo "set-up: $USERS users given gems (one in $SCARCE_EVERY only $SCARCE_GRANT): the ledger by its grants API," \
    "the peer by INSERTs"
echo "receipt-ledger $LEDGER_URL (its wallet's batcher: one transaction and one commit per batch of the spends waiting)"
if [ "$PEER" -eq 1 ]; then
    echo "peer (bench/spend-peer.py) $PEER_URL, a pool of $PEER_POOL connections (one transaction per spend)"
fi
echo "wrk: $WRK_THREADS threads, $CONNECTIONS keep-alive connections, ${DURATION} s after a 2 s warm-up, $USERS users," \
    "amounts 1..5, one request in $REPLAY_EVERY a replay"

RUN_ID="$(date +%s)"
TICKS=$(getconf CLK_TCK)
process_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# wrk_run NAME URL SECONDS ACCOUNT_FILE: the spend load against URL for SECONDS (then the answers in flight), its
# accounting in ACCOUNT_FILE, wrk's own CPU (user and system seconds) in ACCOUNT_FILE.time.
wrk_run() {
    local TIMEFORMAT='%U %S'
    {
        time BENCH_RUN_ID="$RUN_ID-$1" BENCH_USERS="$USERS" BENCH_SEND_MS="$(($3 * 1000))" \
            BENCH_REPLAY_EVERY="$REPLAY_EVERY" BENCH_REPLAY_DISTANCE="$REPLAY_DISTANCE" BENCH_ACCOUNT_FILE="$4" \
            wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"$(($3 + 3))s" --timeout 10s -s bench/spends.lua "$2" \
            >"$4.wrk" 2>&1
    } 2>"$4.time"
    [ -s "$4" ] || { echo "wrk wrote no accounting for $1:" >&2; cat "$4.wrk" >&2; exit 1; }
}

# wallet_batches: the ledger's spend batches so far: count, requests and seconds in all (its /metrics).
wallet_batches() {
    curl -fsS "$LEDGER_URL/metrics" | awk '
        /^ledger_wallet_batch_requests_count / {count = $2}
        /^ledger_wallet_batch_requests_sum / {requests = $2}
        /^ledger_wallet_batch_seconds_sum / {seconds = $2}
        END {print count + 0, requests + 0, seconds + 0}'
}

# measure NAME PID URL ROUND: the warm-up and the measured run against one service; prints its figures and writes
# "spends_per_s p50_ms p99_ms service_us postgres_us" to $WORK/NAME-ROUND.figures.
measure() {
    local name="$1" pid="$2" url="$3" round="$4"
    wrk_run "$name-$round-warm-up" "$url" 2 "$WORK/account-$name-$round-warm-up"
    local service_before server_before batches_before=""
    if [ "$name" = ledger ]; then batches_before="$(wallet_batches)"; fi
    python3 bench/thread-cpu.py snapshot "$pid" >"$WORK/threads.before"
    service_before="$(process_ticks "$pid")"
    server_before="$(postgres_server_ticks "$POSTGRES_PID")"
    wrk_run "$name-$round" "$url" "$DURATION" "$WORK/account-$name-$round"
    local service_after server_after
    service_after="$(process_ticks "$pid")"
    server_after="$(postgres_server_ticks "$POSTGRES_PID")"
    python3 bench/thread-cpu.py snapshot "$pid" >"$WORK/threads.after"
    python3 - "$name" "$WORK/account-$name-$round" "$((service_after - service_before))" \
        "$((server_after - server_before))" "$TICKS" "$WRK_THREADS" >"$WORK/$name-$round.figures" <<'PY'
import sys
name, path, service_ticks, server_ticks, ticks, threads = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
figures = {}
for line in open(path):
    kind, key, *values = line.rstrip("\n").split("\t")
    if kind == "figure":
        figures[key] = float(values[0])
span_s = max((figures["last_ms"] - figures["first_ms"]) / 1000, 1e-9)
answered = max(figures["answered"], 1)
user_s, system_s = map(float, open(path + ".time").read().split())
service_us = service_ticks * 1e6 / ticks / answered
postgres_us = server_ticks * 1e6 / ticks / answered
spends_per_s = figures["applied"] / span_s
out = sys.stderr
print(f"  {figures['applied']:.0f} spends applied in {span_s:.1f} s: {spends_per_s:,.0f} spends/s "
      f"({figures['answered'] / span_s:,.0f} answers/s); latency p50 {figures['p50_ms']:.2f} ms, "
      f"p90 {figures['p90_ms']:.2f} ms, p99 {figures['p99_ms']:.2f} ms, max {figures['max_ms']:.1f} ms", file=out)
print(f"  answers: {figures['answered']:.0f} of {figures['sent']:.0f} sent; applied {figures['applied']:.0f}, "
      f"refused (insufficient_balance) {figures['refused']:.0f}, replays {figures['replayed']:.0f} "
      f"({figures['replay_mismatches']:.0f} not the first answer), key in flight {figures['in_flight']:.0f}, "
      f"other {figures['other']:.0f}, socket errors and timeouts {figures['errors']:.0f}", file=out)
print(f"  CPU per answered request: {name} {service_us:.0f} µs, PostgreSQL {postgres_us:.0f} µs; client (wrk) "
      f"{(user_s + system_s) * 1e6 / answered:.0f} µs, {(user_s + system_s) / (span_s * threads) * 100:.0f} % of its "
      f"{threads} threads' time (the client was not the bottleneck when well below 100 %)", file=out)
print(spends_per_s, figures["p50_ms"], figures["p99_ms"], service_us, postgres_us)
PY
    echo "  $name CPU by thread:"
    python3 bench/thread-cpu.py per-request "$WORK/threads.before" "$WORK/threads.after" \
        "$(awk -F'\t' '$1 == "figure" && $2 == "answered" {print $3}' "$WORK/account-$name-$round")" \
        | sed 's/^/  /'
    if [ "$name" = ledger ]; then
        read -r count_before requests_before seconds_before <<<"$batches_before"
        read -r count_after requests_after seconds_after <<<"$(wallet_batches)"
        python3 -c "
count = $count_after - $count_before
requests, seconds = $requests_after - $requests_before, $seconds_after - $seconds_before
print(f'  ledger spend batches: {count:.0f}, {requests / max(count, 1):.1f} requests and '
      f'{seconds * 1000 / max(count, 1):.2f} ms each on average ({seconds:.1f} s in all)')"
    fi
}

# ratio_line ROUND: ledger / peer of one round, printed and kept in $WORK/ratios.
ratio_line() {
    read -r rate p50 p99 cpu pg <"$WORK/ledger-$1.figures"
    read -r peer_rate peer_p50 peer_p99 peer_cpu peer_pg <"$WORK/peer-$1.figures"
    python3 -c "
r, p50, p99, cpu, pg = $rate, $p50, $p99, $cpu, $pg
pr, pp50, pp99, pcpu, ppg = $peer_rate, $peer_p50, $peer_p99, $peer_cpu, $peer_pg
ratio = lambda a, b: f'{a / b:.2f}' if b > 0 else 'n/a'
print(f'  round $1: ledger / peer spends/s {r:,.0f} / {pr:,.0f} = {ratio(r, pr)}x; p50 {p50:.2f} / {pp50:.2f} ms; '
      f'p99 {p99:.2f} / {pp99:.2f} ms = {ratio(p99, pp99)}; CPU µs per request: service {cpu:.0f} / {pcpu:.0f} = '
      f'{ratio(cpu, pcpu)}, PostgreSQL {pg:.0f} / {ppg:.0f} = {ratio(pg, ppg)}')
" | tee -a "$WORK/ratios"
}

for ((round = 1; round <= ROUNDS; round++)); do
    if [ "$ROUNDS" -gt 1 ]; then echo; echo "== round $round of $ROUNDS"; fi
    echo
    echo "-- receipt-ledger"
    measure ledger "$LEDGER_PID" "$LEDGER_URL" "$round" 2>&1
    if [ "$PEER" -eq 1 ]; then
        echo
        echo "-- peer (bench/spend-peer.py)"
        measure peer "$PEER_PID" "$PEER_URL" "$round" 2>&1
        echo
        ratio_line "$round"
    fi
done
if [ "$PEER" -eq 1 ] && [ "$ROUNDS" -gt 1 ]; then
    echo
    echo "== ledger / peer, every round"
    cat "$WORK/ratios"
fi

# Every balance exact: what each user was given less what the client saw spent (answered 200, not a replay).
echo
check_args=(--initial "$WORK/initial.tsv" --ledger-url "$LEDGER_URL" --ledger-dsn "$(dsn ledger)")
if [ "$PEER" -eq 1 ]; then check_args+=(--peer-dsn "$(dsn peer)"); fi
"$python" - "${check_args[@]}" "$WORK"/account-* <<'PY'
import argparse, json, sys, urllib.request
import psycopg

parser = argparse.ArgumentParser()
parser.add_argument("--initial")
parser.add_argument("--ledger-url")
parser.add_argument("--ledger-dsn")
parser.add_argument("--peer-dsn")
parser.add_argument("accounts", nargs="*")
args = parser.parse_args()
initial = {user: int(amount) for user, amount in (line.split("\t") for line in open(args.initial).read().splitlines())}
spent = {"ledger": {}, "peer": {}}    # service -> user -> [units, spends]
lost = {"ledger": 0, "peer": 0}
mismatched = {"ledger": 0, "peer": 0}
for path in args.accounts:
    if path.endswith((".wrk", ".time")):
        continue
    service = path.rsplit("/", 1)[1].split("-")[1]
    figures = {}
    for line in open(path):
        kind, key, *values = line.rstrip("\n").split("\t")
        if kind == "spent":
            entry = spent[service].setdefault(key, [0, 0])
            entry[0] += int(values[0])
            entry[1] += int(values[1])
        elif kind == "figure":
            figures[key] = float(values[0])
    lost[service] += int(figures["sent"] - figures["answered"] + figures["errors"] + figures["other"])
    mismatched[service] += int(figures["replay_mismatches"])

failures = []
def compare(service, what, actual):
    """actual: user -> value; expected from the client's accounting (what: 'balance', 'spends', 'units')."""
    wrong = []
    for user, given in initial.items():
        units, count = spent[service].get(user, [0, 0])
        expected = {"balance": given - units, "spends": count, "units": units}[what]
        if actual.get(user, 0) != expected:
            wrong.append(f"{user}: {actual.get(user, 0)}, expected {expected}")
    strangers = sorted(set(actual) - set(initial))
    wrong += [f"{user}: not a user of the run" for user in strangers]
    if wrong:
        failures.append(f"{service} {what}: {len(wrong)} users wrong (e.g. {'; '.join(wrong[:3])})")
    return len(wrong) == 0

def rows(dsn, sql):
    with psycopg.connect(dsn) as connection:
        return connection.execute(sql).fetchall()

services = ["ledger"] + (["peer"] if args.peer_dsn else [])
for service in services:
    if lost[service]:
        failures.append(f"{service}: {lost[service]} requests without a readable answer (their effect is unknown)")
    if mismatched[service]:
        failures.append(f"{service}: {mismatched[service]} replays answered otherwise than their first request")
checks = []
ok = compare("ledger", "balance", dict(rows(args.ledger_dsn,
    "SELECT user_id, amount FROM balances WHERE book = 'production' AND item = 'gems'")))
checks.append("balances")
compare("ledger", "balance", dict(rows(args.ledger_dsn, """
    SELECT l.user_id, sum(l.amount - l.spent - l.taken - l.covered) - max(b.debt)
    FROM wallet_lot_states l JOIN balances b USING (user_id, book, item)
    WHERE l.book = 'production' AND l.item = 'gems' GROUP BY 1""")))
checks.append("lots (remaining less debt)")
compare("ledger", "spends", dict(rows(args.ledger_dsn,
    "SELECT user_id, count(*) FROM wallet_requests WHERE operation = 'spend' AND status = 200 GROUP BY 1")))
compare("ledger", "units", dict(rows(args.ledger_dsn,
    "SELECT user_id, sum(amount) FROM wallet_requests WHERE operation = 'spend' AND status = 200 GROUP BY 1")))
checks.append("wallet_requests (spends answered 200, units)")
compare("ledger", "spends", dict(rows(args.ledger_dsn,
    "SELECT user_id, count(DISTINCT idempotency_key) FROM wallet_spends GROUP BY 1")))
compare("ledger", "units", dict(rows(args.ledger_dsn, "SELECT user_id, sum(amount) FROM wallet_spends GROUP BY 1")))
checks.append("wallet_spends (attributions)")
compare("ledger", "spends", dict(rows(args.ledger_dsn,
    "SELECT user_id, count(*) FROM wallet_history WHERE kind = 'spend' GROUP BY 1")))
compare("ledger", "units", dict(rows(args.ledger_dsn,
    "SELECT user_id, -sum(balance_change) FROM wallet_history WHERE kind = 'spend' GROUP BY 1")))
checks.append("wallet_history (spend entries)")
through_api = {}
for user in initial:
    with urllib.request.urlopen(f"{args.ledger_url}/v1/users/{user}", timeout=30) as response:
        through_api[user] = json.loads(response.read())["balances"].get("gems", 0)
compare("ledger", "balance", through_api)
checks.append("GET /v1/users/{user_id}")
print(f"ledger: {len(initial)} users checked against {', '.join(checks)}")
if args.peer_dsn:
    compare("peer", "balance", dict(rows(args.peer_dsn, "SELECT user_id, amount FROM balances WHERE item = 'gems'")))
    compare("peer", "spends", dict(rows(args.peer_dsn,
        "SELECT user_id, count(*) FROM spend_requests WHERE status = 200 GROUP BY 1")))
    compare("peer", "units", dict(rows(args.peer_dsn,
        "SELECT user_id, sum(amount) FROM spend_requests WHERE status = 200 GROUP BY 1")))
    print(f"peer: {len(initial)} users checked against balances, spend_requests (spends answered 200, units)")
for service in services:
    units = sum(entry[0] for entry in spent[service].values())
    count = sum(entry[1] for entry in spent[service].values())
    print(f"{service}: {count} spends answered 200 (warm-ups included), {units} gems, by the client's count")
if failures:
    print("NOT EXACT:")
    for failure in failures:
        print(f"  - {failure}")
    sys.exit(1)
print("every balance exact: given less the spends answered 200, per user, in every place checked; every replay "
      "answered its first answer")
PY

# shellcheck disable=SC2046 # no peer: no peer figures
python3 - $(ls "$WORK"/ledger-*.figures) $(ls "$WORK"/peer-*.figures 2>/dev/null) <<'PY'
import sys
paths = sys.argv[1:]
ledger = [list(map(float, open(path).read().split())) for path in paths if "/ledger-" in path]
peer = [list(map(float, open(path).read().split())) for path in paths if "/peer-" in path]
rate = min(entry[0] for entry in ledger)
p99 = max(entry[2] for entry in ledger)
versus = "no peer in this run"
if peer:
    ratio = min(l[0] / p[0] for l, p in zip(ledger, peer) if p[0] > 0)
    versus = f"{ratio:.2f}x ({'met' if ratio >= 1.0 else 'NOT met'})"
print(f"goal (issue 40): >= 3,000 spends/s: {rate:,.0f} ({'met' if rate >= 3000 else 'NOT met'}); >= 1.0x the peer: "
      f"{versus}; p99 <= 25 ms: {p99:.2f} ms ({'met' if p99 <= 25 else 'NOT met'}) (the worst round of each)")
PY
