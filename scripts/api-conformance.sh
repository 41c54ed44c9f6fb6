#!/usr/bin/env bash
# The HTTP API against its own contract: schemathesis (pinned in scripts/install-deps.sh) generates requests from
# schemas/openapi.yaml (the schema's examples, boundary and negative values, random ones, and sequences following
# its links) against a running receipt-ingest on an embedded-kafka cluster, and checks every answer: no 5xx, status
# codes, content types, headers and bodies as documented, schema-violating requests refused.
# Four passes, each its own ingest:
#   open        no INGEST_API_KEYS
#   named-keys  INGEST_API_KEYS=billing:...,support:...,<unnamed>, requests as 'support', which
#               INGEST_KEY_PROOFS limits to receipt_data+signed_transaction (its transaction_id bodies: 403)
#   wrong-key   the same keys, requests with an unknown one (401)
#   kafka-down  no broker reachable: the documented 503s (and /readyz 503) must match the schema too
# A result is put on the results topic first (the schema's VerifiedResult example), so GET answers 200 for its id.
# Then receipt-ledger (over a throwaway PostgreSQL) against schemas/ledger-openapi.yaml, having credited that result
# (its examples' user and credit_key answer 200):
#   ledger-open       no LEDGER_API_KEYS
#   ledger-wrong-key  LEDGER_API_KEYS set, requests with an unknown key (401 but health, readiness, metrics)
#   scripts/api-conformance.sh [BIN_DIR]      (default: swift build --show-bin-path; built beforehand)
#   CONFORMANCE_EXAMPLES=N   examples per operation and phase (default 20)
#   CONFORMANCE_SEED=N       schemathesis seed (default 1): the same seed replays the same requests
# Logs and HAR files of every request: .build/api-conformance/.
set -euo pipefail
cd "$(dirname "$0")/.."

bin="${1:-$(swift build --show-bin-path)}"
examples="${CONFORMANCE_EXAMPLES:-20}"
seed="${CONFORMANCE_SEED:-1}"
work=.build/api-conformance
rm -rf "$work"
mkdir -p "$work"
started=$SECONDS

command -v schemathesis >/dev/null || { echo "api-conformance: schemathesis is missing: run scripts/install-deps.sh"; exit 1; }

pids=()
. scripts/throwaway-postgres.sh
cleanup() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    postgres_cluster_cleanup
}
trap cleanup EXIT

# wait_for FILE PATTERN PID: waits up to 20 s for PATTERN in FILE while PID lives.
wait_for() {
    for _ in $(seq 1 200); do
        grep -q "$2" "$1" 2>/dev/null && return 0
        kill -0 "$3" 2>/dev/null || { echo "api-conformance: process $3 exited; see $1"; return 1; }
        sleep 0.1
    done
    echo "api-conformance: '$2' did not appear in $1 within 20 s"
    return 1
}

"$bin/embedded-kafka" --brokers 1 \
    --topics "iap.receipts.submitted:4,iap.receipts.results:4,iap.notifications.submitted:4,iap.purchase.events:4" \
    >"$work/embedded-kafka.out" 2>"$work/embedded-kafka.log" &
pids+=($!)
wait_for "$work/embedded-kafka.out" "^KAFKA_BOOTSTRAP_SERVERS=" "${pids[-1]}"
bootstrap="$(grep -m1 "^KAFKA_BOOTSTRAP_SERVERS=" "$work/embedded-kafka.out" | cut -d= -f2-)"

# The schema's own verified result, as the verifier would write it.
python3 -c '
import json, sys, yaml
example = yaml.safe_load(open("schemas/openapi.yaml"))["components"]["examples"]["VerifiedResult"]["value"]
print(example["submission_id"] + "\t" + json.dumps(example, separators=(",", ":")))
' | kcat -P -b "$bootstrap" -t iap.receipts.results -K $'\t'

failed=()
# run_pass NAME KAFKA_BOOTSTRAP ENV_ASSIGNMENTS -- SCHEMATHESIS_OPTIONS...
run_pass() {
    local name="$1" kafka="$2" settings="$3"
    shift 4
    # No verifier runs: a wait_ms up to INGEST_MAX_WAIT_MS holds its request that long, so waits are kept short
    # (larger wait_ms are 400 invalid_wait_ms, as documented).
    env KAFKA_BOOTSTRAP_SERVERS="$kafka" KAFKA_FETCH_WAIT_MAX_MS=10 INGEST_LISTEN=127.0.0.1:0 INGEST_MAX_WAIT_MS=100 \
        RESULT_INDEX_READY_TIMEOUT_SECONDS=5 $settings \
        "$bin/receipt-ingest" >"$work/$name-ingest.out" 2>"$work/$name-ingest.log" &
    local ingest=$!
    pids+=("$ingest")
    wait_for "$work/$name-ingest.log" '"msg":"HTTP server listening"' "$ingest"
    local port
    port="$(grep -m1 '"msg":"HTTP server listening"' "$work/$name-ingest.log" | grep -oE '"port":[0-9]+' | cut -d: -f2)"
    local url="http://127.0.0.1:$port"
    if [ "$name" != kafka-down ]; then
        for _ in $(seq 1 150); do curl -fsS -o /dev/null "$url/readyz" 2>/dev/null && break; sleep 0.1; done
    fi
    local pass_started=$SECONDS
    if schemathesis --config-file scripts/api-conformance.toml run schemas/openapi.yaml --url "$url" \
        --seed "$seed" --max-examples "$examples" --workers 1 --no-color --output-sanitize false \
        --report har --report-har-path "$work/$name.har" "$@" >"$work/$name.log" 2>&1; then
        echo "api-conformance: $name passed ($((SECONDS - pass_started)) s)"
    else
        echo "api-conformance: $name FAILED ($((SECONDS - pass_started)) s); the failures (log: $work/$name.log):"
        sed -n '/= FAILURES =/,/= SUMMARY =/p' "$work/$name.log" | head -60
        failed+=("$name")
    fi
    # Phases with their times, the stateful scenarios and links, the test case count.
    grep -E "^ +(✅|❌|⏭) +(Examples|Coverage|Fuzzing|Stateful) \(|Scenarios:|API Links:|[0-9]+ generated" \
        "$work/$name.log" | sed -E "s/^ +/  $name: /; s/ +/ /g" || true
    python3 - "$work/$name.har" "$name" <<'EOF'
import collections, json, re, sys
har, name = sys.argv[1], sys.argv[2]
counts = collections.defaultdict(collections.Counter)
for entry in json.load(open(har))["log"]["entries"]:
    path = re.sub(r"^https?://[^/]+", "", entry["request"]["url"]).split("?")[0]
    path = "/v1/receipts/{submission_id}" if re.match(r"^/v1/receipts/.", path) else path
    counts[entry["request"]["method"] + " " + path][entry["response"]["status"]] += 1
documented = {"GET /healthz", "GET /readyz", "GET /metrics", "POST /v1/receipts", "GET /v1/receipts/{submission_id}",
              "POST /v1/apple/notifications"}
other = collections.Counter()
for operation in sorted(counts):
    if operation not in documented:
        other.update(counts[operation])
        continue
    statuses = ", ".join(f"{status}: {n}" for status, n in sorted(counts[operation].items()))
    print(f"  {name}: {operation:34} {sum(counts[operation].values()):4} requests ({statuses})")
if other:
    statuses = ", ".join(f"{status}: {n}" for status, n in sorted(other.items()))
    print(f"  {name}: {'undocumented methods':34} {sum(other.values()):4} requests ({statuses})")
EOF
    kill -TERM "$ingest" 2>/dev/null || true
    wait "$ingest" 2>/dev/null || true
}

run_pass open "$bootstrap" "" --
# Named keys: requests as 'support', which must not see the 'billing' result put on the topic above (404, also for a
# POST reusing its submission_id), and which may not submit bare transaction ids (403 proof_not_allowed, documented).
keys="INGEST_API_KEYS=billing:conformance-billing,support:conformance-support,conformance-any"
run_pass named-keys "$bootstrap" "$keys INGEST_KEY_PROOFS=support:receipt_data+signed_transaction" -- \
    -H "Authorization: Bearer conformance-support"
# A key the ingest does not know: every request but the health, readiness and metrics ones is 401 as documented.
run_pass wrong-key "$bootstrap" "$keys" -- -H "Authorization: Bearer not-a-key" --phases examples,coverage
# Nothing listens on port 9: every write is refused at once (503 kafka_unavailable), /readyz says 503. Every 5xx must
# then be a documented one, which status_code_conformance checks; not_a_server_error would refuse even those. Nothing
# waits here, so every wait_ms the schema allows is accepted and the bodies reach the Kafka path.
run_pass kafka-down 127.0.0.1:9 "INGEST_MAX_WAIT_MS=300000" -- --exclude-checks not_a_server_error \
    --phases examples,coverage,fuzzing

# receipt-ledger: one pass per configuration, each its own process over the same database.
start_throwaway_postgres "$PWD/$work/postgres" "$work/postgres.log"
run_ledger_pass() {
    local name="$1" settings="$2"
    shift 3
    env KAFKA_BOOTSTRAP_SERVERS="$bootstrap" KAFKA_FETCH_WAIT_MAX_MS=10 LEDGER_LISTEN=127.0.0.1:0 \
        LEDGER_DATABASE_URL="$POSTGRES_URL" $settings \
        "$bin/receipt-ledger" >"$work/$name.out" 2>"$work/$name-ledger.log" &
    local ledger=$!
    pids+=("$ledger")
    wait_for "$work/$name-ledger.log" '"msg":"receipt-ledger started"' "$ledger"
    local url="http://127.0.0.1:$(grep -m1 '"msg":"receipt-ledger started"' "$work/$name-ledger.log" \
        | grep -oE '"port":[0-9]+' | cut -d: -f2)"
    for _ in $(seq 1 150); do curl -fsS -o /dev/null "$url/readyz" 2>/dev/null && break; sleep 0.1; done
    # The example result is credited before the pass starts (its user and purchase are the schema's examples).
    for _ in $(seq 1 150); do
        grep -qE '^ledger_messages_applied_total\{topic="results"\} [1-9]' <(curl -fsS "$url/metrics") && break
        [ "$name" != ledger-open ] && break
        sleep 0.1
    done
    local pass_started=$SECONDS
    if schemathesis --config-file scripts/api-conformance.toml run schemas/ledger-openapi.yaml --url "$url" \
        --seed "$seed" --max-examples "$examples" --workers 1 --no-color --output-sanitize false \
        --report har --report-har-path "$work/$name.har" "$@" >"$work/$name.log" 2>&1; then
        echo "api-conformance: $name passed ($((SECONDS - pass_started)) s)"
    else
        echo "api-conformance: $name FAILED ($((SECONDS - pass_started)) s); the failures (log: $work/$name.log):"
        sed -n '/= FAILURES =/,/= SUMMARY =/p' "$work/$name.log" | head -60
        failed+=("$name")
    fi
    python3 - "$work/$name.har" "$name" <<'EOF2'
import collections, json, re, sys
counts = collections.defaultdict(collections.Counter)
for entry in json.load(open(sys.argv[1]))["log"]["entries"]:
    path = re.sub(r"^https?://[^/]+", "", entry["request"]["url"]).split("?")[0]
    path = re.sub(r"^/v1/purchases/.+", "/v1/purchases/{credit_key}", path)
    path = re.sub(r"^/v1/consumption-requests/.+", "/v1/consumption-requests/{event_id}", path)
    path = re.sub(r"^/v1/users/[^/]+/(consent|app-account-token|spends|grants|history)$", r"/v1/users/{user_id}/\1", path)
    path = re.sub(r"^/v1/users/[^/]+$", "/v1/users/{user_id}", path)
    method = entry["request"]["method"]
    documented = {"POST": ("/spends", "/grants"), "PUT": ("/consent", "/app-account-token"), "DELETE": ("/consent",)}
    known = method in ("GET", "HEAD") and not path.endswith(("/spends", "/grants", "/consent", "/app-account-token")) \
        or path.endswith(documented.get(method, ("//",)))
    counts[method + " " + path if known else "undocumented methods"][entry["response"]["status"]] += 1
for operation in sorted(counts):
    statuses = ", ".join(f"{status}: {n}" for status, n in sorted(counts[operation].items()))
    print(f"  {sys.argv[2]}: {operation:34} {sum(counts[operation].values()):4} requests ({statuses})")
EOF2
    kill -TERM "$ledger" 2>/dev/null || true
    wait "$ledger" 2>/dev/null || true
}
run_ledger_pass ledger-open "" --
run_ledger_pass ledger-wrong-key "LEDGER_API_KEYS=billing:conformance-ledger" -- -H "Authorization: Bearer not-a-key" \
    --phases examples,coverage

echo "api-conformance: schemathesis $(schemathesis --version | grep -oE '[0-9.]+$'), seed $seed, $examples examples" \
    "per operation and phase, $((SECONDS - started)) s in all"
if [ ${#failed[@]} -gt 0 ]; then
    echo "api-conformance: failed: ${failed[*]} (replay a pass with the same CONFORMANCE_SEED)"
    exit 1
fi
