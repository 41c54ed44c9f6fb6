#!/usr/bin/env bash
# The chaos run: the whole system under load (receipt-ingest, two receipt-verifiers, two receipt-ledgers over a
# throwaway PostgreSQL, embedded-kafka, the fake App Store; submissions through the ingest at CHAOS_RATE per second,
# one in 40 a resubmission of an earlier purchase, plus a stream of App Store Server Notifications the fake signs and
# POSTs to the ingest, among them a full REFUND of one acknowledged purchase in 50), while faults hit it at random
# times, one after another:
#   - SIGKILL of a random verifier (restarted at once), CHAOS_VERIFIER_KILLS times;
#   - SIGKILL of the ingest (restarted after 2 s), CHAOS_INGEST_KILLS times;
#   - the broker frozen (SIGSTOP of embedded-kafka, SIGCONT after CHAOS_BROKER_STOP_S: unresponsive, not gone, since
#     the mock cluster keeps its data in memory), CHAOS_BROKER_STOPS times;
#   - Apple down for CHAOS_APPLE_OUTAGE_S, answering 21005, HTTP 503 and nothing at all (timeouts) in turns;
#   - SIGKILL of a random ledger (restarted at once), CHAOS_LEDGER_KILLS times, each halfway through the pause before
#     another fault (no time of its own), while spend batches wait in the database: a lock on wallet_requests, taken
#     just before and held 1.5 s, stops every spend batch at its last write (lots, attributions, balances and history
#     written, nothing committed), so the kill lands mid-batch with spends in flight;
#   - PostgreSQL crashed (immediate shutdown, SIGQUIT: crash recovery at the next start) and started again after
#     CHAOS_POSTGRES_DOWN_S, CHAOS_POSTGRES_CRASHES times.
# All along, a wallet client (bench/chaos-tool.py wallet) spends and grants gems of the first CHAOS_WALLET_USERS users
# through both ledgers at CHAOS_WALLET_RATE per second (one in 12 a grant, each request to a ledger at random), retries
# every request whose answer is not final (connection dropped or refused, 503, key in flight) with its key until it
# is, and replays one final answer in 10 with the same key 0.5 to 3 s later.
# Then the load stops, the system drains (consumer lag 0 on every input partition, all owned), and an independent
# reader checks what reached the topics (kcat copies them while they are written; bench/chaos-tool.py check):
#   every acknowledged submission (202) is on the topic and has a result; no submission has results that disagree
#   (outcome, reason, transactions) or a wrong verdict; every notification the ingest answered 200 has an event; the
#   reader saw every partition to its end; duplicates are counted and attributed to the fault before them. The ledger
#   drains too (its stored offsets reach the end of the results and events topics), and then every user's balance
#   (GET /v1/users/{id}, and no balance in its table for anyone else) equals what the topics say was bought (each
#   credit_key once, amount x quantity) minus the purchases a debit event refunded; every acknowledged purchase is
#   credited by the topics to the user the load bought it for; the ledger's dead_letters table is empty. With the
#   spends: every spend answered 200 is applied exactly once (its key in wallet_requests, its units attributed and in
#   its history entry), every 409 insufficient_balance changed nothing, every request whose answer was lost got a
#   final answer by its retries and was applied once or not at all as that answer says, every replay answered its first
#   answer; each refund took back (wallet_clawbacks, wallet_takes) only purchased units of its owner, takes +
#   unrecovered = the purchase; lots, history and balances agree; and the balances above are credits + grants -
#   applied spends - take-backs, per user and item (bench/chaos-tool.py check_wallet).
# Exit status 1 on any violation, a service that died by itself, or a group that did not drain.
#
#   bench/chaos.sh                  the long form: 10 verifier kills, 1 ingest kill, 2 broker stops of 20 s, a
#                                   2-minute Apple outage, 4 ledger kills, a PostgreSQL crash (down 10 s),
#                                   500 submissions/s (about 10 minutes)
#   CHAOS_SHORT=1 bench/chaos.sh    the short form for CI: 2 verifier kills, 1 ingest kill, one 8 s broker stop,
#                                   a 12 s Apple outage, 1 ledger kill, 100 submissions/s (under 2 minutes)
#
# Settings (environment): CHAOS_RATE, CHAOS_NOTIFICATION_RATE, CHAOS_VERIFIER_KILLS, CHAOS_INGEST_KILLS,
# CHAOS_BROKER_STOPS, CHAOS_BROKER_STOP_S, CHAOS_APPLE_OUTAGE_S, CHAOS_LEDGER_KILLS, CHAOS_POSTGRES_CRASHES,
# CHAOS_POSTGRES_DOWN_S, CHAOS_LEDGERS (default 2), CHAOS_WALLET_RATE (spends and grants per second; 0: none),
# CHAOS_WALLET_USERS (default 250), CHAOS_GAP_MIN_S / CHAOS_GAP_MAX_S (pause before each fault), CHAOS_WARMUP_S,
# CHAOS_TAIL_S, CHAOS_SEED (the fault order and times; printed), RECEIPT_PARTITIONS (default 16: the mock cluster
# keeps 5 MB per partition, and the outage's backlog must fit), BENCH_CONFIGURATION (release by default), CHAOS_BIN (use the executables in this directory as they are: `make test` passes its debug
# build), BENCH_KEEP_WORK=1 keeps the logs and topic copies.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "${CHAOS_SHORT:-}" ]; then
    : "${CHAOS_RATE:=100}" "${CHAOS_NOTIFICATION_RATE:=2}" "${CHAOS_VERIFIER_KILLS:=2}" "${CHAOS_INGEST_KILLS:=1}"
    : "${CHAOS_BROKER_STOPS:=1}" "${CHAOS_BROKER_STOP_S:=8}" "${CHAOS_APPLE_OUTAGE_S:=12}"
    : "${CHAOS_GAP_MIN_S:=4}" "${CHAOS_GAP_MAX_S:=6}" "${CHAOS_WARMUP_S:=8}" "${CHAOS_TAIL_S:=5}"
    : "${CHAOS_DRAIN_TIMEOUT_S:=90}" "${CHAOS_LEDGER_KILLS:=1}" "${CHAOS_POSTGRES_CRASHES:=0}"
    : "${CHAOS_WALLET_RATE:=40}"
else
    : "${CHAOS_RATE:=500}" "${CHAOS_NOTIFICATION_RATE:=5}" "${CHAOS_VERIFIER_KILLS:=10}" "${CHAOS_INGEST_KILLS:=1}"
    : "${CHAOS_BROKER_STOPS:=2}" "${CHAOS_BROKER_STOP_S:=20}" "${CHAOS_APPLE_OUTAGE_S:=120}"
    : "${CHAOS_GAP_MIN_S:=20}" "${CHAOS_GAP_MAX_S:=30}" "${CHAOS_WARMUP_S:=30}" "${CHAOS_TAIL_S:=30}"
    : "${CHAOS_DRAIN_TIMEOUT_S:=300}" "${CHAOS_LEDGER_KILLS:=4}" "${CHAOS_POSTGRES_CRASHES:=1}"
    : "${CHAOS_WALLET_RATE:=100}"
fi
: "${CHAOS_POSTGRES_DOWN_S:=10}" "${CHAOS_WALLET_USERS:=250}"
CHAOS_SEED="${CHAOS_SEED:-$((RANDOM * 32768 + RANDOM))}"
for tool in kcat curl python3 psql; do
    command -v "$tool" >/dev/null || { echo "$tool is not installed (make deps)" >&2; exit 1; }
done

source bench/lib.sh
source bench/chaos-lib.sh
if [ -n "${CHAOS_BIN:-}" ]; then
    BIN="$CHAOS_BIN"
else
    bench_build embedded-kafka fake-appstore receipt-ingest receipt-verifier receipt-ledger
fi
bench_workspace

# Retry rounds outlast the outage (20 rounds, 2 s doubling to 10 s: over 3 minutes of failed rounds, and rounds do not
# count while the breaker is open), with short waits so the system drains seconds after Apple is back. Apple calls
# time out after 3 s (the outage's "no answer" turns).
VERIFIER_EXTRA="VERIFIER_RETRY_ROUNDS=20 VERIFIER_RETRY_BACKOFF_MS=2000 VERIFIER_RETRY_MAX_BACKOFF_MS=10000"
VERIFIER_EXTRA="$VERIFIER_EXTRA APPLE_TIMEOUT_MS=3000 VERIFIER_BREAKER_PROBE_MS=500 VERIFIER_BREAKER_MAX_PROBE_MS=4000"
export VERIFIER_EXTRA

started_s=$SECONDS
postgres_start
# PostgreSQL is stopped on every way out (bench_cleanup stops the other processes).
trap 'postgres_stop; bench_cleanup' EXIT
pipeline_start
start_ledgers
follow_topics
FAULTS="$WORK/faults.tsv"
: >"$FAULTS"
fault() {  # fault NAME DETAIL: logs a fault with its wall time (the checker attributes duplicates to it)
    printf '%s\t%s\t%s\n' "$(date +%s%3N)" "$1" "$2" >>"$FAULTS"
    printf '  %4ds  %-18s %s\n' "$((SECONDS - started_s))" "$1" "$2"
}
outage() {  # outage on|off [MODE]
    if [ "$1" = on ]; then
        curl -fsS -X POST -o /dev/null "$FAKE_URL/admin/outage?on=1&mode=$2"
    else
        curl -fsS -X POST -o /dev/null "$FAKE_URL/admin/outage?on=0"
    fi
}

echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
echo "chaos: ${CHAOS_SHORT:+short form, }$CHAOS_RATE submissions/s and $CHAOS_NOTIFICATION_RATE notifications/s" \
    "through the ingest, $CHAOS_VERIFIERS verifiers, $CHAOS_LEDGERS ledgers, $RECEIPT_PARTITIONS submission" \
    "partitions, seed $CHAOS_SEED"
python3 bench/chaos-tool.py load --ingest "$INGEST_URL" --rate "$CHAOS_RATE" --out "$WORK/load.tsv" --run chaos \
    --fake "$FAKE_URL" --notification-rate "$CHAOS_NOTIFICATION_RATE" >"$WORK/load-summary.json" \
    2>"$WORK/load.log" &
LOAD_PID=$!
PIDS+=("$LOAD_PID")
WALLET_ARGS=()
if [ "$CHAOS_WALLET_RATE" != 0 ]; then
    for ((n = 1; n <= CHAOS_LEDGERS; n++)); do WALLET_ARGS+=(--ledger "${LEDGER_URL[$n]}"); done
    python3 bench/chaos-tool.py wallet "${WALLET_ARGS[@]}" --rate "$CHAOS_WALLET_RATE" --users "$CHAOS_WALLET_USERS" \
        --out "$WORK/wallet.tsv" --run "chaos-$CHAOS_SEED" --seed "$CHAOS_SEED" >"$WORK/wallet-summary.json" \
        2>"$WORK/wallet.log" &
    WALLET_PID=$!
    PIDS+=("$WALLET_PID")
    echo "wallet: $CHAOS_WALLET_RATE spends and grants/s of $CHAOS_WALLET_USERS users through the" \
        "$CHAOS_LEDGERS ledgers"
fi

# The faults, in a random order (CHAOS_SEED), each after a random pause.
RANDOM=$CHAOS_SEED
events=()
for ((i = 0; i < CHAOS_VERIFIER_KILLS; i++)); do events+=(verifier-kill); done
for ((i = 0; i < CHAOS_INGEST_KILLS; i++)); do events+=(ingest-kill); done
for ((i = 0; i < CHAOS_BROKER_STOPS; i++)); do events+=(broker-stop); done
for ((i = 0; i < CHAOS_POSTGRES_CRASHES; i++)); do events+=(postgres-crash); done
if [ "$CHAOS_APPLE_OUTAGE_S" -gt 0 ]; then events+=(apple-outage); fi
for ((i = ${#events[@]} - 1; i > 0; i--)); do
    j=$((RANDOM % (i + 1)))
    swap="${events[$i]}"; events[$i]="${events[$j]}"; events[$j]="$swap"
done
# Ledger kills take no time of their own: each happens halfway through the pause before a random fault.
declare -A ledger_kills_before
for ((i = 0; i < CHAOS_LEDGER_KILLS; i++)); do
    j=$((RANDOM % ${#events[@]}))
    ledger_kills_before[$j]=$((${ledger_kills_before[$j]:-0} + 1))
done
ledger_kill() {
    local n=$((RANDOM % CHAOS_LEDGERS + 1))
    count[ledger-kill]=$((${count[ledger-kill]:-0} + 1))
    # Printed, not in $FAULTS: the verifiers' duplicate results stay attributed to the faults that caused them.
    printf '  %4ds  %-18s %s\n' "$((SECONDS - started_s))" "ledger-kill#${count[ledger-kill]}" \
        "SIGKILL ledger $n (pid ${LEDGER_PID[$n]}), restarted at once"
    # Every spend batch stops at its last write (wallet_requests) while this lock is held: the kill lands mid-batch.
    psql "$LEDGER_DATABASE_URL" -X -q -c \
        "BEGIN; LOCK TABLE wallet_requests IN SHARE MODE; SELECT pg_sleep(1.5); COMMIT" >/dev/null 2>&1 &
    local holder=$!
    sleep 0.7
    kill -KILL "${LEDGER_PID[$n]}"
    wait "${LEDGER_PID[$n]}" 2>/dev/null || true
    wait "$holder" || true
    start_ledger "$n"
}
sleep "$CHAOS_WARMUP_S"
declare -A count
for index in "${!events[@]}"; do
    event="${events[$index]}"
    # A pause of GAP_MIN..GAP_MAX seconds in tenths (halved around the ledger kills scheduled here).
    pause="$(awk -v a="$CHAOS_GAP_MIN_S" -v b="$CHAOS_GAP_MAX_S" -v r="$RANDOM" \
        'BEGIN { printf "%.1f", a + (b - a) * r / 32767 }')"
    if [ -n "${ledger_kills_before[$index]:-}" ]; then
        half="$(awk -v p="$pause" 'BEGIN { printf "%.1f", p / 2 }')"
        sleep "$half"
        for ((k = 0; k < ledger_kills_before[$index]; k++)); do ledger_kill; done
        sleep "$half"
    else
        sleep "$pause"
    fi
    count[$event]=$((${count[$event]:-0} + 1))
    name="$event#${count[$event]}"
    case "$event" in
        verifier-kill)
            n=$((RANDOM % CHAOS_VERIFIERS + 1))
            fault "$name" "SIGKILL verifier $n (pid ${VERIFIER_PID[$n]}), restarted at once"
            kill -KILL "${VERIFIER_PID[$n]}"
            wait "${VERIFIER_PID[$n]}" 2>/dev/null || true
            start_verifier "$n"
            ;;
        ingest-kill)
            fault "$name" "SIGKILL ingest (pid $INGEST_PID), restarted after 2 s"
            kill -KILL "$INGEST_PID"
            wait "$INGEST_PID" 2>/dev/null || true
            sleep 2
            start_ingest
            ;;
        broker-stop)
            fault "$name" "SIGSTOP embedded-kafka for ${CHAOS_BROKER_STOP_S} s"
            kill -STOP "$KAFKA_PID"
            sleep "$CHAOS_BROKER_STOP_S"
            kill -CONT "$KAFKA_PID"
            ;;
        postgres-crash)
            fault "$name" "PostgreSQL immediate shutdown (a crash), started again after ${CHAOS_POSTGRES_DOWN_S} s"
            postgres_crash
            sleep "$CHAOS_POSTGRES_DOWN_S"
            postgres_run
            ;;
        apple-outage)
            fault "$name" "Apple down ${CHAOS_APPLE_OUTAGE_S} s: 21005, HTTP 503, no answer, in turns"
            turn=$((CHAOS_APPLE_OUTAGE_S / 6 > 0 ? CHAOS_APPLE_OUTAGE_S / 6 : 1))
            end_s=$((SECONDS + CHAOS_APPLE_OUTAGE_S))
            while [ "$SECONDS" -lt "$end_s" ]; do
                for mode in status21005 http503 hang; do
                    [ "$SECONDS" -lt "$end_s" ] || break
                    outage on "$mode"
                    left=$((end_s - SECONDS))
                    sleep $((left < turn ? left : turn))
                done
            done
            outage off
            ;;
    esac
done
sleep "$CHAOS_TAIL_S"
kill -TERM "$LOAD_PID"
if [ -n "${WALLET_PID:-}" ]; then kill -USR1 "$WALLET_PID"; fi  # no new requests; the ones made get final answers
wait "$LOAD_PID" || true
load_s=$((SECONDS - started_s))
echo "load stopped after ${load_s} s: $(cat "$WORK/load-summary.json")"
WALLET_CHECK=()
if [ -n "${WALLET_PID:-}" ]; then
    # Every request it made gets a final answer first (retried with its key; the ledgers are up).
    wait "$WALLET_PID" || true
    echo "wallet client stopped: $(cat "$WORK/wallet-summary.json")"
    WALLET_CHECK=(--wallet "$WORK/wallet.tsv")
fi

status=0
# Notifications still being retried by the fake would be answered 200 after the check looked for their events.
python3 bench/chaos-tool.py wait-notifications --fake "$FAKE_URL" --timeout 180 || status=1
# shellcheck disable=SC2046
python3 bench/chaos-tool.py drain $(verifier_metrics_args) --partitions "$INPUT_PARTITIONS" \
    --timeout "$CHAOS_DRAIN_TIMEOUT_S" || status=1
ledger_tool_args
python3 bench/chaos-tool.py ledger-drain --bootstrap "$BOOTSTRAP" "${LEDGER_TOOL_ARGS[@]}" \
    --timeout "$CHAOS_DRAIN_TIMEOUT_S" || status=1
sleep 2
stop_followers

for ((n = 1; n <= CHAOS_VERIFIERS; n++)); do
    kill -0 "${VERIFIER_PID[$n]}" 2>/dev/null || { echo "verifier $n died by itself" >&2; status=1; }
done
kill -0 "$INGEST_PID" 2>/dev/null || { echo "the ingest died by itself" >&2; status=1; }
for ((n = 1; n <= CHAOS_LEDGERS; n++)); do
    kill -0 "${LEDGER_PID[$n]}" 2>/dev/null || { echo "ledger $n died by itself" >&2; status=1; }
done
check_topics --faults "$FAULTS" --fake "$FAKE_URL" "${LEDGER_TOOL_ARGS[@]}" "${WALLET_CHECK[@]}" || status=1
pipeline_stop || status=1
postgres_stop
for logs in "verifier-*.log ingest.log" "ledger-*.log"; do
    # shellcheck disable=SC2086
    errors="$(cd "$WORK" && cat $logs | grep -c '"level":"error"' || true)"
    echo "error log lines ($logs): $errors"
    if [ "$errors" -gt 0 ]; then
        # shellcheck disable=SC2086
        (cd "$WORK" && cat $logs) | grep '"level":"error"' | sed 's/"ts":"[^"]*",//' \
            | cut -c1-200 | sort | uniq -c | sort -rn | head -8 || true  # head closing early: SIGPIPE, not a failure
    fi
done
echo "ledger kills: ${count[ledger-kill]:-0}, PostgreSQL crashes: ${count[postgres-crash]:-0}"
echo "chaos ${CHAOS_SHORT:+(short) }finished in $((SECONDS - started_s)) s (seed $CHAOS_SEED), load average" \
    "$(cut -d' ' -f1-3 /proc/loadavg): $([ "$status" -eq 0 ] && echo PASS || echo FAIL)"
exit $status
