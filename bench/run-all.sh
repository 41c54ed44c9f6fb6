#!/usr/bin/env bash
# `make bench`: every benchmark, one after the other (they share this machine's cores, so never in parallel),
# each printing its own figures. Record them, with the machine, in docs/BENCHMARKS.md.
#   bench/run-all.sh [producer|appstore|ingest|notifications|verifier|verdicts|spends|jws|hostile|counts]...
#                                                                                                   (default: all)
# `counts`: the repeatable figures, instructions per message and per POST (bench/counts.sh: callgrind, the same on
# a busy machine).
set -euo pipefail
cd "$(dirname "$0")/.."

selected=("$@")
[ ${#selected[@]} -gt 0 ] \
    || selected=(producer appstore ingest notifications verifier verdicts spends jws hostile counts)

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
for name in "${selected[@]}"; do
    case "$name" in
        producer) script=bench/kafka-producer.sh ;;
        appstore) script=bench/appstore-client.sh ;;
        ingest) script=bench/ingest.sh ;;
        notifications) script="bench/ingest.sh --notifications" ;;
        verifier) script=bench/verifier.sh ;;
        verdicts) script=bench/verdicts.sh ;;
        spends) script=bench/spends.sh ;;
        jws) script=bench/jws.sh ;;
        hostile) script=bench/hostile.sh ;;
        counts) script=bench/counts.sh ;;
        *) echo "unknown benchmark '$name' (producer, appstore, ingest, notifications, verifier, verdicts, spends," \
            "jws, hostile, counts)" >&2; exit 2 ;;
    esac
    echo
    echo "=== $name ($script) ==="
    # shellcheck disable=SC2086 # a script and its arguments
    bash $script
done
