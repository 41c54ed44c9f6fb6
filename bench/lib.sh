# Shared by the bench/*.sh scripts (sourced, not run): building, child processes and their start-up lines.

# Every benchmark runs against embedded-kafka, librdkafka's mock cluster, which holds every fetch for the full
# fetch.wait.max.ms (librdkafka's default 500 ms) where a real broker answers as soon as data arrives: the services
# keep librdkafka's default, so the benchmarks give them (and verifier-bench's own consumers) the short wait here.
export KAFKA_FETCH_WAIT_MAX_MS="${KAFKA_FETCH_WAIT_MAX_MS:-10}"

# bench_build PRODUCT...: builds the products (release unless BENCH_CONFIGURATION says otherwise, in
# BENCH_SCRATCH_PATH when set) with warnings as errors, and sets BIN to their directory.
bench_build() {
    local scratch_args=()
    if [ -n "${BENCH_SCRATCH_PATH:-}" ]; then scratch_args=(--scratch-path "$BENCH_SCRATCH_PATH"); fi
    local configuration="${BENCH_CONFIGURATION:-release}"
    local product
    for product in "$@"; do
        swift build -c "$configuration" "${scratch_args[@]}" -Xswiftc -warnings-as-errors --product "$product" >&2
    done
    BIN="$(swift build -c "$configuration" "${scratch_args[@]}" --show-bin-path)"
}

# bench_workspace: a temporary WORK directory and a PIDS list; on exit every process in PIDS is stopped and
# WORK removed.
bench_workspace() {
    WORK="$(mktemp -d)"
    PIDS=()
    trap bench_cleanup EXIT
}

bench_cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    if [ -n "${BENCH_KEEP_WORK:-}" ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
}

# wait_for_line FILE PREFIX: prints the value of the first "PREFIX=value" line of FILE (waits up to 10 s).
wait_for_line() {
    for _ in $(seq 1 200); do
        if grep -q "^$2=" "$1" 2>/dev/null; then grep "^$2=" "$1" | head -1 | cut -d= -f2-; return 0; fi
        sleep 0.05
    done
    return 1
}

# listening_port LOG: the port of the first "HTTP server listening" JSON log line of LOG (waits up to 10 s).
listening_port() {
    for _ in $(seq 1 200); do
        if grep -q '"msg":"HTTP server listening"' "$1" 2>/dev/null; then
            grep -m1 '"msg":"HTTP server listening"' "$1" | sed 's/.*"port":\([0-9]*\).*/\1/'
            return 0
        fi
        sleep 0.05
    done
    return 1
}
