# Shared by bench/soak.sh and bench/chaos.sh (sourced after bench/lib.sh, which gives BIN, WORK and PIDS): the whole
# system as separate processes on this machine, plus kcat followers that copy the topics to files as they are
# written (the mock cluster keeps only 5 MB per partition, so a reader at the end would miss the beginning).
#
#   pipeline_start        embedded-kafka (KAFKA_PID, BOOTSTRAP), a minted PKI, fake-appstore (FAKE_PID, FAKE_URL),
#                         receipt-ingest (INGEST_PID, INGEST_URL) and CHAOS_VERIFIERS verifiers (VERIFIER_PID[n],
#                         VERIFIER_METRICS[n]), each ready.
#   start_ingest / start_verifier N   (re)start one service on its fixed port and wait until it is ready.
#   follow_topics         kcat followers of the submissions, results, events and DLQ topics into $WORK/topic-*.tsv.
#   stop_followers        SIGTERM them (kcat flushes what it read).
#   pipeline_stop         SIGTERM the ledgers, the verifiers and the ingest (each must exit 0 within 30 s: drained,
#                         offsets committed), then the fake and the cluster.
#   postgres_start ...    a throwaway PostgreSQL and LEDGER_DATABASE_URL: in bench/lib.sh (bench/soak.sh runs it
#                         durable, this run with fsync off).
#   start_ledgers / start_ledger N   CHAOS_LEDGERS receipt-ledger instances (LEDGER_PID[n], LEDGER_URL[n]) in one
#                         group over that database, consuming the results and events topics.
#
# Settings (environment): RECEIPT_PARTITIONS (default 16), CHAOS_VERIFIERS (default 2), FAKE_LATENCY_MS (default
# 50), FAKE_JITTER_MS (default 50), VERIFIER_EXTRA (extra NAME=value settings for the verifiers, space-separated),
# CHAOS_LEDGERS (default 2).

RECEIPTS_TOPIC=iap.receipts.submitted
RESULTS_TOPIC=iap.receipts.results
EVENTS_TOPIC=iap.purchase.events
DLQ_TOPIC=iap.receipts.dlq
RECEIPT_PARTITIONS="${RECEIPT_PARTITIONS:-16}"
# Results come in bursts (a drained backlog): 16 partitions give the kcat follower 80 MB of slack, not 20.
RESULT_PARTITIONS="${RESULT_PARTITIONS:-16}"
OTHER_PARTITIONS=4
CHAOS_VERIFIERS="${CHAOS_VERIFIERS:-2}"
# The verifiers' input partitions: submissions, retry and notifications topics.
INPUT_PARTITIONS=$((RECEIPT_PARTITIONS + 2 * OTHER_PARTITIONS))
FOLLOWER_PIDS=()
declare -a VERIFIER_PID VERIFIER_PORT VERIFIER_METRICS
CHAOS_LEDGERS="${CHAOS_LEDGERS:-2}"
declare -a LEDGER_PID LEDGER_PORT LEDGER_URL

# wait_http URL WHAT PID: waits up to 30 s for URL to answer 2xx while PID lives.
wait_http() {
    for _ in $(seq 1 300); do
        if curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null; then return 0; fi
        kill -0 "$3" 2>/dev/null || { echo "$2 exited during start-up" >&2; return 1; }
        sleep 0.1
    done
    echo "$2 not ready at $1 after 30 s" >&2
    return 1
}

pipeline_start() {
    local topics="$RECEIPTS_TOPIC:$RECEIPT_PARTITIONS,$RESULTS_TOPIC:$RESULT_PARTITIONS"
    topics="$topics,iap.receipts.retry:$OTHER_PARTITIONS,$DLQ_TOPIC:1"
    topics="$topics,iap.notifications.submitted:$OTHER_PARTITIONS,$EVENTS_TOPIC:$OTHER_PARTITIONS"
    "$BIN/embedded-kafka" --topics "$topics" >"$WORK/kafka.out" 2>"$WORK/kafka.log" &
    KAFKA_PID=$!
    PIDS+=("$KAFKA_PID")
    BOOTSTRAP="$(wait_for_line "$WORK/kafka.out" KAFKA_BOOTSTRAP_SERVERS)" || { cat "$WORK/kafka.log" >&2; return 1; }

    # The fake signs notifications with a PKI of our own; the verifiers trust only its root.
    "$BIN/fake-appstore" mint-pki --out "$WORK/pki" >"$WORK/mint-pki.out"
    local fake_pki_args
    read -r -a fake_pki_args <<<"$(grep '^FAKE_APPSTORE_ARGS=' "$WORK/mint-pki.out" | cut -d= -f2-)"
    "$BIN/fake-appstore" --port 0 --latency-ms "${FAKE_LATENCY_MS:-50}" --jitter-ms "${FAKE_JITTER_MS:-50}" \
        --threads 2 --hang-seconds 30 "${fake_pki_args[@]}" >"$WORK/fake.out" 2>"$WORK/fake.log" &
    FAKE_PID=$!
    PIDS+=("$FAKE_PID")
    FAKE_URL="$(wait_for_line "$WORK/fake.out" FAKE_APPSTORE_URL)" || { cat "$WORK/fake.log" >&2; return 1; }

    VERIFIER_ENV=(
        "KAFKA_BOOTSTRAP_SERVERS=$BOOTSTRAP" "ALLOWED_BUNDLE_IDS=com.example.game"
        "APPLE_VERIFY_RECEIPT_URL=$FAKE_URL/verifyReceipt"
        "APPLE_SANDBOX_VERIFY_RECEIPT_URL=$FAKE_URL/sandbox/verifyReceipt"
        "APPLE_SERVER_API_URL=$FAKE_URL" "APPLE_SERVER_API_SANDBOX_URL=$FAKE_URL/sandbox"
        "APPLE_OCSP_RESPONDER_URL=$FAKE_URL/ocsp"
        "PRODUCT_CATALOG_FILE=$PWD/scripts/dev-product-catalog.json"
        # A killed verifier's partitions wait for its session to expire before the group hands them on.
        "KAFKA_SESSION_TIMEOUT_MS=10000" "KAFKA_HEARTBEAT_INTERVAL_MS=1000"
        # The mock cluster's coordinator, frozen (SIGSTOP) during the rebalance that follows a SIGKILL, completes that
        # rebalance only at its rebalance timeout (max.poll.interval.ms, 300 s by default) instead of when the dead
        # member's session expires, as Kafka does: every partition sat unowned for 5 minutes (seed 777998415). The
        # verifiers poll continuously, so 30 s is safe and bounds the mock's stall.
        "KAFKA_MAX_POLL_INTERVAL_MS=30000"
        "LOG_LEVEL=info"
    )
    while IFS='=' read -r name value; do VERIFIER_ENV+=("$name=$value"); done <"$WORK/pki/settings.env"
    # shellcheck disable=SC2206
    VERIFIER_ENV+=(${VERIFIER_EXTRA:-})

    INGEST_PORT="$(free_port)"
    INGEST_URL="http://127.0.0.1:$INGEST_PORT"
    start_ingest
    local n
    for ((n = 1; n <= CHAOS_VERIFIERS; n++)); do
        VERIFIER_PORT[$n]="$(free_port)"
        VERIFIER_METRICS[$n]="http://127.0.0.1:${VERIFIER_PORT[$n]}/metrics"
        start_verifier "$n"
    done
    # The group settles (every verifier owns partitions, nothing rebalancing) before the load starts, so start-up
    # rebalances are not counted as the faults' duplicates.
    # shellcheck disable=SC2046
    python3 bench/chaos-tool.py drain $(verifier_metrics_args) --partitions "$INPUT_PARTITIONS" --each --stable 3 \
        --timeout 60 >/dev/null
}

start_ingest() {
    env "KAFKA_BOOTSTRAP_SERVERS=$BOOTSTRAP" "INGEST_LISTEN=127.0.0.1:$INGEST_PORT" LOG_LEVEL=info \
        "$BIN/receipt-ingest" 2>>"$WORK/ingest.log" &
    INGEST_PID=$!
    PIDS+=("$INGEST_PID")
    wait_http "$INGEST_URL/readyz" receipt-ingest "$INGEST_PID"
}

start_verifier() {
    local n="$1"
    env "${VERIFIER_ENV[@]}" "VERIFIER_METRICS_LISTEN=127.0.0.1:${VERIFIER_PORT[$n]}" \
        "$BIN/receipt-verifier" 2>>"$WORK/verifier-$n.log" &
    VERIFIER_PID[$n]=$!
    PIDS+=("${VERIFIER_PID[$n]}")
    wait_http "http://127.0.0.1:${VERIFIER_PORT[$n]}/readyz" "receipt-verifier $n" "${VERIFIER_PID[$n]}"
}

follow_topics() {
    local topic
    for topic in "$RECEIPTS_TOPIC" "$RESULTS_TOPIC" "$EVENTS_TOPIC" "$DLQ_TOPIC"; do
        # A short fetch wait keeps the copy close behind the writers (the mock cluster holds a fetch that long).
        kcat -C -b "$BOOTSTRAP" -t "$topic" -o beginning -q -X fetch.wait.max.ms=100 -f '%p\t%o\t%T\t%s\n' \
            >"$WORK/topic-$topic.tsv" 2>"$WORK/kcat-$topic.log" &
        FOLLOWER_PIDS+=($!)
        PIDS+=($!)
    done
}

stop_followers() {
    local pid
    for pid in "${FOLLOWER_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${FOLLOWER_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
}

# stop_process PID NAME: SIGTERM, wait up to 30 s; fails unless it exited 0.
stop_process() {
    local pid="$1" name="$2" code
    kill -TERM "$pid" 2>/dev/null || { echo "$name was not running at the end" >&2; return 1; }
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null || true
        echo "$name did not exit within 30 s of SIGTERM" >&2
        return 1
    fi
    code=0
    wait "$pid" 2>/dev/null || code=$?
    if [ "$code" -ne 0 ]; then echo "$name exited $code after SIGTERM" >&2; return 1; fi
}

pipeline_stop() {
    local n result=0
    for ((n = 1; n <= CHAOS_LEDGERS; n++)); do
        if [ -n "${LEDGER_PID[$n]:-}" ]; then stop_process "${LEDGER_PID[$n]}" "receipt-ledger $n" || result=1; fi
    done
    for ((n = 1; n <= CHAOS_VERIFIERS; n++)); do
        stop_process "${VERIFIER_PID[$n]}" "receipt-verifier $n" || result=1
    done
    stop_process "$INGEST_PID" receipt-ingest || result=1
    stop_process "$FAKE_PID" fake-appstore || result=1
    stop_process "$KAFKA_PID" embedded-kafka || result=1
    return $result
}

# check_topics [--faults FILE] [--fake URL]: the independent check of what reached the topics (exit status 1 on a
# violation).
check_topics() {
    python3 bench/chaos-tool.py check --load "$WORK/load.tsv" --bootstrap "$BOOTSTRAP" \
        --submissions "$WORK/topic-$RECEIPTS_TOPIC.tsv" --submissions-partitions "$RECEIPT_PARTITIONS" \
        --results "$WORK/topic-$RESULTS_TOPIC.tsv" --results-partitions "$RESULT_PARTITIONS" \
        --events "$WORK/topic-$EVENTS_TOPIC.tsv" \
        --dlq "$WORK/topic-$DLQ_TOPIC.tsv" "$@"
}

# verifier_metrics_args: --metrics URL for every verifier (for chaos-tool.py drain).
verifier_metrics_args() {
    local n
    for ((n = 1; n <= CHAOS_VERIFIERS; n++)); do printf -- '--metrics\n%s\n' "${VERIFIER_METRICS[$n]}"; done
}

# ---- receipt-ledger (PostgreSQL: postgres_start and friends in bench/lib.sh) ------------------------------------
start_ledgers() {
    local n
    for ((n = 1; n <= CHAOS_LEDGERS; n++)); do
        LEDGER_PORT[$n]="$(free_port)"
        LEDGER_URL[$n]="http://127.0.0.1:${LEDGER_PORT[$n]}"
        start_ledger "$n"
    done
}

start_ledger() {
    local n="$1"
    # The group settings of the verifiers (a killed member's partitions move on after 10 s; the mock cluster's
    # rebalance stall bounded by max.poll.interval.ms).
    env "KAFKA_BOOTSTRAP_SERVERS=$BOOTSTRAP" "LEDGER_DATABASE_URL=$LEDGER_DATABASE_URL" \
        "LEDGER_LISTEN=127.0.0.1:${LEDGER_PORT[$n]}" "RESULTS_TOPIC=$RESULTS_TOPIC" "EVENTS_TOPIC=$EVENTS_TOPIC" \
        KAFKA_SESSION_TIMEOUT_MS=10000 KAFKA_HEARTBEAT_INTERVAL_MS=1000 KAFKA_MAX_POLL_INTERVAL_MS=30000 \
        LOG_LEVEL=info "$BIN/receipt-ledger" 2>>"$WORK/ledger-$n.log" &
    LEDGER_PID[$n]=$!
    PIDS+=("${LEDGER_PID[$n]}")
    wait_http "${LEDGER_URL[$n]}/readyz" "receipt-ledger $n" "${LEDGER_PID[$n]}"
}

# ledger_tool_args: LEDGER_TOOL_ARGS, what chaos-tool.py needs to read the ledger (its API, its database, the topics
# it consumes); an array, since the connection string has spaces.
ledger_tool_args() {
    LEDGER_TOOL_ARGS=(--ledger "${LEDGER_URL[1]}" --database-url "$LEDGER_DATABASE_URL"
        --ledger-topic "$RESULTS_TOPIC:$RESULT_PARTITIONS" --ledger-topic "$EVENTS_TOPIC:$OTHER_PARTITIONS")
}
