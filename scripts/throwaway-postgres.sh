# Sourced by scripts/check-monitoring.sh and scripts/api-conformance.sh: start_throwaway_postgres DIR LOG starts a
# PostgreSQL cluster of its own in DIR (loopback, a free port, trust auth, no fsync: test data only), appends its pid
# to the caller's pids array and sets POSTGRES_URL to a libpq connection string for it. As scripts/dev.sh: the
# server refuses to run as root, so under root DIR belongs to Debian's postgres user and the server runs as it.
start_throwaway_postgres() {
    local dir="$1" log="$2" pg_bin port
    pg_bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
    [ -x "$pg_bin/initdb" ] || { echo "no PostgreSQL server found: run scripts/install-deps.sh" >&2; return 1; }
    mkdir -p "$dir"
    local as_postgres=()
    if [ "$(id -u)" -eq 0 ]; then
        chown postgres:postgres "$dir"
        as_postgres=(setpriv --reuid=postgres --regid=postgres --init-groups --)
    fi
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "${as_postgres[@]}" "$pg_bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --no-sync >"$log" 2>&1 \
        || { cat "$log" >&2; return 1; }
    "${as_postgres[@]}" "$pg_bin/postgres" -D "$dir/data" -p "$port" -k "$dir" -c listen_addresses=127.0.0.1 \
        -c fsync=off 2>>"$log" &
    pids+=($!)
    for _ in $(seq 1 100); do "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$port" && break; sleep 0.1; done
    POSTGRES_URL="host=127.0.0.1 port=$port user=postgres dbname=postgres"
}
