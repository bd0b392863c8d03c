#!/usr/bin/python3
# NOT ferryd: a minimal Python stand-in used only by `systemd-test.sh --self-test` to check the
# test script's own steps (reload wait, journal queries, watchdog detection) before ferryd exists.
import os, sys, socket, signal, json, time, sqlite3, urllib.request
conf_path = sys.argv[sys.argv.index("--config") + 1]
rt = os.environ["RUNTIME_DIRECTORY"]; statedir = os.environ["STATE_DIRECTORY"]
creds = os.environ.get("CREDENTIALS_DIRECTORY")
def notify(*lines):
    a = os.environ.get("NOTIFY_SOCKET")
    if not a: return
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.connect(a); s.sendall("\n".join(lines).encode())
js = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
def journal(msg, prio=6, **f):
    items = {"MESSAGE": msg, "PRIORITY": str(prio), "SYSLOG_IDENTIFIER": "ferryd", "CODE_FILE": "fake", **{k.upper(): str(v) for k, v in f.items()}}
    js.sendto("".join(f"{k}={v}\n" for k, v in items.items()).encode(), "/run/systemd/journal/socket")
def parse(path):
    stores, cur = {}, None
    for n, line in enumerate(open(path), 1):
        line = line.strip()
        if not line or line.startswith("#"): continue
        if line.startswith("[store "): cur = stores.setdefault(line[7:-1], {}); continue
        if line == "[ferry]": cur = {}; continue
        k, v = [x.strip() for x in line.split("=", 1)]; cur[k] = v
        if k == "kind" and v not in ("parse", "json", "carddav", "caldav"):
            raise ValueError(f"{path}:{n}: key 'kind': expected one of parse, json, carddav, caldav, got '{v}'")
    return stores
def publish(gen, result, msg):
    t = f"{rt}/.tmp"; open(t, "w").write(f"pid={os.getpid()}\ngeneration={gen}\nresult={result}\nmessage={msg}\n"); os.replace(t, f"{rt}/reload-state")
db = sqlite3.connect(f"{statedir}/ferry.db"); db.execute("PRAGMA journal_mode=WAL")
passno = 0
def sync(name, s):
    global passno; passno += 1
    journal(f"pass started", FERRY_STORE=name, FERRY_PASS=passno, MESSAGE_ID="2e864231d3ca431a8aa876e279b76589")
    key = open(f"{creds}/{s['rest-api-key'].split(':',1)[1]}").read()
    req = urllib.request.Request(f"{s['url']}/classes/{s['class']}?limit=1000", headers={"X-Parse-Application-Id": s["application-id"], "X-Parse-REST-API-Key": key})
    rows = json.load(urllib.request.urlopen(req))["results"]
    db.execute(f"CREATE TABLE IF NOT EXISTS {name} (id TEXT PRIMARY KEY, body TEXT)")
    with db: db.executemany(f"INSERT OR REPLACE INTO {name} VALUES (?, ?)", [(r["objectId"], json.dumps(r)) for r in rows])
    journal(f"pass finished", FERRY_STORE=name, FERRY_PASS=passno, FERRY_RECORDS=len(rows), MESSAGE_ID="214e4b6757ab436fa07ada0da2a4271a")
flags = {"hup": 0, "term": False}
signal.signal(signal.SIGHUP, lambda *a: flags.__setitem__("hup", flags["hup"] + 1))
signal.signal(signal.SIGTERM, lambda *a: flags.__setitem__("term", True))
stores = parse(conf_path); gen = 0
open(f"{rt}/ferryd.pid", "w").write(str(os.getpid()))
publish(0, "ok", "started")
notify("READY=1", "STATUS=stores: " + ", ".join(stores))
ready_at = time.monotonic(); handled = 0
while True:
    if flags["term"]:
        notify("STOPPING=1"); db.close(); sys.exit(0)
    if flags["hup"] > handled:
        handled = flags["hup"]; gen += 1
        notify("RELOADING=1", f"MONOTONIC_USEC={int(time.clock_gettime(time.CLOCK_MONOTONIC)*1e6)}")
        try:
            stores = parse(conf_path); publish(gen, "ok", "reloaded"); journal("reloaded", MESSAGE_ID="1c2b8dda70ee45fcba1aece27793ba66")
        except Exception as e:
            journal(f"reload refused: {e}", 3, MESSAGE_ID="981d499fa62c454795b0cc04f9653d4b"); publish(gen, "error", str(e))
        notify("READY=1", "STATUS=stores: " + ", ".join(stores))
    for name, s in stores.items(): sync(name, s)
    notify("WATCHDOG=1")
    time.sleep(0.5)
