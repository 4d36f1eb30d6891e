#!/usr/bin/env python3
"""Opens N keep-alive connections to 127.0.0.1:PORT, makes one request on each, holds them idle,
then prints the server's RSS (from /proc/PID/status). usage: idle-connections.py PORT N PID
The server must be a bench build (bench/http builds one): /v1/ping does not exist in production binaries."""
import socket
import sys
import time

port, count, pid = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
request = b"GET /v1/ping HTTP/1.1\r\nHost: bench\r\n\r\n"
conns = []
for _ in range(count):
    s = socket.create_connection(("127.0.0.1", port))
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
with open(f"/proc/{pid}/status") as f:
    rss_kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))
print(f"idle keep-alive connections: {ok}/{count} answered 200; bouncer RSS {rss_kb / 1024:.1f} MB")
for s in conns:
    s.close()
