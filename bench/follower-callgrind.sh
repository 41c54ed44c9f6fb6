#!/usr/bin/env bash
# The ingest's results follower per result as a repeatable figure (issue 43): follower-path-bench (release; result
# messages as the verifiers write them handed to the result index as KafkaResultFeed delivers them; no Kafka) under
# `valgrind --tool=callgrind` for two result counts. Instructions per result = (I(N2) - I(N1)) / (N2 - N1): start-up
# (the template message, encoded once) cancels out; each message's copy of the template stands for the follower's
# copy of the payload out of librdkafka. Every ingest replica pays this for every result on the topic; librdkafka's fetch is measured by
# bench/ingest-index-churn.sh. With BENCH_BIN_DIR (bench/lib.sh) it counts another tree's bench.
#
#   bench/follower-callgrind.sh [--counts N1,N2]     (default 2000,4000)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh

callgrind_counts_option "$@"
bench_build follower-path-bench
bench_workspace
callgrind_two_counts follower-path-bench
python3 bench/callgrind-per-item.py result "$WORK/annotate.$N1" "$N1" "$WORK/annotate.$N2" "$N2" \
    'the index'"'"'s record (ResultIndex.record)=ResultIndex\.record\(value:timestampMs:\)' \
    '  reading the members it needs (IndexedResult.init)=IndexedResult\.init' \
    '  the bookkeeping (ResultIndexState.record)=ResultIndexState\.record\(' \
    'malloc=^malloc$' \
    'free=^free$'
