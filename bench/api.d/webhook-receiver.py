#!/usr/bin/env python3
"""Loopback webhook receiver for bench/api: answers every POST 200 at once and counts the deliveries.

    webhook-receiver.py PORT_FILE

Binds 127.0.0.1 on a free port, writes the port to PORT_FILE, then serves HTTP/1.1 keep-alive on one asyncio loop.
POST (any path): reads the body (Content-Length), counts it, its `Bouncer-Event-Id` and its JSON `type`, answers
200 with no body; the signature is not checked (the bench measures Bouncer, not the receiver). GET /stats answers
{"deliveries": N, "distinct": M, "types": {type: count}} (distinct = distinct event ids, so N - M are redeliveries).

One event loop and a byte-level request parser, not http.server's thread per connection and header objects: on
this 2-core box the receiver shares the CPU with Bouncer and PostgreSQL, and http.server cost ~75 us of CPU per
delivery (`wp5`, bench/README.md), as much as a third of Bouncer's own per delivery. A customer's receiver runs
elsewhere; the cheaper it is here, the more of what bench/api measures is Bouncer's.
"""
import asyncio
import json
import sys

deliveries = 0
ids = set()
types = {}
MAX_HEAD = 64 * 1024


class Receiver(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.buffer = bytearray()

    def data_received(self, data):
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > MAX_HEAD:
                    self.transport.close()
                return
            lines = bytes(self.buffer[:end]).split(b"\r\n")
            length = 0
            event_id = None
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                name = name.strip().lower()
                if name == b"content-length":
                    length = int(value.strip() or b"0")
                elif name == b"bouncer-event-id":
                    event_id = value.strip()
            if len(self.buffer) < end + 4 + length:
                return
            body = bytes(self.buffer[end + 4:end + 4 + length])
            del self.buffer[:end + 4 + length]
            self.handle(lines[0].split(b" ", 1)[0], body, event_id)

    def handle(self, method, body, event_id):
        global deliveries
        if method == b"GET":
            out = json.dumps({"deliveries": deliveries, "distinct": len(ids), "types": types}).encode()
            self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                                 % len(out) + out)
            return
        try:
            kind = json.loads(body).get("type", "?")
        except ValueError:
            kind = "unparsable"
        deliveries += 1
        if event_id:
            ids.add(event_id)
        types[kind] = types.get(kind, 0) + 1
        self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")


async def main():
    server = await asyncio.get_running_loop().create_server(Receiver, "127.0.0.1", 0)
    with open(sys.argv[1], "w") as f:
        f.write(f"{server.sockets[0].getsockname()[1]}\n")
    await server.serve_forever()


asyncio.run(main())
