#!/usr/bin/env python3
"""bench/retention's helper: mint receipt and real-time request payloads, then replay them open-loop.

  load.py mint-receipts DIR N BUNDLE           N transaction payloads (DIR/i.json), one subscriber each
  load.py mint-requests DIR N RECEIPTS_DIR     N DecodedRealtimeRequestBody payloads cycling over the receipts
  load.py run URL DIR CONCURRENCY RATE         POST each DIR/*.jws at RATE req/s, at most CONCURRENCY in flight
"""
import glob, http.client, json, os, sys, threading, time, urllib.parse, uuid


def now_ms():
    return int(time.time() * 1000)


def mint_receipts(out, n, bundle):
    os.makedirs(out, exist_ok=True)
    base = 2_000_000_000_000 + (now_ms() % 1_000_000) * 1000
    for i in range(n):
        tid = str(base + i)
        t = {"transactionId": tid, "originalTransactionId": tid, "bundleId": bundle,
             "productId": bundle + ".monthly", "type": "Auto-Renewable Subscription",
             "purchaseDate": now_ms() - 86_400_000, "originalPurchaseDate": now_ms() - 86_400_000,
             "expiresDate": now_ms() + 29 * 86_400_000, "quantity": 1, "signedDate": now_ms(),
             "environment": "Sandbox", "inAppOwnershipType": "PURCHASED", "transactionReason": "PURCHASE",
             "storefront": "USA", "storefrontId": "143441", "subscriptionGroupIdentifier": "21000000"}
        with open(os.path.join(out, "%d.json" % i), "w") as f:
            json.dump(t, f)


def mint_requests(out, n, receipts):
    os.makedirs(out, exist_ok=True)
    otids = [json.load(open(p))["originalTransactionId"] for p in sorted(glob.glob(os.path.join(receipts, "*.json")))]
    locales = ["en-US", "de-DE", "ja-JP", "en-GB"]
    for i in range(n):
        r = {"originalTransactionId": otids[i % len(otids)], "appAppleId": 1234567890,
             "productId": "com.bouncer.bench.monthly", "userLocale": locales[i % len(locales)],
             "requestIdentifier": str(uuid.uuid4()), "signedDate": now_ms(), "environment": "Sandbox"}
        with open(os.path.join(out, "%06d.json" % i), "w") as f:
            json.dump(r, f)


def run(url, directory, concurrency, rate):
    bodies = [json.dumps({"signedPayload": open(p).read().strip()}).encode()
              for p in sorted(glob.glob(os.path.join(directory, "*.jws")))]
    target = urllib.parse.urlsplit(url)
    latencies, statuses, lock = [], {}, threading.Lock()
    slots = threading.Semaphore(concurrency)
    local = threading.local()

    def connection():
        if getattr(local, "c", None) is None:
            local.c = http.client.HTTPConnection(target.hostname, target.port, timeout=10)
        return local.c

    def send(body):
        try:
            start = time.perf_counter()
            try:
                c = connection()
                c.request("POST", target.path, body, {"Content-Type": "application/json"})
                r = c.getresponse()
                r.read()
                status = r.status
            except (OSError, http.client.HTTPException):
                local.c = None
                status = "error"
            elapsed = (time.perf_counter() - start) * 1000
            with lock:
                latencies.append(elapsed)
                statuses[status] = statuses.get(status, 0) + 1
        finally:
            slots.release()

    # Open loop: request i is due at i / rate seconds; a full window (CONCURRENCY in flight) delays it, as Apple's
    # maxConcurrentRequests would.
    workers = []
    begin = time.perf_counter()
    for i, body in enumerate(bodies):
        due = begin + i / rate
        delay = due - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        slots.acquire()
        t = threading.Thread(target=send, args=(body,))
        t.start()
        workers.append(t)
    for t in workers:
        t.join()
    wall = time.perf_counter() - begin
    latencies.sort()

    def pct(p):
        return latencies[min(len(latencies) - 1, int(len(latencies) * p))]

    print("statuses: %s" % ", ".join("%s × %d" % (k, v) for k, v in sorted(statuses.items(), key=str)))
    print("latency ms: p50 %.1f  p90 %.1f  p99 %.1f  max %.1f  (%d requests)" % (
        pct(0.50), pct(0.90), pct(0.99), latencies[-1], len(latencies)))
    print("throughput: %.1f req/s over %.1f s" % (len(latencies) / wall, wall))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "mint-receipts":
        mint_receipts(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif cmd == "mint-requests":
        mint_requests(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif cmd == "run":
        run(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
    else:
        sys.exit(__doc__)
