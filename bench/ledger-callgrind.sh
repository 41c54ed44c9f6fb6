#!/usr/bin/env bash
# The ledger's own work per result as a repeatable figure: ledger-apply-bench (release; LedgerStore over N verified
# results in batches of 500, no Kafka) under `valgrind --tool=callgrind` against a throwaway PostgreSQL (another
# process, not counted). Callgrind counts instructions, not time, so the figure is the same on a busy machine.
# Prints instructions per result, in total and for the parts that matter (JSON decoding, the rules, building and
# reading statements).
#
#   bench/ledger-callgrind.sh [--count N]     (default 4000)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
source bench/chaos-lib.sh

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
postgres_start >/dev/null
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg) (instruction counts do not depend on it)"
# A warm-up run creates the schema, so the counted run measures applying, not migrating.
"${AS_POSTGRES[@]}" "$PG_BIN/psql" -X -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -c "CREATE DATABASE counted" >/dev/null
counted="host=127.0.0.1 port=$PG_PORT user=postgres dbname=counted"
LEDGER_DATABASE_URL="$counted" "$BIN/ledger-apply-bench" 10 >/dev/null
"${AS_POSTGRES[@]}" "$PG_BIN/psql" -X -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d counted \
    -c "$LEDGER_TRUNCATE_ALL_SQL" >/dev/null
LEDGER_DATABASE_URL="$counted" valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind.out" \
    "$BIN/ledger-apply-bench" "$COUNT" 500 >"$WORK/run.txt" 2>"$WORK/valgrind.log"
cat "$WORK/run.txt"
callgrind_annotate --inclusive=yes --threshold=100 "$WORK/callgrind.out" 2>/dev/null | swift demangle --simplified \
    >"$WORK/annotate.txt"
python3 - "$WORK/annotate.txt" "$COUNT" <<'PY'
import re, sys
path, count = sys.argv[1], int(sys.argv[2])
total = None
rows = []
for line in open(path, errors="replace"):
    m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(.*)", line)
    if not m:
        continue
    value = int(m.group(1).replace(",", ""))
    name = m.group(2)
    if "PROGRAM TOTALS" in name:
        total = value
    else:
        rows.append((value, name))
print(f"  {total / count:,.0f} instructions per result in all (callgrind, {count} results)")
parts = [
    ("a batch applied (LedgerStore.apply)", r"LedgerStore\.apply\("),
    ("decoding the results (VerificationResultJSON.read)", r"VerificationResultJSON\.read\("),
    ("of which parsing the JSON (JSONParser.parse)", r"JSONParser\.parse(NotingNumbers)?\("),
    ("reading what the batch touches (BatchWork.prefetch)", r"BatchWork\.prefetch(<A>)?\("),
    ("the rules (CreditingRules.apply)", r"CreditingRules\.apply\("),
    ("writing (BatchWork.finish)", r"BatchWork\.finish\("),
    ("the wallets' moves and writes (BatchWork.applyWalletMoves)", r"BatchWork\.applyWalletMoves\("),
    ("the purchases written (BatchWork.writePurchases, the COPY's rows)", r"BatchWork\.writePurchases\("),
    ("statement parameters (BoundParameters)", r"BoundParameters\.init"),
    ("PostgresSession.execute and .pipeline (libpq, rows copied out)", r"PostgresSession\.(execute|pipeline)\("),
]
for label, pattern in parts:
    # Inclusive cost of the function (recursion and the several places it is listed counted once: the largest).
    best = max((v for v, n in rows if re.search(pattern, n) and "'" not in n.split(" [")[0][-3:]), default=0)
    # A function the optimizer inlined has no entry of its own: said so, not printed as 0.
    print(f"  {best / count:,.0f} per result: {label}" if best else f"  (inlined, counted in its caller): {label}")
PY
