#!/usr/bin/env python3
"""bench/api's BENCH_TRACE=1 sampler: a line per interval of the server's own counters while wrk runs.

    trace.py URL INTERVAL_S STOP_FILE [PSQL_ARGS...]

Every INTERVAL_S it reads URL/metrics and prints, as deltas since the previous sample: GET /v1/subscriptions
responses (TRACE_ROUTE, TRACE_METHOD: another route's), how many took more than 10, 25 and 100 ms (server side: from the request's arrival to its response
being ready), read-cache hits and misses, pool checkouts that waited, the pool's waiting threads now, whether the cache
is live, the deriver's lag, receipt group commits and the receipts that waited for a batch slot; with PSQL_ARGS, PostgreSQL's busy backends by kind now (autovacuum, checkpointer, client backends). Stops
when STOP_FILE exists. Load-independent evidence of *when* the slow requests happen and what the server did then.
"""
import os
import re
import subprocess
import sys
import time
import urllib.request

url, interval, stop = sys.argv[1], float(sys.argv[2]), sys.argv[3]
psql = sys.argv[4:]
# TRACE_ROUTE / TRACE_METHOD: the route template counted (the POST phases trace /v1/receipts/:publicKey).
route = 'route="%s"' % os.environ.get("TRACE_ROUTE", "/v1/subscriptions/:publicKey/:userId")
method = 'method="%s"' % os.environ.get("TRACE_METHOD", "GET")


def sample():
    text = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
    values = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = re.match(r'^(\S+?)(\{.*\})? (\S+)$', line)
        if not m:
            continue
        name, labels, value = m.group(1), m.group(2) or "", float(m.group(3))
        if name.startswith("bouncer_http_request_duration_seconds") and route in labels and method in labels:
            le = re.search(r'le="([^"]+)"', labels)
            key = name.rsplit("_", 1)[1] + (":" + le.group(1) if le else "")
            values["get_" + key] = value
        elif name == "bouncer_read_cache_total":
            values["cache_" + re.search(r'result="(\w+)"', labels).group(1)] = value
        elif name == "bouncer_read_cache_refreshes_total":
            values["refresh_" + re.search(r'result="(\w+)"', labels).group(1)] = value
        elif name == "bouncer_receipts_batched_total":
            values["batched_" + re.search(r'waited="(\w+)"', labels).group(1)] = value
        elif name in ("bouncer_db_pool_waits_total", "bouncer_db_pool_waiting", "bouncer_cache_live",
                      "bouncer_webhook_derive_lag_seconds", "bouncer_receipt_batches_total"):
            values[name] = value
    return values


def backends():
    if not psql:
        return ""
    q = ("SELECT coalesce(string_agg(k || ' ' || n, ', ' ORDER BY k), '-') FROM (SELECT coalesce(nullif(backend_type, "
         "'client backend'), 'client') || CASE WHEN state = 'active' THEN ' active' ELSE '' END AS k, count(*) AS n "
         "FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND (state = 'active' OR backend_type NOT IN "
         "('client backend', 'background writer', 'walwriter', 'logical replication launcher', "
         "'autovacuum launcher')) GROUP BY 1) t")
    try:
        return subprocess.run(psql + ["-c", q], capture_output=True, text=True, timeout=5).stdout.strip()
    except subprocess.TimeoutExpired:
        return "psql timed out"


start = time.monotonic()
previous = sample()
print("   t_s    reqs  >10ms  >25ms >100ms    hits  misses refreshed dropped  pool_waits waiting live   lag_s batches waited  postgres", flush=True)
while not os.path.exists(stop):
    time.sleep(interval)
    now = sample()
    d = lambda k: int(now.get(k, 0) - previous.get(k, 0))
    gets = d("get_count")
    print("%6.1f %7d %6d %6d %6d %7d %7d %9d %7d %11d %7d %4d %7.3f %7d %6d  %s" % (
        time.monotonic() - start, gets, gets - d("get_bucket:0.01"), gets - d("get_bucket:0.025"),
        gets - d("get_bucket:0.1"),
        d("cache_hit"), d("cache_miss"), d("refresh_refreshed"), d("refresh_dropped"), d("bouncer_db_pool_waits_total"), int(now.get("bouncer_db_pool_waiting", 0)),
        int(now.get("bouncer_cache_live", 0)), now.get("bouncer_webhook_derive_lag_seconds", 0),
        d("bouncer_receipt_batches_total"), d("batched_yes"), backends()),
        flush=True)
    previous = now
