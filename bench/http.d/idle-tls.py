#!/usr/bin/env python3
"""Opens N TLS keep-alive connections to 127.0.0.1:PORT, makes one request on each, holds them idle, and prints the
server's RSS growth per connection (VmRSS from /proc/PID/status before and after). usage: idle-tls.py PORT N PID

The connections come from 127.0.0.2, 127.0.0.3, ... (200 each): the server runs with its default per-client cap (256)."""
import socket
import ssl
import sys
import time

port, count, pid = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])


def rss_kb():
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))


context = ssl.create_default_context()
context.check_hostname = False
context.verify_mode = ssl.CERT_NONE  # a benchmark of the server's memory, not of verification
request = b"GET /v1/ping HTTP/1.1\r\nHost: bench\r\n\r\n"
# Warm up: a few connections first, so one-time allocations (session cache, thread arenas) are not counted.
warm = [context.wrap_socket(socket.create_connection(("127.0.0.1", port))) for _ in range(20)]
for s in warm:
    s.sendall(request)
    s.recv(4096)
time.sleep(1)
before = rss_kb()
conns = []
for _ in range(count):
    source = f"127.0.0.{2 + len(conns) // 200}"
    s = context.wrap_socket(socket.create_connection(("127.0.0.1", port), source_address=(source, 0)))
    s.sendall(request)
    conns.append(s)
ok = 0
for s in conns:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    ok += data.startswith(b"HTTP/1.1 200")
time.sleep(1)
after = rss_kb()
print(f"idle TLS connections: {ok}/{count} answered 200; RSS {before / 1024:.1f} MB -> {after / 1024:.1f} MB, "
      f"{(after - before) / count:.1f} KB per idle TLS connection")
for s in conns + warm:
    s.close()
