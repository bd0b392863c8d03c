"""daemon_suite.py part "faults": one store per injected fault, through ferryd.

Each Parse-backed fault gets its own parse_server.py (its /__admin/fault switch is global to the
server), so every store's attempts can be counted on its own server. DNS uses a host under
.invalid; TLS goes to fault_server.py serving its self-signed test certificate (not trusted:
no ca-file), whose connection counter gives the server-side attempt times.

Ferry's backoff (Sources/FerryKit/Daemon/Backoff.swift; not configurable): after the k-th
consecutive failure it waits raw = 5 s * 2^(k-1) (capped at 1 h), half fixed and half random:
[raw/2, raw]; never less than the server's Retry-After (or rate-limit reset).
"""

import http.client
import json
import os
import re
import shutil
import ssl
import time

from daemon_harness import (AttemptWatcher, Ferryd, ParseServer, Server, SuiteError, diff_summary,
                            integrity, log, make_key_file, parse_store, read_rows, same_as_server,
                            status_json, temporary_directory, write_config)

BACKOFF_BASE = 5.0

# name, parse fault spec (None: not a parse fault), cause pattern in the failure line,
# retry-after seconds (None: plain backoff), extra store keys.
PARSE_FAULTS = [
    ("f_500", {"status": 500, "next": 2}, r"\b500\b", None, {}),
    ("f_503", {"status": 503, "retry_after": 3, "next": 1}, r"\b503\b|rate", 3, {}),
    ("f_429", {"status": 429, "retry_after": 7, "next": 1}, r"\b429\b|rate", 7, {}),
    ("f_reset", {"kind": "reset", "next": 2}, r"reset|recv|connection|empty reply", None, {}),
    ("f_truncate", {"kind": "truncate", "after": 1, "next": 1},
     r"partial|truncat|closed|incomplete|bytes remaining|content-length", None, {}),
    ("f_stall", {"kind": "stall", "seconds": 30, "next": 1}, r"too slow|low.speed|stall|timed? ?out",
     None, {"low_speed_time": "2s"}),
    ("f_badjson", {"kind": "invalid-json", "after": 1, "next": 1}, r"json|malformed|parse|unexpected",
     None, {}),
    ("f_html", {"kind": "html200", "after": 1, "next": 1}, r"html|content.type|malformed|json",
     None, {}),
]
DNS_CAUSE = r"resolve|dns|host"
TLS_CAUSE = r"tls|ssl|certificate|handshake"


def backoff_bounds(failures, retry_after):
    raw = min(BACKOFF_BASE * 2 ** (failures - 1), 3600.0)
    low, high = raw / 2, raw
    if retry_after:
        low, high = max(low, retry_after), max(high, retry_after)
    return low, high


def counter_of(server, read, tls=False):
    """A counter read over one keep-alive connection (so polling adds no connections)."""
    def connect():
        if tls:
            return http.client.HTTPSConnection("127.0.0.1", server.port, timeout=5,
                                               context=ssl._create_unverified_context())
        return http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    connection = connect()

    def value():
        nonlocal connection
        try:
            connection.request("GET", read[0])
            return read[1](json.loads(connection.getresponse().read()))
        except (OSError, http.client.HTTPException):
            connection.close()
            connection = connect()
            raise
    return value


def parse_attempts(stats):
    routes = stats["routes"]
    return routes.get("find", 0) + routes.get("fault", 0) + routes.get("unauthorized", 0)


def attempt_gaps(daemon, store, since, retry_after, check, label, watcher=None, latency=0.0):
    """Checks every failure of `store` after `since` against the backoff: ferryd's logged
    delay, the gap in its own log (failed -> next started), and the gap between the server's
    failing and retried requests. Returns the number of failures seen."""
    lines = daemon.matching(store=store, since=since)
    failures = 0
    for index, line in enumerate(lines):
        if "pass failed" not in line.text:
            continue
        failures += 1
        low, high = backoff_bounds(failures, retry_after)
        backing = next((l for l in lines[index:] if "backing off" in l.text), None)
        started = next((l for l in lines[index + 1:] if "pass started" in l.text), None)
        if backing is None or started is None:
            check.expect(False, "%s: failure %d has a backoff line and a next attempt" % (label, failures))
            continue
        logged = int(backing.fields.get("delay_ms", "-1")) / 1000
        gap = started.time - line.time
        text = "%s: failure %d -> ferryd chose %.2f s (backoff [%.1f, %.1f] s), next attempt %.2f s later" % (
            label, failures, logged, low, high, gap)
        server_ok = True
        if watcher is not None:
            before = [t for t in watcher.times if t <= line.time + 0.1]
            after = [t for t in watcher.times if t > line.time + 0.1]
            if before and after:
                server_gap = after[0] - before[-1]
                text += "; server saw the retry %.2f s after the failing request" % server_gap
                server_ok = low - 0.6 <= server_gap <= high + latency + 4
            else:
                text += "; server times missing (before %d, after %d)" % (len(before), len(after))
                server_ok = False
        # Logged: exactly Ferry's formula. Measured: generous margins (shared, noisy machine).
        check.expect(low - 0.01 <= logged <= high + 0.01 and low - 0.5 <= gap <= high * 1.3 + 3
                     and server_ok, text)
    return failures


def run_faults(args, check):
    work = temporary_directory("ferry-faults-")
    servers = {}
    fault_server = None
    daemon = None
    watchers = []
    try:
        key = make_key_file(work)
        database = os.path.join(work, "ferry.db")
        config = os.path.join(work, "ferry.conf")
        for name, *_ in PARSE_FAULTS:
            servers[name] = ParseServer()
            servers[name].seed("F", 30, size=200)
        # TLS: fault_server.py with its self-signed test certificate, which ferryd (verifying
        # against the system store, no ca-file) must refuse.
        tls_dir = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "Servers", "tls")
        fault_server = Server("fault_server.py", "--tls-cert", os.path.join(tls_dir, "localhost-cert.pem"),
                              "--tls-key", os.path.join(tls_dir, "localhost-key.pem"))
        # These stores check ferryd's backoff between failing passes, so a fault must fail its
        # pass: no retries within the pass. f_retried keeps the default and must absorb a
        # transient 5xx inside its pass.
        stores = [parse_store(name, servers[name].base, "F", key, interval="1h", jitter="0s",
                              page_size="10", reconcile_interval="never", read_retries="0", **extra)
                  for name, _, _, _, extra in PARSE_FAULTS]
        retried = ParseServer()
        servers["f_retried"] = retried
        retried.seed("F", 30, size=200)
        stores.append(parse_store("f_retried", retried.base, "F", key, interval="1h", jitter="0s",
                                  page_size="10", reconcile_interval="never"))
        healthy = servers["f_500"]
        dns = parse_store("f_dns", "http://ferry-fault-test.invalid", "F", key, interval="1h",
                          jitter="0s", page_size="10", reconcile_interval="never")
        tls = parse_store("f_tls", "https://127.0.0.1:%d" % fault_server.port, "F", key,
                          interval="1h", jitter="0s", page_size="10", reconcile_interval="never",
                          connect_timeout="3s")
        write_config(config, database, stores + [dns, tls])

        tls_watcher = AttemptWatcher(counter_of(fault_server, ("/stats", lambda s: s["connections"]), tls=True))
        watchers.append(tls_watcher)
        started = time.monotonic()
        daemon = Ferryd(config, os.path.join(work, "run"))

        # Phase 1: the Parse stores sync cleanly; DNS and TLS fail from the start: their first
        # three failures give two backoff gaps (2.5-5 s, then 5-10 s).
        try:
            daemon.wait_for("the first sync of the Parse stores and three DNS/TLS failures", lambda: all(
                len(read_rows(database, name)) == 30 for name, *_ in PARSE_FAULTS) and all(
                len(daemon.matching(store=s, contains="pass failed")) >= n for s, n in (("f_dns", 3), ("f_tls", 1))),
                timeout=40)
        except SuiteError:
            log("  rows: %s" % {name: len(read_rows(database, name)) for name, *_ in PARSE_FAULTS})
            for store in ("f_dns", "f_tls"):
                log("  %s: %s" % (store, [l.text[:200] for l in daemon.matching(store=store)][-3:]))
            raise
        for store, cause in (("f_dns", DNS_CAUSE), ("f_tls", TLS_CAUSE)):
            first = daemon.matching(store=store, contains="pass failed")[0]
            log("  %s: %s" % (store, first.text[:230]))
            check.expect(re.search(cause, first.text, re.I) is not None,
                         "%s: the failure names its cause (/%s/)" % (store, cause))
            check.expect(not read_rows(database, store), "%s: nothing merged" % store)
        # DNS failures are transient: only the first two gaps (the third retry is 10-20 s away).
        lines = daemon.matching(store="f_dns", since=started)
        cut = [i for i, l in enumerate(lines) if "pass failed" in l.text][2]
        attempt_gaps(FerrydView(lines[:cut]), "f_dns", started, None, check, "f_dns")
        # A certificate failure is permanent (a person must fix the CA or the URL): Ferry waits
        # Backoff.permanentFailureDelay (900 s) and does not retry meanwhile.
        backing = daemon.matching(store="f_tls", contains="backing off")
        check.expect(backing and int(backing[0].fields.get("delay_ms", 0)) >= 900_000,
                     "f_tls: a certificate failure is not retried soon: ferryd chose %s ms"
                     % (backing[0].fields.get("delay_ms") if backing else None))
        for store in ("f_dns", "f_tls"):
            rows, _, _ = status_json(config)
            row = rows.get(store, {})
            check.expect(row.get("state") == "failing" and row.get("last_error"),
                         "%s: ferry status says failing: %s" % (store, (row.get("last_error") or "")[:120]))

        # Phase 2: change every Parse class, arm each server's fault, resync everything.
        before = {name: read_rows(database, name) for name, *_ in PARSE_FAULTS}
        for name, spec, *_ in PARSE_FAULTS:
            servers[name].mutate("F", update=5, create=25)
        after = {name: servers[name].dump("F") for name, *_ in PARSE_FAULTS}
        retried.mutate("F", update=5, create=25)
        retried_after = retried.dump("F")
        retried.fault({"status": 503, "next": 2})
        for name, spec, *_ in PARSE_FAULTS:
            servers[name].fault(spec)
            watcher = AttemptWatcher(counter_of(servers[name], ("/__admin/stats", parse_attempts)))
            watchers.append(watcher)
            servers[name].watcher = watcher
        time.sleep(0.3)  # the watchers' first reading
        tls_attempts = len(daemon.matching(store="f_tls", contains="pass started"))
        check.expect(tls_attempts == 1 and len(tls_watcher.times) == 1,
                     "f_tls: one attempt in the %.0f s before the resync (ferryd %d, server %d connection(s))"
                     % (time.monotonic() - started, tls_attempts, len(tls_watcher.times)))
        reload_time = time.monotonic()
        daemon.reload()

        # Nothing bad merged: checked as soon as each store's first failure is logged, long
        # before its retry (>= 2.5 s later).
        checked = set()
        statuses = {}
        deadline = time.monotonic() + 90
        pending = {name for name, *_ in PARSE_FAULTS}
        while pending and time.monotonic() < deadline:
            for name in sorted(pending):
                lines = daemon.matching(store=name, since=reload_time)
                if name not in checked and any("pass failed" in l.text for l in lines):
                    checked.add(name)
                    rows = read_rows(database, name)
                    bad = [i for i, (version, body) in rows.items()
                           if (version, body) != before[name].get(i)
                           and not (i in after[name] and version == after[name][i]["updatedAt"]
                                    and json.loads(body) == after[name][i])]
                    check.expect(not bad and set(rows) >= set(before[name]),
                                 "%s: after the failure the replica holds only good rows (%d rows, "
                                 "%d bad)" % (name, len(rows), len(bad)))
                    statuses[name] = status_json(config)[0].get(name, {})
                if any("pass finished" in l.text for l in lines):
                    pending.discard(name)
            time.sleep(0.05)
        check.expect(not pending, "every Parse fault store recovered within 90 s (pending: %s)"
                     % ", ".join(sorted(pending)))

        for name, spec, cause, retry_after, extra in PARSE_FAULTS:
            lines = daemon.matching(store=name, since=reload_time)
            failed = [l for l in lines if "pass failed" in l.text]
            if not check.expect(failed, "%s: the fault failed a pass" % name):
                continue
            log("  %s: %s" % (name, failed[0].text[:230]))
            check.expect(re.search(cause, failed[0].text, re.I) is not None,
                         "%s: the failure names its cause (/%s/)" % (name, cause))
            status = statuses.get(name, {})
            check.expect(status.get("state") == "failing" and re.search(cause, status.get("last_error") or "", re.I),
                         "%s: ferry status said failing with the cause: %s" % (
                             name, (status.get("last_error") or "")[:100]))
            latency = 2.5 if "low_speed_time" in extra else 0.5
            attempt_gaps(daemon, name, reload_time, retry_after, check, name,
                         servers[name].watcher, latency=latency)
            rows = read_rows(database, name)
            check.expect(same_as_server(rows, after[name]),
                         "%s: the healthy pass converged to the server (%s)" % (name, diff_summary(rows, after[name])))

        # The default read retries absorb two 503s within one pass: no failed pass, a logged retry.
        try:
            daemon.wait_for("f_retried converged", lambda: same_as_server(read_rows(database, "f_retried"),
                                                                       retried_after), timeout=30)
        except SuiteError:
            pass
        lines = daemon.matching(store="f_retried", since=reload_time)
        check.expect(not any("pass failed" in l.text for l in lines)
                     and same_as_server(read_rows(database, "f_retried"), retried_after),
                     "f_retried: two 503s were retried within the pass, which converged (%s)"
                     % diff_summary(read_rows(database, "f_retried"), retried_after))
        check.expect(any("retr" in l.text.lower() for l in lines),
                     "f_retried: the retry is in the journal")

        # Phase 3: DNS and TLS stores pointed at a healthy server converge.
        healthy.seed("G", 40, size=200)
        fixed = [dict(dns, url=healthy.base + "/parse", **{"class": "G"}),
                 dict(tls, url=healthy.base + "/parse", **{"class": "G"})]
        write_config(config, database, stores + fixed)
        daemon.reload()
        expected = healthy.dump("G")
        try:
            daemon.wait_for("f_dns and f_tls converged", lambda: all(
                same_as_server(read_rows(database, s), expected) for s in ("f_dns", "f_tls")), timeout=30)
            converged = True
        except SuiteError:
            converged = False
        check.expect(converged, "f_dns, f_tls: once fixed, the next pass converged (%s; %s)" % (
            diff_summary(read_rows(database, "f_dns"), expected),
            diff_summary(read_rows(database, "f_tls"), expected)))
        check.expect(integrity(database) == "ok", "integrity_check ok")
        code = daemon.stop()
        daemon = None
        check.expect(code == 0, "ferryd exits 0 on SIGTERM (got %s)" % code)
    finally:
        for watcher in watchers:
            watcher.stop()
        if daemon:
            daemon.stop()
        for server in servers.values():
            server.stop()
        if fault_server:
            fault_server.stop()
        shutil.rmtree(work, ignore_errors=True)


class FerrydView:
    """A fixed list of log lines with Ferryd's `matching`, to check a prefix of the log."""

    def __init__(self, lines):
        self.lines = lines

    def matching(self, store=None, contains=None, since=0.0):
        return [l for l in self.lines if l.time >= since and (store is None or l.store == store)
                and (contains is None or contains in l.text)]
