"""The HTTP/1.1 core of Ferry's Python test servers (fault_server.py, parse_server.py,
json_pages_server.py and the proxy in dav_servers.py).  Stdlib only (Python 3.11+).

A server subclasses Handler and defines dispatch(); by then the request is read:
self.command, self.path (the raw request target), self.headers (Headers: case-insensitive)
and self.body (bytes, from Content-Length or a chunked body).  It answers with
write_response(), or with head_bytes() and its own writes to self.wfile (streamed, paced or
cut-short bodies), or not at all with reset().  A script's main() calls handle_signals(),
builds a Server and hands it to serve(), which prints "PORT <n>" and serves until SIGTERM or
SIGINT, then exits 0.

What every server gets from here: 127.0.0.1 only; one daemon thread per connection (backlog
512); TCP_NODELAY on every connection (Nagle + delayed ACK would cap a Python server near
180 small requests/s); HTTP/1.1 keep-alive (HTTP/1.0 only with Connection: keep-alive);
Expect: 100-continue; optional TLS with the handshake in the connection's thread, so a
client that never finishes one cannot block the accept loop; no request logging; and no
tracebacks for clients that went away, reset or sent a bad body.
"""

import email.utils
import os
import threading
import signal
import socket
import socketserver
import ssl
import struct
import sys
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, HTTPServer

REASONS = {int(s): s.phrase for s in HTTPStatus}
MAX_LINE = 65536  # request line, header line and chunk-size line
MAX_HEADERS = 200


class Headers:
    """Request headers: get/[]/in look up case-insensitively, with repeated fields joined by
    ", "; items() gives the fields as sent, in order; map is {lower-cased name: value}."""
    __slots__ = ("lines", "map")

    def __init__(self):
        self.lines = []
        self.map = {}

    def add(self, raw):
        k, _, v = raw.decode("latin-1").partition(":")
        k, v = k.strip(), v.strip()
        self.lines.append((k, v))
        lk = k.lower()
        self.map[lk] = self.map[lk] + ", " + v if lk in self.map else v

    def get(self, name, default=None):
        return self.map.get(name.lower(), default)

    def __getitem__(self, name):
        return self.map.get(name.lower())

    def __contains__(self, name):
        return name.lower() in self.map

    def items(self):
        return list(self.lines)


_date_cache = [0, ""]


def http_date():
    """The Date header's value, formatted once a second."""
    now = int(time.time())
    if _date_cache[0] != now:
        _date_cache[1] = email.utils.formatdate(now, usegmt=True)
        _date_cache[0] = now
    return _date_cache[1]


class Handler(BaseHTTPRequestHandler):
    """One connection: reads requests and calls dispatch() for each until one asks to close.

    BaseHTTPRequestHandler's own reader parses headers with the email package, which costs more
    than all the rest of a small request; this one reads lines.  Its send_error() still answers
    malformed requests (with version_string() as Server header)."""
    protocol_version = "HTTP/1.1"

    # Subclasses may set:
    server_header = False  # send "Server: <version_string()>" (as http.server's responses do)
    fixed_headers = ()     # (name, value) pairs every response carries after Date
    methods = None         # None: any method; else a set, and others get 501 (as http.server)

    def log_message(self, *args):
        pass

    def setup(self):
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(10)
            self.request.do_handshake()
            self.request.settimeout(None)
        super().setup()

    def dispatch(self):
        raise NotImplementedError

    # ---- reading ---------------------------------------------------------------------------

    def handle_one_request(self):
        self.close_connection = True
        try:
            line = self.rfile.readline(MAX_LINE + 1)
        except (TimeoutError, OSError):
            return
        if not line:
            return
        self.raw_requestline = line
        self.requestline = line.decode("latin-1").rstrip("\r\n")
        parts = self.requestline.split()
        self.request_version = "HTTP/1.1"
        self.command = None
        if not parts:
            self.close_connection = False  # a stray CRLF between requests
            return
        if len(parts) != 3 or not parts[2].startswith("HTTP/1.") or len(line) > MAX_LINE:
            return self.send_error(400, "Bad request line")
        self.command, self.path, self.request_version = parts
        self.headers = hdrs = Headers()
        while True:
            h = self.rfile.readline(MAX_LINE + 1)
            if h in (b"\r\n", b"\n", b""):
                break
            if len(hdrs.lines) >= MAX_HEADERS:
                return self.send_error(431)
            hdrs.add(h)
        conn = hdrs.get("Connection", "").lower()
        if self.request_version == "HTTP/1.1":
            self.close_connection = "close" in conn
        else:
            self.close_connection = "keep-alive" not in conn
        if self.request_version == "HTTP/1.1" and hdrs.get("Expect", "").lower() == "100-continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        if self.methods is not None and self.command not in self.methods:
            return self.send_error(501, "Unsupported method (%r)" % self.command)
        try:
            self.body = self.read_body()
        except (ValueError, OSError):  # a malformed chunk size, or the client went away
            self.close_connection = True
            return
        try:
            self.dispatch()
        except ConnectionError:
            self.close_connection = True

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts = []
            while True:
                size = int(self.rfile.readline(MAX_LINE + 1).split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(MAX_LINE + 1) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    break
                parts.append(self.rfile.read(size))
                self.rfile.readline(MAX_LINE + 1)
            return b"".join(parts)
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    # ---- writing ---------------------------------------------------------------------------

    def head_bytes(self, status, headers, length=None):
        """Status line and headers, ending in the blank line: Date, the fixed headers, then
        `headers`, then Content-Length when `length` is not None, then Connection: close when
        this response ends the connection."""
        lines = ["HTTP/1.1 %d %s" % (status, REASONS.get(status, "Status"))]
        if self.server_header:
            lines.append("Server: " + self.version_string())
        lines.append("Date: " + http_date())
        lines += ["%s: %s" % kv for kv in self.fixed_headers]
        lines += ["%s: %s" % kv for kv in headers]
        if length is not None:
            lines.append("Content-Length: %d" % length)
        if self.close_connection:
            lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def write_response(self, status, headers=(), body=None):
        """A whole response in one write: with `body` (bytes), Content-Length and, unless the
        request was HEAD, the body; with None, neither (1xx, 204, 304)."""
        if body is None:
            return self.wfile.write(self.head_bytes(status, headers))
        head = self.head_bytes(status, headers, len(body))
        self.wfile.write(head if self.command == "HEAD" else head + body)

    def reset(self):
        """Aborts the connection with a TCP RST and no answer (SO_LINGER on, 0 s; over TLS
        without a close_notify)."""
        self.close_connection = True
        sock = self.connection
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        for f in (self.rfile, self.wfile):
            try:
                f.close()
            except Exception:
                pass
        try:
            if isinstance(sock, ssl.SSLSocket):
                socket.socket(fileno=sock.detach()).close()
            else:
                sock.close()
        except OSError:
            pass


class Server(socketserver.ThreadingMixIn, HTTPServer):
    """A threading HTTP server on 127.0.0.1:`port` (0: any free port, then in self.port).

    tls_cert (+ tls_key): serve HTTPS.  on_accept: called in the accept loop for each new
    connection (connection counters)."""
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512

    def __init__(self, handler, port=0, tls_cert=None, tls_key=None, on_accept=None):
        self.on_accept = on_accept
        super().__init__(("127.0.0.1", port), handler)
        if tls_cert:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(tls_cert, tls_key or None)
            self.socket = ctx.wrap_socket(self.socket, server_side=True,
                                          do_handshake_on_connect=False)
        self.port = self.server_address[1]

    def server_bind(self):
        socketserver.TCPServer.server_bind(self)  # without HTTPServer's getfqdn() lookup
        self.server_name, self.server_port = self.server_address[:2]

    def process_request(self, request, client_address):
        if self.on_accept:
            self.on_accept()
        super().process_request(request, client_address)

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], (OSError, ValueError)):
            return  # client went away, reset, bad TLS or a bad body: expected in fault tests
        super().handle_error(request, client_address)


def handle_signals():
    """SIGTERM and SIGINT exit 0.  Call first in main(): a parent such as Foundation's Process
    starts its children with these signals blocked, so they are unblocked here too."""
    def stop(signum, frame):
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})


def exit_with_parent():
    """Ends the process (as SIGTERM would) once the process that started it is gone: a test run
    that crashed or leaked its server object must not leave servers behind, and a server holding
    the test runner's stdout would keep `swift test` waiting forever."""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, daemon=True).start()


def serve(server):
    """Prints exactly "PORT <n>" (flushed), then serves until a signal ends the process (or
    the parent goes away)."""
    exit_with_parent()
    sys.stdout.write("PORT %d\n" % server.port)
    sys.stdout.flush()
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        try:
            server.server_close()
        except Exception:
            pass
