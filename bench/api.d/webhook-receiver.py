#!/usr/bin/env python3
"""Loopback webhook receiver for bench/api: answers every POST 200 at once and counts the deliveries.

    webhook-receiver.py PORT_FILE

Binds 127.0.0.1 on a free port, writes the port to PORT_FILE, then serves HTTP/1.1 keep-alive (one thread per
connection). POST (any path): reads the body, counts it and its `Bouncer-Event-Id`, answers 200 with no body; the
signature is not checked (the bench measures Bouncer, not the receiver). GET /stats answers
{"deliveries": N, "distinct": M, "types": {type: count}} (distinct = distinct event ids, so N - M are redeliveries).
"""
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

lock = threading.Lock()
deliveries = 0
ids = set()
types = {}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        global deliveries
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        event_id = self.headers.get("Bouncer-Event-Id")
        try:
            kind = json.loads(body).get("type", "?")
        except ValueError:
            kind = "unparsable"
        with lock:
            deliveries += 1
            if event_id:
                ids.add(event_id)
            types[kind] = types.get(kind, 0) + 1
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        with lock:
            body = json.dumps({"deliveries": deliveries, "distinct": len(ids), "types": types}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # no per-request line on stderr
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
with open(sys.argv[1], "w") as f:
    f.write(f"{server.server_address[1]}\n")
server.serve_forever()
