# Sourced by the scripts that make a throwaway PostgreSQL cluster (scripts/check-monitoring.sh,
# scripts/api-conformance.sh, scripts/check-example-consumer.sh, scripts/dev.sh, bench/lib.sh, bench/ledger.sh).
#
# postgres_cluster_dir DIR: sets POSTGRES_CLUSTER_DIR to where a cluster wanted at DIR can live, and POSTGRES_AS
# to the command prefix its server binaries run under. PostgreSQL refuses to run as root: as root the server runs as
# Debian's `postgres` system user, which must reach the directory through every parent, and a checkout in a private
# directory (`mktemp -d`, /root/...: mode 0700) is closed to it. Then the cluster gets a new directory under /tmp
# (world-traversable) instead, which postgres_cluster_cleanup removes. Not root: DIR itself, run as the caller.
postgres_cluster_dir() {
    local dir="$1"
    POSTGRES_AS=()
    POSTGRES_CLUSTER_DIR="$dir"
    mkdir -p "$dir"
    [ "$(id -u)" -eq 0 ] || return 0
    POSTGRES_AS=(setpriv --reuid=postgres --regid=postgres --init-groups --)
    chown postgres:postgres "$dir"
    if "${POSTGRES_AS[@]}" test -w "$dir" -a -x "$dir"; then
        return 0
    fi
    POSTGRES_CLUSTER_DIR="$(mktemp -d /tmp/receipts-postgres.XXXXXX)"
    chown postgres:postgres "$POSTGRES_CLUSTER_DIR"
    POSTGRES_RELOCATED_DIRS+=("$POSTGRES_CLUSTER_DIR")
    echo "PostgreSQL: $dir is out of the postgres user's reach (a private parent directory); the cluster is in" \
        "$POSTGRES_CLUSTER_DIR instead" >&2
}

# postgres_cluster_cleanup: removes the directories postgres_cluster_dir made under /tmp (after the servers stopped).
postgres_cluster_cleanup() {
    local dir
    for dir in "${POSTGRES_RELOCATED_DIRS[@]}"; do rm -rf "$dir"; done
    POSTGRES_RELOCATED_DIRS=()
}
declare -ga POSTGRES_RELOCATED_DIRS

# start_throwaway_postgres DIR LOG starts a PostgreSQL cluster of its own in DIR (or where postgres_cluster_dir puts
# it; loopback, a free port, trust auth, no fsync: test data only), appends its pid to the caller's pids array and sets
# POSTGRES_URL to a libpq connection string for it. The caller's EXIT trap stops it and calls
# postgres_cluster_cleanup.
start_throwaway_postgres() {
    local dir="$1" log="$2" pg_bin port
    pg_bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
    [ -x "$pg_bin/initdb" ] || { echo "no PostgreSQL server found: run scripts/install-deps.sh" >&2; return 1; }
    postgres_cluster_dir "$dir"
    dir="$POSTGRES_CLUSTER_DIR"
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "${POSTGRES_AS[@]}" "$pg_bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --no-sync >"$log" 2>&1 \
        || { cat "$log" >&2; return 1; }
    "${POSTGRES_AS[@]}" "$pg_bin/postgres" -D "$dir/data" -p "$port" -k "$dir" -c listen_addresses=127.0.0.1 \
        -c fsync=off 2>>"$log" &
    pids+=($!)
    for _ in $(seq 1 100); do "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$port" && break; sleep 0.1; done
    POSTGRES_URL="host=127.0.0.1 port=$port user=postgres dbname=postgres"
}
