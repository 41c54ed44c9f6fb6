#!/usr/bin/env bash
# The soak: the whole system on this machine under a steady load, judged at the end. receipt-ingest, two
# receipt-verifiers, SOAK_LEDGERS (1; 2 for a group of two) receipt-ledgers over a throwaway PostgreSQL with its
# durable defaults (fsync, full_page_writes and synchronous_commit on: the ledger's durability rule), embedded-kafka
# and the fake App Store (50-100 ms answers); submissions through the ingest at SOAK_RATE per second (one in 40 a
# resubmission, one acknowledged purchase in 50 refunded by a REFUND notification) plus SOAK_NOTIFICATION_RATE
# renewals/s, for SOAK_MINUTES. Every SOAK_INTERVAL_S seconds bench/soak-tool.py samples every process (RSS, or for
# PostgreSQL the private memory of all its processes; descriptors, threads, CPU), the verifiers' consumer lag, the
# ledger's lag (its stored offsets against the topics' ends), the throughput, the load average and the CPU spent
# outside the soak. Then the load stops, everything drains, and the independent reader of bench/chaos-tool.py checks
# the topics and every user's balance in the ledger. bench/soak-report.py writes report.md with PASS/FAIL for each
# criterion (its header lists them: one result per submission, every balance exact, drained, lag bounded, memory by
# its least-squares slope in MB/h over the last two thirds with a step told from a leak, descriptors and threads
# flat, the machine quiet, clean stops) and the plot; exit status 1 when one fails.
#
# The rate: SOAK_FIND_RATE=1 only finds it: it offers SOAK_FIND_START (100)/s, times SOAK_FIND_FACTOR (1.25) every
# SOAK_FIND_STEP_S (60) s, and reports the highest step at which everything kept up (bench/soak-tool.py find-rate:
# every submission answered 202, the acknowledged rate within 3 % of the offered one, the verifiers' and the
# ledger's lag under 2 s of traffic), then drains and checks as the soak does (find-rate.md). Without SOAK_RATE the
# soak first runs that (on a system of its own, started afresh), then soaks at SOAK_RATE_SHARE (0.9) of the rate it
# found.
#
#   SOAK_OUT=docs/soak bench/soak.sh          the full run: find the rate, then 30 minutes at 90 % of it (~50 min)
#   SOAK_FIND_RATE=1 bench/soak.sh            only find the rate (~10-15 min)
#   SOAK_RATE=300 SOAK_MINUTES=3 bench/soak.sh   a functional check (too short to judge the trends: FAIL says so)
#
# Other settings: SOAK_WARMUP_S (a quarter of the run, at most 300 s; the ingest's own warm-up lasts until its
# verdict index and its eviction queue are full: 2 x RESULT_INDEX_MAX_ENTRIES / SOAK_RATE + 60 s), SOAK_MAX_LAG
# and SOAK_MAX_LEDGER_LAG (messages; 10 s of traffic), SOAK_MAX_MB_PER_HOUR (5), SOAK_MAX_OTHER_CPU (15 % of a
# core), SOAK_BIN (use the executables there as they are instead of a release build), BENCH_KEEP_WORK=1 keeps the
# logs and topic copies.
# Output (SOAK_OUT, default .build/soak): report.md, soak.csv, soak.png, check.txt; find-rate.md,
# find-rate.csv (the steps), find-samples.csv, find-rate.png, find-check.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

SOAK_MINUTES="${SOAK_MINUTES:-30}"
SOAK_NOTIFICATION_RATE="${SOAK_NOTIFICATION_RATE:-5}"
SOAK_INTERVAL_S="${SOAK_INTERVAL_S:-10}"
SOAK_LEDGERS="${SOAK_LEDGERS:-1}"
SOAK_OUT="${SOAK_OUT:-$PWD/.build/soak}"
SOAK_OUT="$(mkdir -p "$SOAK_OUT" && cd "$SOAK_OUT" && pwd)"
SOAK_FIND_RATE="${SOAK_FIND_RATE:-0}"
SOAK_RATE_SHARE="${SOAK_RATE_SHARE:-0.9}"

if [ "$SOAK_FIND_RATE" != 1 ] && [ -z "${SOAK_RATE:-}" ]; then
    echo "soak: no SOAK_RATE: finding the rate this machine sustains first (SOAK_FIND_RATE=1)"
    SOAK_FIND_RATE=1 SOAK_OUT="$SOAK_OUT" "$0"
    found="$(grep '^SUSTAINED_RATE=' "$SOAK_OUT/find-rate.txt" | cut -d= -f2)"
    SOAK_RATE="$(awk -v r="$found" -v s="$SOAK_RATE_SHARE" 'BEGIN { printf "%d", r * s }')"
    if [ "$SOAK_RATE" -le 0 ]; then
        echo "soak: the machine sustained no step (see $SOAK_OUT/find-rate.md): nothing to soak at" >&2
        exit 1
    fi
    echo "soak: sustained $found/s; soaking at $SOAK_RATE/s ($SOAK_RATE_SHARE of it) for $SOAK_MINUTES min"
    export SOAK_RATE SOAK_FOUND_RATE="$found"
fi

for tool in kcat curl python3 psql; do
    command -v "$tool" >/dev/null || { echo "$tool is not installed (make deps)" >&2; exit 1; }
done
if ! command -v gnuplot >/dev/null; then
    echo "installing gnuplot-nox (the plot)" >&2
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends gnuplot-nox >/dev/null \
        || { $sudo_cmd apt-get update -qq \
            && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends gnuplot-nox \
                >/dev/null; }
fi

export CHAOS_LEDGERS="$SOAK_LEDGERS" POSTGRES_DURABLE=1
source bench/lib.sh
source bench/chaos-lib.sh
if [ -n "${SOAK_BIN:-}" ]; then
    BIN="$SOAK_BIN"
else
    bench_build embedded-kafka fake-appstore receipt-ingest receipt-verifier receipt-ledger
fi
bench_workspace
trap 'postgres_stop; bench_cleanup' EXIT

started_s=$SECONDS
postgres_start
pipeline_start
start_ledgers
ledger_tool_args
follow_topics
build="$(basename "$BIN")"
machine="$(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)"
echo "machine: $machine, load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
system="ingest, $CHAOS_VERIFIERS verifiers, $CHAOS_LEDGERS ledger(s), PostgreSQL $("$PG_BIN/postgres" --version |
    awk '{print $3}') durable (fsync, full_page_writes, synchronous_commit on), embedded-kafka, fake App Store \
${FAKE_LATENCY_MS:-50}+0..${FAKE_JITTER_MS:-50} ms, $RECEIPT_PARTITIONS submission partitions; executables $build"
echo "system: $system"

metric_args=(--ingest "$INGEST_URL/metrics")
sample_args=(--proc "ingest=$INGEST_PID")
judged=(ingest)
for ((n = 1; n <= CHAOS_VERIFIERS; n++)); do
    metric_args+=(--verifier "${VERIFIER_METRICS[$n]}")
    sample_args+=(--proc "verifier$n=${VERIFIER_PID[$n]}")
    judged+=("verifier$n")
done
for ((n = 1; n <= CHAOS_LEDGERS; n++)); do
    metric_args+=(--ledger "${LEDGER_URL[$n]}/metrics")
    sample_args+=(--proc "ledger$n=${LEDGER_PID[$n]}")
    judged+=("ledger$n")
done
judged+=(postgres)
sample_args+=(--tree "postgres=$POSTGRES_PID" --proc "kafka=$KAFKA_PID" --proc "fake=$FAKE_PID")
sample_args+=(--proc "kcat=$(IFS=,; echo "${FOLLOWER_PIDS[*]}")")
ledger_state_args=(--bootstrap "$BOOTSTRAP" --database-url "$LEDGER_DATABASE_URL"
    --ledger-topic "$RESULTS_TOPIC:$RESULT_PARTITIONS" --ledger-topic "$EVENTS_TOPIC:$OTHER_PARTITIONS")

# start_sampler CSV LOAD_PID: samples every process (the load and its children too) into CSV.
start_sampler() {
    python3 bench/soak-tool.py sample --out "$1" --interval "$SOAK_INTERVAL_S" "${sample_args[@]}" \
        --tree "load=$2" "${metric_args[@]}" "${ledger_state_args[@]}" &
    SAMPLER_PID=$!
    PIDS+=("$SAMPLER_PID")
}

stop_sampler() {
    kill -TERM "$SAMPLER_PID"
    wait "$SAMPLER_PID" || true
}

# drain_and_check CHECK_FILE: waits for the fake's notifications, the verifiers and the ledger to finish, checks
# everything with the independent reader into CHECK_FILE and stops the system; sets VERIFIERS_DRAINED,
# LEDGER_DRAINED, CHECK_PASSED, STOPPED (1 or 0).
drain_and_check() {
    VERIFIERS_DRAINED=1 LEDGER_DRAINED=1 CHECK_PASSED=1 STOPPED=1
    python3 bench/chaos-tool.py wait-notifications --fake "$FAKE_URL" --timeout 180 || CHECK_PASSED=0
    # shellcheck disable=SC2046
    python3 bench/chaos-tool.py drain $(verifier_metrics_args) --partitions "$INPUT_PARTITIONS" --timeout 300 \
        || VERIFIERS_DRAINED=0
    python3 bench/chaos-tool.py ledger-drain "${ledger_state_args[@]}" --timeout 300 || LEDGER_DRAINED=0
    sleep 2
    stop_followers
    local n
    for ((n = 1; n <= CHAOS_VERIFIERS; n++)); do
        kill -0 "${VERIFIER_PID[$n]}" 2>/dev/null || { echo "verifier $n died" >&2; STOPPED=0; }
    done
    for ((n = 1; n <= CHAOS_LEDGERS; n++)); do
        kill -0 "${LEDGER_PID[$n]}" 2>/dev/null || { echo "ledger $n died" >&2; STOPPED=0; }
    done
    kill -0 "$INGEST_PID" 2>/dev/null || { echo "the ingest died" >&2; STOPPED=0; }
    check_topics --fake "$FAKE_URL" "${LEDGER_TOOL_ARGS[@]}" >"$1" 2>&1 || CHECK_PASSED=0
    cat "$1"
    pipeline_stop || STOPPED=0
    postgres_stop
    local errors
    errors="$(cd "$WORK" && cat verifier-*.log ingest.log ledger-*.log | grep -c '"level":"error"' || true)"
    echo "error log lines (ingest, verifiers, ledgers): $errors" | tee -a "$1"
}

flag() { [ "$1" = 1 ] && echo "--$2" || true; }

if [ "$SOAK_FIND_RATE" = 1 ]; then
    : "${SOAK_FIND_START:=100}" "${SOAK_FIND_FACTOR:=1.25}" "${SOAK_FIND_STEP_S:=60}" "${SOAK_FIND_MAX:=3000}"
    echo "finding the rate: from $SOAK_FIND_START/s, x$SOAK_FIND_FACTOR every $SOAK_FIND_STEP_S s," \
        "$SOAK_NOTIFICATION_RATE notifications/s"
    : >"$WORK/find-rate.out"
    python3 bench/soak-tool.py find-rate --ingest "$INGEST_URL" --fake "$FAKE_URL" \
        --notification-rate "$SOAK_NOTIFICATION_RATE" --load-out "$WORK/load.tsv" --csv "$SOAK_OUT/find-rate.csv" \
        --start "$SOAK_FIND_START" --factor "$SOAK_FIND_FACTOR" --step-s "$SOAK_FIND_STEP_S" \
        --max-rate "$SOAK_FIND_MAX" "${ledger_state_args[@]}" \
        $(verifier_metrics_args | sed 's/^--metrics$/--verifier/') \
        >"$WORK/find-rate.out" &
    FIND_PID=$!
    PIDS+=("$FIND_PID")
    start_sampler "$SOAK_OUT/find-samples.csv" "$FIND_PID"
    tail -f --pid "$FIND_PID" "$WORK/find-rate.out" &
    wait "$FIND_PID" || true
    stop_sampler
    grep '^SUSTAINED_RATE=' "$WORK/find-rate.out" >"$SOAK_OUT/find-rate.txt" || echo "SUSTAINED_RATE=0" \
        >"$SOAK_OUT/find-rate.txt"
    echo "steps finished after $((SECONDS - started_s)) s; draining and checking"
    drain_and_check "$SOAK_OUT/find-check.txt"
    python3 bench/soak-report.py find-report --steps "$SOAK_OUT/find-rate.csv" --check "$SOAK_OUT/find-check.txt" \
        --samples "$SOAK_OUT/find-samples.csv" --cpus "$(nproc)" \
        --sustained "$(cut -d= -f2 "$SOAK_OUT/find-rate.txt")" --out "$SOAK_OUT/find-rate.md" \
        --setting "machine: $machine; load average at the end $(cut -d' ' -f1-3 /proc/loadavg)" \
        --setting "system: $system" \
        --setting "steps: from $SOAK_FIND_START/s, x$SOAK_FIND_FACTOR every $SOAK_FIND_STEP_S s, plus \
$SOAK_NOTIFICATION_RATE notifications/s" \
        $(flag "$VERIFIERS_DRAINED" verifiers-drained) $(flag "$LEDGER_DRAINED" ledger-drained) \
        $(flag "$STOPPED" stopped) || CHECK_PASSED=0
    python3 bench/soak-report.py plot-script --csv "$SOAK_OUT/find-samples.csv" --png "$SOAK_OUT/find-rate.png" \
        --title "finding the rate: steps from $SOAK_FIND_START/s x$SOAK_FIND_FACTOR every $SOAK_FIND_STEP_S s" \
        "${judged[@]/#/--judge=}" >"$WORK/find-rate.gnuplot"
    gnuplot "$WORK/find-rate.gnuplot"
    echo "find-rate finished in $((SECONDS - started_s)) s: $(cat "$SOAK_OUT/find-rate.txt"); report" \
        "$SOAK_OUT/find-rate.md"
    [ "$CHECK_PASSED" = 1 ] && [ "$STOPPED" = 1 ] && [ "$VERIFIERS_DRAINED" = 1 ] && [ "$LEDGER_DRAINED" = 1 ]
    exit
fi

duration_s=$(awk -v m="$SOAK_MINUTES" 'BEGIN { printf "%d", m * 60 }')
default_warmup=$((duration_s / 4 < 300 ? duration_s / 4 : 300))
SOAK_WARMUP_S="${SOAK_WARMUP_S:-$default_warmup}"
# The ingest's verdict index grows until RESULT_INDEX_MAX_ENTRIES (100,000; the ingest reads it from this
# environment) results are in, and the queue that orders them for eviction keeps growing its storage until it has
# taken twice that many (ResultIndexState's FIFOQueue compacts once its consumed head is half of it): by design, not a
# leak, so the ingest's warm-up lasts until 2 x RESULT_INDEX_MAX_ENTRIES results are in (plus a minute).
index_fill_s=$(awk -v n="${RESULT_INDEX_MAX_ENTRIES:-100000}" -v r="$SOAK_RATE" 'BEGIN { printf "%d", 2 * n / r + 60 }')
ingest_warmup=$((SOAK_WARMUP_S > index_fill_s ? SOAK_WARMUP_S : index_fill_s))
SOAK_MAX_LAG="${SOAK_MAX_LAG:-$((SOAK_RATE * 10))}"
SOAK_MAX_LEDGER_LAG="${SOAK_MAX_LEDGER_LAG:-$((SOAK_RATE * 10))}"
echo "soak: $SOAK_RATE submissions/s and $SOAK_NOTIFICATION_RATE notifications/s for $SOAK_MINUTES min; samples" \
    "every $SOAK_INTERVAL_S s, warm-up $SOAK_WARMUP_S s (the ingest $ingest_warmup s)"
python3 bench/chaos-tool.py load --ingest "$INGEST_URL" --rate "$SOAK_RATE" --out "$WORK/load.tsv" --run soak \
    --duration "$duration_s" --fake "$FAKE_URL" --notification-rate "$SOAK_NOTIFICATION_RATE" \
    >"$WORK/load-summary.json" 2>"$WORK/load.log" &
LOAD_PID=$!
PIDS+=("$LOAD_PID")
start_sampler "$SOAK_OUT/soak.csv" "$LOAD_PID"
wait "$LOAD_PID" || true
stop_sampler
load_summary="$(cat "$WORK/load-summary.json")"
echo "load finished after $((SECONDS - started_s)) s: $load_summary"
drain_and_check "$SOAK_OUT/check.txt"

note=""
if [ "$SOAK_MINUTES" != 30 ] || [ "$build" != "release" ]; then
    note="Not the soak's figures: a $SOAK_MINUTES-minute run of the $build executables (a functional check)."
fi
status=0
python3 bench/soak-report.py report --csv "$SOAK_OUT/soak.csv" --check "$SOAK_OUT/check.txt" \
    --out "$SOAK_OUT/report.md" --title "Soak: $SOAK_RATE submissions/s for $SOAK_MINUTES min" \
    ${note:+--note "$note"} --rate "$SOAK_RATE" --interval "$SOAK_INTERVAL_S" --cpus "$(nproc)" \
    --warmup "$SOAK_WARMUP_S" --warmup-for "ingest=$ingest_warmup" "${judged[@]/#/--judge=}" \
    --max-lag "$SOAK_MAX_LAG" --max-ledger-lag "$SOAK_MAX_LEDGER_LAG" \
    --max-mb-per-hour "${SOAK_MAX_MB_PER_HOUR:-5}" --max-other-cpu "${SOAK_MAX_OTHER_CPU:-15}" \
    --setting "machine: $machine; load average at the end $(cut -d' ' -f1-3 /proc/loadavg)" \
    --setting "system: $system" \
    --setting "load: $SOAK_RATE submissions/s${SOAK_FOUND_RATE:+ ($SOAK_RATE_SHARE of the $SOAK_FOUND_RATE/s found: \
[find-rate.md](find-rate.md))} and $SOAK_NOTIFICATION_RATE notifications/s for $SOAK_MINUTES min; the load \
generator: $load_summary" \
    ${SOAK_FOUND_RATE:+--find-csv find-rate.csv} --load-summary "$WORK/load-summary.json" \
    $(flag "$VERIFIERS_DRAINED" verifiers-drained) $(flag "$LEDGER_DRAINED" ledger-drained) \
    $(flag "$STOPPED" stopped) >/dev/null || status=1
python3 bench/soak-report.py plot-script --csv "$SOAK_OUT/soak.csv" --png "$SOAK_OUT/soak.png" \
    --title "soak: $SOAK_RATE submissions/s for $SOAK_MINUTES min (ingest, $CHAOS_VERIFIERS verifiers, \
$CHAOS_LEDGERS ledger(s), PostgreSQL durable, embedded-kafka, fake App Store)" "${judged[@]/#/--judge=}" \
    >"$WORK/soak.gnuplot"
gnuplot "$WORK/soak.gnuplot"
grep -E '^\| |^\*\*' "$SOAK_OUT/report.md" | head -30
echo "report $SOAK_OUT/report.md, plot $SOAK_OUT/soak.png, samples $SOAK_OUT/soak.csv"
echo "soak finished in $((SECONDS - started_s)) s, load average $(cut -d' ' -f1-3 /proc/loadavg):" \
    "$([ "$status" -eq 0 ] && echo PASS || echo FAIL)"
exit $status
