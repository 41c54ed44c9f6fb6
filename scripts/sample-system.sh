# Sourced: the real binaries as a small system that writes real messages, for the checks that need some
# (scripts/capture-samples.sh, scripts/check-example-consumer.sh). The caller sets `bin` (the build's bin directory)
# and `work` (a directory of its own) and has a `pids` array and an EXIT trap that ends them.
#
#   sample_system_start       embedded-kafka (the six topics), the fake App Store with a minted PKI and API key,
#                             receipt-ingest (no API keys: every proof kind allowed) and receipt-verifier (the dev
#                             product catalog); sets KAFKA_BOOTSTRAP, INGEST_URL, APPLE_URL
#   sample_system_traffic     purchases through the ingest, each waited for: a receipt of two consumables (user
#                             sample-user-1), a StoreKit 2 signed transaction with a price (sample-user-2), a
#                             subscription period by transaction id (sample-user-3), a receipt for another bundle
#                             (rejected); then Apple's notifications: the signed transaction's ONE_TIME_CHARGE again (a
#                             credit event for a purchase already credited) and a REFUND of the receipt's purchase (a
#                             debit), waited for on the events topic
#   sample_system_read TOPIC N FILE   the first N messages of TOPIC (all partitions), one value per line, into FILE
#
# Everything listens on loopback only; nothing here is kept beyond the caller's run.

sample_system_wait_for() {
    for _ in $(seq 1 300); do
        grep -q "$2" "$1" 2>/dev/null && return 0
        kill -0 "$3" 2>/dev/null || { echo "sample system: process $3 exited; see $1" >&2; return 1; }
        sleep 0.1
    done
    echo "sample system: '$2' did not appear in $1 within 30 s" >&2
    return 1
}

sample_system_field() { grep -m1 "$2" "$1" | grep -oE "\"$3\":[0-9]+" | cut -d: -f2; }

sample_system_start() {
    local topics="iap.receipts.submitted:2,iap.receipts.results:2,iap.receipts.retry:1,iap.receipts.dlq:1"
    topics+=",iap.notifications.submitted:2,iap.purchase.events:2"
    "$bin/embedded-kafka" --brokers 1 --topics "$topics" >"$work/embedded-kafka.out" 2>"$work/embedded-kafka.log" &
    pids+=($!)
    sample_system_wait_for "$work/embedded-kafka.out" "^KAFKA_BOOTSTRAP_SERVERS=" "${pids[-1]}" || return 1
    KAFKA_BOOTSTRAP="$(grep -m1 "^KAFKA_BOOTSTRAP_SERVERS=" "$work/embedded-kafka.out" | cut -d= -f2-)"

    "$bin/fake-appstore" mint-pki --out "$work/pki" >"$work/pki.out" || return 1
    local fake_args api_settings
    read -r -a fake_args <<<"$(grep -m1 '^FAKE_APPSTORE_ARGS=' "$work/pki.out" | cut -d= -f2-)"
    mapfile -t api_settings < <(grep -E '^APPLE_[A-Z_]+=' "$work/pki.out")
    "$bin/fake-appstore" --host 127.0.0.1 --port 0 --bundle-id com.example.game "${fake_args[@]}" \
        >"$work/fake.out" 2>"$work/fake.log" &
    pids+=($!)
    sample_system_wait_for "$work/fake.out" "^FAKE_APPSTORE_URL=" "${pids[-1]}" || return 1
    APPLE_URL="$(grep -m1 "^FAKE_APPSTORE_URL=" "$work/fake.out" | cut -d= -f2-)"

    local common=(KAFKA_BOOTSTRAP_SERVERS="$KAFKA_BOOTSTRAP" KAFKA_FETCH_WAIT_MAX_MS=10 KAFKA_SESSION_TIMEOUT_MS=6000)
    env "${common[@]}" INGEST_LISTEN=127.0.0.1:0 RESULT_INDEX_READY_TIMEOUT_SECONDS=5 \
        "$bin/receipt-ingest" >"$work/ingest.out" 2>"$work/ingest.log" &
    pids+=($!)
    sample_system_wait_for "$work/ingest.log" '"msg":"HTTP server listening"' "${pids[-1]}" || return 1
    INGEST_URL="http://127.0.0.1:$(sample_system_field "$work/ingest.log" '"msg":"HTTP server listening"' port)"

    env "${common[@]}" VERIFIER_METRICS_LISTEN=127.0.0.1:0 ALLOWED_BUNDLE_IDS=com.example.game \
        APPLE_VERIFY_RECEIPT_URL="$APPLE_URL/verifyReceipt" \
        APPLE_SANDBOX_VERIFY_RECEIPT_URL="$APPLE_URL/sandbox/verifyReceipt" \
        APPLE_SERVER_API_URL="$APPLE_URL" APPLE_SERVER_API_SANDBOX_URL="$APPLE_URL/sandbox" "${api_settings[@]}" \
        APPLE_OCSP_RESPONDER_URL="$APPLE_URL/ocsp" PRODUCT_CATALOG_FILE=scripts/dev-product-catalog.json \
        "$bin/receipt-verifier" >"$work/verifier.out" 2>"$work/verifier.log" &
    pids+=($!)
    sample_system_wait_for "$work/verifier.log" '"msg":"receipt-verifier started"' "${pids[-1]}" || return 1
    local verifier
    verifier="http://127.0.0.1:$(sample_system_field "$work/verifier.log" '"msg":"receipt-verifier started"' metrics_port)"
    for _ in $(seq 1 300); do
        curl -fsS -o /dev/null "$INGEST_URL/readyz" 2>/dev/null && curl -fsS -o /dev/null "$verifier/readyz" 2>/dev/null \
            && return 0
        sleep 0.1
    done
    echo "sample system: the ingest or the verifier did not become ready within 30 s" >&2
    return 1
}

# POST /v1/receipts?wait_ms=... and fail unless the verdict is the expected outcome.
sample_system_submit() {
    local body="$1" outcome="$2" answer
    answer="$(curl -sS "$INGEST_URL/v1/receipts?wait_ms=20000" -H 'Content-Type: application/json' -d "$body")"
    if ! grep -q "\"outcome\":\"$outcome\"" <<<"$answer"; then
        echo "sample system: expected $outcome for $body, got: $answer" >&2
        return 1
    fi
}

sample_system_traffic() {
    local receipt other signed
    # StoreKit 1: one receipt, two gems_100 in one transaction.
    receipt=$(printf '%s' '{"scenario":"valid","id":"sample-receipt-1","transactions":[{"id":"1000000000000101","product":"gems_100","quantity":2,"purchase_ms":1764489500000}]}' | base64 -w0)
    sample_system_submit "{\"receipt_data\":\"$receipt\",\"submission_id\":\"sample-1\",\"user_id\":\"sample-user-1\"}" \
        verified || return 1
    # StoreKit 2: a signed transaction Apple knows, with its price.
    curl -fsS -o /dev/null "$APPLE_URL/admin/transactions" -H 'Content-Type: application/json' -d '[
        {"id":"2000000000000201","product_id":"gems_100","type":"Consumable","purchase_date_ms":1764489500000,
         "price_milliunits":990,"currency":"USD","bundle_id":"com.example.game"},
        {"id":"2000000000000301","original_id":"2000000000000300","product_id":"one_month_subscription",
         "type":"Auto-Renewable Subscription","purchase_date_ms":1764489500000,"expires_date_ms":4102444800000,
         "web_order_line_item_id":"2000000000000399","price_milliunits":4990,"currency":"EUR",
         "bundle_id":"com.example.game"}]' || return 1
    signed="$(curl -fsS "$APPLE_URL/admin/signed-transaction?id=2000000000000201" | python3 -c \
        'import json, sys; print(json.load(sys.stdin)["signed_transaction"])')" || return 1
    sample_system_submit "{\"signed_transaction\":\"$signed\",\"submission_id\":\"sample-2\",\"user_id\":\"sample-user-2\"}" \
        verified || return 1
    # A subscription period by transaction id (the App Store Server API).
    sample_system_submit '{"transaction_id":"2000000000000301","submission_id":"sample-3","user_id":"sample-user-3"}' \
        verified || return 1
    # Another app's receipt.
    other=$(printf '%s' '{"scenario":"valid","id":"sample-receipt-4","bundle_id":"com.example.other"}' | base64 -w0)
    sample_system_submit "{\"receipt_data\":\"$other\",\"submission_id\":\"sample-4\",\"user_id\":\"sample-user-4\"}" \
        rejected || return 1
    # Apple's notifications, signed by the fake and posted to the ingest as Apple posts them.
    local notify="$APPLE_URL/admin/notifications/send?url=$INGEST_URL/v1/apple/notifications&retry_schedule_seconds=none"
    curl -fsS -o /dev/null -X POST "$notify&type=ONE_TIME_CHARGE&transaction_id=2000000000000201&product_id=gems_100&product_type=consumable&bundle_id=com.example.game&environment=Production" \
        || return 1
    curl -fsS -o /dev/null -X POST "$notify&type=REFUND&transaction_id=1000000000000101&product_id=gems_100&product_type=consumable&bundle_id=com.example.game&environment=Production" \
        || return 1
}

sample_system_read() {
    python3 - "$KAFKA_BOOTSTRAP" "$1" "$2" "$3" <<'PY'
import sys, time
from confluent_kafka import Consumer, TopicPartition
bootstrap, topic, count, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "sample-system-reader", "enable.auto.commit": False})
partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
values, deadline = [], time.monotonic() + 30
while len(values) < count and time.monotonic() < deadline:
    message = consumer.poll(0.2)
    if message is not None and message.error() is None:
        values.append(message.value())
consumer.close()
if len(values) < count:
    sys.exit(f"sample system: {topic} has {len(values)} messages, expected {count}")
with open(path, "wb") as handle:
    handle.write(b"".join(value + b"\n" for value in values))
PY
}
