# bench/http's TLS mode (BENCH_TLS=1), sourced by bench/http after its build: bouncer and nginx on HTTPS with the same
# ECDSA P-256 certificate, the same protocols and cipher order, session cache and tickets on both; wrk -t2 -c64 on
# keep-alive hello, then with `Connection: close` (a new connection and full handshake per request; wrk's "connect"
# errors would be refused connections); then RSS per idle TLS connection. Expects: $tmp, $secs, $NGINX, $access_log, cleanup/trap set by bench/http.
pki="$tmp/pki"
mkdir -p "$pki"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$pki/server.key" -out "$pki/server.pem" \
    -days 2 -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2>/dev/null
tls12=$(sed -nE 's/.*tls12Ciphers = "(.*)"$/\1/p; s/^ *\+ "(.*)"$/\1/p' Sources/Crypto/TLS.swift | tr -d '\n')
tls13=$(sed -nE 's/.*tls13Ciphersuites = "(.*)"$/\1/p' Sources/Crypto/TLS.swift)
[ -n "$tls12" ] && [ -n "$tls13" ] || { echo "cannot read the cipher lists from Sources/Crypto/TLS.swift"; exit 1; }

# Default settings, the per-client cap (256) included: wrk's 64 clients all come from 127.0.0.1, and a handshake per
# request must never be refused by it (a closed connection gives its slot back at once).
env BOUNCER_PORT=0 BOUNCER_ACCESS_LOG="$access_log" \
    BOUNCER_TLS_CERT_FILE="$pki/server.pem" BOUNCER_TLS_KEY_FILE="$pki/server.key" ${BENCH_ENV:-} \
    .build-bench/release/bouncer serve > "$tmp/out" 2> "$tmp/err" &
BPID=$!
for _ in $(seq 100); do grep -q listening "$tmp/out" 2>/dev/null && break; sleep 0.1; done
PORT=$(sed -nE 's/^listening on https:\/\/[^ ]*:([0-9]+)$/\1/p' "$tmp/out")
[ -n "$PORT" ] || { echo "bouncer did not start"; cat "$tmp/err"; exit 1; }

NPORT=$((20000 + RANDOM % 20000))
cat > "$tmp/nginx.conf" <<NGINX
worker_processes auto;
pid $tmp/nginx.pid;
error_log $tmp/nginx-error.log;
events { worker_connections 10240; }
http {
    access_log $( [ "$access_log" = on ] && echo "$tmp/nginx-access.log" || echo off );
    keepalive_requests 100000;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_ciphers $tls12;
    ssl_conf_command Ciphersuites $tls13;
    ssl_prefer_server_ciphers on;
    ssl_session_cache shared:SSL:10m;
    ssl_session_tickets on;
    server {
        listen 127.0.0.1:$NPORT ssl;
        ssl_certificate $pki/server.pem;
        ssl_certificate_key $pki/server.key;
        location = /v1/ping { default_type application/json; return 200 '{"pong":true}'; }
    }
}
NGINX
"$NGINX" -c "$tmp/nginx.conf" -p "$tmp" -e "$tmp/nginx-error.log"

negotiated() {  # port -> "TLSv1.3 TLS_AES_128_GCM_SHA256 http/1.1"
    openssl s_client -connect "127.0.0.1:$1" -alpn http/1.1 < /dev/null 2>/dev/null \
        | awk '/^New, / {v=$2; sub(",", "", v); c=$NF} /^ALPN protocol:/ {a=$3} END {print v, c, a}'
}
echo "negotiated (wrk's OpenSSL client defaults): bouncer $(negotiated "$PORT"); nginx $(negotiated "$NPORT")"

# Server CPU time (user + system ticks of every process) during a run: a figure the other load on the shared box
# blurs far less than req/s. nginx: its workers; bouncer: the process.
ticks() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo "$t"; }
hz=$(getconf CLK_TCK)
measure() {  # name url [extra wrk args] -> "name rps p50 p99 cpu/request"
    local name=$1 url=$2; shift 2
    local pids
    case $name in nginx*) pids=$(pgrep -P "$(cat "$tmp/nginx.pid")" | tr '\n' ' ') ;; *) pids=$BPID ;; esac
    local t0; t0=$(ticks $pids)
    wrk -t2 -c64 -d"${secs}s" --latency "$@" "$url" > "$tmp/$name.txt"
    local t1; t1=$(ticks $pids)
    local rps p50 p99 errors cpu
    rps=$(awk '/^Requests\/sec:/ {print $2}' "$tmp/$name.txt")
    p50=$(awk '$1=="50%" {print $2}' "$tmp/$name.txt")
    p99=$(awk '$1=="99%" {print $2}' "$tmp/$name.txt")
    errors=$(awk '/Socket errors|Non-2xx/ {printf "%s ", $0}' "$tmp/$name.txt")
    errors=${errors:-"no socket errors (nothing refused), all 2xx"}
    cpu=$(awk -v t=$((t1 - t0)) -v hz="$hz" -v r="$rps" -v s="$secs" 'BEGIN { printf "%.1f", t / hz * 1e6 / (r * s) }')
    printf '%-28s %10s req/s  p50 %8s  p99 %8s  server CPU %6s us/request  load %s %s\n' "$name" "$rps" "$p50" \
        "$p99" "$cpu" "$(cut -d' ' -f1 /proc/loadavg)" "$errors"
    echo "$rps" > "$tmp/$name.rps"
}
ratio() { awk -v b="$(cat "$tmp/$1.rps")" -v n="$(cat "$tmp/$2.rps")" 'BEGIN { printf "%.2f", b / n }'; }

# Idle memory first, on a fresh process: after the wrk runs, freed buffers would be reused and hide the cost.
python3 bench/http.d/idle-tls.py "$PORT" "${BENCH_IDLE_TLS:-2000}" "$BPID"

rounds="${BENCH_ROUNDS:-1}"
echo "== TLS: wrk -t2 -c64 -d${secs}s, ${rounds} round(s), access logs ${access_log}; load $(uptime | sed 's/.*load average: //') =="
curl -sk "https://127.0.0.1:$PORT/v1/ping" >/dev/null
curl -sk "https://127.0.0.1:$NPORT/v1/ping" >/dev/null
for round in $(seq "$rounds"); do
    measure nginx-tls-keepalive "https://127.0.0.1:$NPORT/v1/ping"
    measure bouncer-tls-keepalive "https://127.0.0.1:$PORT/v1/ping"
    measure nginx-tls-new-connection "https://127.0.0.1:$NPORT/v1/ping" -H "Connection: close"
    measure bouncer-tls-new-connection "https://127.0.0.1:$PORT/v1/ping" -H "Connection: close"
    echo "ratio bouncer/nginx over TLS: keep-alive $(ratio bouncer-tls-keepalive nginx-tls-keepalive)," \
        "new connection per request (handshakes/s) $(ratio bouncer-tls-new-connection nginx-tls-new-connection)"
done
kill "$(cat "$tmp/nginx.pid")" 2>/dev/null || true
