#!/usr/bin/env python3
"""Ferry test proxy: forwards every request to an upstream server and, on demand, loses the
answers of writes after the upstream applied them.

A write whose answer is lost is the fault two-way sync must survive without a false conflict
or a duplicate: the server took the change, the client never heard. Real servers will not
produce it on demand, so this proxy does: the request goes upstream in full, the upstream's
answer is read in full, and then the client's connection is reset (SO_LINGER 0) instead of
answered.

    python3 lossy_proxy.py --upstream http://127.0.0.1:8000 [--port 0]

Prints "PORT <n>" once listening; serves until SIGTERM. Binds 127.0.0.1 only. Control
endpoints (never forwarded):
  POST /__proxy/lose?writes=N     lose the answers of the next N writes (any method but GET,
                                  HEAD, OPTIONS, PROPFIND, REPORT)
  POST /__proxy/lose?writes=N&after=K
                                  the same, after answering the next K writes
  POST /__proxy/lose?rate=P&seed=S
                                  from now on lose each write's answer with probability P
                                  (0 stops), drawn from seed S
  POST /__proxy/refuse?writes=N&status=S
                                  answer the next N writes with status S (default 409) and a
                                  JSON error body, in the server's place: nothing is forwarded
  GET  /__proxy/stats             {"forwarded": n, "lost": n}
The Host header is forwarded as the client sent it, so absolute URLs a server builds point
back at the proxy.
"""

import argparse
import http.client
import json
import random
import socket
import struct
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer
from socketserver import ThreadingMixIn

READS = {"GET", "HEAD", "OPTIONS", "PROPFIND", "REPORT"}


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.lose_next = 0
        self.answer_first = 0
        self.refuse_next = 0
        self.refuse_status = 409
        self.rate = 0.0
        self.random = random.Random(0)
        self.forwarded = 0
        self.lost = 0

    def should_refuse(self, method):
        if method in READS:
            return None
        with self.lock:
            if self.refuse_next > 0:
                self.refuse_next -= 1
                return self.refuse_status
        return None

    def should_lose(self, method):
        if method in READS:
            return False
        with self.lock:
            if self.lose_next > 0 and self.answer_first > 0:
                self.answer_first -= 1
                return False
            if self.lose_next > 0:
                self.lose_next -= 1
                return True
            return self.rate > 0 and self.random.random() < self.rate


STATE = State()


class Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    upstream = None

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def body(self):
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def control(self):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        if url.path == "/__proxy/lose":
            with STATE.lock:
                if "writes" in query:
                    STATE.lose_next = int(query["writes"])
                    STATE.answer_first = int(query.get("after", "0"))
                if "rate" in query:
                    STATE.rate = float(query["rate"])
                    STATE.random = random.Random(int(query.get("seed", "0")))
            answer = {"lose_next": STATE.lose_next, "rate": STATE.rate}
        elif url.path == "/__proxy/refuse":
            with STATE.lock:
                STATE.refuse_next = int(query.get("writes", "1"))
                STATE.refuse_status = int(query.get("status", "409"))
            answer = {"refuse_next": STATE.refuse_next, "status": STATE.refuse_status}
        elif url.path == "/__proxy/stats":
            answer = {"forwarded": STATE.forwarded, "lost": STATE.lost}
        else:
            answer = {"error": "unknown control path"}
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def forward(self):
        if self.path.startswith("/__proxy/"):
            self.body()
            return self.control()
        body = self.body()
        refused = STATE.should_refuse(self.command)
        if refused is not None:
            data = json.dumps({"message": "refused by the test proxy", "status": refused}).encode()
            self.send_response(refused)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        upstream = urllib.parse.urlsplit(self.upstream)
        connection = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=60)
        headers = {name: value for name, value in self.headers.items()
                   if name.lower() not in ("connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection")}
        if body or self.command not in READS:
            headers["Content-Length"] = str(len(body))
        lose = STATE.should_lose(self.command)
        connection.request(self.command, self.path, body=body, headers=headers)
        answer = connection.getresponse()
        data = answer.read()
        connection.close()
        with STATE.lock:
            STATE.forwarded += 1
            if lose:
                STATE.lost += 1
        if lose:
            # Applied upstream; the client hears nothing but a reset.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return
        self.send_response_only(answer.status, answer.reason)
        for name, value in answer.getheaders():
            if name.lower() not in ("connection", "keep-alive", "transfer-encoding", "content-length"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def __getattr__(self, name):
        if name.startswith("do_"):
            return self.forward
        raise AttributeError(name)


class Server(ThreadingMixIn, HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--port", type=int, default=0)
    arguments = parser.parse_args()
    Proxy.upstream = arguments.upstream.rstrip("/")
    server = Server(("127.0.0.1", arguments.port), Proxy)
    print(f"PORT {server.server_address[1]}", flush=True)
    import signal
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        server.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass


if __name__ == "__main__":
    main()
