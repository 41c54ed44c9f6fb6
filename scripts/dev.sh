#!/usr/bin/env bash
# `make dev`: the whole system on this machine, in one process tree, stopped cleanly with Ctrl-C.
#   embedded Kafka (librdkafka mock cluster, in memory) -> unless KAFKA_BOOTSTRAP_SERVERS is set
#   fake App Store (verifyReceipt and the App Store Server API, with a PKI and API key minted into .dev/pki)
#                                                        -> unless APPLE_VERIFY_RECEIPT_URL is set (e.g. Apple's sandbox)
#   product catalog scripts/dev-product-catalog.json     -> with the fake, unless PRODUCT_CATALOG_FILE is set
#   receipt-ingest on :8080 (INGEST_LISTEN), receipt-verifier with metrics on :8082 (VERIFIER_METRICS_LISTEN; not its default 9090, where a
#   Debian host's Prometheus server listens)
#   a throwaway PostgreSQL (initdb into .build/dev-postgres, loopback only) -> unless LEDGER_DATABASE_URL is set
#   receipt-ledger on :8081 (LEDGER_LISTEN) over it
# Logs of every process go to .dev/logs/.
set -euo pipefail
script="$(realpath "$0")"
cd "$(dirname "$0")/.."

# Ctrl-C in a terminal sends SIGINT to the whole foreground process group at once: Kafka would vanish under the
# services still draining into it, and a start-up step (a grep, a curl) killed mid-way would read as a failure. So
# the system runs in a session of its own, and this outer part turns a Ctrl-C (or SIGTERM) into one SIGTERM to it,
# which stops the processes in order and exits 0. The inner part's status (1 when a service died) is make's.
if [ -z "${RECEIPTS_DEV_SESSION:-}" ]; then
    session="" interrupted=""
    trap 'interrupted=1; if [ -n "$session" ]; then kill -TERM "$session" 2>/dev/null || true; fi' INT TERM
    RECEIPTS_DEV_SESSION=1 setsid bash "$script" "$@" &
    session=$!
    if [ -n "$interrupted" ]; then kill -TERM "$session" 2>/dev/null || true; fi
    while :; do
        wait "$session" && status=0 || status=$?
        kill -0 "$session" 2>/dev/null || exit "$status"
    done
fi

log_dir=".dev/logs"
mkdir -p "$log_dir"
pids=()

stop_all() {
    # Cleanup is bounded (15 s per process at most): a second Ctrl-C must not cut it short and leave orphans.
    trap '' INT TERM
    trap - EXIT
    echo
    echo "stopping..."
    # A process started just before the signal may not be in pids yet: it is the newest, so it goes last.
    local job
    for job in $(jobs -p); do
        [[ " ${pids[*]} " == *" $job "* ]] || pids+=("$job")
    done
    # Reverse start order: services drain into Kafka before Kafka goes away.
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        kill -TERM "${pids[$i]}" 2>/dev/null || true
        for _ in $(seq 1 150); do kill -0 "${pids[$i]}" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "${pids[$i]}" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    if declare -F postgres_cluster_cleanup >/dev/null; then postgres_cluster_cleanup; fi
    echo "stopped."
}
# SIGTERM (the outer part's, on Ctrl-C) or SIGINT: a clean stop (exit 0); any other exit (a service died, start-up
# failed) keeps its status.
trap 'stop_all; exit 0' INT TERM
trap stop_all EXIT

bin_dir="$(swift build -c release --show-bin-path)"

# start_service PREFIX COMMAND...: starts COMMAND in the background (stdout to .dev/logs/<name>.out, stderr to
# <name>.log), records its pid, waits for a stdout line "PREFIX=value" and leaves the value in REPLY.
# (Not called in a command substitution: that would run it in a subshell and lose the pid.)
start_service() {
    local prefix="$1"; shift
    local name; name="$(basename "$1")"
    "$@" >"$log_dir/$name.out" 2>"$log_dir/$name.log" &
    local pid=$!
    pids+=("$pid")
    for _ in $(seq 1 200); do
        if grep -q "^$prefix=" "$log_dir/$name.out" 2>/dev/null; then
            REPLY="$(grep -m1 "^$prefix=" "$log_dir/$name.out" | cut -d= -f2-)"
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || { echo "$name exited; see $log_dir/$name.log" >&2; return 1; }
        sleep 0.1
    done
    echo "$name did not start in 20 s; see $log_dir/$name.log" >&2
    return 1
}

wait_ready() {
    local url="$1" name="$2"
    for _ in $(seq 1 300); do
        curl -fsS -o /dev/null "$url" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "$name not ready at $url after 30 s; see $log_dir/" >&2
    return 1
}

export RECEIPTS_TOPIC="${RECEIPTS_TOPIC:-iap.receipts.submitted}"
export RESULTS_TOPIC="${RESULTS_TOPIC:-iap.receipts.results}"
export RETRY_TOPIC="${RETRY_TOPIC:-iap.receipts.retry}"
export DLQ_TOPIC="${DLQ_TOPIC:-iap.receipts.dlq}"
export NOTIFICATIONS_TOPIC="${NOTIFICATIONS_TOPIC:-iap.notifications.submitted}"
export EVENTS_TOPIC="${EVENTS_TOPIC:-iap.purchase.events}"

if [ -z "${KAFKA_BOOTSTRAP_SERVERS:-}" ]; then
    start_service KAFKA_BOOTSTRAP_SERVERS "$bin_dir/embedded-kafka" --brokers 1 \
        --topics "$RECEIPTS_TOPIC:4,$RESULTS_TOPIC:4,$RETRY_TOPIC:4,$DLQ_TOPIC:1,$NOTIFICATIONS_TOPIC:4,$EVENTS_TOPIC:4"
    KAFKA_BOOTSTRAP_SERVERS="$REPLY"
    # The mock cluster holds every fetch for the full fetch.wait.max.ms (librdkafka's default 500 ms would delay
    # every verdict); a real broker answers at once, so the services keep librdkafka's default.
    export KAFKA_FETCH_WAIT_MAX_MS="${KAFKA_FETCH_WAIT_MAX_MS:-10}"
    echo "embedded Kafka:  $KAFKA_BOOTSTRAP_SERVERS"
else
    echo "Kafka:           $KAFKA_BOOTSTRAP_SERVERS (from the environment)"
fi
export KAFKA_BOOTSTRAP_SERVERS

fake_url=""
if [ -z "${APPLE_VERIFY_RECEIPT_URL:-}" ]; then
    # A signing PKI and an App Store Server API key of our own: the fake signs transactions with them and checks
    # the verifier's bearer tokens against the key; the verifier trusts only this root.
    pki_dir=".dev/pki"
    rm -rf "$pki_dir"
    "$bin_dir/fake-appstore" mint-pki --out "$pki_dir" >"$log_dir/mint-pki.out"
    read -r -a fake_pki_args <<<"$(grep '^FAKE_APPSTORE_ARGS=' "$log_dir/mint-pki.out" | cut -d= -f2-)"
    while IFS='=' read -r name value; do export "$name=$value"; done <"$pki_dir/settings.env"
    start_service FAKE_APPSTORE_URL "$bin_dir/fake-appstore" --port 0 --latency-ms 100 "${fake_pki_args[@]}" \
        --notification-retry-seconds 10,60
    fake_url="$REPLY"
    export APPLE_VERIFY_RECEIPT_URL="$fake_url/verifyReceipt"
    export APPLE_SANDBOX_VERIFY_RECEIPT_URL="$fake_url/sandbox/verifyReceipt"
    export APPLE_SERVER_API_URL="$fake_url"
    export APPLE_SERVER_API_SANDBOX_URL="$fake_url/sandbox"
    # Revocation checks (APPLE_REVOCATION_CHECK=ocsp, the default) ask the fake's responder about its chain.
    export APPLE_OCSP_RESPONDER_URL="$fake_url/ocsp"
    echo "fake App Store:  $fake_url (verifyReceipt and the App Store Server API; PKI and API key in $pki_dir)"
    # The ledger answers the fake's CONSUMPTION_REQUESTs with Send Consumption Information (same API key).
    export LEDGER_CONSUMPTION_RESPONSES="${LEDGER_CONSUMPTION_RESPONSES:-send}"
    export LEDGER_CONSUMPTION_POLICY_FILE="${LEDGER_CONSUMPTION_POLICY_FILE:-$PWD/scripts/dev-refund-policy.json}"
    # The fake's products (gems_100, one_month_subscription): results carry their credit objects.
    export PRODUCT_CATALOG_FILE="${PRODUCT_CATALOG_FILE:-$PWD/scripts/dev-product-catalog.json}"
else
    echo "App Store:       $APPLE_VERIFY_RECEIPT_URL (from the environment)"
fi
if [ -n "${PRODUCT_CATALOG_FILE:-}" ]; then
    echo "product catalog: $PRODUCT_CATALOG_FILE (edit it while running: re-read within a second)"
else
    echo "product catalog: none (PRODUCT_CATALOG_FILE unset: transactions carry no credit)"
fi
export ALLOWED_BUNDLE_IDS="${ALLOWED_BUNDLE_IDS:-com.example.game}"
export INGEST_LISTEN="${INGEST_LISTEN:-0.0.0.0:8080}"
export VERIFIER_METRICS_LISTEN="${VERIFIER_METRICS_LISTEN:-0.0.0.0:8082}"

if [ -z "${LEDGER_DATABASE_URL:-}" ]; then
    # A throwaway cluster for receipt-ledger: created fresh on every run, durability off, loopback and a socket in
    # its own directory only. PostgreSQL refuses to run as root: as root, the directory belongs to the `postgres`
    # system user (created by Debian's package) and the server runs as that user.
    pg_bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
    [ -x "$pg_bin/initdb" ] || { echo "no PostgreSQL server found: run scripts/install-deps.sh" >&2; exit 1; }
    pg_port="${LEDGER_DEV_POSTGRES_PORT:-54329}"
    rm -rf "$PWD/.build/dev-postgres"
    # As root, under /tmp when the checkout is out of the postgres user's reach (scripts/throwaway-postgres.sh).
    . scripts/throwaway-postgres.sh
    postgres_cluster_dir "$PWD/.build/dev-postgres"
    pg_dir="$POSTGRES_CLUSTER_DIR"
    as_postgres=("${POSTGRES_AS[@]}")
    "${as_postgres[@]}" "$pg_bin/initdb" -D "$pg_dir/data" -U postgres --auth=trust -E UTF8 --no-sync \
        >"$log_dir/initdb.log" 2>&1
    "${as_postgres[@]}" "$pg_bin/postgres" -D "$pg_dir/data" -p "$pg_port" -k "$pg_dir" \
        -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off 2>"$log_dir/postgres.log" &
    pids+=($!)
    export LEDGER_DATABASE_URL="host=127.0.0.1 port=$pg_port user=postgres dbname=postgres"
    for _ in $(seq 1 100); do
        "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$pg_port" && break
        sleep 0.1
    done
    echo "PostgreSQL:      $LEDGER_DATABASE_URL (throwaway, in $pg_dir)"
else
    echo "PostgreSQL:      from LEDGER_DATABASE_URL"
fi
export LEDGER_LISTEN="${LEDGER_LISTEN:-0.0.0.0:8081}"

"$bin_dir/receipt-ingest" 2>"$log_dir/receipt-ingest.log" &
pids+=($!)
"$bin_dir/receipt-verifier" 2>"$log_dir/receipt-verifier.log" &
pids+=($!)
"$bin_dir/receipt-ledger" 2>"$log_dir/receipt-ledger.log" &
pids+=($!)
ingest_port="${INGEST_LISTEN##*:}"
metrics_port="${VERIFIER_METRICS_LISTEN##*:}"
ledger_port="${LEDGER_LISTEN##*:}"
wait_ready "http://127.0.0.1:$ingest_port/readyz" receipt-ingest
wait_ready "http://127.0.0.1:$metrics_port/healthz" receipt-verifier
wait_ready "http://127.0.0.1:$ledger_port/readyz" receipt-ledger

# A fake receipt is base64 of its scenario (Sources/FakeAppStore/README.md): one valid production purchase.
sample_receipt="$(printf '%s' '{"scenario":"valid","env":"Production","bundle_id":"com.example.game","transactions":[{"id":"1000000000000001","product":"gems_100"}]}' | base64 -w0)"
cat <<EOT

Ready. Submit a receipt the fake App Store accepts (bundle com.example.game, transaction 1000000000000001):

  curl -s -X POST 'http://127.0.0.1:$ingest_port/v1/receipts?wait_ms=5000' -H 'Content-Type: application/json' \\
    -d '{"receipt_data":"$sample_receipt","order_id":"order-1","user_id":"user-1","expected_transaction_id":"1000000000000001"}'

Its result lists the transaction with "creditable": true and the catalog's "credit" object. A product the catalog
does not list (put "gems_999" in the receipt) is rejected with unknown_product.

Then receipt-ledger has credited it (100 gems) to user-1 (docs/CREDITING.md):

  curl -s http://127.0.0.1:$ledger_port/v1/users/user-1
EOT
if [ -n "$fake_url" ]; then
    # What a StoreKit 2 device holds for transaction 2000000000000002 (Transaction.jwsRepresentation), signed by the
    # fake; the verifier checks it locally and confirms it with the fake's Get Transaction Info.
    signed_transaction="$(curl -fsS "$fake_url/admin/signed-transaction?id=2000000000000002" \
        | sed -n 's/.*"signed_transaction":"\([^"]*\)".*/\1/p')"
    cat <<EOT

Or a StoreKit 2 signed transaction (transaction 2000000000000002, confirmed with the fake App Store Server API):

  curl -s -X POST 'http://127.0.0.1:$ingest_port/v1/receipts?wait_ms=5000' -H 'Content-Type: application/json' \\
    -d '{"signed_transaction":"$signed_transaction","order_id":"order-2","user_id":"user-2"}'

More transactions: curl '$fake_url/admin/signed-transaction?id=<any number>' (or register one: README of the fake).
EOT
    # What AppTransaction.shared holds (app ownership: verified with its app_transaction, nothing credited).
    signed_app_transaction="$(curl -fsS "$fake_url/admin/signed-app-transaction?id=705000000000001" \
        | sed -n 's/.*"signed_app_transaction":"\([^"]*\)".*/\1/p')"
    cat <<EOT

Or the app transaction (AppTransaction.shared: the customer owns the app; the result carries "app_transaction" with
"original_application_version", confirmed with the fake's Get App Transaction Info, and credits nothing):

  curl -s -X POST 'http://127.0.0.1:$ingest_port/v1/receipts?wait_ms=5000' -H 'Content-Type: application/json' \\
    -d '{"signed_app_transaction":"$signed_app_transaction","user_id":"user-2"}'
EOT
fi
cat <<EOT

Watch results as the verifier publishes them (another terminal):

  KAFKA_BOOTSTRAP_SERVERS=$KAFKA_BOOTSTRAP_SERVERS $bin_dir/receipt-tail --from-beginning

Watch purchase events (another terminal):

  kcat -C -b $KAFKA_BOOTSTRAP_SERVERS -t $EVENTS_TOPIC -o beginning
EOT
if [ -n "$fake_url" ]; then
    cat <<EOT

Send an App Store Server Notification signed by the fake App Store (retried after 10 and 60 s until the ingest
answers 200; types and options: fake-appstore send-notification --help), as Apple would POST it:

  curl -s -X POST "$fake_url/admin/notifications/send?type=REFUND&url=http://127.0.0.1:$ingest_port/v1/apple/notifications"
  $bin_dir/fake-appstore send-notification --signing-key $pki_dir/signing-key.pem --signing-chain $pki_dir/chain.pem \\
    --type DID_RENEW --url http://127.0.0.1:$ingest_port/v1/apple/notifications

Refund defence (docs/CREDITING.md): user-1 consents in the app, the customer asks Apple for a refund of the gems
above, Apple sends CONSUMPTION_REQUEST, and the ledger answers from its state (scripts/dev-refund-policy.json):

  curl -s -X PUT http://127.0.0.1:$ledger_port/v1/users/user-1/consent
  curl -s -X POST "$fake_url/admin/notifications/send?type=CONSUMPTION_REQUEST&transaction_id=1000000000000001&original_transaction_id=1000000000000001&notification_uuid=8f1c2d3e-0000-4000-8000-000000000001&url=http://127.0.0.1:$ingest_port/v1/apple/notifications"
  curl -s http://127.0.0.1:$ledger_port/v1/consumption-requests/8f1c2d3e-0000-4000-8000-000000000001
  curl -s "$fake_url/admin/consumption?transaction=1000000000000001"
EOT
fi
cat <<EOT

Metrics: http://127.0.0.1:$ingest_port/metrics (ingest), http://127.0.0.1:$metrics_port/metrics (verifier),
         http://127.0.0.1:$ledger_port/metrics (ledger)
Logs:    $log_dir/
Ctrl-C stops everything.
EOT

# Exit (and clean up) as soon as any process dies, or on Ctrl-C.
wait -n "${pids[@]}" || true
echo "a process exited unexpectedly; see $log_dir/" >&2
exit 1
