#!/usr/bin/env bash
# PostgreSQL's work per result, ledger against the Python peer, as a repeatable figure (issue 26's "PostgreSQL CPU
# per result ≤ 2× the peer's"): a throwaway PostgreSQL runs under `valgrind --tool=callgrind` (every backend it forks
# counted on its own), and the instructions of the one backend that applies N results are counted for
#   - receipt-ledger's statements: ledger-apply-bench (release; LedgerStore.apply, batches of 500, no Kafka), with
#     the ledger's connection setting (plan_cache_mode=force_custom_plan, as DatabaseLink sets it);
#   - the peer's statements: bench/ledger-peer-apply.py (bench/ledger-peer.py's SQL, psycopg) on the same results.
# Each backend's start-up (a connection that runs nothing) is subtracted. Instruction counts do not depend on the
# machine's load; the background processes (WAL writer, checkpointer) and the kernel's work are not in them, so
# bench/ledger.sh's CPU figures remain the wall-clock truth on a quiet machine.
#
#   bench/postgres-callgrind.sh [--count N]     (default 4000)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh

COUNT=4000
while [ $# -gt 0 ]; do
    case "$1" in
        --count) COUNT="$2"; shift 2 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
command -v valgrind >/dev/null || apt-get install -y -qq valgrind >/dev/null

bench_build ledger-apply-bench
bench_workspace
mkdir -p "$WORK/callgrind"
[ "$(id -u)" -ne 0 ] || chown postgres "$WORK/callgrind"
POSTGRES_WRAPPER="valgrind --tool=callgrind --trace-children=yes --callgrind-out-file=$WORK/callgrind/backend.%p" \
    POSTGRES_EXTRA_OPTIONS="-c autovacuum=off" postgres_start >/dev/null
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg) (instruction counts do not depend on it); $("$PG_BIN/postgres" --version)"
server="host=127.0.0.1 port=$PG_PORT user=postgres"
psql_as() { "${AS_POSTGRES[@]}" "$PG_BIN/psql" -X -q -h 127.0.0.1 -p "$PG_PORT" -U postgres "$@"; }
psql_as -c "CREATE DATABASE ledger" -c "CREATE DATABASE peer" >/dev/null

# counted LABEL COMMAND...: runs COMMAND (one connection), waits for its backend's callgrind file, prints nothing;
# sets COUNTED to that backend's instruction total.
counted() {
    local before after file
    before=$(ls "$WORK/callgrind" | wc -l)
    "${@:2}" >"$WORK/$1.out"
    for _ in $(seq 1 300); do
        after=$(ls "$WORK/callgrind" | wc -l)
        [ "$after" -gt "$before" ] && break
        sleep 0.1
    done
    sleep 1
    file=$(ls -t "$WORK/callgrind" | head -1)
    COUNTED=$(callgrind_annotate "$WORK/callgrind/$file" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
}

# Start-up only: a connection that runs one empty statement.
counted startup psql_as -d ledger -c ""
startup=$COUNTED
# Warm-ups create the schemas (the counted runs apply, they do not migrate), then the tables are emptied.
PGOPTIONS="-c plan_cache_mode=force_custom_plan" LEDGER_DATABASE_URL="$server dbname=ledger" \
    "$BIN/ledger-apply-bench" 10 >/dev/null
python3 bench/ledger-peer-apply.py 10 "$server dbname=peer" >/dev/null
psql_as -d ledger -c "$LEDGER_TRUNCATE_ALL_SQL" >/dev/null
psql_as -d peer -c "TRUNCATE purchases, balances, consumer_offsets" >/dev/null

counted ledger env PGOPTIONS="-c plan_cache_mode=force_custom_plan" LEDGER_DATABASE_URL="$server dbname=ledger" \
    "$BIN/ledger-apply-bench" "$COUNT" 500
ledger=$COUNTED
counted peer python3 bench/ledger-peer-apply.py "$COUNT" "$server dbname=peer" 500
peer=$COUNTED
cat "$WORK/ledger.out" "$WORK/peer.out"
python3 - "$COUNT" "$startup" "$ledger" "$peer" <<'PY'
import sys
count, startup, ledger, peer = (int(v) for v in sys.argv[1:])
per_ledger = (ledger - startup) / count
per_peer = (peer - startup) / count
print(f"  backend start-up (subtracted): {startup:,} instructions")
print(f"  ledger: {per_ledger:,.0f} PostgreSQL instructions per result")
print(f"  peer:   {per_peer:,.0f} PostgreSQL instructions per result")
print(f"  ledger / peer: {per_ledger / per_peer:.2f} (issue 26's goal: <= 2)")
PY
