#!/usr/bin/env bash
# The HTTP client's work per Apple call as a repeatable figure (issue 43): appstore-client-bench (release; receipt
# verifications through ReceiptVerifier, the libcurl multi loop and the fake App Store at 20 ms, 512 in flight, so
# every request runs on one of 512 keep-alive HTTP/1.1 connections as in bench/verifier.sh) under
# `valgrind --tool=callgrind` for two counts. Instructions per call = (I(N2) - I(N1)) / (N2 - N1): start-up and the
# warm-up (which opens the connections) cancel out. The fake App Store is another process, not counted. Callgrind
# counts instructions, not time, so the figure holds on a busy machine; it moves by ~1 % between runs with the
# loop's wake-ups (how many responses one epoll_wait returns). Prints where the instructions per call go
# (inclusive): the curl loop thread (libcurl's own work: the request built, the response parsed, the connection
# found in its cache) and the completion (decoding Apple's answer, the verdict).
#
#   bench/appstore-client-callgrind.sh [--counts N1,N2]     (default 1000,3000)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh

counts=1000,3000
while [ $# -gt 0 ]; do
    case "$1" in
        --counts) counts="$2"; shift 2 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
callgrind_counts_option --counts "$counts"
bench_build fake-appstore appstore-client-bench
bench_workspace
command -v valgrind >/dev/null || apt-get install -y -qq valgrind >/dev/null

"$BIN/fake-appstore" --port 0 --latency-ms 20 --threads 2 >"$WORK/fake.out" 2>"$WORK/fake.log" &
PIDS+=($!)
URL="$(wait_for_line "$WORK/fake.out" FAKE_APPSTORE_URL)" || { cat "$WORK/fake.log" >&2; exit 1; }
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg) (instruction counts do not depend on it)"
for count in "$N1" "$N2"; do
    SWIFT_DETERMINISTIC_HASHING=1 valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind.$count" \
        "$BIN/appstore-client-bench" --url "$URL" --count "$count" --warmup 600 --in-flight 512 --latency-ms 20 \
        >"$WORK/run.$count" 2>"$WORK/valgrind.$count.log" || {
        cat "$WORK/run.$count" "$WORK/valgrind.$count.log" >&2
        exit 1
    }
    echo "  $count calls: $(grep '^verifications:' "$WORK/run.$count" | cut -d: -f2 | xargs)"
    callgrind_annotate --inclusive=yes --auto=no --threshold=100 "$WORK/callgrind.$count" 2>/dev/null \
        | swift demangle --simplified >"$WORK/annotate.$count"
done
python3 bench/callgrind-per-item.py call "$WORK/annotate.$N1" "$N1" "$WORK/annotate.$N2" "$N2" \
    'the curl loop thread (CurlMultiLoop.run)=^CurlMultiLoop\.run\(\)' \
    '  of which libcurl (curl_multi_socket_action)=^curl_multi_socket_action$' \
    '  of which admitting requests (CurlMultiLoop.admitPending)=CurlMultiLoop\.admitPending\(\)' \
    'the completion: Apple'"'"'s answer read, the verdict (VerifyReceiptBackend.call closure)=^closure #1 in VerifyReceiptBackend\.call\(' \
    '  of which VerifyReceiptBackend.interpret=static VerifyReceiptBackend\.interpret\(' \
    'malloc=^malloc$' \
    'free=^free$'
