"""Shared plumbing for daemon_suite.py: test servers, a ferryd process whose stderr lines are
time-stamped on arrival, the ferry CLI, /proc sampling and replica reads.

Stdlib only (Python 3.11+). Everything listens on 127.0.0.1 only.
"""

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SERVERS = os.path.join(ROOT, "Tests", "Servers")
IS_CI = os.environ.get("CI") == "true"


class SuiteError(Exception):
    """A precondition of the suite itself failed (a server did not start, ferryd died)."""


def log(message):
    print(message, flush=True)


# ---------------------------------------------------------------------------------------------
# Test servers
# ---------------------------------------------------------------------------------------------

class Server:
    """A test server from Tests/Servers that prints "PORT n" once listening."""

    def __init__(self, script, *arguments):
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(SERVERS, script), "--port", "0", *arguments],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            # The servers exit 0 on SIGTERM; give them their own group so a stray signal to
            # the suite does not reach them first.
            start_new_session=True)
        line = self.process.stdout.readline()
        match = re.match(r"PORT (\d+)", line or "")
        if not match:
            self.stop()
            raise SuiteError("%s did not print PORT (got %r)" % (script, line))
        self.port = int(match.group(1))
        self.base = "http://127.0.0.1:%d" % self.port

    def request(self, path, body=None, method=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data,
                                         method=method or ("POST" if data else "GET"))
        if data:
            request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"{}")

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class ParseServer(Server):
    def __init__(self):
        super().__init__("parse_server.py")

    def seed(self, cls, count, size=200):
        return self.request("/__admin/seed", {"class": cls, "count": count, "size": size})

    def mutate(self, cls, update=0, delete=0, create=0):
        return self.request("/__admin/mutate", {"class": cls, "update": update, "delete": delete,
                                                "create": create, "size": 200})

    def dump(self, cls):
        """{objectId: object} of the class as the server holds it."""
        return {o["objectId"]: o for o in self.request("/__admin/dump?class=" + cls)["objects"]}

    def fault(self, spec):
        return self.request("/__admin/fault", spec)

    def stats(self):
        return self.request("/__admin/stats")


class AttemptWatcher(threading.Thread):
    """Polls a server's counters (every 50 ms) and stamps each time a counter grows: the
    server-side time of every attempt, independent of ferryd's own log."""

    def __init__(self, read_counter, period=0.05):
        super().__init__(daemon=True)
        self.read_counter = read_counter
        self.period = period
        self.times = []
        self.stopped = threading.Event()
        self.start()

    def run(self):
        last = None
        while not self.stopped.is_set():
            try:
                value = self.read_counter()
            except Exception:  # a server busy for a moment: try again next tick
                value = last
            now = time.monotonic()
            if last is not None and value is not None and value > last:
                self.times.append(now)
            last = value
            self.stopped.wait(self.period)

    def stop(self):
        self.stopped.set()
        self.join(timeout=2)


# ---------------------------------------------------------------------------------------------
# ferryd and ferry
# ---------------------------------------------------------------------------------------------

def binary_dir():
    return os.environ.get("FERRY_BIN_DIR") or os.path.join(ROOT, ".build", "debug")


def binary(name):
    path = os.path.join(binary_dir(), name)
    if not os.access(path, os.X_OK):
        raise SuiteError("%s not built (set FERRY_BIN_DIR or run swift build)" % path)
    return path


class LogLine:
    __slots__ = ("time", "text", "fields")

    FIELD = re.compile(r' (\w+)=("(?:[^"\\]|\\.)*"|\S+)')

    def __init__(self, stamp, text):
        self.time = stamp
        self.text = text
        self.fields = {}
        for key, value in self.FIELD.findall(text):
            if value.startswith('"'):
                value = value[1:-1].replace('\\"', '"')
            self.fields[key] = value

    @property
    def store(self):
        return self.fields.get("store")


class Ferryd:
    """ferryd outside systemd: stderr lines (`<N>message key=value...`) are read by a thread
    and stamped with time.monotonic() as they arrive."""

    def __init__(self, config_path, runtime_dir, extra_env=None, notify=False):
        self.config_path = config_path
        self.runtime_dir = runtime_dir
        env = dict(os.environ)
        env.pop("NOTIFY_SOCKET", None)
        env.pop("JOURNAL_STREAM", None)
        env["RUNTIME_DIRECTORY"] = runtime_dir
        env.update(extra_env or {})
        # notify: play systemd's part of sd_notify(3): a datagram socket whose messages
        # (READY=1, STATUS=...) are kept with their arrival times.
        self.notifications = []
        self.socket = None
        if notify:
            os.makedirs(runtime_dir, exist_ok=True)
            path = os.path.join(runtime_dir, "notify.sock")
            if os.path.exists(path):
                os.unlink(path)
            self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self.socket.bind(path)
            env["NOTIFY_SOCKET"] = path
            threading.Thread(target=self._receive, daemon=True).start()
        self.lines = []
        self.lock = threading.Lock()
        self.process = subprocess.Popen([binary("ferryd"), "--config", config_path],
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, env=env)
        self.pid = self.process.pid
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in self.process.stderr:
            text = raw.decode("utf-8", "replace").rstrip("\n")
            text = re.sub(r"^<\d>", "", text)
            with self.lock:
                self.lines.append(LogLine(time.monotonic(), text))

    def _receive(self):
        while True:
            try:
                data = self.socket.recv(65536)
            except OSError:
                return
            fields = dict(line.split("=", 1) for line in data.decode("utf-8", "replace").splitlines() if "=" in line)
            with self.lock:
                self.notifications.append((time.monotonic(), fields))

    def statuses(self, since=0.0):
        """Every STATUS= line sent after `since`."""
        with self.lock:
            return [f["STATUS"] for t, f in self.notifications if t >= since and "STATUS" in f]

    def snapshot(self):
        with self.lock:
            return list(self.lines)

    def matching(self, store=None, contains=None, since=0.0):
        return [l for l in self.snapshot()
                if l.time >= since and (store is None or l.store == store)
                and (contains is None or contains in l.text)]

    def wait_for(self, what, predicate, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SuiteError("ferryd exited (%s) while waiting for %s; last lines:\n%s" % (
                    self.process.returncode, what, "\n".join(l.text for l in self.snapshot()[-15:])))
            result = predicate()
            if result:
                return result
            time.sleep(0.05)
        raise SuiteError("timed out after %.0f s waiting for %s; last lines:\n%s" % (
            timeout, what, "\n".join(l.text[:300] for l in self.snapshot()[-12:])))

    def reload(self):
        """`ferry reload`: SIGHUP and wait for the acknowledgement (every store resyncs now)."""
        return ferry("reload", "--pid", str(self.pid), "--runtime-directory", self.runtime_dir)

    def stop(self, timeout=5):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.reader.join(timeout=2)
        if self.socket:
            self.socket.close()
        return self.process.returncode


def ferry(*arguments, check=True):
    result = subprocess.run([binary("ferry"), *arguments], capture_output=True, text=True,
                            timeout=60)
    if check and result.returncode != 0:
        raise SuiteError("ferry %s exited %d: %s" % (" ".join(arguments), result.returncode,
                                                       result.stderr.strip()))
    return result


def status_json(config_path, database=None, runtime_dir=None):
    """`ferry status --json` as {store: row}; (rows, exit code, stderr). `runtime_dir`: the
    daemon's, where it publishes failures the replica could not take."""
    arguments = ["status", "--json", "--config", config_path]
    if database:
        arguments += ["--database", database]
    if runtime_dir:
        arguments += ["--runtime-directory", runtime_dir]
    result = ferry(*arguments, check=False)
    rows = {}
    for line in result.stdout.splitlines():
        if line.strip():
            row = json.loads(line)
            rows[row["store"]] = row
    return rows, result.returncode, result.stderr.strip()


# ---------------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------------

def write_config(path, database, stores, global_extra=""):
    """stores: list of dicts with name plus keys written verbatim (name excluded)."""
    text = "[ferry]\ndatabase = %s\n%s\n" % (database, global_extra)
    for store in stores:
        text += "\n[store %s]\n" % store["name"]
        for key, value in store.items():
            if key != "name":
                text += "%s = %s\n" % (key, value)
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def parse_store(name, server_base, cls, key_file, **extra):
    store = {"name": name, "kind": "parse", "url": server_base + "/parse", "class": cls,
             "application-id": "ferry-test", "rest-api-key": "file:" + key_file}
    store.update({k.replace("_", "-"): v for k, v in extra.items()})
    return store


def make_key_file(directory):
    path = os.path.join(directory, "rest-key")
    with open(path, "w") as f:
        f.write("rest-secret")
    os.chmod(path, 0o600)
    return path


# ---------------------------------------------------------------------------------------------
# Replica
# ---------------------------------------------------------------------------------------------

def read_rows(database, table):
    """{id: (version, body)}; {} when the database or the table does not exist yet."""
    if not os.path.exists(database):
        return {}
    connection = sqlite3.connect("file:%s?mode=ro" % database, uri=True, timeout=5)
    try:
        return rows_of(connection, table)
    finally:
        connection.close()


def rows_of(connection, table):
    """read_rows over a connection already open (opening one parses every store's schema)."""
    try:
        return {row[0]: (row[1], row[2]) for row in
                connection.execute("SELECT id, version, body FROM %s" % table)}
    except sqlite3.OperationalError as error:
        if "no such table" in str(error):
            return {}
        raise


def integrity(database):
    connection = sqlite3.connect("file:%s?mode=ro" % database, uri=True, timeout=5)
    try:
        return connection.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        connection.close()


def same_as_server(rows, objects):
    """The replica equals the server: same ids, versions (updatedAt) and bodies."""
    if set(rows) != set(objects):
        return False
    for oid, (version, body) in rows.items():
        obj = objects[oid]
        if version != obj.get("updatedAt"):
            return False
        if json.loads(body) != obj:
            return False
    return True


def diff_summary(rows, objects):
    missing = set(objects) - set(rows)
    extra = set(rows) - set(objects)
    stale = [i for i in set(rows) & set(objects) if rows[i][0] != objects[i].get("updatedAt")]
    return "missing %d, extra %d, stale %d" % (len(missing), len(extra), len(stale))


# ---------------------------------------------------------------------------------------------
# /proc
# ---------------------------------------------------------------------------------------------

def proc_sample(pid):
    """(open fds, threads, RSS in KiB) of a live process."""
    fds = len(os.listdir("/proc/%d/fd" % pid))
    threads = rss = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Threads:"):
                threads = int(line.split()[1])
            elif line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    return fds, threads, rss


def cpu_seconds(pid):
    """User + system CPU time of a live process, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def temporary_directory(prefix):
    return tempfile.mkdtemp(prefix=prefix)
