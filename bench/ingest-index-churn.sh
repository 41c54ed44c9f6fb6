#!/usr/bin/env bash
# The ingest's verdict index turned over many times: results written straight onto the results topic (as the
# verifiers would, about 1.1 KB each, every one a new submission) while receipt-ingest follows them, its memory read
# every CHURN_STEP results. Tells the allocator's high-water mark (resident memory that climbs while the index refills
# its freed space, then stays flat) from a leak (the heap in use climbing with every turnover). The soak's warm-up
# rests on what this prints.
#
#   bench/ingest-index-churn.sh [TURNOVERS (8)] [--rate N]
#       release build; RESULT_INDEX_MAX_ENTRIES (100000) per turnover; --rate: results written at N a second (in
#       tenths of a second), as a results topic fed by busy verifiers, instead of as fast as kcat writes them
#
# Prints one row per half turnover: results written, index entries, resident MB, heap in use MB, heap free MB; the
# heap per indexed verdict at the first fill (heap in use over the ingest's heap before any result, per entry, beside
# the message's own bytes); and at the end the ingest's CPU per result (its process, all threads, from the first
# result written to the last indexed: the results follower's read and the index; every ingest instance pays it for
# every result).
set -euo pipefail
cd "$(dirname "$0")/.."

TURNOVERS=8
RATE=""
while [ $# -gt 0 ]; do
    case "$1" in
        --rate) RATE="$2"; shift 2 ;;
        *) TURNOVERS="$1"; shift ;;
    esac
done
ENTRIES="${RESULT_INDEX_MAX_ENTRIES:-100000}"
STEP=$((ENTRIES / 2))
CHUNK=10000
for tool in kcat curl python3; do
    command -v "$tool" >/dev/null || { echo "$tool is not installed (make deps)" >&2; exit 1; }
done

source bench/lib.sh
bench_build embedded-kafka receipt-ingest
bench_workspace

"$BIN/embedded-kafka" --topics "iap.receipts.submitted:16,iap.receipts.results:16" >"$WORK/kafka.out" \
    2>"$WORK/kafka.log" &
PIDS+=($!)
BOOTSTRAP="$(wait_for_line "$WORK/kafka.out" KAFKA_BOOTSTRAP_SERVERS)" || { cat "$WORK/kafka.log" >&2; exit 1; }
PORT="$(free_port)"
env "KAFKA_BOOTSTRAP_SERVERS=$BOOTSTRAP" "INGEST_LISTEN=127.0.0.1:$PORT" "RESULT_INDEX_MAX_ENTRIES=$ENTRIES" \
    "$BIN/receipt-ingest" 2>"$WORK/ingest.log" &
INGEST_PID=$!
PIDS+=("$INGEST_PID")
for _ in $(seq 1 300); do curl -fs -o /dev/null "http://127.0.0.1:$PORT/readyz" && break; sleep 0.1; done

# One series of the ingest's /metrics (the name with its labels, as printed), in MB (or as it is with "count").
metric() {
    curl -fs "http://127.0.0.1:$PORT/metrics" | awk -v name="$1" -v unit="${2:-MB}" \
        '$1 == name { if (unit == "count") printf "%d", $2; else printf "%.1f", $2 / 1048576 }'
}

# Results for submissions FIRST..FIRST+COUNT-1, one JSON per line, shaped as the verifiers write them.
results() {
    python3 - "$1" "$2" <<'EOF'
import json, sys, time
first, count = int(sys.argv[1]), int(sys.argv[2])
now = int(time.time() * 1000)
for n in range(first, first + count):
    transaction = {
        "transaction_id": str(2000000000000000 + n), "original_transaction_id": str(2000000000000000 + n),
        "product_id": "com.example.game.gems100", "product_type": "consumable", "quantity": 1,
        "purchase_date_ms": now, "original_purchase_date_ms": now, "expires_date_ms": None,
        "revocation_date_ms": None, "revocation_reason": None, "app_account_token": None,
        "web_order_line_item_id": None, "in_app_ownership_type": "PURCHASED", "credit_key": f"{n:064x}",
        "creditable": True, "credit": {"item": "gems", "amount": 100}, "revocation_percentage": None,
        "is_upgraded": False, "storefront": "USA", "currency": "USD", "price": 990000, "offer_type": None}
    print(json.dumps({
        "schema_version": 1, "submission_id": f"churn-{n:012d}", "order_id": None, "user_id": f"user-{n % 1000}",
        "client_id": None, "outcome": "verified", "reason": None, "source": "signed_transaction", "message": None,
        "apple_status": None, "environment": "Production", "bundle_id": "com.example.game",
        "transactions": [transaction], "submission_fingerprint": f"{n:064x}", "attempts": 1, "verified_at_ms": now,
    }, separators=(",", ":")))
EOF
}

if [ -n "$RATE" ]; then CHUNK=$((RATE / 10)); fi
echo "RESULT_INDEX_MAX_ENTRIES=$ENTRIES, $TURNOVERS turnovers, ${RATE:-unpaced} results/s;" \
    "load average $(cut -d' ' -f1-3 /proc/loadavg)"
heap_before="$(metric process_heap_in_use_bytes count)"
printf '%10s %10s %12s %14s %14s\n' results entries resident_MB heap_in_use_MB heap_free_MB
# utime + stime of the ingest, in clock ticks.
ingest_cpu_ticks() { awk '{print $14 + $15}' "/proc/$INGEST_PID/stat"; }
cpu_at_start="$(ingest_cpu_ticks)"
written=0
total=$((ENTRIES * TURNOVERS))
first_fill=""
next_chunk_at="$(date +%s.%N)"
while [ "$written" -lt "$total" ]; do
    results "$written" "$CHUNK" >"$WORK/chunk"
    if [ -n "$RATE" ]; then
        # One chunk every tenth of a second, from the same starting point (a late chunk does not shift the rest).
        next_chunk_at="$(awk -v t="$next_chunk_at" 'BEGIN { printf "%.3f", t + 0.1 }')"
        wait_s="$(awk -v t="$next_chunk_at" -v now="$(date +%s.%N)" 'BEGIN { d = t - now; printf "%.3f", (d > 0 ? d : 0) }')"
        sleep "$wait_s"
    fi
    kcat -P -b "$BOOTSTRAP" -t iap.receipts.results -l "$WORK/chunk" 2>>"$WORK/kcat.log"
    written=$((written + CHUNK))
    if [ $((written % STEP)) -eq 0 ]; then
        # Let the ingest index what was written before reading its memory.
        for _ in $(seq 1 100); do
            [ "$(metric 'ingest_result_messages_total{result="indexed"}' count)" -ge "$written" ] && break
            sleep 0.1
        done
        printf '%10d %10s %12s %14s %14s\n' "$written" "$(metric ingest_result_index_entries count)" \
            "$(metric process_resident_memory_bytes)" "$(metric process_heap_in_use_bytes)" \
            "$(metric process_heap_free_bytes)"
        if [ -z "$first_fill" ] && [ "$written" -ge "$ENTRIES" ]; then
            first_fill="$(awk -v heap="$(metric process_heap_in_use_bytes count)" -v before="$heap_before" \
                -v n="$(metric ingest_result_index_entries count)" -v size="$(head -c 100000 "$WORK/chunk" | head -1 | wc -c)" \
                'BEGIN { printf "heap per indexed verdict: %.0f bytes (the message itself: %d bytes)", (heap - before) / n, size }')"
        fi
    fi
done
[ -z "$first_fill" ] || echo "$first_fill"
cpu_ticks=$(( $(ingest_cpu_ticks) - cpu_at_start ))
echo "ingest CPU per result (follower and index): $(awk -v t="$cpu_ticks" -v hz="$(getconf CLK_TCK)" -v n="$written" \
    'BEGIN { printf "%.1f", t / hz * 1e6 / n }') µs over $written results; load average $(cut -d' ' -f1-3 /proc/loadavg)"
