#!/usr/bin/env bash
# Checks what contrib/ ships for monitoring: the Prometheus rules (promtool check rules, the
# unit tests of promtool test rules) and every PromQL expression of the rules and of the Grafana
# dashboard against a real Prometheus scraping a real ferryd.
#
#   bash contrib/check.sh          # from any directory; FERRYD=path (default .build/debug/ferryd)
#
# On 127.0.0.1 only, in a temporary directory, with free ports and no network: a copy of ferryd
# syncs the bundled demo (etc/ferry/demo through file: URLs, every 2 s) and a store whose file
# is missing (so one store fails), with metrics-listen; a private prometheus scrapes it every
# second and evaluates ferry.rules.yml. Then, through Prometheus's HTTP API:
#   - every rule loads and evaluates (health ok) and each of its series selectors has series;
#   - every dashboard query (template variables as .*, $__rate_interval as 1m) evaluates,
#     returns series, and each of its selectors has series; each label_values() variable has
#     values; the dashboard's JSON is checked for shape (datasource variable, no fixed uid);
#   - the only alert active is FerryStoreFailing for the failing store (pending), and
#     FerrydDown turns pending once ferryd is stopped.
# Everything started is stopped on exit. Exits 0 when all hold, 1 on a failure, 2 when a tool
# is missing (prometheus, promtool, python3, the binary), printed as SKIP: the caller decides
# whether a skip fails (scripts/test.sh: it does under CI=true).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
rules=$here/prometheus/ferry.rules.yml
tests=$here/prometheus/ferry.rules.test.yml
dashboard=$here/grafana/ferry.json
FERRYD=${FERRYD:-$root/.build/debug/ferryd}
started_at=$(date +%s)

for tool in promtool prometheus python3; do
    if ! command -v "$tool" >/dev/null; then
        echo "SKIP: $tool not installed (apt install prometheus python3)"
        exit 2
    fi
done
if [[ ! -x "$FERRYD" ]]; then
    echo "SKIP: $FERRYD not built (set FERRYD=)"
    exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ferry-contrib-check.XXXXXX")
pids=()
ok=0
cleanup() {
    local pid
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        # a process that ignores SIGTERM for 10 s is killed
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    if [[ $ok -eq 1 ]]; then
        rm -rf "$work"
    else
        echo "logs kept in $work" >&2
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== promtool check rules"
check_out=$(promtool check rules "$rules" 2>&1) || { echo "$check_out"; echo "FAIL: promtool check rules"; exit 1; }
echo "$check_out"
rule_count=$(sed -n 's/.*SUCCESS: \([0-9]*\) rules found.*/\1/p' <<<"$check_out")

echo "== promtool test rules"
promtool test rules "$tests" || { echo "FAIL: promtool test rules"; exit 1; }
test_count=$(grep -c 'eval_time:' "$tests")

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

echo "== ferryd with metrics-listen"
cp "$FERRYD" "$work/ferryd"
metrics_port=$(free_port)
cat >"$work/ferry.conf" <<EOF
[ferry]
database = $work/ferry.db
metrics-listen = 127.0.0.1:$metrics_port

# The bundled demo, as etc/ferry/ferry.conf syncs it, every 2 s.
[store demo]
kind = json
url = file:$root/etc/ferry/demo/quotes-0001.json
records-path = results
id-field = id
version-field = updated_at
pagination = next-url:next
interval = 2s
jitter = 0
column.author = text \$.author

# A page that does not exist: this store fails.
[store broken]
kind = json
url = file:$work/missing.json
pagination = none
records-path = results
id-field = id
version-field = updated_at
interval = 2s
EOF
(
    unset NOTIFY_SOCKET JOURNAL_STREAM WATCHDOG_USEC WATCHDOG_PID LISTEN_FDS LISTEN_PID
    export RUNTIME_DIRECTORY=$work/run
    exec "$work/ferryd" --config "$work/ferry.conf"
) >"$work/ferryd.log" 2>&1 &
ferryd_pid=$!
pids+=("$ferryd_pid")

echo "== prometheus scraping it every second, with the rules"
web_port=$(free_port)
cp "$rules" "$work/ferry.rules.yml"
cat >"$work/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - ferry.rules.yml
scrape_configs:
  - job_name: ferry
    static_configs:
      - targets: ['127.0.0.1:$metrics_port']
EOF
prometheus --config.file "$work/prometheus.yml" --storage.tsdb.path "$work/tsdb" \
    --web.listen-address "127.0.0.1:$web_port" >"$work/prometheus.log" 2>&1 &
pids+=("$!")

echo "== the expressions, through Prometheus's API"
set +e
WEB_PORT=$web_port METRICS_PORT=$metrics_port FERRYD_PID=$ferryd_pid DASHBOARD=$dashboard \
    python3 - >"$work/queries.out" <<'PY'
import json, os, re, signal, sys, time, urllib.parse, urllib.request

API = "http://127.0.0.1:%s/api/v1/" % os.environ["WEB_PORT"]
METRICS = "http://127.0.0.1:%s/metrics" % os.environ["METRICS_PORT"]
failures = []


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return answer.read().decode()


def api(path, **params):
    """Prometheus's answer as JSON ({"status": "error", ...} when it refuses the query)."""
    try:
        return json.loads(get(API + path + ("?" + urllib.parse.urlencode(params, doseq=True) if params else "")))
    except urllib.error.HTTPError as error:  # 400/422: a query that does not parse or evaluate
        return json.loads(error.read().decode())
    except (OSError, ValueError) as error:
        return {"status": "unreachable", "error": str(error)}


def wait(what, holds, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            if holds():
                return True
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.5)
    print("FAIL: %s within %d s" % (what, seconds))
    sys.exit(1)


# ferryd serves both stores' figures, Prometheus holds them.
wait("ferryd's metrics show the demo store synced",
     lambda: 'ferry_passes_total{store="demo",outcome="ok"}' in get(METRICS) and 'store="broken",outcome="failed"}' in get(METRICS), 30)
wait("Prometheus scrapes ferryd (up == 1)",
     lambda: [r["value"][1] for r in api("query", query='up{job="ferry"}')["data"]["result"]] == ["1"], 30)

SELECTOR = re.compile(r'(?<![\w:."])((?:ferry[_:][A-Za-z0-9_:]*)|up)\b\s*(\{[^}]*\})?')


def selectors(expression):
    return sorted({name + (labels or "") for name, labels in SELECTOR.findall(expression)})


def substituted(expression):
    """A Grafana query as Prometheus would get it: variables all-matching, intervals 1m."""
    for name, value in (("$__rate_interval", "1m"), ("${__rate_interval}", "1m"), ("$__interval", "15s"),
                        ("${__interval}", "15s"), ("$__range", "1m"), ("${__range}", "1m")):
        expression = expression.replace(name, value)
    return re.sub(r'\$\{\w+(?::\w+)?\}|\$\w+|\[\[\w+\]\]', ".*", expression)


def check(origin, expression, must_return):
    """The problems of one expression (empty: fine)."""
    problems = []
    answer = api("query", query=expression)
    if answer.get("status") != "success":
        return ["%s: %s: %s" % (origin, answer.get("errorType", answer.get("status")), answer.get("error"))]
    if must_return and not answer["data"]["result"]:
        problems.append("%s: no series" % origin)
    for selector in selectors(expression):
        found = api("query", query=selector)
        if found.get("status") != "success" or not found["data"]["result"]:
            problems.append("%s: selector %s has no series" % (origin, selector))
    return problems


# The dashboard: shape, then its queries.
board = json.load(open(os.environ["DASHBOARD"]))
variables = {v["name"]: v for v in board["templating"]["list"]}
shape = []
if not 36 <= board.get("schemaVersion", 0) <= 41:
    shape.append("schemaVersion %s" % board.get("schemaVersion"))
if variables.get("datasource", {}).get("type") != "datasource" or variables["datasource"].get("query") != "prometheus":
    shape.append("no datasource variable of type prometheus")
store = variables.get("store", {})
if not (store.get("multi") and "label_values(" in json.dumps(store.get("query"))):
    shape.append("no multi-value store variable from label_values")
ids = [p["id"] for p in board["panels"]]
if len(ids) != len(set(ids)):
    shape.append("panel ids repeat")
for found in re.findall(r'"uid":\s*"([^"]*)"', json.dumps(board)):
    if found not in ("${datasource}", "-- Grafana --", board.get("uid")):
        shape.append("a fixed datasource uid %r" % found)
targets = []
for panel in board["panels"]:
    if panel["type"] == "row":
        continue
    if panel.get("datasource", {}).get("uid") != "${datasource}":
        shape.append("panel %r does not use ${datasource}" % panel["title"])
    for target in panel.get("targets", []):
        if target.get("datasource", {}).get("uid") != "${datasource}":
            shape.append("panel %r target %s does not use ${datasource}" % (panel["title"], target["refId"]))
        targets.append(("dashboard %r %s" % (panel["title"], target["refId"]), target["expr"]))
failures += ["dashboard: " + s for s in shape]
label_queries = []
for variable in board["templating"]["list"]:
    if variable["type"] == "query":
        text = variable["query"]["query"] if isinstance(variable["query"], dict) else variable["query"]
        m = re.fullmatch(r'\s*label_values\((.*),\s*(\w+)\)\s*', text)
        if not m:
            failures.append("dashboard variable %s: not label_values(SELECTOR, LABEL): %s" % (variable["name"], text))
        else:
            label_queries.append((variable["name"], substituted(m.group(1)), m.group(2)))

# Rules: loaded and evaluated by Prometheus itself.
def rules():
    return [rule for group in api("rules")["data"]["groups"] for rule in group["rules"]]


wait("Prometheus evaluates every rule", lambda: rules() and all(r["health"] != "unknown" for r in rules()), 30)


def all_problems():
    problems = []
    for rule in rules():
        name = rule.get("name")
        if rule["health"] != "ok":
            problems.append("rule %s: health %s: %s" % (name, rule["health"], rule.get("lastError")))
        problems += check("rule %s" % name, rule["query"], must_return=False)
    for origin, expression in targets:
        problems += check(origin, substituted(expression), must_return=True)
    for name, selector, label in label_queries:
        answer = api("label/%s/values" % label, **{"match[]": selector})
        if answer.get("status") != "success" or not answer["data"]:
            problems.append("dashboard variable %s: label_values(%s, %s) has no values" % (name, selector, label))
    active = sorted((a["labels"]["alertname"], a["labels"].get("store", ""), a["state"]) for a in api("alerts")["data"]["alerts"])
    if active != [("FerryStoreFailing", "broken", "pending")]:
        problems.append("alerts active against ferryd: %s (want only FerryStoreFailing pending for store broken)" % active)
    return problems


# Rates need a few scrapes and the start-delay histogram a scheduled pass: the figures fill
# in within seconds, so problems are asked again until they go or 60 s pass.
deadline = time.time() + 60
while True:
    problems = all_problems()
    if not problems or time.time() > deadline:
        break
    time.sleep(1)
failures += problems
rule_count = len(rules())

# ferryd stopped: up turns 0 and FerrydDown pending.
os.kill(int(os.environ["FERRYD_PID"]), signal.SIGTERM)
deadline = time.time() + 30
down = []
while time.time() < deadline and not down:
    time.sleep(0.5)
    down = [a for a in api("alerts")["data"]["alerts"] if a["labels"]["alertname"] == "FerrydDown"]
if not down:
    failures.append("FerrydDown did not turn pending within 30 s of stopping ferryd")

for failure in failures:
    print("FAIL: " + failure)
print("QUERIES %d" % (len(targets) + len(label_queries)))
print("RULES %d" % rule_count)
sys.exit(1 if failures else 0)
PY
status=$?
set -e
grep -v '^QUERIES \|^RULES ' "$work/queries.out" || true
query_count=$(sed -n 's/^QUERIES //p' "$work/queries.out")
if [[ $status -ne 0 ]]; then
    echo "FAIL: the expressions against Prometheus (ferryd log: $work/ferryd.log, Prometheus's: $work/prometheus.log)"
    exit 1
fi
ok=1
echo "OK: $rule_count rules, $test_count tests, $query_count dashboard queries checked ($(( $(date +%s) - started_at )) s)"
