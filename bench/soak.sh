#!/usr/bin/env bash
# The soak: receipt-ingest, two receipt-verifiers, embedded-kafka and the fake App Store (50-100 ms answers) under a
# steady SOAK_RATE submissions/s through the ingest (plus SOAK_NOTIFICATION_RATE App Store Server Notifications/s)
# for SOAK_MINUTES, all on this machine. Every SOAK_INTERVAL_S seconds it samples RSS, open file descriptors and
# threads of every process (/proc) and the consumer lag and counters (the services' /metrics) into a CSV, and plots
# it (gnuplot, installed from Debian if missing). Then it drains and checks with an independent reader (kcat copies
# of the topics, bench/chaos-tool.py check): every 202 is on the submissions topic and has exactly one verdict
# (duplicates counted), the expected one; every notification answered 200 has an event.
#
# Pass criteria (printed at the end; exit status 1 when one fails): for the ingest and both verifiers, after the
# warm-up (SOAK_WARMUP_S, default 300 s or a quarter of the run), the least-squares slope of RSS and of fds over the
# last two thirds of the samples stays under SOAK_MAX_SLOPE (1) % of their level per 10 minutes, or, when it does
# not, the last third reaches no new high (a high-water mark, such as a buffer grown once at a load spike, is not a
# leak; a leak keeps growing). Those two thirds must span 10 minutes at least, or the trends are not judged (a
# per-10-minutes trend read off a minute is allocator noise): a run shorter than ~20 minutes after the warm-up fails
# with "run longer"; consumer lag never above SOAK_MAX_LAG (default 10 s of traffic) after the warm-up;
# the topic check without a violation.
#
#   bench/soak.sh                                   1,000/s for 30 minutes (the figures in docs/BENCHMARKS.md)
#   SOAK_MINUTES=3 SOAK_RATE=500 bench/soak.sh      a quick look
#
# Output (SOAK_OUT, default .build/soak): soak.csv, soak.png, soak.gnuplot, report.txt. Release build.
set -euo pipefail
cd "$(dirname "$0")/.."

SOAK_MINUTES="${SOAK_MINUTES:-30}"
SOAK_RATE="${SOAK_RATE:-1000}"
SOAK_NOTIFICATION_RATE="${SOAK_NOTIFICATION_RATE:-5}"
SOAK_INTERVAL_S="${SOAK_INTERVAL_S:-10}"
duration_s=$(awk -v m="$SOAK_MINUTES" 'BEGIN { printf "%d", m * 60 }')
default_warmup=$((duration_s / 4 < 300 ? duration_s / 4 : 300))
# The ingest's verdict index grows until RESULT_INDEX_MAX_ENTRIES (100,000; the ingest reads it from this
# environment) results are in: 100 s at 1,000/s, half an hour at 50/s. That growth is by design, not a leak, so the
# warm-up lasts at least until the index is full (plus a minute).
index_fill_s=$(awk -v n="${RESULT_INDEX_MAX_ENTRIES:-100000}" -v r="$SOAK_RATE" 'BEGIN { printf "%d", n / r + 60 }')
default_warmup=$((default_warmup > index_fill_s ? default_warmup : index_fill_s))
SOAK_WARMUP_S="${SOAK_WARMUP_S:-$default_warmup}"
SOAK_MAX_SLOPE="${SOAK_MAX_SLOPE:-1}"
SOAK_MAX_LAG="${SOAK_MAX_LAG:-$(awk -v r="$SOAK_RATE" 'BEGIN { printf "%d", r * 10 }')}"
SOAK_OUT="${SOAK_OUT:-$PWD/.build/soak}"
for tool in kcat curl python3; do
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

source bench/lib.sh
source bench/chaos-lib.sh
bench_build embedded-kafka fake-appstore receipt-ingest receipt-verifier
bench_workspace
mkdir -p "$SOAK_OUT"

started_s=$SECONDS
pipeline_start
follow_topics
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)," \
    "load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
echo "soak: $SOAK_RATE submissions/s and $SOAK_NOTIFICATION_RATE notifications/s through the ingest for" \
    "$SOAK_MINUTES min, $CHAOS_VERIFIERS verifiers, $RECEIPT_PARTITIONS submission partitions, fake App Store" \
    "${FAKE_LATENCY_MS:-50}+0..${FAKE_JITTER_MS:-50} ms; samples every ${SOAK_INTERVAL_S} s, warm-up ${SOAK_WARMUP_S} s"

python3 bench/chaos-tool.py load --ingest "$INGEST_URL" --rate "$SOAK_RATE" --out "$WORK/load.tsv" --run soak \
    --duration "$duration_s" --fake "$FAKE_URL" --notification-rate "$SOAK_NOTIFICATION_RATE" \
    >"$WORK/load-summary.json" 2>"$WORK/load.log" &
LOAD_PID=$!
PIDS+=("$LOAD_PID")
sample_args=(--proc "ingest=$INGEST_PID")
metric_args=(--metrics "ingest=$INGEST_URL/metrics")
for ((n = 1; n <= CHAOS_VERIFIERS; n++)); do
    sample_args+=(--proc "verifier$n=${VERIFIER_PID[$n]}")
    metric_args+=(--metrics "verifier$n=${VERIFIER_METRICS[$n]}")
done
# The cluster, the fake and the load generator are sampled for the record; the criteria judge our services.
sample_args+=(--proc "kafka=$KAFKA_PID" --proc "fake=$FAKE_PID" --proc "load=$LOAD_PID")
python3 bench/chaos-tool.py sample --out "$SOAK_OUT/soak.csv" --interval "$SOAK_INTERVAL_S" "${sample_args[@]}" \
    "${metric_args[@]}" &
SAMPLER_PID=$!
PIDS+=("$SAMPLER_PID")
wait "$LOAD_PID" || true
kill -TERM "$SAMPLER_PID"
wait "$SAMPLER_PID" || true
echo "load finished after $((SECONDS - started_s)) s: $(cat "$WORK/load-summary.json")"

status=0
python3 bench/chaos-tool.py wait-notifications --fake "$FAKE_URL" --timeout 180 || status=1
# shellcheck disable=SC2046
python3 bench/chaos-tool.py drain $(verifier_metrics_args) --partitions "$INPUT_PARTITIONS" --timeout 300 || status=1
sleep 2
stop_followers
for ((n = 1; n <= CHAOS_VERIFIERS; n++)); do
    kill -0 "${VERIFIER_PID[$n]}" 2>/dev/null || { echo "verifier $n died" >&2; status=1; }
done
kill -0 "$INGEST_PID" 2>/dev/null || { echo "the ingest died" >&2; status=1; }
judge_args=(--judge ingest)
for ((n = 1; n <= CHAOS_VERIFIERS; n++)); do judge_args+=(--judge "verifier$n"); done
{
    verdict=0
    python3 bench/chaos-tool.py soak-report --csv "$SOAK_OUT/soak.csv" --warmup "$SOAK_WARMUP_S" \
        --max-lag "$SOAK_MAX_LAG" --max-slope "$SOAK_MAX_SLOPE" "${judge_args[@]}" || verdict=1
    check_topics --fake "$FAKE_URL" || verdict=1
    exit $verdict
} | tee "$SOAK_OUT/report.txt" || status=1
python3 bench/chaos-tool.py plot-script --csv "$SOAK_OUT/soak.csv" --png "$SOAK_OUT/soak.png" \
    --title "soak: $SOAK_RATE submissions/s for $SOAK_MINUTES min (ingest, 2 verifiers, embedded-kafka, fake App Store)" \
    >"$SOAK_OUT/soak.gnuplot"
gnuplot "$SOAK_OUT/soak.gnuplot"
pipeline_stop || status=1
echo "csv $SOAK_OUT/soak.csv, plot $SOAK_OUT/soak.png, report $SOAK_OUT/report.txt"
echo "soak finished in $((SECONDS - started_s)) s, load average $(cut -d' ' -f1-3 /proc/loadavg):" \
    "$([ "$status" -eq 0 ] && echo PASS || echo FAIL)"
exit $status
