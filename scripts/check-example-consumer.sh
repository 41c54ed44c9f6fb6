#!/usr/bin/env bash
# examples/consumer/consumer.py against real messages (make test, about 40 s): the ingest and the verifier over the
# mock Kafka cluster and the fake App Store (scripts/sample-system.sh: four purchases, a credit event for a purchase
# already credited, a refund of another), a throwaway PostgreSQL, then the consumer three times: killed in the middle
# of the third message's transaction (as a SIGKILL), run again until idle, and once more (nothing new). The balances
# and entitlements must be exactly the rules' (every purchase credited once, the refund taken back whatever the two
# topics' order), and the stored offsets the topics' ends.
# Usage: scripts/check-example-consumer.sh [<bin-dir>]
set -euo pipefail
cd "$(dirname "$0")/.."

bin="${1:-$(swift build --show-bin-path)}"
work=.build/check-example-consumer
rm -rf "$work"
mkdir -p "$work"
started=$SECONDS
pids=()
. scripts/throwaway-postgres.sh
cleanup() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    postgres_cluster_cleanup
}
trap cleanup EXIT
. scripts/sample-system.sh

sample_system_start
echo "check-example-consumer: system up ($((SECONDS - started)) s)"
sample_system_traffic
# The notifications' events are written by the verifier after the ingest answered: wait until both are there.
sample_system_read iap.purchase.events 2 "$work/events.jsonl"
start_throwaway_postgres "$PWD/$work/postgres" "$work/postgres.log"
echo "check-example-consumer: traffic done, PostgreSQL up ($((SECONDS - started)) s)"

consumer=(python3 examples/consumer/consumer.py --bootstrap "$KAFKA_BOOTSTRAP" --database "$POSTGRES_URL"
          --kafka-property fetch.wait.max.ms=10 --kafka-property session.timeout.ms=6000)
# (A short session: the run killed mid-batch stays a member of the group until its session times out, and the next
# run joins only then.)
status=0
"${consumer[@]}" --batch 1 --crash-after 3 >"$work/run-1.log" 2>&1 || status=$?
[ "$status" -eq 3 ] || { echo "check-example-consumer: the first run should have died at its third message (exit 3), exited $status"; cat "$work/run-1.log"; exit 1; }
"${consumer[@]}" --idle-exit-seconds 3 >"$work/run-2.log" 2>&1 || { cat "$work/run-2.log"; exit 1; }
"${consumer[@]}" --idle-exit-seconds 3 >"$work/run-3.log" 2>&1 || { cat "$work/run-3.log"; exit 1; }
grep -q "^applied 0 messages" "$work/run-3.log" \
    || { echo "check-example-consumer: the third run applied messages again:"; cat "$work/run-3.log"; exit 1; }

python3 - "$POSTGRES_URL" <<'PY'
import sys
import psycopg
with psycopg.connect(sys.argv[1]) as database:
    balances = {row[:3]: row[3] for row in database.execute("SELECT owner, book, item, amount FROM balances")}
    entitlements = database.execute(
        "SELECT owner, entitlement, expires_date_ms, ended FROM entitlements ORDER BY owner").fetchall()
    offsets = sum(row[0] for row in database.execute("SELECT next_offset FROM consumer_offsets"))
    events = database.execute("SELECT count(*) FROM applied_events").fetchone()[0]
    dead = database.execute("SELECT count(*) FROM dead_letters").fetchone()[0]
expected = {
    # Two gems_100 in one receipt transaction, refunded in full by REFUND: 200 credited, 200 taken back.
    ("sample-user-1", "production", "gems"): 0,
    # A signed transaction, credited by its result; its ONE_TIME_CHARGE event is the same purchase: once.
    ("sample-user-2", "production", "gems"): 100,
}
# No row is a balance of 0 (the refund read before its purchase: the credit refused, nothing ever added).
problems = [f"balance {key}: {balances.get(key, 0)!r}, expected {value}" for key, value in expected.items()
            if balances.get(key, 0) != value]
problems += [f"unexpected balance {key}: {value}" for key, value in balances.items() if key not in expected]
if entitlements != [("sample-user-3", "premium", 4102444800000, False)]:
    problems.append(f"entitlements {entitlements}, expected sample-user-3's premium until 4102444800000")
if offsets != 4 + 2:
    problems.append(f"stored offsets add up to {offsets}, not the 4 results and 2 events")
if events != 2 or dead != 0:
    problems.append(f"{events} events applied and {dead} dead letters, expected 2 and 0")
for problem in problems:
    print(f"check-example-consumer: {problem}")
sys.exit(1 if problems else 0)
PY
echo "check-example-consumer: passed ($((SECONDS - started)) s: killed mid-batch, resumed, run again; every purchase credited once)"
