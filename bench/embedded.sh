# Sourced by the benchmarks that need only a database (bench/roll-up, bench/record): a release `bouncer serve` on its
# own data directory provides its PostgreSQL, migrated, on a loopback port. Defines:
#   embedded_setup NAME   build (unless BENCH_NO_BUILD=1 or BOUNCER_BIN) and a temporary directory /tmp/bench-NAME.*
#                         ($tmp), removed with the server on exit; sets $bin, $port and $token (the admin token)
#   embedded_start        start the server (again) and wait until it listens ($pid; its log $tmp/serve.log)
#   embedded_stop         stop it
#   psql …                psql as postgres on its database, unaligned, quiet, stopping at the first error
# The caller has set -euo pipefail and $root (the repository).
embedded_setup() {
    if [ -z "${BOUNCER_BIN:-}" ] && [ "${BENCH_NO_BUILD:-0}" = 0 ]; then
        swift build -c release --product bouncer >/dev/null
    fi
    bin=${BOUNCER_BIN:-$root/.build/release/bouncer}
    tmp=$(mktemp -d "/tmp/bench-$1.XXXXXX")
    chmod 755 "$tmp"
    pid=""
    trap 'embedded_stop; rm -rf "$tmp"' EXIT
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    token="bench-admin-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
}
embedded_start() {
    : > "$tmp/serve.log"
    BOUNCER_DATA_DIR=$tmp/data BOUNCER_PORT=$port BOUNCER_ADMIN_TOKEN=$token "$bin" serve > "$tmp/serve.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 120); do
        grep -q "listening on" "$tmp/serve.log" && return 0
        kill -0 "$pid" 2>/dev/null || { cat "$tmp/serve.log"; exit 1; }
        sleep 0.5
    done
    cat "$tmp/serve.log"; exit 1
}
embedded_stop() {
    if [ -n "${pid:-}" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    pid=""
}
psql() { command psql -h "$tmp/data/postgres/run" -p 5432 -U postgres -d bouncer -X -q -At -v ON_ERROR_STOP=1 "$@"; }
