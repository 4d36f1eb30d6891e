#!/usr/bin/env python3
"""Serial keep-alive client for bench/callgrind: one connection, one request at a time.

    client.py PORT SCENARIO SKIP COUNT PUBLIC_KEY MINT_DIR

SCENARIO is hello (GET /v1/ping), get (GET /v1/subscriptions/PK/USER over the minted users) or post
(POST /v1/receipts/PK, minted body SKIP, SKIP+1, …: each a distinct transaction). Exits 1 on any non-2xx.
BENCH_CLIENT_PAUSE_MS=x pauses x ms after each response (bench/guard: lets the server's background work settle).
"""
import http.client
import os
import sys
import time

port, scenario, skip, count, pk, mint = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=600)
users = bodies = []
if scenario == "get":
    users = open(f"{mint}/users.txt").read().split()
if scenario == "post":
    bodies = open(f"{mint}/bodies.jsonl").read().splitlines()
pause = float(os.environ.get("BENCH_CLIENT_PAUSE_MS", "0")) / 1000
for i in range(skip, skip + count):
    if scenario == "hello":
        conn.request("GET", "/v1/ping")
    elif scenario == "get":
        conn.request("GET", f"/v1/subscriptions/{pk}/{users[i % len(users)]}")
    else:
        conn.request("POST", f"/v1/receipts/{pk}", body=bodies[i], headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    body = response.read()
    if response.status >= 300:
        sys.exit(f"{scenario} request {i}: {response.status} {body[:200]!r}")
    if pause:
        time.sleep(pause)
conn.close()
