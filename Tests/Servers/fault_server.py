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
keep-alive, TCP_NODELAY on every accepted socket, no request logging (http_core.py).

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
  /echo-page?id=I&next=URL        200 JSON {"results":[{"id","updated_at","query","headers"}],
                                  "next":URL}: one record telling how the page was asked for
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
import threading
import time
from functools import lru_cache
from urllib.parse import parse_qs, urlsplit

import http_core

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


class Handler(http_core.Handler):
    server_version = "ferry-fault/1"  # in send_error()'s answers to malformed requests
    sys_version = ""

    # ---- helpers -------------------------------------------------------------------------

    def respond(self, status, body=b"", ctype="text/plain", headers=()):
        hs = list(headers)
        if status < 200 or status in (204, 304):
            return self.write_response(status, hs)  # no body, no Content-Length
        if ctype and body:
            hs.append(("Content-Type", ctype))
        self.write_response(status, hs, body)

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
        self.reset()

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

    def ep_echo_page(self, arg, q):
        # A JSON collection page of one record: the request as received (so a test sees which
        # headers and parameters a page was asked for with), and a next link when asked.
        record = {"id": q.get("id", "1"), "updated_at": "1", "query": self.query_string,
                  "headers": self.header_dict()}
        self.respond_json(200, {"results": [record], "next": q.get("next")})

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
    "echo-page": no_arg(Handler.ep_echo_page),
    "etag": no_arg(Handler.ep_etag),
    "stats": Handler.ep_stats,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    a = ap.parse_args()
    http_core.handle_signals()
    http_core.serve(http_core.Server(Handler, a.port, a.tls_cert, a.tls_key,
                                     on_accept=STATS.connection))


if __name__ == "__main__":
    main()
