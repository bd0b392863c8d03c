#!/usr/bin/env python3
"""A stock Prometheus (Debian's `prometheus` package) scrapes a running ferryd, and the
metrics are queried back through Prometheus's own HTTP API.

    python3 Tests/System/prometheus_scrape.py [--ferryd .build/debug/ferryd] [--keep]

On 127.0.0.1: starts Tests/Servers/parse_server.py with 120 objects in class Quote, runs
ferryd with one Parse store and `metrics-listen` on a free port, checks the exposition with
`promtool check metrics`, then starts prometheus scraping ferryd every second and asks its API
until it holds:
  - `up{job="ferry"}` = 1 (the scrape itself worked),
  - `ferry_passes_total{store="quotes",outcome="ok"}` >= 1,
  - `ferry_records{store="quotes"}` = 120,
  - `ferry_received_bytes_total{store="quotes"}` > 0.
Exits 0 when all hold, 1 when one does not within 60 s, 2 when something is missing
(prometheus, promtool, the binary), printed as a skip; the caller decides whether a skip
fails (it does under CI=true).
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "Tests", "Reliability"))
from reliability_servers import APP_ID, MASTER_KEY, ParseServer  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return answer.read().decode()


def query(prometheus, expression):
    """The values of an instant query, as floats (empty when it has no result)."""
    text = get("http://127.0.0.1:%d/api/v1/query?%s" % (prometheus, urllib.parse.urlencode({"query": expression})))
    data = json.loads(text)
    if data.get("status") != "success":
        return []
    return [float(r["value"][1]) for r in data["data"]["result"]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ferryd", default=os.path.join(ROOT, ".build", "debug", "ferryd"))
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    for tool in ("prometheus", "promtool"):
        if not shutil.which(tool):
            print("SKIP: %s not installed (apt install prometheus)" % tool)
            return 2
    if not os.access(a.ferryd, os.X_OK):
        print("SKIP: %s not built" % a.ferryd)
        return 2

    work = tempfile.mkdtemp(prefix="ferry-prometheus-")
    processes = []
    parse = ParseServer(work)
    ok = False
    try:
        parse.admin("seed", {"class": "Quote", "count": 120, "seed": 3})
        with open(os.path.join(work, "master-key"), "w") as f:
            f.write(MASTER_KEY)
        os.chmod(os.path.join(work, "master-key"), 0o600)
        metrics_port = free_port()
        with open(os.path.join(work, "ferry.conf"), "w") as f:
            f.write("[ferry]\ndatabase = %s/ferry.db\nmetrics-listen = 127.0.0.1:%d\n\n"
                    "[store quotes]\nkind = parse\nurl = %s\nclass = Quote\napplication-id = %s\n"
                    "master-key = file:%s/master-key\ninterval = 5s\n"
                    % (work, metrics_port, parse.url, APP_ID, work))
        env = dict(os.environ, RUNTIME_DIRECTORY=os.path.join(work, "run"))
        env.pop("NOTIFY_SOCKET", None)
        env.pop("JOURNAL_STREAM", None)
        ferryd = subprocess.Popen([a.ferryd, "--config", os.path.join(work, "ferry.conf")], env=env,
                                  stderr=open(os.path.join(work, "ferryd.log"), "wb"))
        processes.append(ferryd)

        deadline = time.time() + 30
        text = ""
        while time.time() < deadline and 'outcome="ok"} 1' not in text:
            time.sleep(0.2)
            try:
                text = get("http://127.0.0.1:%d/metrics" % metrics_port)
            except OSError:
                pass
        if 'outcome="ok"} 1' not in text:
            print("FAIL: ferryd's metrics never showed a pass (see %s/ferryd.log)" % work)
            return 1
        check = subprocess.run(["promtool", "check", "metrics"], input=text.encode(), capture_output=True)
        print("promtool check metrics: exit %d %s" % (check.returncode, (check.stdout + check.stderr).decode().strip()))
        if check.returncode != 0:
            return 1

        web_port = free_port()
        with open(os.path.join(work, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: ferry\n    static_configs:\n"
                    "      - targets: ['127.0.0.1:%d']\n" % metrics_port)
        prometheus = subprocess.Popen(
            ["prometheus", "--config.file", os.path.join(work, "prometheus.yml"),
             "--storage.tsdb.path", os.path.join(work, "tsdb"),
             "--web.listen-address", "127.0.0.1:%d" % web_port],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "prometheus.log"), "wb"))
        processes.append(prometheus)
        wanted = {
            'up{job="ferry"}': lambda v: v == [1.0],
            'ferry_passes_total{store="quotes",outcome="ok"}': lambda v: len(v) == 1 and v[0] >= 1,
            'ferry_records{store="quotes"}': lambda v: v == [120.0],
            'ferry_received_bytes_total{store="quotes"}': lambda v: len(v) == 1 and v[0] > 0,
        }
        seen = {}
        deadline = time.time() + 60
        while time.time() < deadline:
            time.sleep(1)
            for expression, good in wanted.items():
                try:
                    seen[expression] = query(web_port, expression)
                except OSError:
                    continue
            if all(good(seen.get(e, [])) for e, good in wanted.items()):
                ok = True
                break
        for expression in wanted:
            print("  %s = %s" % (expression, seen.get(expression)))
        print("OK: a stock Prometheus scraped ferryd" if ok else "FAIL: Prometheus never held the figures (see %s)" % work)
        return 0 if ok else 1
    finally:
        for process in processes:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
        parse.stop()
        if ok and not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
