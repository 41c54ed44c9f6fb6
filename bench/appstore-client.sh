#!/usr/bin/env bash
# The App Store client benchmark: N verifications at VERIFIER_MAX_IN_FLIGHT (512) through the libcurl client against
# the fake App Store (100 ms latency) on this machine. Prints achieved rate, ideal rate and client CPU µs per
# verification. Release build.
#
#   bench/appstore-client.sh [--count N] [--in-flight N] [--latency-ms N] [--jitter-ms N]
set -euo pipefail
cd "$(dirname "$0")/.."

COUNT=40000
IN_FLIGHT="${VERIFIER_MAX_IN_FLIGHT:-512}"
LATENCY_MS=100
JITTER_MS=0
while [ $# -gt 0 ]; do
    case "$1" in
        --count) COUNT="$2"; shift 2 ;;
        --in-flight) IN_FLIGHT="$2"; shift 2 ;;
        --latency-ms) LATENCY_MS="$2"; shift 2 ;;
        --jitter-ms) JITTER_MS="$2"; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done

source bench/lib.sh
bench_build fake-appstore appstore-client-bench

FAKE_OUT="$(mktemp)"
FAKE_LOG="$(mktemp)"
"$BIN/fake-appstore" --port 0 --latency-ms "$LATENCY_MS" --jitter-ms "$JITTER_MS" --threads 2 \
    >"$FAKE_OUT" 2>"$FAKE_LOG" &
FAKE_PID=$!
cleanup() {
    kill "$FAKE_PID" 2>/dev/null || true
    wait "$FAKE_PID" 2>/dev/null || true
    rm -f "$FAKE_OUT" "$FAKE_LOG"
}
trap cleanup EXIT

for _ in $(seq 1 100); do
    if grep -q '^FAKE_APPSTORE_URL=' "$FAKE_OUT"; then break; fi
    sleep 0.05
done
URL="$(grep '^FAKE_APPSTORE_URL=' "$FAKE_OUT" | head -1 | cut -d= -f2-)"
if [ -z "$URL" ]; then echo "fake-appstore did not start:" >&2; cat "$FAKE_LOG" >&2; exit 1; fi

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)"
echo "fake App Store: $URL, latency ${LATENCY_MS} ms + jitter 0..${JITTER_MS} ms"
FAKE_CPU_BEFORE=$(awk '{print $14 + $15}' "/proc/$FAKE_PID/stat")
"$BIN/appstore-client-bench" --url "$URL" --count "$COUNT" --in-flight "$IN_FLIGHT" --latency-ms "$LATENCY_MS"
FAKE_CPU_AFTER=$(awk '{print $14 + $15}' "/proc/$FAKE_PID/stat")
TICKS=$(getconf CLK_TCK)
# The fake served the warm-up (2,048 verifications) too.
echo "fake App Store CPU:       $(( (FAKE_CPU_AFTER - FAKE_CPU_BEFORE) * 1000000 / TICKS / (COUNT + 2048) )) µs per request"
