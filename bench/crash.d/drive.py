#!/usr/bin/env python3
"""POST distinct receipts from several threads and record every outcome (for bench/crash).

    drive.py URL PUBLIC_KEY BODIES.jsonl FIRST LAST THREADS RESULTS.tsv [--retry-503]

Sends bodies[FIRST:LAST] (each a distinct JWS) once each, spread over THREADS keep-alive connections, and writes
one line per body to RESULTS.tsv:  index  status  retry_after  transaction_id  original_transaction_id  user_id  503s  503s_without_retry_after
status 0 = no answer (the connection died with the request in flight: its outcome is unknown, so it is neither
counted as stored nor as lost). A refused connection (server down) means the request never left: the same body
is retried every 20 ms until the server is back. With --retry-503 a client behaves like a well-mannered app: on 503
it waits Retry-After seconds (at most 2) and re-sends the same body (receipts are idempotent); the line then shows
the final status and how many 503s came before it. Prints a one-line summary on stderr, with the wall-clock times
(Unix seconds) of the first and last 503 so the caller can measure the outage window.
"""
import base64
import http.client
import json
import socket
import sys
import threading
import time
from urllib.parse import urlparse


def payload_ids(body: str):
    jws = json.loads(body)["signed_transaction_info"]
    seg = jws.split(".")[1]
    payload = json.loads(base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4)))
    return payload["transactionId"], payload["originalTransactionId"], json.loads(body)["user_id"]


def main() -> None:
    url, pk, bodies_path, first, last, threads, out_path = sys.argv[1:8]
    retry_503 = "--retry-503" in sys.argv[8:]
    first, last, threads = int(first), int(last), int(threads)
    with open(bodies_path) as f:
        bodies = [line.rstrip("\n") for i, line in enumerate(f) if first <= i < last]
    u = urlparse(url)
    path = f"/v1/receipts/{pk}"
    results = [None] * len(bodies)
    unavailable = [0] * len(bodies)
    without_retry_after = [0] * len(bodies)
    window = [None, None]  # wall-clock times of the first and last 503
    next_index = [0]
    lock = threading.Lock()

    def worker() -> None:
        conn = None
        while True:
            with lock:
                i = next_index[0]
                if i >= len(bodies):
                    break
                next_index[0] += 1
            body = bodies[i].encode()
            while True:
                try:
                    if conn is None:
                        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=15)
                        conn.connect()
                except (ConnectionRefusedError, socket.timeout, OSError):
                    conn = None
                    time.sleep(0.02)  # the server is down: nothing was sent, try the same body again
                    continue
                try:
                    conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
                    r = conn.getresponse()
                    data = r.read()
                    results[i] = (r.status, r.getheader("Retry-After") or "-", data)
                    if r.getheader("Connection", "").lower() == "close":
                        conn.close()
                        conn = None
                    if r.status == 503:
                        now = time.time()
                        with lock:
                            window[0] = window[0] or now
                            window[1] = now
                        unavailable[i] += 1
                        if results[i][1] == "-":
                            without_retry_after[i] += 1
                        if retry_503 and unavailable[i] < 100:
                            retry = results[i][1]
                            time.sleep(min(2.0, float(retry)) if retry.isdigit() else 1.0)
                            continue
                except (http.client.HTTPException, ConnectionError, socket.timeout, OSError):
                    results[i] = (0, "-", b"")  # in flight when the connection died: outcome unknown
                    try:
                        conn.close()
                    except Exception:
                        pass
                    conn = None
                break

    started = time.monotonic()
    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    elapsed = time.monotonic() - started
    counts = {}
    with open(out_path, "w") as out:
        for k, (status, retry, data) in enumerate(results):
            tx, original, user = payload_ids(bodies[k])
            if status == 201:
                answered = json.loads(data).get("transaction_id")
                if answered != tx:
                    print(f"body {first + k}: 201 for transaction {answered}, sent {tx}", file=sys.stderr)
            out.write(f"{first + k}\t{status}\t{retry}\t{tx}\t{original}\t{user}\t{unavailable[k]}\t{without_retry_after[k]}\n")
            counts[status] = counts.get(status, 0) + 1
    print(f"drive: {len(bodies)} bodies in {elapsed:.1f}s over {threads} threads; final statuses "
          f"{dict(sorted(counts.items()))}; 503 answers {sum(unavailable)}"
          + (f"; first_503={window[0]:.3f} last_503={window[1]:.3f}" if window[0] else ""), file=sys.stderr)


if __name__ == "__main__":
    main()
