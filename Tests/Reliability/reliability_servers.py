"""Servers for Ferry's reliability tests, on 127.0.0.1: the Parse test server and Xandikos
(both from Tests/Servers/), and a proxy-free HTTP helper. Used by crash_loop.py and
parse_late_write_repro.py."""

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SERVERS = os.path.join(ROOT, "Tests", "Servers")
# 127.0.0.1 only: never route through a proxy from the environment.
HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))
APP_ID = "ferry-test"
MASTER_KEY = "master-secret"
START = time.monotonic()


class SetupError(Exception):
    pass


def log(message):
    sys.stdout.write("[crash-loop %7.1fs] %s\n" % (time.monotonic() - START, message))
    sys.stdout.flush()


def request(method, url, body=None, headers=None, timeout=60):
    """(status, body bytes, headers); HTTP errors are returned, not raised."""
    data = None
    hs = dict(headers or {})
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        hs.setdefault("Content-Type", "application/json")
    req = urllib.request.Request(url, data=data, method=method, headers=hs)
    try:
        with HTTP.open(req, timeout=timeout) as r:
            return r.status, r.read(), r.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers



class ParseServer:
    def __init__(self, workdir, extra=()):
        self.log = open(os.path.join(workdir, "parse_server.log"), "wb")
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(SERVERS, "parse_server.py"), "--port", "0",
             "--app-id", APP_ID, "--master-key", MASTER_KEY] + list(extra),
            stdout=subprocess.PIPE, stderr=self.log)
        line = self.process.stdout.readline().decode().strip()
        if not line.startswith("PORT "):
            raise SetupError("parse_server.py did not start (see %s)" % self.log.name)
        self.port = int(line.split()[1])
        self.base = "http://127.0.0.1:%d" % self.port
        self.url = self.base + "/parse"

    def admin(self, what, body=None, method="POST"):
        status, data, _ = request(method, self.base + "/__admin/" + what, body, timeout=300)
        if status != 200:
            raise SetupError("parse admin %s -> %d %s" % (what, status, data[:200]))
        return json.loads(data)

    def dump(self):
        """{objectId: (updatedAt, the object's bytes exactly as a class GET renders them)}."""
        status, data, _ = request("GET", self.base + "/__admin/dump?class=Quote&lines=1", timeout=300)
        if status != 200:
            raise SetupError("parse dump -> %d" % status)
        out = {}
        for line in data.split(b"\n"):
            if line:
                o = json.loads(line)
                out[o["objectId"]] = (o["updatedAt"], line)
        return out

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


class Xandikos:
    """Xandikos through dav_servers.py, with its directory kept so the git tree can be read."""

    def __init__(self, workdir, cards):
        self.dir = os.path.join(workdir, "xandikos")
        self.log = open(os.path.join(workdir, "xandikos.log"), "wb")
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(SERVERS, "dav_servers.py"), "--server", "xandikos",
             "--cards", str(cards), "--events", "0", "--dir", self.dir],
            stdout=subprocess.PIPE, stderr=self.log)
        self.book = None
        self.port = None
        while self.port is None:
            line = self.process.stdout.readline().decode()
            if not line:
                raise SetupError("dav_servers.py did not start Xandikos (see %s; is xandikos "
                                 "installed in $FERRY_VENV/bin?)" % self.log.name)
            if line.startswith("ADDRESSBOOK "):
                self.book = line.split()[1]
            elif line.startswith("PORT "):
                self.port = int(line.split()[1])
        self.base = "http://127.0.0.1:%d" % self.port
        self.url = self.base + self.book
        self.repo = os.path.join(self.dir, self.book.strip("/"))

    def put(self, name, body):
        status, _, _ = request("PUT", self.url + name, body.encode(),
                               {"Content-Type": "text/vcard; charset=utf-8"})
        return status

    def delete(self, name):
        status, _, _ = request("DELETE", self.url + name)
        return status

    def truth(self):
        """{href relative to the collection: (etag, body bytes)} from the committed git tree."""
        tree = subprocess.run(["git", "-C", self.repo, "ls-tree", "-r", "HEAD"], check=True,
                              capture_output=True).stdout.decode().splitlines()
        entries = []
        for line in tree:
            meta, name = line.split("\t", 1)
            if name.endswith(".vcf"):
                entries.append((name, meta.split()[2]))
        batch = subprocess.run(["git", "-C", self.repo, "cat-file", "--batch"], check=True,
                               input="".join(sha + "\n" for _, sha in entries).encode(),
                               capture_output=True).stdout
        out = {}
        pos = 0
        for name, sha in entries:
            header_end = batch.index(b"\n", pos)
            size = int(batch[pos:header_end].split()[2])
            body = batch[header_end + 1:header_end + 1 + size]
            pos = header_end + 1 + size + 1
            # Xandikos puts the vCard's CRLFs raw into its XML answers, and XML parsing turns
            # every CRLF (and lone CR) into LF (XML 1.0 section 2.11): that LF text is what any
            # client of the collection receives, so it is what the replica must hold.
            out[name] = ('"%s"' % sha, body.replace(b"\r\n", b"\n").replace(b"\r", b"\n"))
        return out

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
