# Shared by the bench/*.sh scripts (sourced, not run): building, child processes and their start-up lines.

# Every benchmark runs against embedded-kafka, librdkafka's mock cluster, which holds every fetch for the full
# fetch.wait.max.ms (librdkafka's default 500 ms) where a real broker answers as soon as data arrives: the services
# keep librdkafka's default, so the benchmarks give them (and verifier-bench's own consumers) the short wait here.
export KAFKA_FETCH_WAIT_MAX_MS="${KAFKA_FETCH_WAIT_MAX_MS:-10}"

# bench_build PRODUCT...: builds the products (release unless BENCH_CONFIGURATION says otherwise, in
# BENCH_SCRATCH_PATH when set) with warnings as errors, and sets BIN to their directory. With BENCH_BIN_DIR set,
# builds nothing and runs the binaries there (another tree's build: "before" figures with this script).
bench_build() {
    if [ -n "${BENCH_BIN_DIR:-}" ]; then
        BIN="$BENCH_BIN_DIR"
        local product
        for product in "$@"; do
            [ -x "$BIN/$product" ] || { echo "BENCH_BIN_DIR=$BIN has no $product" >&2; return 1; }
        done
        return 0
    fi
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
    if declare -F postgres_cluster_cleanup >/dev/null; then postgres_cluster_cleanup; fi
}

# wait_for_line FILE PREFIX [SECONDS]: prints the value of the first "PREFIX=value" line of FILE (waits up to SECONDS,
# 10 by default; embedded-kafka prints its bootstrap line only once every topic exists, which takes longer for many).
wait_for_line() {
    local tries=$(( ${3:-10} * 20 ))
    for _ in $(seq 1 "$tries"); do
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

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# ---- a throwaway PostgreSQL (bench/chaos.sh, bench/soak.sh) -----------------------------------------------------
#   postgres_start   initdb in $WORK/postgres once, loopback port PG_PORT (as root the server runs as the `postgres`
#                    system user), sets LEDGER_DATABASE_URL and starts the server (postgres_run).
#   postgres_run     (re)starts the server on the same data; postgres_crash is an immediate shutdown (SIGQUIT: no
#                    checkpoint, crash recovery at the next start), postgres_stop a fast shutdown.
# POSTGRES_DURABLE=1: PostgreSQL's durable defaults (fsync, full_page_writes and synchronous_commit on: the ledger's
# durability rule, docs/CREDITING.md), as a deployment runs it. Otherwise fsync and full_page_writes off (a crash of
# the server keeps what it wrote, in the OS's page cache; a crash of the machine would not) and synchronous_commit
# still on: off, a crash loses the last commits the server had acknowledged (the ledger's offsets with them), which a
# real deployment does not do to the ledger either (chaos seed 424242 lost 25 purchases so).
postgres_start() {
    PG_BIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
    [ -x "$PG_BIN/initdb" ] || { echo "no PostgreSQL server found: run scripts/install-deps.sh" >&2; return 1; }
    PG_PORT="$(free_port)"
    # PostgreSQL refuses to run as root: the `postgres` system user (Debian's package creates it) owns the data and
    # must reach it through every parent directory; where it cannot (WORK under a private TMPDIR), the cluster goes
    # under /tmp instead (scripts/throwaway-postgres.sh), removed by bench_cleanup.
    [ "$(id -u)" -ne 0 ] || chmod 711 "$WORK"
    . "$(dirname "${BASH_SOURCE[0]}")/../scripts/throwaway-postgres.sh"
    postgres_cluster_dir "$WORK/postgres"
    PG_DIR="$POSTGRES_CLUSTER_DIR"
    AS_POSTGRES=("${POSTGRES_AS[@]}")
    "${AS_POSTGRES[@]}" "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres --auth=trust -E UTF8 --no-sync \
        >"$WORK/initdb.log" 2>&1 || { cat "$WORK/initdb.log" >&2; return 1; }
    LEDGER_DATABASE_URL="host=127.0.0.1 port=$PG_PORT user=postgres dbname=postgres connect_timeout=5"
    postgres_run
}

# postgres_run: starts the server (setpriv execs: POSTGRES_PID is the postmaster) and waits until it accepts.
postgres_run() {
    local durability=(-c fsync=off -c full_page_writes=off -c synchronous_commit=on)
    if [ "${POSTGRES_DURABLE:-0}" = 1 ]; then
        durability=(-c fsync=on -c full_page_writes=on -c synchronous_commit=on)
    fi
    # POSTGRES_WRAPPER: a command the server runs under (bench/postgres-callgrind.sh: valgrind).
    # shellcheck disable=SC2206
    local wrapper=(${POSTGRES_WRAPPER:-})
    "${AS_POSTGRES[@]}" "${wrapper[@]}" "$PG_BIN/postgres" -D "$PG_DIR/data" -p "$PG_PORT" -k "$PG_DIR" \
        -c listen_addresses=127.0.0.1 "${durability[@]}" \
        -c max_connections=50 ${POSTGRES_EXTRA_OPTIONS:-} 2>>"$WORK/postgres.log" &
    POSTGRES_PID=$!
    PIDS+=("$POSTGRES_PID")
    for _ in $(seq 1 300); do
        "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" && return 0
        kill -0 "$POSTGRES_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "PostgreSQL did not start (log: $WORK/postgres.log)" >&2
    tail -5 "$WORK/postgres.log" >&2
    return 1
}

# postgres_crash: an immediate shutdown (SIGQUIT), as close to a crash as a live machine gets.
postgres_crash() {
    kill -QUIT "$POSTGRES_PID" 2>/dev/null || true
    wait "$POSTGRES_PID" 2>/dev/null || true
}

# postgres_stop: a fast shutdown (SIGINT), waited for; nothing to do when it is not running.
postgres_stop() {
    [ -n "${POSTGRES_PID:-}" ] || return 0
    kill -INT "$POSTGRES_PID" 2>/dev/null || return 0
    wait "$POSTGRES_PID" 2>/dev/null || true
    POSTGRES_PID=
}

# postgres_server_ticks POSTMASTER_PID: the server's CPU so far, in clock ticks (user + system): every live process
# it started (backends, WAL writer, checkpointer...), the postmaster's own and what its reaped children used (ended
# backends, autovacuum workers). The difference of two readings is the whole server's CPU between them, as
# bench/ledger.sh measures it (bench/spends.sh).
postgres_server_ticks() {
    python3 - "$1" <<'PY'
import os, sys
postmaster = int(sys.argv[1])

def stat(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])

total = 0
for entry in os.listdir("/proc"):
    if entry.isdigit():
        s = stat(int(entry))
        if s is not None and s[0] == postmaster:
            total += s[1]
_, own, reaped = stat(postmaster)
print(total + own + reaped)
PY
}

# ---- instruction counts of an in-process bench (bench/verifier-callgrind.sh, bench/ingest-callgrind.sh) ----------
# callgrind_counts_option ARGS...: sets N1 and N2 from `--counts N1,N2` (default 2000,4000); exits 2 otherwise.
callgrind_counts_option() {
    local counts=2000,4000
    while [ $# -gt 0 ]; do
        case "$1" in
            --counts) counts="$2"; shift 2 ;;
            *) echo "unknown option $1" >&2; exit 2 ;;
        esac
    done
    N1="${counts%,*}"
    N2="${counts#*,}"
    [ "$N2" -gt "$N1" ] 2>/dev/null || { echo "--counts N1,N2 needs N2 > N1" >&2; exit 2; }
}

# callgrind_two_counts PRODUCT: runs $BIN/PRODUCT N1 and N2 (its one argument: how many items) under callgrind, prints
# each run's own line and leaves $WORK/annotate.N1 and .N2 (inclusive, demangled) for bench/callgrind-per-item.py.
# Swift seeds its hashing per process: dictionary probes then differ from run to run by about 1% of the count; a
# fixed seed makes the same binary give the same figure.
callgrind_two_counts() {
    command -v valgrind >/dev/null || apt-get install -y -qq valgrind >/dev/null
    echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg) (instruction counts do not depend on it)"
    local count
    for count in "$N1" "$N2"; do
        SWIFT_DETERMINISTIC_HASHING=1 valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind.$count" \
            "$BIN/$1" "$count" >"$WORK/run.$count" 2>"$WORK/valgrind.$count.log" || {
            cat "$WORK/run.$count" "$WORK/valgrind.$count.log" >&2
            exit 1
        }
        echo "  $(cat "$WORK/run.$count")"
        callgrind_annotate --inclusive=yes --auto=no --threshold=100 "$WORK/callgrind.$count" 2>/dev/null \
            | swift demangle --simplified >"$WORK/annotate.$count"
    done
}

# Empties every table of a ledger database but the schema's version (a warm-up run's rows out, the schema kept):
# whatever tables later schema versions add are emptied too, without this list having to know them.
LEDGER_TRUNCATE_ALL_SQL="DO \$\$ BEGIN EXECUTE (SELECT 'TRUNCATE ' || string_agg(format('%I', tablename), ', ') || ' CASCADE' FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_migrations'); END \$\$"
