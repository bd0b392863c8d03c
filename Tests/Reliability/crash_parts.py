"""What Ferry's two crash loops share (crash_loop.py: `ferry sync` killed while the servers
change; push_crash_loop.py: ferryd killed while programs also write the replica).

  write_config   the replica's configuration: a Parse store and a CardDAV store, each loop
                 adding its own keys
  LoggedRuns     processes whose output is appended to one log, each run found again by the
                 label and offset it started at
  vCard text     vcard, unfold, prop_name, card_props, remote_card
  BackgroundSteps  the mutators' thread: step() until stopped, a failed step reported and the
                 loop going on
  now            seconds since the script started, the clock of the loops' logs

The servers are reliability_servers.py's; the checks, replica_check.py's.
"""

import os
import subprocess
import threading
import time

from reliability_servers import APP_ID, MASTER_KEY, START, log


def now():
    """Seconds since the script started: the clock of writes.jsonl, remote.jsonl and the
    stamps on ferryd.log's lines."""
    return time.monotonic() - START


def write_config(workdir, parse, dav, page_size, batch, written_by, quotes="", contacts="", header=""):
    """ferry.conf in `workdir` with stores `quotes` (Parse, master key from a 0600 file) and
    `contacts` (CardDAV); `quotes` and `contacts` are extra lines of each store's section."""
    secret = os.path.join(workdir, "parse-master-key")
    with open(secret, "w") as f:
        f.write(MASTER_KEY + "\n")
    os.chmod(secret, 0o600)
    conf = os.path.join(workdir, "ferry.conf")
    with open(conf, "w") as f:
        f.write("""# Written by Tests/Reliability/{by}
{header}[ferry]
database = {db}
log-level = info
max-concurrent-passes = 2

[store quotes]
kind = parse
url = {parse}
class = Quote
application-id = {app}
master-key = file:{secret}
page-size = {page}
reconcile-interval = 1s
column.author = text $.author
{quotes}
[store contacts]
kind = carddav
url = {dav}
multiget-batch = {batch}
column.email = text $.EMAIL
{contacts}""".format(by=written_by, header=header, db=os.path.join(workdir, "ferry.db"), parse=parse.url,
                       app=APP_ID, secret=secret, page=page_size, dav=dav.url, batch=batch,
                       quotes=quotes, contacts=contacts))
    return conf


class LoggedRuns:
    """Commands run one after another with their output appended to `log_path`, each under a
    `=== label` line; a run's output is read back from the offset it started at."""

    def __init__(self, log_path):
        self.log_path = log_path
        self.log = open(log_path, "ab")

    def start(self, label, argv, env=None):
        """The process, and where its output starts in the log."""
        self.log.write(("\n=== %s\n" % label).encode())
        self.log.flush()
        offset = self.log.tell()
        p = subprocess.Popen(argv, stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL, env=env)
        return p, offset

    def output(self, offset):
        with open(self.log_path, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")

    def run(self, label, argv, timeout=600, env=None):
        """(exit code or "timeout", seconds, output) of one run to its end."""
        p, offset = self.start(label, argv, env)
        t = time.monotonic()
        try:
            code = p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            code = "timeout"
        return code, time.monotonic() - t, self.output(offset)


# ---------------------------------------------------------------------------------------
# vCard text
# ---------------------------------------------------------------------------------------

def vcard(uid, name, rev):
    lines = ["BEGIN:VCARD", "VERSION:3.0", "UID:%s" % uid, "FN:%s" % name, "N:;%s;;;" % name,
             "EMAIL;TYPE=work:%s@example.com" % uid, "NOTE:revision %d" % rev, "END:VCARD"]
    return "\r\n".join(lines) + "\r\n"


def remote_card(uid, fn, note):
    lines = ["BEGIN:VCARD", "VERSION:3.0", "UID:%s" % uid, "FN:%s" % fn, "N:;%s;;;" % fn,
             "NOTE:%s" % note, "END:VCARD"]
    return "\r\n".join(lines) + "\r\n"


def unfold(text):
    """Content lines, unfolded, without line ends or empty lines."""
    out = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if line[:1] in (" ", "\t") and out:
            out[-1] += line[1:]
        elif line:
            out.append(line)
    return out


def prop_name(line):
    return line.split(":", 1)[0].split(";", 1)[0].split(".")[-1].upper()


def card_props(text):
    """{property name: first value} of a vCard."""
    props = {}
    for line in unfold(text):
        if ":" in line:
            props.setdefault(prop_name(line), line.split(":", 1)[1])
    return props


# ---------------------------------------------------------------------------------------
# The mutators' thread
# ---------------------------------------------------------------------------------------

class BackgroundSteps:
    """A subclass's step() run on a thread of its own until stop(), `pause` seconds (a random
    span from `self.rng`) apart; a step that raises is reported and the loop goes on."""

    pause = (0.05, 0.4)

    def start(self):
        self.running = True
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def failed(self, error):
        log("mutator step failed: %r" % (error,))

    def _loop(self):
        while self.running:
            try:
                self.step()
            except Exception as e:  # a failed step is reported, and the loop goes on
                self.failed(e)
            time.sleep(self.rng.uniform(*self.pause))

    def stop(self):
        self.running = False
        if getattr(self, "thread", None):
            self.thread.join()
