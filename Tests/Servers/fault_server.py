#!/usr/bin/env python3
"""Ferry test server: HTTP/1.1 fault injection and benchmark endpoints.

Used by Ferry's HTTP client tests (timeouts, stalls, resets, truncation, redirects, rate
limits, gzip, keep-alive reuse) and by benchmarks (small-request rate, bulk throughput).
Stdlib only (Python 3.11+).  Binds 127.0.0.1 only.

    python3 fault_server.py [--port 0] [--tls-cert CERT.pem --tls-key KEY.pem]

tls/localhost-cert.pem + tls/localhost-key.pem (next to this file) are a self-signed test
certificate for localhost / 127.0.0.1 (valid to 2126); clients trust it via CAINFO.

Once listening it prints exactly "PORT <n>" on stdout (flushed), then serves until
SIGTERM/SIGINT and exits 0.  Threading (one daemon thread per connection), HTTP/1.1
keep-alive, TCP_NODELAY on every accepted socket, no request logging.

Bodies are deterministic: binary bodies carry byte (offset mod 256) at every offset.
Endpoints (any method unless noted; HEAD sends headers only; query strings shown):
  /small                          200 "ok\\n"
  /bytes/<n>                      200 n bytes, application/octet-stream, Content-Length
  /chunked/<n>?chunk=K&delay_ms=D 200 n bytes, Transfer-Encoding: chunked, K-byte chunks
                                  (default 65536), optional D ms sleep between chunks
  /redirect/<n>                   302 Location /redirect/<n-1>; /redirect/0 -> 200 "done\\n"
  /redirect-to?url=U[&status=S]   302 (or S) Location U, verbatim (file://, ftp://, ...)
  /status/<code>?retry_after=S&body=TEXT
                                  that status; Retry-After: S if given; body TEXT or
                                  {"error":"status <code>"}; 429 with retry_after also sends
                                  X-RateLimit-Remaining: 0, X-RateLimit-Reset: <now+S epoch>
  /stall?after=N&seconds=S        Content-Length N+1000, N bytes, sleep S, close
  /stall-headers?seconds=S        sleep S before sending anything, then 200 "ok\\n"
  /slow?bytes=N&bps=B             N bytes (Content-Length) paced at about B bytes/s
  /multistatus?cards=N&photo=B&photo_every=K&seed=S&chunk_min=A&chunk_max=Z&delay_ms=D
                                  207 CardDAV multistatus (application/xml, chunked): N vCards
                                  (href /book/card-<i>.vcf, etag "e-<i>", UID card-<i>), those
                                  with i % K == 0 with a base64 PHOTO of B bytes (defaults: 30
                                  cards, all with 96 KiB), CRs escaped as &#13; (as a serializer
                                  must, to keep them), sync-token "t-<N>-<B>-<K>" last; sent in
                                  chunks of a random A..Z bytes (default 1..65536), a random
                                  0..D ms sleep after each (default 0), all drawn from seed S
                                  (default 0)
  /truncate/<n>?send=m            Content-Length n, m bytes (default n/2), close (FIN)
  /reset                          no answer: close with RST (SO_LINGER on, 0 s)
  /gzip/<n>                       n bytes of text; Content-Encoding: gzip when the request's
                                  Accept-Encoding mentions gzip; X-Uncompressed-Length: n
  /html200                        200 text/html "502 Bad Gateway" page
  /invalid-json                   200 application/json, truncated JSON
  /headers                        200 JSON {lower-cased request headers..., "method", "path",
                                  "query"}
  /echo                           200 JSON {"method","path","query","headers","body",
                                  "body_length"}; any method; Content-Length or chunked body
  /etag                           200 ETag "v1" + Last-Modified; 304 on If-None-Match match
                                  (or If-Modified-Since not older than Last-Modified)
  /stats                          JSON {"connections","requests","paths":{path:count}}
                                  (requests to /stats and /stats/reset are not counted)
  /stats/reset                    zero the counters (GET or POST)
  anything else                   404 JSON
"""

import argparse
import base64
import email.utils
import gzip
import json
import random
import signal
import socket
import socketserver
import ssl
import struct
import sys
import threading
import time
from functools import lru_cache
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlsplit

SLICE = 1 << 20  # 1 MiB write slices
# Preallocated pattern buffer: byte i == i % 256; 256 bytes of slack so a slice can start at
# any phase of the pattern and still be a full 1 MiB.
PATTERN = memoryview(bytes(range(256)) * (SLICE // 256 + 1))

LAST_MODIFIED = email.utils.formatdate(1767225600, usegmt=True)  # 2026-01-01T00:00:00Z
ETAG = '"v1"'

HTML_502 = (b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
            b"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
            b"</body>\r\n</html>\r\n")
INVALID_JSON = b'{"results":[{"objectId":"a1B2c3D4e5","n":1},{"objectId":"f6G7h8'

REASONS = {int(s): s.phrase for s in HTTPStatus}


class Headers:
    """Minimal case-insensitive request header map (get/items/[]/in)."""
    __slots__ = ("lines", "map")

    def __init__(self):
        self.lines = []
        self.map = {}

    def add(self, raw):
        k, _, v = raw.decode("latin-1").partition(":")
        k = k.strip()
        v = v.strip()
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


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.connections = 0
        self.requests = 0
        self.paths = {}

    def connection(self):
        with self.lock:
            self.connections += 1

    def request(self, path):
        with self.lock:
            self.requests += 1
            self.paths[path] = self.paths.get(path, 0) + 1

    def snapshot(self):
        with self.lock:
            return {"connections": self.connections, "requests": self.requests,
                    "paths": dict(self.paths)}

    def reset(self):
        with self.lock:
            self.connections = 0
            self.requests = 0
            self.paths = {}


STATS = Stats()


@lru_cache(maxsize=8)
def text_body(n):
    line = b"%08d the quick brown fox jumps over the lazy dog; ferry test payload\n"
    out = bytearray()
    i = 0
    while len(out) < n:
        out += line % i
        i += 1
    return bytes(out[:n])


@lru_cache(maxsize=8)
def gzip_body(n):
    return gzip.compress(text_body(n), compresslevel=6, mtime=0)


@lru_cache(maxsize=8)
def multistatus_body(cards, photo, every):
    """The /multistatus body: a collection query's answer over an address book where some
    contacts have pictures (big folded PHOTO lines) and the rest are small: slow to parse, an
    entity every line and many small elements."""
    out = ['<?xml version="1.0" encoding="utf-8"?>\n'
           '<multistatus xmlns="DAV:" xmlns:C="urn:ietf:params:xml:ns:carddav">']
    for i in range(cards):
        lines = ["BEGIN:VCARD", "VERSION:3.0", "UID:card-%d" % i, "FN:Person %d" % i]
        if i % every == 0:
            picture = base64.b64encode(random.Random(i).randbytes(photo)).decode()
            line = "PHOTO;ENCODING=b;TYPE=JPEG:" + picture
            lines += [line[:75]] + [" " + line[k:k + 74] for k in range(75, len(line), 74)]
        else:
            lines += ["EMAIL;TYPE=work:person-%d@example.com" % i, "TEL;TYPE=cell:+1-555-%d" % i]
        card = "&#13;\n".join(lines + ["END:VCARD", ""])
        out.append('<response><href>/book/card-%d.vcf</href><propstat><prop>'
                   '<getetag>"e-%d"</getetag><C:address-data>%s</C:address-data></prop>'
                   '<status>HTTP/1.1 200 OK</status></propstat></response>' % (i, i, card))
    out.append("<sync-token>t-%d-%d-%d</sync-token></multistatus>\n" % (cards, photo, every))
    return "".join(out).encode()


_date_cache = [0, ""]


def http_date():
    now = int(time.time())
    if _date_cache[0] != now:
        _date_cache[1] = email.utils.formatdate(now, usegmt=True)
        _date_cache[0] = now
    return _date_cache[1]


def qint(q, name, default):
    v = q.get(name)
    if v is None or v == "":
        return default
    return int(v)


def qfloat(q, name, default):
    v = q.get(name)
    if v is None or v == "":
        return default
    return float(v)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ferry-fault/1"
    sys_version = ""

    def log_message(self, *args):  # quiet
        pass

    def setup(self):
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(10)
            self.request.do_handshake()  # in the connection thread, not the accept loop
            self.request.settimeout(None)
        super().setup()

    def handle_one_request(self):
        """Lean HTTP/1.x request reader (BaseHTTPRequestHandler's email-based header parser
        costs more than the rest of a small request)."""
        self.close_connection = True
        try:
            line = self.rfile.readline(65537)
        except (TimeoutError, OSError):
            return
        if not line:
            return
        self.raw_requestline = line
        self.requestline = line.decode("latin-1").rstrip("\r\n")
        parts = self.requestline.split()
        self.request_version = "HTTP/1.1"
        self.command = None
        if len(parts) == 0:
            self.close_connection = False  # stray CRLF between requests
            return
        if len(parts) != 3 or not parts[2].startswith("HTTP/1.") or len(line) > 65536:
            return self.send_error(400, "Bad request line")
        self.command, self.path, self.request_version = parts
        self.headers = hdrs = Headers()
        while True:
            h = self.rfile.readline(65537)
            if h in (b"\r\n", b"\n", b""):
                break
            if len(hdrs.lines) >= 200:
                return self.send_error(431)
            hdrs.add(h)
        conn = hdrs.get("Connection", "").lower()
        if self.request_version == "HTTP/1.1":
            self.close_connection = "close" in conn
        else:
            self.close_connection = "keep-alive" not in conn
        if (self.request_version == "HTTP/1.1"
                and hdrs.get("Expect", "").lower() == "100-continue"):
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        self.dispatch()

    # Any method goes through one dispatcher (GET, POST, PUT, REPORT, PROPFIND, ...).
    def __getattr__(self, name):
        if name.startswith("do_"):
            return self.dispatch
        raise AttributeError(name)

    # ---- helpers -------------------------------------------------------------------------

    def read_body(self):
        te = self.headers.get("Transfer-Encoding", "")
        if "chunked" in te.lower():
            parts = []
            while True:
                line = self.rfile.readline(65537)
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    break
                parts.append(self.rfile.read(size))
                self.rfile.readline(65537)
            return b"".join(parts)
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def head_bytes(self, status, headers, length=None, reason=None):
        lines = ["HTTP/1.1 %d %s" % (status, reason or REASONS.get(status, "Status"))]
        lines.append("Date: " + http_date())
        for k, v in headers:
            lines.append("%s: %s" % (k, v))
        if length is not None:
            lines.append("Content-Length: %d" % length)
        if self.close_connection:
            lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def respond(self, status, body=b"", ctype="text/plain", headers=(), length=None):
        hs = list(headers)
        no_body = status < 200 or status in (204, 304)
        if ctype and not no_body and (body or length):
            hs.append(("Content-Type", ctype))
        if no_body:
            head = self.head_bytes(status, hs)
            body = b""
        else:
            head = self.head_bytes(status, hs, len(body) if length is None else length)
        if self.command == "HEAD":
            body = b""
        self.wfile.write(head + body)

    def respond_json(self, status, obj, headers=()):
        body = json.dumps(obj, separators=(",", ":")).encode()
        self.respond(status, body, "application/json", headers)

    def write_pattern(self, offset, n):
        """Write n pattern bytes starting at stream offset `offset`, in 1 MiB slices."""
        w = self.wfile.write
        while n > 0:
            k = min(n, SLICE)
            p = offset % 256
            w(PATTERN[p:p + k])
            offset += k
            n -= k

    def drop(self):
        """Close the connection after this response (FIN)."""
        self.close_connection = True

    # ---- dispatch ------------------------------------------------------------------------

    def dispatch(self):
        path, _, self.query_string = self.path.partition("?")
        if path.startswith("http://") or path.startswith("https://"):
            path = urlsplit(path).path or "/"  # absolute-form request target
        self.req_path = path
        q = {}
        if self.query_string:
            q = {k: v[-1] for k, v in
                 parse_qs(self.query_string, keep_blank_values=True).items()}
        try:
            self.body = self.read_body()
        except (ValueError, OSError):
            self.close_connection = True
            return
        if path not in ("/stats", "/stats/reset"):
            STATS.request(path)
        parts = path.strip("/").split("/")
        name, arg = parts[0], (parts[1] if len(parts) > 1 else None)
        route = ROUTES.get(name)
        try:
            if route is None or (len(parts) > 2):
                return self.not_found(path)
            route(self, arg, q)
        except (ValueError, KeyError) as e:
            self.respond_json(400, {"error": "bad request: %s" % e})

    def not_found(self, path, *_):
        self.respond_json(404, {"error": "not found", "path": path})

    # ---- endpoints -----------------------------------------------------------------------

    def ep_small(self, arg, q):
        self.respond(200, b"ok\n")

    def ep_bytes(self, arg, q):
        n = int(arg)
        head = self.head_bytes(200, [("Content-Type", "application/octet-stream")], n)
        if self.command == "HEAD" or n == 0:
            return self.wfile.write(head)
        if n <= 65536:
            return self.wfile.write(head + PATTERN[:n])
        self.wfile.write(head)
        self.write_pattern(0, n)

    def ep_chunked(self, arg, q):
        n = int(arg)
        k = max(1, qint(q, "chunk", 65536))
        delay = qfloat(q, "delay_ms", 0) / 1000.0
        head = self.head_bytes(200, [("Content-Type", "application/octet-stream"),
                                     ("Transfer-Encoding", "chunked")])
        if self.command == "HEAD":
            return self.wfile.write(head)
        w = self.wfile.write
        w(head)
        off = 0
        while off < n:
            c = min(k, n - off)
            if c <= 65536:
                p = off % 256
                w(b"%x\r\n" % c + PATTERN[p:p + c] + b"\r\n")
            else:
                w(b"%x\r\n" % c)
                self.write_pattern(off, c)
                w(b"\r\n")
            off += c
            if delay and off < n:
                time.sleep(delay)
        w(b"0\r\n\r\n")

    def ep_redirect(self, arg, q):
        n = int(arg)
        if n <= 0:
            return self.respond(200, b"done\n")
        self.respond(302, b"redirecting\n", headers=[("Location", "/redirect/%d" % (n - 1))])

    def ep_redirect_to(self, arg, q):
        status = qint(q, "status", 302)
        self.respond(status, b"redirecting\n", headers=[("Location", q["url"])])

    def ep_status(self, arg, q):
        code = int(arg)
        hs = []
        ra = q.get("retry_after")
        if ra is not None:
            hs.append(("Retry-After", ra))
            if code == 429:
                hs.append(("X-RateLimit-Remaining", "0"))
                try:
                    hs.append(("X-RateLimit-Reset", str(int(time.time() + float(ra)))))
                except ValueError:
                    pass
        if "body" in q:
            self.respond(code, q["body"].encode(), "text/plain; charset=utf-8", hs)
        else:
            self.respond(code, b'{"error":"status %d"}' % code,
                         "application/json", hs)

    def ep_stall(self, arg, q):
        after = qint(q, "after", 0)
        secs = qfloat(q, "seconds", 30)
        self.drop()
        self.wfile.write(self.head_bytes(200, [("Content-Type", "application/octet-stream")],
                                         after + 1000))
        self.write_pattern(0, after)
        time.sleep(secs)

    def ep_stall_headers(self, arg, q):
        time.sleep(qfloat(q, "seconds", 30))
        self.respond(200, b"ok\n")

    def ep_slow(self, arg, q):
        n = qint(q, "bytes", 10000)
        bps = max(1.0, qfloat(q, "bps", 1000))
        self.wfile.write(self.head_bytes(200, [("Content-Type", "application/octet-stream")], n))
        if self.command == "HEAD":
            return
        start = time.monotonic()
        sent = 0
        tick = 0.05
        while sent < n:
            due = min(n, int((time.monotonic() - start) * bps) + max(1, int(bps * tick)))
            if due > sent:
                self.write_pattern(sent, due - sent)
                sent = due
            if sent < n:
                time.sleep(tick)

    def ep_multistatus(self, arg, q):
        body = multistatus_body(qint(q, "cards", 30), qint(q, "photo", 96 << 10),
                                max(1, qint(q, "photo_every", 1)))
        rng = random.Random(qint(q, "seed", 0))
        low = max(1, qint(q, "chunk_min", 1))
        high = max(low, qint(q, "chunk_max", 65536))
        delay = qfloat(q, "delay_ms", 0) / 1000.0
        head = self.head_bytes(207, [("Content-Type", "application/xml; charset=utf-8"),
                                     ("Transfer-Encoding", "chunked")])
        if self.command == "HEAD":
            return self.wfile.write(head)
        w = self.wfile.write
        w(head)
        view = memoryview(body)
        off = 0
        while off < len(body):
            c = min(rng.randint(low, high), len(body) - off)
            w(b"%x\r\n" % c + view[off:off + c] + b"\r\n")
            off += c
            if delay and off < len(body):
                time.sleep(rng.uniform(0, delay))
        w(b"0\r\n\r\n")

    def ep_truncate(self, arg, q):
        n = int(arg)
        m = min(qint(q, "send", n // 2), n)
        self.drop()
        self.wfile.write(self.head_bytes(200, [("Content-Type", "application/octet-stream")], n))
        self.write_pattern(0, m)

    def ep_reset(self, arg, q):
        reset_connection(self)

    def ep_gzip(self, arg, q):
        n = int(arg)
        hs = [("X-Uncompressed-Length", str(n)), ("Vary", "Accept-Encoding")]
        if "gzip" in self.headers.get("Accept-Encoding", "").lower():
            hs.append(("Content-Encoding", "gzip"))
            body = gzip_body(n)
        else:
            body = text_body(n)
        self.respond(200, body, "text/plain; charset=utf-8", hs)

    def ep_html200(self, arg, q):
        self.respond(200, HTML_502, "text/html")

    def ep_invalid_json(self, arg, q):
        self.respond(200, INVALID_JSON, "application/json")

    def header_dict(self):
        return dict(self.headers.map)

    def ep_headers(self, arg, q):
        d = self.header_dict()
        d["method"] = self.command
        d["path"] = self.req_path
        d["query"] = self.query_string
        self.respond_json(200, d)

    def ep_echo(self, arg, q):
        self.respond_json(200, {
            "method": self.command, "path": self.req_path,
            "query": self.query_string, "headers": self.header_dict(),
            "body": self.body.decode("utf-8", "replace"), "body_length": len(self.body)})

    def ep_etag(self, arg, q):
        hs = [("ETag", ETAG), ("Last-Modified", LAST_MODIFIED), ("Cache-Control", "no-cache")]
        inm = self.headers.get("If-None-Match")
        ims = self.headers.get("If-Modified-Since")
        not_modified = False
        if inm is not None:
            tags = [t.strip() for t in inm.split(",")]
            not_modified = "*" in tags or ETAG in tags or ("W/" + ETAG) in tags
        elif ims is not None:
            try:
                not_modified = (email.utils.parsedate_to_datetime(ims).timestamp()
                                >= email.utils.parsedate_to_datetime(LAST_MODIFIED).timestamp())
            except (TypeError, ValueError):
                pass
        if not_modified:
            return self.respond(304, headers=hs)
        self.respond(200, b"etag body v1\n", headers=hs)

    def ep_stats(self, arg, q):
        if arg == "reset":
            STATS.reset()
            return self.respond_json(200, {"reset": True})
        if arg is not None:
            return self.not_found(self.req_path)
        self.respond_json(200, STATS.snapshot())


def reset_connection(handler):
    """Abort the connection with a TCP RST (no response)."""
    handler.close_connection = True
    sock = handler.connection
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    for f in (handler.rfile, handler.wfile):
        try:
            f.close()
        except Exception:
            pass
    try:
        if isinstance(sock, ssl.SSLSocket):
            # close the TCP socket without a TLS close_notify
            socket.socket(fileno=sock.detach()).close()
        else:
            sock.close()
    except OSError:
        pass


def no_arg(fn):
    def wrapped(self, arg, q):
        if arg is not None:
            return self.not_found(self.req_path)
        return fn(self, arg, q)
    return wrapped


def need_arg(fn):
    def wrapped(self, arg, q):
        if arg is None:
            return self.not_found(self.req_path)
        return fn(self, arg, q)
    return wrapped


ROUTES = {
    "small": no_arg(Handler.ep_small),
    "bytes": need_arg(Handler.ep_bytes),
    "chunked": need_arg(Handler.ep_chunked),
    "redirect": need_arg(Handler.ep_redirect),
    "redirect-to": no_arg(Handler.ep_redirect_to),
    "status": need_arg(Handler.ep_status),
    "stall": no_arg(Handler.ep_stall),
    "stall-headers": no_arg(Handler.ep_stall_headers),
    "slow": no_arg(Handler.ep_slow),
    "multistatus": no_arg(Handler.ep_multistatus),
    "truncate": need_arg(Handler.ep_truncate),
    "reset": no_arg(Handler.ep_reset),
    "gzip": need_arg(Handler.ep_gzip),
    "html200": no_arg(Handler.ep_html200),
    "invalid-json": no_arg(Handler.ep_invalid_json),
    "headers": no_arg(Handler.ep_headers),
    "echo": no_arg(Handler.ep_echo),
    "etag": no_arg(Handler.ep_etag),
    "stats": Handler.ep_stats,
}


class Server(socketserver.ThreadingMixIn, HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512

    def server_bind(self):
        socketserver.TCPServer.server_bind(self)  # skip HTTPServer's getfqdn() lookup
        self.server_name, self.server_port = self.server_address[:2]

    def process_request(self, request, client_address):
        STATS.connection()
        super().process_request(request, client_address)

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if isinstance(exc, (OSError, ssl.SSLError, ValueError)):
            return  # client went away, reset, bad TLS: expected in fault tests
        super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    a = ap.parse_args()

    def stop(signum, frame):
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    # A parent (Foundation's Process) may hand us a mask with these blocked.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})

    srv = Server(("127.0.0.1", a.port), Handler)
    if a.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.tls_cert, a.tls_key or None)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)
    sys.stdout.write("PORT %d\n" % srv.server_address[1])
    sys.stdout.flush()
    try:
        srv.serve_forever(poll_interval=0.5)
    finally:
        try:
            srv.server_close()
        except Exception:
            pass


if __name__ == "__main__":
    main()
