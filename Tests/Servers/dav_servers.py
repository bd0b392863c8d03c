#!/usr/bin/env python3
"""Start a real CardDAV/CalDAV server on 127.0.0.1 for Ferry's tests: Radicale, Xandikos,
DAViCal, sabre/dav 1.8 or SOGo 5.8.

    dav_servers.py --server radicale|xandikos|davical|sabredav|sogo [--cards N] [--events M] [--auth USER:PASSWORD]

Creates, in a fresh temporary directory, one address book and one calendar for one user, loaded
with N generated vCards and M generated VEVENTs, and prints, once the server accepts connections:

    ADDRESSBOOK /path/of/addressbook/
    CALENDAR /path/of/calendar/
    PRINCIPAL /path/of/the/user's/principal/
    PORT n

(PORT last: a reader may stop at it.) It serves until SIGTERM/SIGINT, or until the process that
started it is gone, then stops the server (and PostgreSQL for DAViCal and SOGo, memcached for
SOGo) and removes the directory; it does the same when starting fails. Every server process also
gets SIGTERM (PostgreSQL SIGINT, its fast shutdown; sogod SIGKILL, see below) from the kernel if
this script dies without cleaning up.

radicale  (pip: $FERRY_VENV/bin or PATH) files written straight into its storage before it starts
          (a PUT per card is slow: it rescans the collection). Without --auth: no authentication;
          with it, htpasswd (plain) and owner_only rights. /USER/contacts/, /USER/calendar/,
          principal /USER/.
xandikos  (pip) its default layout, files written and committed to each collection's git
          repository in one commit. No authentication (the Authorization header is ignored).
          /user/contacts/addressbook/, /user/calendars/calendar/, principal /user/.
davical   (apt: davical postgresql; DAViCal 1.1 on PHP, PostgreSQL 15) a private PostgreSQL
          cluster in the directory (initdb and postgres run as the postgres user when we are
          root), listening only on a unix socket there; the database made by DAViCal's own
          dba/create-database.sh (admin password "admin"), once: the cluster it leaves is kept
          as a template in the temporary directory (ferry-pg-davical-UID-KEY, the key naming
          the files that made it) and copied for every later server; the user (--auth, default
          ferry:secret) with DAViCal's default home collections (calendar, .in, .out, addresses),
          made and loaded by php/davical_load.php through DAViCal's own code (what a PUT runs),
          in one PHP process: about 2 ms a card, 10 ms an event, against 20 ms for a PUT over
          HTTP. Served by `php -S` with php/davical_router.php, which maps /caldav.php/... the way
          Apache's PATH_INFO does and hands /.well-known/* to DAViCal, which answers 301 to
          /caldav.php/. Its configuration is a file in the directory, not in /etc/davical (see
          the router). HTTP Basic. /caldav.php/USER/addresses/, /caldav.php/USER/calendar/,
          principal /caldav.php/USER/.
sabredav  (apt: php-sabre-dav php-sqlite3; sabre/dav 1.8) php/sabredav_server.php under `php -S`
          on the package's PDO SQLite backends, the schema from the package's
          examples/sql/sqlite.*.sql; the user (--auth, default ferry:secret) in its users and
          principals tables, the collections and items made by php/sabredav_load.php through the
          backends' own create functions in one transaction. HTTP Basic (checked against the
          users table's digest hash). No sync-collection (sabre/dav has it from 2.0), no
          /.well-known answer. /addressbooks/USER/contacts/, /calendars/USER/calendar/,
          principal /principals/USER/.
sogo      (apt: sogo memcached postgresql; SOGo 5.8 on GNUstep/SOPE) sogod itself, no Apache in
          front, run as the package's sogo user when we are root (sogod refuses root, and
          /etc/sogo/sogo.conf, which it always reads, is root:sogo 0640: as another user it
          cannot start). A private
          PostgreSQL cluster as for DAViCal (its template ferry-pg-sogo-UID-KEY), with a sogo
          role and database holding the SQL user
          source (table sogo_users: c_uid, c_name, c_password plain, c_cn, mail; the user from
          --auth, default ferry:secret; SOGo refuses empty passwords); SOGo makes its own tables
          on first use. memcached on a unix socket in the directory, as the sogo user. sogod's
          configuration is sogo/defaults/sogod.plist in the directory (the "sogod" defaults
          domain, which wins over /etc/sogo/sogo.conf), found through GNUSTEP_CONFIG_FILE naming
          sogo/GNUstep.conf there: GNUstep takes the user's home from the password database, not
          from $HOME. Database URLs without a host, so libpq takes PGHOST (our socket). One
          process (WOUseWatchDog NO), one request at a time: the watchdog's forked workers
          (setsid, no death signal) outlive a killed watchdog, and the watchdog waits for them
          forever when they ignore its SIGTERM. sogod acts on SIGTERM only when its run loop next
          wakes, so we connect once after sending it, and the kernel sends it SIGKILL, not
          SIGTERM, if we die. The personal address book and calendar come into being on the
          first PROPFIND of each (the user's, HTTP Basic); the cards and events are then PUT one
          request each, a connection each (sogod closes every connection after one answer;
          25 cards and 5 events in about a second). /.well-known/* is not handled: sogod answers
          it (and any path outside /SOGo/dav/) with 200 and its HTML login page.
          /SOGo/dav/USER/Contacts/personal/, /SOGo/dav/USER/Calendar/personal/, principal
          /SOGo/dav/USER/.

Both PHP servers are one `php -S` process, answering one request at a time (its
PHP_CLI_SERVER_WORKERS would fork workers that outlive their parent when it is killed); their
request log is a file in the directory (sogo.log for SOGo), shown when starting fails.
Behavioural differences between the five that matter to a sync client: DAV-SERVERS.md.

Card i has UID ferry-card-i, FN "Person i", EMAIL person-i@example.com (a second EMAIL for
every 7th card), TEL +1-555-i, ORG "Org i;Team"; every 5th card has a long folded NOTE.
Event j has UID ferry-event-j, SUMMARY "Event j", DTSTART/DTEND on 2024-01-(j%28+1), every 3rd an RRULE.
Their names are card-i.vcf and event-j.ics on every server.
"""
import argparse
import ctypes
import hashlib
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

VENV_BIN = os.path.join(os.environ.get("FERRY_VENV", os.path.expanduser("~/.cache/ferry/venv")), "bin")
HERE = os.path.dirname(os.path.abspath(__file__))
PHP_DIR = os.path.join(HERE, "php")
PG_BIN = "/usr/lib/postgresql/15/bin"
DAVICAL = "/usr/share/davical"
SABRE_SQL = "/usr/share/doc/php-sabre-dav/examples/sql"
SABRE_REALM = "SabreDAV"
SOGOD = "/usr/sbin/sogod"
MEMCACHED = "/usr/bin/memcached"
GNUSTEP_CONF = "/etc/GNUstep/GNUstep.conf"


def tool(name):
    path = os.path.join(VENV_BIN, name)
    if os.path.exists(path):
        return path
    found = shutil.which(name)
    if not found:
        sys.stderr.write(f"{name} not installed (pip install {name} into {VENV_BIN})\n")
        sys.exit(2)
    return found


def require_files(server, packages, *paths):
    missing = [path for path in paths if not os.path.exists(path)]
    if missing:
        sys.stderr.write(f"{server}: missing {', '.join(missing)} (apt-get install {packages})\n")
        sys.exit(2)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fold(line):
    """RFC 6350 folding at 75 octets (ASCII content here)."""
    out = [line[:75]]
    rest = line[75:]
    while rest:
        out.append(" " + rest[:74])
        rest = rest[74:]
    return "\r\n".join(out)


def vcard(i):
    lines = ["BEGIN:VCARD", "VERSION:3.0", f"UID:ferry-card-{i}", f"FN:Person {i}", f"N:{i};Person;;;",
             f"EMAIL;TYPE=work:person-{i}@example.com"]
    if i % 7 == 0:
        lines.append(f"item1.EMAIL;TYPE=home:home-{i}@example.org")
    lines += [f"TEL;TYPE=cell:+1-555-{i}", f"ORG:Org {i};Team"]
    if i % 5 == 0:
        lines.append(fold("NOTE:" + ("a long note for card %d, " % i) * 8))
    lines.append("END:VCARD")
    return "\r\n".join(lines) + "\r\n"


def vevent(j):
    day = j % 28 + 1
    lines = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//Ferry tests//EN", "BEGIN:VEVENT",
             f"UID:ferry-event-{j}", "DTSTAMP:20240101T000000Z", f"SUMMARY:Event {j}",
             f"DTSTART:202401{day:02d}T100000Z", f"DTEND:202401{day:02d}T110000Z"]
    if j % 3 == 0:
        lines.append("RRULE:FREQ=WEEKLY;COUNT=4")
    lines += ["END:VEVENT", "END:VCALENDAR"]
    return "\r\n".join(lines) + "\r\n"


def write_items(directory, cards, events, kind):
    os.makedirs(directory, exist_ok=True)
    if kind == "card":
        for i in range(cards):
            with open(os.path.join(directory, f"card-{i}.vcf"), "w", newline="") as f:
                f.write(vcard(i))
    else:
        for j in range(events):
            with open(os.path.join(directory, f"event-{j}.ics"), "w", newline="") as f:
                f.write(vevent(j))


def git_commit(directory):
    env = dict(os.environ, GIT_AUTHOR_NAME="ferry", GIT_AUTHOR_EMAIL="ferry@localhost",
               GIT_COMMITTER_NAME="ferry", GIT_COMMITTER_EMAIL="ferry@localhost")
    subprocess.run(["git", "add", "-A", "."], cwd=directory, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "-m", "load", "--allow-empty"], cwd=directory, check=True, env=env)


def child_setup(death_signal=signal.SIGTERM, user=None):
    """A preexec_fn: become `user` (a pwd entry) if given, and have the kernel send
    `death_signal` to the child when this script dies (SIGKILL included), so no server outlives it."""
    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getpid()

    def setup():
        if user is not None:
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
        libc.prctl(1, int(death_signal))  # PR_SET_PDEATHSIG
        if os.getppid() != parent:
            os.kill(os.getpid(), death_signal)
    return setup


def stopper(process, sig=signal.SIGTERM, timeout=5, after_signal=None):
    """A cleanup that stops `process` with `sig` (then calls `after_signal`, if given), and
    kills it after `timeout` seconds."""
    def stop():
        if process.poll() is None:
            process.send_signal(sig)
            if after_signal:
                after_signal()
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    return stop


def show_log(path, lines=40):
    try:
        with open(path, errors="replace") as f:
            tail = f.readlines()[-lines:]
    except OSError:
        return
    sys.stderr.write(f"--- last lines of {os.path.basename(path)}:\n" + "".join(tail))


def listening_inodes(port):
    """The inodes of the sockets listening on 127.0.0.1:port (or any address), from /proc/net."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    local, state, inode = fields[1], fields[3], fields[9]
                    if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                        inodes.add(inode)
        except OSError:
            continue
    return inodes


def process_tree(pid):
    """pid and every process below it (php -S and SOGo may listen from a child)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(children.get(current, []))
    return tree


def owns_listener(port, process):
    """Whether the socket listening on `port` is held by `process` or a child of it.

    The port was free when free_port() asked, but another test's server (the suites run in
    several processes at once) can bind it before ours does: ours then fails to bind while a
    connection to the port succeeds and the tests talk to the wrong server. None when /proc
    does not say (another user's process): the connection alone has to do."""
    inodes = listening_inodes(port)
    if not inodes:
        return None
    for pid in process_tree(process.pid):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if target.startswith("socket:[") and target[8:-1] in inodes:
                    return True
        except PermissionError:
            return None
        except OSError:
            continue
    return False


class PortTaken(Exception):
    """Another process listens on the port our server was to bind: start it on another one."""


def on_port(command, old, new):
    """`command` with its listening port `old` replaced by `new` (as `-p N` or `HOST:N`)."""
    return [str(new) if arg == str(old) else
            arg[:-len(str(old))] + str(new) if arg.endswith(f":{old}") else arg for arg in command]


def wait_listening(port, process, timeout=60, log=None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if process.poll() is not None:
            if listening_inodes(port):
                raise PortTaken(port)  # it could not bind: another process listens there
            sys.stderr.write("server exited early\n")
            if log:
                show_log(log)
            sys.exit(1)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                pass
        except OSError:
            time.sleep(0.1)
            continue
        owner = owns_listener(port, process)
        if owner is False:
            # Ours may still be binding (and about to fail): say so only when it gave up.
            if process.poll() is None and time.time() + 1 < deadline:
                time.sleep(0.2)
                continue
            process.terminate()
            process.wait()
            raise PortTaken(port)
        return
    sys.stderr.write("server did not start listening\n")
    if log:
        show_log(log)
    process.terminate()
    sys.exit(1)


def run_step(what, command, log=None, **kwargs):
    """Runs a setup command, its output captured; on failure says what failed and exits."""
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kwargs)
    if result.returncode != 0:
        sys.stderr.write(f"{what} failed (exit {result.returncode}):\n{result.stdout.decode(errors='replace')}\n")
        if log:
            show_log(log)
        sys.exit(1)
    return result.stdout.decode(errors="replace")


def user_and_password(args):
    user, _, password = (args.auth or "ferry:secret").partition(":")
    return user, password


class Launch:
    """What a start_* function hands back: the server's command and where things are."""

    def __init__(self, command, book, cal, principal, env=None, log=None, user=None, ready=None,
                 death_signal=signal.SIGTERM, after_terminate=None):
        self.command, self.book, self.cal, self.principal = command, book, cal, principal
        self.env, self.log = env, log
        self.user = user  # a pwd entry to run the server as (None: as we are)
        self.ready = ready  # called with the port once the server listens, before the paths are printed
        self.death_signal = death_signal  # what the kernel sends the server if this script dies
        self.after_terminate = after_terminate  # called with the port after the server got SIGTERM


def start_radicale(root, port, args, cleanups):
    storage = os.path.join(root, "collections")
    user_dir = os.path.join(storage, "collection-root", "ferry")
    book = os.path.join(user_dir, "contacts")
    cal = os.path.join(user_dir, "calendar")
    write_items(book, args.cards, 0, "card")
    write_items(cal, 0, args.events, "event")
    with open(os.path.join(book, ".Radicale.props"), "w") as f:
        json.dump({"tag": "VADDRESSBOOK", "D:displayname": "contacts"}, f)
    with open(os.path.join(cal, ".Radicale.props"), "w") as f:
        json.dump({"tag": "VCALENDAR", "C:supported-calendar-component-set": "VEVENT,VTODO", "D:displayname": "calendar"}, f)
    command = [tool("radicale"), "--server-hosts", f"127.0.0.1:{port}",
               "--storage-filesystem-folder", storage, "--logging-level", "warning"]
    user = "ferry"
    if args.auth:
        user, password = args.auth.split(":", 1)
        htpasswd = os.path.join(root, "htpasswd")
        with open(htpasswd, "w") as f:
            f.write(f"{user}:{password}\n")
        command += ["--auth-type", "htpasswd", "--auth-htpasswd-filename", htpasswd,
                    "--auth-htpasswd-encryption", "plain", "--rights-type", "owner_only"]
        # owner_only needs the collections to live under the user's own principal.
        if user != "ferry":
            os.rename(user_dir, os.path.join(storage, "collection-root", user))
    else:
        command += ["--auth-type", "none", "--rights-type", "authenticated"]
    return Launch(command, f"/{user}/contacts/", f"/{user}/calendar/", f"/{user}/")


def start_xandikos(root, port, args, cleanups):
    # Let Xandikos create its default layout once, then load the files and commit once.
    # On a port of its own: the real server's port stays unused between the two, where another
    # test's server starting at that moment could take it.
    init_port = free_port()
    init = subprocess.Popen([tool("xandikos"), "--defaults", "-d", root, "-l", "127.0.0.1", "-p", str(init_port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=child_setup())
    book = os.path.join(root, "user", "contacts", "addressbook")
    cal = os.path.join(root, "user", "calendars", "calendar")
    try:
        wait_listening(init_port, init)
        # Listening is not the end of its start-up: on a loaded machine the default
        # collections' git repositories came a moment later, after the kill.
        deadline = time.monotonic() + 60
        while not all(os.path.exists(os.path.join(d, ".git")) for d in (book, cal)):
            if time.monotonic() > deadline or init.poll() is not None:
                raise SystemExit("xandikos --defaults made no default collections in %s" % root)
            time.sleep(0.05)
    finally:
        init.kill()
        init.wait()
    write_items(book, args.cards, 0, "card")
    write_items(cal, 0, args.events, "event")
    git_commit(book)
    git_commit(cal)
    # --collections N: N - 1 more of each, as Xandikos keeps one: a git repository whose
    # .xandikos names its type and display name.
    for k in range(1, args.collections):
        for home, name, kind, label in (("contacts", f"addressbook-{k}", "addressbook", f"Address book {k}"),
                                        ("calendars", f"calendar-{k}", "calendar", f"Calendar {k}")):
            directory = os.path.join(root, "user", home, name)
            os.makedirs(directory)
            subprocess.run(["git", "init", "-q", directory], check=True)
            with open(os.path.join(directory, ".xandikos"), "w") as f:
                f.write(f"[DEFAULT]\ntype = {kind}\ndisplayname = {label}\n")
            write_items(directory, args.cards, args.events, "card" if kind == "addressbook" else "event")
            git_commit(directory)
    command = [tool("xandikos"), "-d", root, "-l", "127.0.0.1", "-p", str(port)]
    return Launch(command, "/user/contacts/addressbook/", "/user/calendars/calendar/", "/user/")


def php_server_env(extra):
    env = dict(os.environ, **extra)
    env.pop("PHP_CLI_SERVER_WORKERS", None)
    return env


# A template cluster's key names this number, the user and password it holds, and the files
# that made it (PostgreSQL's and DAViCal's): change the number when the code that makes one
# changes what it holds.
PG_TEMPLATE_FORMAT = 1


def postgres_running(pgdir, data, log, user):
    """A postmaster on `data`, on a unix socket in `pgdir` and no TCP port, once it answers."""
    with open(log, "a") as out:
        postmaster = subprocess.Popen(
            [os.path.join(PG_BIN, "postgres"), "-D", data, "-k", pgdir, "-c", "listen_addresses=",
             "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
            stdout=out, stderr=out, cwd=pgdir, preexec_fn=child_setup(signal.SIGINT, user=user))
    deadline = time.time() + 30
    while subprocess.run([os.path.join(PG_BIN, "pg_isready"), "-q", "-h", pgdir, "-U", "postgres"]).returncode != 0:
        if postmaster.poll() is not None or time.time() > deadline:
            postmaster.kill()
            postmaster.wait()
            sys.stderr.write("PostgreSQL did not start\n")
            show_log(log)
            sys.exit(1)
        time.sleep(0.05)
    return postmaster


def postgres_directory(parent, user):
    """parent/pg, the cluster's directory (its socket's too), owned by `user` when given."""
    pgdir = os.path.join(parent, "pg")
    os.makedirs(pgdir)
    if user:
        os.chmod(parent, 0o711)
        os.chown(pgdir, user.pw_uid, user.pw_gid)
    return pgdir


def empty_log(path, user):
    with open(path, "w"):
        pass
    if user:
        os.chown(path, user.pw_uid, user.pw_gid)


def file_sizes(directory):
    """Every file under `directory` with its size, one line each, in name order."""
    lines = []
    for parent, _, names in os.walk(directory):
        for entry in names:
            path = os.path.join(parent, entry)
            lines.append(f"{os.path.relpath(path, directory)} {os.lstat(path).st_size}")
    return "\n".join(sorted(lines)) + "\n"


def postgres_template(name, key_parts, prepare, user):
    """The data directory of a cluster made by initdb and `prepare(pgdir)`, kept in the temporary
    directory under a key of `name`, `key_parts` and the files that made it, and made once:
    later servers copy it (0.15 s) instead of running initdb and their database's scripts again
    (about 3 s of CPU for DAViCal, 1 s for SOGo, dozens of times in a test run). Several
    processes may make it at once; the first to rename its copy into place wins. A directory
    under that name that is not ours, or not only ours to write, is an error; one whose files
    are not those it was made with (a cleaner of the temporary directory takes files unused
    for days) is made again."""
    digest = hashlib.sha256(f"{name} {PG_TEMPLATE_FORMAT} {key_parts}".encode())
    sources = [os.path.join(PG_BIN, "postgres")]
    if name == "davical":
        dba = os.path.join(DAVICAL, "dba")
        sources += [os.path.join(dba, entry) for entry in sorted(os.listdir(dba))]
    for path in sources:
        status = os.stat(path)
        digest.update(f"{path} {status.st_size} {status.st_mtime_ns}".encode())
    kept = os.path.join(tempfile.gettempdir(), f"ferry-pg-{name}-{os.geteuid()}-{digest.hexdigest()[:16]}")
    data = os.path.join(kept, "pg", "data")
    manifest = os.path.join(kept, "files")
    try:
        status = os.lstat(kept)
        if os.path.islink(kept) or status.st_uid != os.geteuid() or status.st_mode & 0o022:
            sys.stderr.write(f"{kept} is not this user's alone (a link, another owner, or writable by others): "
                             "remove it, it would be copied into every server\n")
            sys.exit(1)
        with open(manifest) as f:
            if f.read() == file_sizes(data):
                return data
        shutil.rmtree(kept, ignore_errors=True)
    except FileNotFoundError:
        shutil.rmtree(kept, ignore_errors=True)
    building = tempfile.mkdtemp(prefix=f"ferry-pg-{name}-making-")
    try:
        pgdir = postgres_directory(building, user)
        log = os.path.join(building, "postgresql.log")
        empty_log(log, user)
        run_step("initdb", [os.path.join(PG_BIN, "initdb"), "-D", os.path.join(pgdir, "data"), "-A", "trust",
                            "-U", "postgres", "--no-sync", "-E", "UTF8", "--no-locale"],
                 preexec_fn=child_setup(user=user), cwd=pgdir)
        postmaster = postgres_running(pgdir, os.path.join(pgdir, "data"), log, user)
        try:
            prepare(pgdir)
        finally:
            stopper(postmaster, signal.SIGINT, timeout=30)()  # fast shutdown: a clean checkpoint
        with open(os.path.join(building, "files"), "w") as f:
            f.write(file_sizes(os.path.join(pgdir, "data")))
        try:
            os.rename(building, kept)
            building = None
        except OSError:
            pass  # another process's copy is in place
    finally:
        if building:
            shutil.rmtree(building, ignore_errors=True)
    return data


def start_postgres(root, cleanups, name, prepare, key_parts=""):
    """A private PostgreSQL 15 cluster in root/pg, on a unix socket there and no TCP port, copied
    from the template `name` (made by `prepare`); returns the socket directory. Run as the
    postgres user when we are root (initdb refuses root)."""
    import pwd
    require_files("PostgreSQL 15", "postgresql", os.path.join(PG_BIN, "initdb"))
    user = pwd.getpwnam("postgres") if os.geteuid() == 0 else None
    pgdir = postgres_directory(root, user)
    data = os.path.join(pgdir, "data")
    log = os.path.join(root, "postgresql.log")
    template = postgres_template(name, key_parts, prepare, user)
    run_step("copying the PostgreSQL template", ["cp", "-a", template, data])
    empty_log(log, user)
    postmaster = postgres_running(pgdir, data, log, user)
    cleanups.append(stopper(postmaster, signal.SIGINT))  # SIGINT: PostgreSQL's fast shutdown
    return pgdir


def start_davical(root, port, args, cleanups):
    require_files("davical", "davical", os.path.join(DAVICAL, "htdocs", "caldav.php"))
    user, password = user_and_password(args)

    def create_database(pgdir):
        env = dict(os.environ, PGHOST=pgdir, PGUSER="postgres", PATH=PG_BIN + os.pathsep + os.environ.get("PATH", ""),
                   PGOPTIONS="--client-min-messages=warning")
        out = run_step("DAViCal's create-database.sh",
                       ["sh", os.path.join(DAVICAL, "dba", "create-database.sh"), "davical", "admin"], env=env, cwd=pgdir)
        if "ERROR" in out or "Unable" in out:
            sys.stderr.write(f"DAViCal's create-database.sh:\n{out}\n")
            sys.exit(1)
    pgdir = start_postgres(root, cleanups, "davical", prepare=create_database)
    config = os.path.join(root, "davical-conf.php")
    with open(config, "w") as f:
        f.write("<?php\n// Read by DAViCal through davical_router.php's SERVER_NAME.\n"
                f"$c->db_connect[] = array('dsn' => 'pgsql:host={pgdir};dbname=davical', 'dbuser' => 'davical_app');\n"
                "$c->domain_name = '127.0.0.1';\n"
                "$_SERVER['SERVER_NAME'] = '127.0.0.1';\n"
                "$c->admin_email = 'admin@example.com';\n")
    items = {f"/{user}/addresses/card-{i}.vcf": vcard(i) for i in range(args.cards)}
    items.update({f"/{user}/calendar/event-{j}.ics": vevent(j) for j in range(args.events)})
    spec = {"username": user, "password": password, "fullname": "Ferry Tests", "email": f"{user}@example.com",
            "items": items}
    run_step("php/davical_load.php", ["php", os.path.join(PHP_DIR, "davical_load.php")],
             input=json.dumps(spec).encode(), env=dict(os.environ, FERRY_DAVICAL_CONFIG=config), cwd=root)
    command = ["php", "-S", f"127.0.0.1:{port}", "-t", os.path.join(DAVICAL, "htdocs"),
               os.path.join(PHP_DIR, "davical_router.php")]
    return Launch(command, f"/caldav.php/{user}/addresses/", f"/caldav.php/{user}/calendar/", f"/caldav.php/{user}/",
                  env=php_server_env({"FERRY_DAVICAL_CONFIG": config}), log=os.path.join(root, "php.log"))


def start_sabredav(root, port, args, cleanups):
    require_files("sabredav", "php-sabre-dav php-sqlite3", "/usr/share/php/Sabre/autoload.php",
                  *(os.path.join(SABRE_SQL, f"sqlite.{name}.sql") for name in ("principals", "users", "addressbooks", "calendars", "locks")))
    user, password = user_and_password(args)
    db = os.path.join(root, "sabredav.sqlite")
    with sqlite3.connect(db) as connection:
        for name in ("principals", "users", "addressbooks", "calendars", "locks"):
            with open(os.path.join(SABRE_SQL, f"sqlite.{name}.sql")) as f:
                connection.executescript(f.read())
        digest = hashlib.md5(f"{user}:{SABRE_REALM}:{password}".encode()).hexdigest()
        connection.execute("INSERT INTO users (username, digesta1) VALUES (?, ?)", (user, digest))
        connection.execute("INSERT INTO principals (uri, email, displayname) VALUES (?, ?, ?)",
                           (f"principals/{user}", f"{user}@example.com", "Ferry Tests"))
        for proxy in ("calendar-proxy-read", "calendar-proxy-write"):
            connection.execute("INSERT INTO principals (uri) VALUES (?)", (f"principals/{user}/{proxy}",))
    connection.close()
    spec = {"principal": f"principals/{user}",
            "addressbook": {"uri": "contacts", "displayname": "contacts"},
            "calendar": {"uri": "calendar", "displayname": "calendar", "color": "#3a87adff", "components": ["VEVENT", "VTODO"]},
            "cards": {f"card-{i}.vcf": vcard(i) for i in range(args.cards)},
            "events": {f"event-{j}.ics": vevent(j) for j in range(args.events)}}
    run_step("php/sabredav_load.php", ["php", os.path.join(PHP_DIR, "sabredav_load.php"), db],
             input=json.dumps(spec).encode(), cwd=root)
    command = ["php", "-S", f"127.0.0.1:{port}", "-t", root, os.path.join(PHP_DIR, "sabredav_server.php")]
    return Launch(command, f"/addressbooks/{user}/contacts/", f"/calendars/{user}/calendar/", f"/principals/{user}/",
                  env=php_server_env({"FERRY_SABREDAV_DB": db}), log=os.path.join(root, "php.log"))


def sogo_gnustep_conf(home):
    """A copy of the system's GNUstep.conf whose user defaults (and other per-user directories)
    are in `home`: GNUstep takes the user's home from the password database, not from $HOME, so
    GNUSTEP_CONFIG_FILE naming this file is what keeps sogod off ~sogo (/run/sogo)."""
    lines = []
    with open(GNUSTEP_CONF) as f:
        for line in f.read().splitlines():
            key, eq, value = line.partition("=")
            if eq and key.startswith("GNUSTEP_USER_DIR") and not value.startswith("/"):
                line = f"{key}={os.path.join(home, value)}"
            elif key == "GNUSTEP_USER_DEFAULTS_DIR":
                continue
            lines.append(line)
    lines.append(f"GNUSTEP_USER_DEFAULTS_DIR={os.path.join(home, 'defaults')}")
    path = os.path.join(home, "GNUstep.conf")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def start_sogo(root, port, args, cleanups):
    import base64
    import http.client
    import plistlib
    import pwd
    require_files("sogo", "sogo memcached", SOGOD, MEMCACHED, GNUSTEP_CONF)
    user, password = user_and_password(args)
    # sogod refuses root ("Don't run SOGo as root!"); the package's system user owns nothing of
    # ours but can read /etc/sogo/sogo.conf (root:sogo 0640), which sogod always reads.
    run_as = pwd.getpwnam("sogo") if os.geteuid() == 0 else None

    # The database: SOGo makes its own tables (profiles, folder info, sessions, and three tables
    # per collection) on first use; we make the role, the database and the SQL user source.
    def create_database(pgdir):
        env = dict(os.environ, PGHOST=pgdir, PGOPTIONS="--client-min-messages=warning")
        psql = [os.path.join(PG_BIN, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1"]
        run_step("creating SOGo's database", psql + ["-U", "postgres", "-d", "postgres",
                                                      "-c", "CREATE ROLE sogo LOGIN", "-c", "CREATE DATABASE sogo OWNER sogo"],
                 env=env, cwd=pgdir)
        users = ("CREATE TABLE sogo_users (c_uid varchar(255) PRIMARY KEY, c_name varchar(255), "
                 "c_password varchar(255), c_cn varchar(255), mail varchar(255));\n"
                 "INSERT INTO sogo_users VALUES (:'uid', :'uid', :'password', 'Ferry Tests', :'mail');\n")
        run_step("SOGo's user table", psql + ["-U", "sogo", "-d", "sogo", "-v", f"uid={user}", "-v", f"password={password}",
                                              "-v", f"mail={user}@example.com"],
                 input=users.encode(), env=env, cwd=pgdir)
    pgdir = start_postgres(root, cleanups, "sogo", key_parts=f"{user}:{password}", prepare=create_database)
    home = os.path.join(root, "sogo")
    os.makedirs(os.path.join(home, "defaults"))
    if run_as:
        for directory in (home, os.path.join(home, "defaults")):
            os.chown(directory, run_as.pw_uid, run_as.pw_gid)
    log = os.path.join(root, "sogo.log")

    # memcached on a unix socket in the directory (SOGo caches users, sessions and ACLs there).
    memcached_socket = os.path.join(home, "memcached.sock")
    memcached_log = os.path.join(root, "memcached.log")
    with open(memcached_log, "w") as out:
        memcached = subprocess.Popen([MEMCACHED, "-s", memcached_socket, "-a", "0700", "-m", "16", "-t", "1"],
                                     stdout=out, stderr=out, cwd=home, preexec_fn=child_setup(user=run_as))

    cleanups.append(stopper(memcached))
    deadline = time.time() + 10
    while not os.path.exists(memcached_socket):
        if memcached.poll() is not None or time.time() > deadline:
            sys.stderr.write("memcached did not start\n")
            show_log(memcached_log)
            sys.exit(1)
        time.sleep(0.02)

    # sogod's own defaults (the "sogod" domain), which win over /etc/sogo/sogo.conf; the host-less
    # database URLs make libpq take PGHOST, the socket directory of our PostgreSQL.
    db = "postgresql://sogo@/sogo"
    defaults = {
        "SOGoProfileURL": f"{db}/sogo_user_profile",
        "OCSFolderInfoURL": f"{db}/sogo_folder_info",
        "OCSSessionsFolderURL": f"{db}/sogo_sessions_folder",
        "OCSEMailAlarmsFolderURL": f"{db}/sogo_alarms_folder",
        "SOGoUserSources": [{"type": "sql", "id": "users", "viewURL": f"{db}/sogo_users", "canAuthenticate": "YES",
                             "isAddressBook": "NO", "userPasswordAlgorithm": "plain"}],
        "SOGoMemcachedHost": memcached_socket,
        "SOGoTimeZone": "UTC",
        "SOGoMailDomain": "example.com",
        "SOGoAppointmentSendEMailNotifications": "NO",
        "SOGoEnableEMailAlarms": "NO",
        # One process, no watchdog: the watchdog's workers (setsid, no death signal) outlive it
        # when it is killed, and it waits for them forever when they do not exit on SIGTERM. One
        # request at a time, as DAViCal and sabre/dav here; queued, not refused, when more come.
        "WOUseWatchDog": "NO",
        "WOListenQueueSize": "64",
        "SxVMemLimit": "0",  # no restart above 384 MB: without the watchdog, that would be the end
    }
    with open(os.path.join(home, "defaults", "sogod.plist"), "wb") as f:
        plistlib.dump(defaults, f)
    sogo_env = dict(os.environ, GNUSTEP_CONFIG_FILE=sogo_gnustep_conf(home), PGHOST=pgdir, HOME=home)
    command = [SOGOD, "-WOPort", f"127.0.0.1:{port}", "-WONoDetach", "YES", "-WOLogFile", "-",
               "-WOPidFile", os.path.join(home, "sogod.pid")]
    book, cal = f"/SOGo/dav/{user}/Contacts/personal/", f"/SOGo/dav/{user}/Calendar/personal/"

    def load(port):
        """SOGo makes the user's personal address book and calendar on first access: a PROPFIND
        of each, then a PUT per card and event (a connection each: sogod closes it after every
        answer, without saying so)."""
        authorization = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

        def request(method, path, body, expect, **headers):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            try:
                connection.request(method, path, body=body, headers=dict(headers, Authorization=authorization))
                response = connection.getresponse()
                status, data = response.status, response.read()
            except (OSError, http.client.HTTPException) as error:
                status, data = None, str(error).encode()
            finally:
                connection.close()
            if status not in expect:
                sys.stderr.write(f"SOGo: {method} {path}: {status}\n{data.decode(errors='replace')[:2000]}\n")
                show_log(log)
                sys.exit(1)

        for path in (book, cal):
            request("PROPFIND", path, b'<?xml version="1.0"?><propfind xmlns="DAV:"><prop><resourcetype/></prop></propfind>',
                    (207,), Depth="0", **{"Content-Type": "application/xml"})
        for i in range(args.cards):
            request("PUT", f"{book}card-{i}.vcf", vcard(i).encode(), (201,), **{"Content-Type": "text/vcard"})
        for j in range(args.events):
            request("PUT", f"{cal}event-{j}.ics", vevent(j).encode(), (201,), **{"Content-Type": "text/calendar"})

    def wake(port):
        """sogod acts on SIGTERM only once its run loop wakes up: a connection wakes it."""
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            pass

    # SIGKILL if we die: sogod would wait for a request that never comes.
    return Launch(command, book, cal, f"/SOGo/dav/{user}/", env=sogo_env, log=log, user=run_as, ready=load,
                  death_signal=signal.SIGKILL, after_terminate=wake)


SERVERS = {"radicale": start_radicale, "xandikos": start_xandikos, "davical": start_davical, "sabredav": start_sabredav,
           "sogo": start_sogo}


def main():
    # Foundation's Process on Linux starts children with most signals blocked; unblock them so
    # SIGTERM reaches us (and the servers we start, which inherit this mask).
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", choices=sorted(SERVERS), required=True)
    parser.add_argument("--cards", type=int, default=10)
    parser.add_argument("--events", type=int, default=5)
    parser.add_argument("--auth", help="USER:PASSWORD (Radicale: htpasswd plain, none without it; DAViCal, "
                                       "sabre/dav and SOGo: the user, default ferry:secret; Xandikos: ignored)")
    parser.add_argument("--dir", help="use this directory instead of a fresh temporary one (kept)")
    parser.add_argument("--collections", type=int, default=1,
                        help="Xandikos only: this many address books (each with --cards cards) and this many "
                             "calendars (each with --events events); the first of each is the one printed")
    parser.add_argument("--no-sync-collection", action="store_true",
                        help="put a proxy in front that answers REPORT sync-collection with 501 "
                             "(a server without RFC 6578), and print the proxy's port")
    parser.add_argument("--truncate-sync", type=int, metavar="K",
                        help="put a proxy in front that answers sync-collection with at most K members, "
                             "marking partial answers the RFC 6578 way (a 507 response for the collection "
                             "with DAV:number-of-matches-within-limits) and a continuation token")
    parser.add_argument("--query", choices=["refuse", "refuse-unsupported", "subset", "truncate"],
                        help="put a proxy in front whose addressbook-query / calendar-query answers are "
                             "refused (501; refuse-unsupported: 403 with DAV:supported-report), cut to "
                             "--query-keep members silently (a server that caps "
                             "queries), or cut and marked partial (507 + number-of-matches-within-limits)")
    parser.add_argument("--query-keep", type=int, default=10, metavar="K")
    args = parser.parse_args()
    if args.collections > 1 and args.server != "xandikos":
        parser.error("--collections is for --server xandikos")
    # Also stop when the test process that started us is gone (a killed or crashed test run
    # must not leave servers behind), even if it goes before the server is up.
    parent = os.getppid()

    root = args.dir or tempfile.mkdtemp(prefix=f"ferry-{args.server}-")
    port = free_port()
    process = launch = None
    cleanups = []  # run last to first: PostgreSQL for DAViCal and SOGo, memcached for SOGo

    def on_signal(*_):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        launch = SERVERS[args.server](root, port, args, cleanups)
        command = launch.command
        for attempt in range(4):
            if launch.log:
                with open(launch.log, "w") as log:
                    process = subprocess.Popen(command, stdout=log, stderr=log, env=launch.env, cwd=root,
                                               preexec_fn=child_setup(launch.death_signal, user=launch.user))
            else:
                process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=sys.stderr, env=launch.env,
                                           preexec_fn=child_setup(launch.death_signal, user=launch.user))
            try:
                wait_listening(port, process, log=launch.log)
                break
            except PortTaken:
                if attempt == 3:
                    sys.stderr.write(f"{args.server}: every port tried was taken by another process first\n")
                    sys.exit(1)
                moved = free_port()
                sys.stderr.write(f"{args.server}: port {port} was taken by another process; starting on {moved}\n")
                command, port = on_port(command, port, moved), moved
        if launch.ready:
            launch.ready(port)
        proxied = args.no_sync_collection or args.truncate_sync or args.query
        public_port = start_proxy(port, args.no_sync_collection, args.truncate_sync, args.query, args.query_keep) \
            if proxied else port
        sys.stdout.write(f"ADDRESSBOOK {launch.book}\nCALENDAR {launch.cal}\nPRINCIPAL {launch.principal}\n"
                         f"PORT {public_port}\n")
        sys.stdout.flush()
        while process.poll() is None and os.getppid() == parent:
            time.sleep(0.5)
    finally:
        # A second signal must not interrupt the cleanup.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if process is not None:
            wake = (lambda: launch.after_terminate(port)) if launch.after_terminate else None
            stopper(process, timeout=10, after_signal=wake)()
        while cleanups:
            try:
                cleanups.pop()()
            except Exception as error:  # keep cleaning up
                sys.stderr.write(f"cleanup: {error}\n")
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)
    sys.exit(0)


PARTIAL = "ferry-partial:"


def truncate_sync(body, limit, sent_token, request_path):
    """Rewrites a complete sync-collection answer into page `offset` of at most `limit` members.

    The client's token "ferry-partial:<offset>:<real token>" asks for the members from <offset>
    on, of the answer the backend gives for <real token>."""
    import xml.etree.ElementTree as ET
    offset, real = 0, sent_token
    if sent_token.startswith(PARTIAL):
        number, _, real = sent_token[len(PARTIAL):].partition(":")
        offset = int(number)
    root = ET.fromstring(body)
    ns = "{DAV:}"
    responses = root.findall(ns + "response")
    new_token = root.find(ns + "sync-token").text
    page = responses[offset:offset + limit]
    out = ET.Element(ns + "multistatus")
    out.extend(page)
    if offset + limit < len(responses):
        marker = ET.SubElement(out, ns + "response")
        ET.SubElement(marker, ns + "href").text = request_path
        ET.SubElement(marker, ns + "status").text = "HTTP/1.1 507 Insufficient Storage"
        error = ET.SubElement(marker, ns + "error")
        ET.SubElement(error, ns + "number-of-matches-within-limits")
        token = f"{PARTIAL}{offset + limit}:{real}"
    else:
        token = new_token
    ET.SubElement(out, ns + "sync-token").text = token
    return real, ET.tostring(out, encoding="utf-8", xml_declaration=True)


def cut_query(body, keep, mark, request_path):
    """Keeps the first `keep` responses of a query answer; with `mark`, adds the RFC 4918 / 6578
    way of saying the answer is partial (a 507 response for the request-URI)."""
    import xml.etree.ElementTree as ET
    ns = "{DAV:}"
    root = ET.fromstring(body)
    out = ET.Element(ns + "multistatus")
    out.extend(root.findall(ns + "response")[:keep])
    if mark:
        marker = ET.SubElement(out, ns + "response")
        ET.SubElement(marker, ns + "href").text = request_path
        ET.SubElement(marker, ns + "status").text = "HTTP/1.1 507 Insufficient Storage"
        error = ET.SubElement(marker, ns + "error")
        ET.SubElement(error, ns + "number-of-matches-within-limits")
    return ET.tostring(out, encoding="utf-8", xml_declaration=True)


def start_proxy(backend_port, refuse_sync=True, truncate=None, query=None, query_keep=10):
    """A threaded HTTP proxy to the backend that refuses REPORT sync-collection with 501, or
    pages its answers (see truncate_sync); and that refuses or cuts collection queries."""
    import http.client
    import re
    import threading

    import http_core

    class Proxy(http_core.Handler):
        server_header = True  # http.server's "BaseHTTP/0.6 Python/3.x"
        methods = {"GET", "PUT", "DELETE", "REPORT", "PROPFIND", "OPTIONS", "HEAD"}

        def refuse(self, message):
            self.write_response(501, [("Content-Type", "text/plain")], message)

        def dispatch(self):
            body = self.body
            rewrite = None
            is_query = self.command == "REPORT" and (b"addressbook-query" in body or b"calendar-query" in body)
            if is_query and query == "refuse":
                return self.refuse(b"queries not supported")
            if is_query and query == "refuse-unsupported":
                # RFC 3253 3.6: 403 with DAV:supported-report, as servers answer a report they lack.
                return self.write_response(403, [("Content-Type", "application/xml; charset=utf-8")],
                                           b'<?xml version="1.0" encoding="utf-8"?>\n<D:error xmlns:D="DAV:"><D:supported-report/></D:error>')
            if self.command == "REPORT" and b"sync-collection" in body and truncate:
                match = re.search(rb"sync-token>([^<]*)</", body)
                sent = match.group(1).decode() if match else ""
                real = sent.partition(":")[2].partition(":")[2] if sent.startswith(PARTIAL) else sent
                body = body.replace(b"sync-token>" + sent.encode() + b"</", b"sync-token>" + real.encode() + b"</")
                rewrite = sent
            elif self.command == "REPORT" and b"sync-collection" in body and refuse_sync:
                return self.refuse(b"sync-collection not supported")
            connection = http.client.HTTPConnection("127.0.0.1", backend_port, timeout=60)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection", "content-length", "transfer-encoding", "accept-encoding")}
            connection.request(self.command, self.path, body=body, headers=headers)
            response = connection.getresponse()
            data = response.read()
            if rewrite is not None and response.status == 207:
                _, data = truncate_sync(data, truncate, rewrite, self.path)
            if is_query and query in ("subset", "truncate") and response.status == 207:
                data = cut_query(data, query_keep, query == "truncate", self.path)
            headers = [(key, value) for key, value in response.getheaders()
                       if key.lower() not in ("content-length", "connection", "transfer-encoding", "date", "server")]
            self.write_response(response.status, headers, data)
            connection.close()

    server = http_core.Server(Proxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.port


if __name__ == "__main__":
    main()
