#!/usr/bin/env bash
# Single-row INSERT … ON CONFLICT DO UPDATE throughput through our Postgres layer at 1, 4 and 16
# concurrent workers, against pgbench running the same SQL (custom script, prepared protocol) on the
# same cluster as the ceiling. The cluster is private, durable (fsync on, PostgreSQL defaults), and
# listens on a Unix socket only. Target: ours >= 85% of pgbench at every concurrency.
#
# On a shared, busy machine single runs are noisy, so ours and pgbench alternate for BENCH_ROUNDS
# rounds at each concurrency and the medians are compared.
#
#   bash bench/db/run.sh      # 4 s per measurement, 3 rounds; BENCH_SECONDS / BENCH_ROUNDS to change
#   BENCH_ASYNC_COMMIT=1 bash bench/db/run.sh   # sessions with synchronous_commit=off (both sides):
#                                               # takes the disk's fsync latency out, so the CPU cost
#                                               # of the client layer shows
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${BENCH_SECONDS:-4}
rounds=${BENCH_ROUNDS:-3}
out=bench/out
mkdir -p "$out"
bin="$out/bench-db"
dir="$PWD/$out/db-cluster"

cflags=()
for f in $(pkg-config --cflags libpq); do cflags+=(-Xcc "$f"); done
echo "building $bin (swiftc -O with Sources/Postgres)…" >&2
swiftc -O -module-name BenchDB -I Sources/CPostgres "${cflags[@]}" -lpq \
    bench/db/main.swift Sources/Postgres/*.swift -o "$bin"

socket=$("$bin" start "$dir")
if [ "${BENCH_ASYNC_COMMIT:-0}" = 1 ]; then export PGOPTIONS="-c synchronous_commit=off"; echo "sessions: synchronous_commit=off" >&2; fi
pgbench_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)/pgbench
[ -x "$pgbench_bin" ] || pgbench_bin=pgbench
trap '"$bin" stop "$dir" >/dev/null 2>&1 || true' EXIT

median() { printf "%s\n" "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

printf "%-8s %12s %12s %8s   (medians of %s rounds of %ss)\n" workers "ours tps" "pgbench tps" ratio "$rounds" "$seconds"
for n in 1 4 16; do
    ours=(); theirs=()
    for _ in $(seq "$rounds"); do
        ours+=("$("$bin" run "$dir" "$n" "$seconds" 2>/dev/null)")
        theirs+=("$("$pgbench_bin" -h "$socket" -U postgres -n -M prepared -f bench/db/custom.sql -c "$n" -j "$n" -T "$seconds" bench 2>/dev/null \
            | sed -nE 's/^tps = ([0-9.]+).*/\1/p' | head -1)")
    done
    o=$(median "${ours[@]}"); t=$(median "${theirs[@]}")
    ratio=$(awk -v a="$o" -v b="$t" 'BEGIN { printf "%.0f%%", (b > 0 ? 100 * a / b : 0) }')
    printf "%-8s %12.0f %12.0f %8s   ours: %s  pgbench: %s\n" "$n" "$o" "$t" "$ratio" "${ours[*]}" "$(printf '%.0f ' "${theirs[@]}")"
done
