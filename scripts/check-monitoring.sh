#!/usr/bin/env bash
# The monitoring files against the tools that read them and against the live services (make test, ~20 s):
#   - promtool check rules + promtool test rules: every alert of deploy/monitoring/alerts.yaml and of each optional
#     part's deploy/monitoring/components/*/alerts.yaml fires on a synthetic
#     series that must page and stays quiet on a near miss (deploy/monitoring/tests/alerts.test.yaml, and
#     alerts-daily.test.yaml for the alerts whose conditions span days);
#   - deploy/monitoring/render.py --check: the PrometheusRule is the same rules;
#   - embedded-kafka, the fake App Store, receipt-ingest, receipt-verifier and receipt-ledger (over a throwaway
#     PostgreSQL) started from the built binaries, a few submissions and notifications through them, then promtool
#     check metrics on the three /metrics, and every metric the alerts and the Grafana dashboard query, with the
#     labels they group and filter by, must be one the services export, and docs/OPERATIONS.md must describe every
#     metric family they export and name none they do not (scripts/check-monitoring.py).
# Usage: scripts/check-monitoring.sh [<bin-dir>]
set -euo pipefail
cd "$(dirname "$0")/.."

bin="${1:-$(swift build --show-bin-path)}"
work=.build/check-monitoring
rm -rf "$work"
mkdir -p "$work"
started=$SECONDS
command -v promtool >/dev/null || { echo "check-monitoring: promtool is missing: run scripts/install-deps.sh"; exit 1; }

promtool check rules deploy/monitoring/alerts.yaml deploy/monitoring/components/*/alerts.yaml \
    >"$work/check-rules.log" 2>&1 || { cat "$work/check-rules.log"; exit 1; }
promtool test rules deploy/monitoring/tests/alerts.test.yaml deploy/monitoring/tests/alerts-daily.test.yaml \
    >"$work/test-rules.log" 2>&1 || { cat "$work/test-rules.log"; exit 1; }
tests=$(cat deploy/monitoring/tests/alerts.test.yaml deploy/monitoring/tests/alerts-daily.test.yaml | grep -c "^- name:")
echo "check-monitoring: promtool test rules: $tests alert tests passed"
python3 deploy/monitoring/render.py --check

pids=()
. scripts/throwaway-postgres.sh
cleanup() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    postgres_cluster_cleanup
}
trap cleanup EXIT

wait_for() {
    for _ in $(seq 1 200); do
        grep -q "$2" "$1" 2>/dev/null && return 0
        kill -0 "$3" 2>/dev/null || { echo "check-monitoring: process $3 exited; see $1"; return 1; }
        sleep 0.1
    done
    echo "check-monitoring: '$2' did not appear in $1 within 20 s"
    return 1
}
field() { grep -m1 "$2" "$1" | grep -oE "\"$3\":[0-9]+" | cut -d: -f2; }

topics="iap.receipts.submitted:2,iap.receipts.results:2,iap.receipts.retry:2,iap.receipts.dlq:1"
topics+=",iap.notifications.submitted:2,iap.purchase.events:2"
"$bin/embedded-kafka" --brokers 1 --topics "$topics" >"$work/embedded-kafka.out" 2>"$work/embedded-kafka.log" &
pids+=($!)
wait_for "$work/embedded-kafka.out" "^KAFKA_BOOTSTRAP_SERVERS=" "${pids[-1]}"
bootstrap="$(grep -m1 "^KAFKA_BOOTSTRAP_SERVERS=" "$work/embedded-kafka.out" | cut -d= -f2-)"

# A signing PKI and an App Store Server API key (minted now, test use only), so the Server API metrics exist too.
"$bin/fake-appstore" mint-pki --out "$work/pki" >"$work/pki.out"
read -r -a fake_args <<<"$(grep -m1 '^FAKE_APPSTORE_ARGS=' "$work/pki.out" | cut -d= -f2-)"
mapfile -t api_settings < <(grep -E '^APPLE_[A-Z_]+=' "$work/pki.out")
"$bin/fake-appstore" --host 127.0.0.1 --port 0 --latency-ms 5 "${fake_args[@]}" >"$work/fake.out" 2>"$work/fake.log" &
pids+=($!)
wait_for "$work/fake.out" "^FAKE_APPSTORE_URL=" "${pids[-1]}"
apple="$(grep -m1 "^FAKE_APPSTORE_URL=" "$work/fake.out" | cut -d= -f2-)"

common=(KAFKA_BOOTSTRAP_SERVERS="$bootstrap" KAFKA_FETCH_WAIT_MAX_MS=10 KAFKA_SESSION_TIMEOUT_MS=6000)
# Two named keys: the backend one granted bare transaction ids (INGEST_KEY_PROOFS), the in-app one with the default
# (receipts and signed transactions), so the refusal metrics exist too.
env "${common[@]}" INGEST_LISTEN=127.0.0.1:0 RESULT_INDEX_READY_TIMEOUT_SECONDS=5 \
    INGEST_API_KEYS=backend:monitoring-backend-key,app:monitoring-app-key \
    INGEST_KEY_PROOFS=backend:receipt_data+signed_transaction+transaction_id \
    "$bin/receipt-ingest" >"$work/ingest.out" 2>"$work/ingest.log" &
pids+=($!)
wait_for "$work/ingest.log" '"msg":"HTTP server listening"' "${pids[-1]}"
ingest="http://127.0.0.1:$(field "$work/ingest.log" '"msg":"HTTP server listening"' port)"

env "${common[@]}" VERIFIER_METRICS_LISTEN=127.0.0.1:0 ALLOWED_BUNDLE_IDS=com.example.game \
    APPLE_VERIFY_RECEIPT_URL="$apple/verifyReceipt" APPLE_SANDBOX_VERIFY_RECEIPT_URL="$apple/sandbox/verifyReceipt" \
    APPLE_SERVER_API_URL="$apple" APPLE_SERVER_API_SANDBOX_URL="$apple/sandbox" "${api_settings[@]}" \
    APPLE_OCSP_RESPONDER_URL="$apple/ocsp" PRODUCT_CATALOG_FILE=scripts/dev-product-catalog.json \
    "$bin/receipt-verifier" >"$work/verifier.out" 2>"$work/verifier.log" &
pids+=($!)
wait_for "$work/verifier.log" '"msg":"receipt-verifier started"' "${pids[-1]}"
verifier="http://127.0.0.1:$(field "$work/verifier.log" '"msg":"receipt-verifier started"' metrics_port)"
# receipt-ledger over a throwaway PostgreSQL.
start_throwaway_postgres "$PWD/$work/postgres" "$work/postgres.log"
env "${common[@]}" LEDGER_LISTEN=127.0.0.1:0 LEDGER_DATABASE_URL="$POSTGRES_URL" \
    "$bin/receipt-ledger" >"$work/ledger.out" 2>"$work/ledger.log" &
pids+=($!)
wait_for "$work/ledger.log" '"msg":"receipt-ledger started"' "${pids[-1]}"
ledger="http://127.0.0.1:$(field "$work/ledger.log" '"msg":"receipt-ledger started"' port)"
for _ in $(seq 1 200); do
    curl -fsS -o /dev/null "$ingest/readyz" 2>/dev/null && curl -fsS -o /dev/null "$verifier/readyz" 2>/dev/null \
        && curl -fsS -o /dev/null "$ledger/readyz" 2>/dev/null && break
    sleep 0.1
done

# Traffic, so that labelled series exist: a verified and a rejected receipt, a transaction id Apple does not know
# (Server API calls), a lookup, a malformed body, a junk notification, a transaction id from the in-app key (403).
valid=$(printf '{"scenario":"valid","id":"monitoring-1"}' | base64 -w0)
other=$(printf '{"scenario":"valid","id":"monitoring-2","bundle_id":"com.example.other"}' | base64 -w0)
post() {
    curl -sS -o /dev/null -w '%{http_code}\n' "$ingest$1" -H 'Content-Type: application/json' \
        -H "Authorization: Bearer ${3:-monitoring-backend-key}" -d "$2"
}
post "/v1/receipts?wait_ms=10000" "{\"receipt_data\":\"$valid\",\"submission_id\":\"monitoring-v\",\"user_id\":\"monitoring-user\"}" >"$work/codes"
post "/v1/receipts?wait_ms=10000" "{\"receipt_data\":\"$other\",\"submission_id\":\"monitoring-b\"}" >>"$work/codes"
post "/v1/receipts?wait_ms=10000" '{"transaction_id":"2000000000000001","submission_id":"monitoring-t"}' >>"$work/codes"
post /v1/receipts '{"receipt_data":"not base64!"}' >>"$work/codes"
post /v1/apple/notifications '{"signedPayload":"x.y.z"}' >>"$work/codes"
post /v1/receipts '{"transaction_id":"2000000000000002"}' monitoring-app-key >>"$work/codes"
curl -sS -o /dev/null -H 'Authorization: Bearer monitoring-backend-key' "$ingest/v1/receipts/monitoring-v"
# The ledger applies the verified result (a credit): wait for it, then ask the API once.
for _ in $(seq 1 100); do
    grep -qE '^ledger_messages_applied_total\{topic="results"\} [1-9]' <(curl -fsS "$ledger/metrics") && break
    sleep 0.1
done
curl -sS -o /dev/null "$ledger/v1/users/monitoring-user"
curl -fsS "$ingest/metrics" >"$work/ingest.metrics"
curl -fsS "$verifier/metrics" >"$work/verifier.metrics"
curl -fsS "$ledger/metrics" >"$work/ledger.metrics"

for service in ingest verifier ledger; do
    # promtool check metrics exits non-zero on lint problems (names, help, units) and prints them.
    if ! promtool check metrics <"$work/$service.metrics" >"$work/$service.lint" 2>&1; then
        echo "check-monitoring: promtool check metrics on receipt-$service's /metrics:"
        cat "$work/$service.lint"
        exit 1
    fi
done
python3 scripts/check-monitoring.py "$work/ingest.metrics" "$work/verifier.metrics" "$work/ledger.metrics"
echo "check-monitoring: passed ($((SECONDS - started)) s; answers $(tr '\n' ' ' <"$work/codes"))"
