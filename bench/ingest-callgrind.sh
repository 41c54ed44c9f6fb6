#!/usr/bin/env bash
# The ingest's own work per accepted POST as a repeatable figure (issues 25 and 26): ingest-path-bench (release; the
# ingest service in process, libmicrohttpd and the HTTP server's thread included, over a publisher that acknowledges
# at once; one client on one keep-alive loopback connection, POSTs of bench/ingest.sh's shape; no Kafka) under
# `valgrind --tool=callgrind` for two POST counts. Instructions per POST = (I(N2) - I(N1)) / (N2 - N1): start-up
# cancels out. Callgrind counts instructions, not time (the kernel's share of a socket call is not counted), so the
# figure is the same on a busy machine. Also prints where they go (inclusive, by the same difference).
# With BENCH_BIN_DIR (bench/lib.sh) it counts another tree's ingest-path-bench.
#
#   bench/ingest-callgrind.sh [--counts N1,N2]     (default 2000,4000)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh

callgrind_counts_option "$@"
bench_build ingest-path-bench
bench_workspace
callgrind_two_counts ingest-path-bench
python3 bench/callgrind-per-item.py POST "$WORK/annotate.$N1" "$N1" "$WORK/annotate.$N2" "$N2" \
    'the HTTP server'"'"'s request callback, handler included (MHDCallbacks.accessHandler)=closure #1 in variable initialization expression of static MHDCallbacks\.accessHandler' \
    'the handler (IngestHandler.handle)=^IngestHandler\.handle\(' \
    '  parsing the body (SubmissionRequest.parse)=static SubmissionRequest\.parse\(' \
    '    of which Foundation'"'"'s JSONSerialization=^static JSONSerialization\.jsonObject\(with:options:\)$' \
    '    of which the receipt'"'"'s base64 check (ReceiptData.normalize)=static ReceiptData\.normalize\(' \
    '  the submission'"'"'s fingerprint (SHA256.hex; OpenSSL without SHA-NI under valgrind)=^static SHA256\.hex' \
    '  the result index'"'"'s admission (ResultIndex.admit)=ResultIndex\.admit\(' \
    '  the submission'"'"'s JSON (SubmissionJSON.encode or JSONEncoder)=(static SubmissionJSON\.encode\(|JSONEncoder\.encode)' \
    '  the Kafka answer'"'"'s wait and 202 (IngestHandler.publish'"'"'s completion)=closure #1 in IngestHandler\.publish\(' \
    'malloc=^malloc$' \
    'free=^free$'
