#!/usr/bin/python3
# NOT ferry: a stand-in for `ferry reload --pid N`, used only by `systemd-test.sh --self-test`.
import os, sys, time, signal
rt = os.environ["RUNTIME_DIRECTORY"]; pid = int(sys.argv[sys.argv.index("--pid") + 1])
def state():
    try: return dict(l.split("=", 1) for l in open(f"{rt}/reload-state").read().splitlines())
    except OSError: return {}
s = state(); base = int(s["generation"]) if s.get("pid") == str(pid) else -1
os.kill(pid, signal.SIGHUP)
for _ in range(300):
    s = state()
    if s.get("pid") == str(pid) and int(s["generation"]) > base:
        print(s.get("message")); sys.exit(0 if s["result"] == "ok" else 1)
    time.sleep(0.1)
sys.exit(1)
