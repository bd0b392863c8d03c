#!/usr/bin/env python3
"""Start a real CardDAV/CalDAV server (Radicale or Xandikos) on 127.0.0.1 for Ferry's tests.

    dav_servers.py --server radicale|xandikos [--cards N] [--events M] [--auth USER:PASSWORD]

Creates, in a fresh temporary directory, one address book and one calendar, loaded with N
generated vCards and M generated VEVENTs by writing the files straight into the server's
storage before it starts (a PUT per card is slow on both servers: Radicale rescans the
collection, Xandikos commits to git each time). For Xandikos the files are committed to the
collection's git repository in one commit.

Prints, once the server accepts connections:

    ADDRESSBOOK /path/of/addressbook/
    CALENDAR /path/of/calendar/
    PORT n

and serves until SIGTERM/SIGINT, then stops the server and removes the directory.
Servers come from the venv in $FERRY_VENV (default ~/.cache/ferry/venv; `pip install radicale xandikos`), or from PATH.

Card i has UID ferry-card-i, FN "Person i", EMAIL person-i@example.com (a second EMAIL for
every 7th card), TEL +1-555-i, ORG "Org i;Team"; every 5th card has a long folded NOTE.
Event j has UID ferry-event-j, SUMMARY "Event j", DTSTART/DTEND on 2024-01-(j%28+1), every 3rd an RRULE.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

VENV_BIN = os.path.join(os.environ.get("FERRY_VENV", os.path.expanduser("~/.cache/ferry/venv")), "bin")


def tool(name):
    path = os.path.join(VENV_BIN, name)
    if os.path.exists(path):
        return path
    found = shutil.which(name)
    if not found:
        sys.stderr.write(f"{name} not installed (pip install {name} into {VENV_BIN})\n")
        sys.exit(2)
    return found


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


def wait_listening(port, process, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if process.poll() is not None:
            sys.stderr.write("server exited early\n")
            sys.exit(1)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    sys.stderr.write("server did not start listening\n")
    process.terminate()
    sys.exit(1)


def start_radicale(root, port, args):
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
            return command, f"/{user}/contacts/", f"/{user}/calendar/"
    else:
        command += ["--auth-type", "none", "--rights-type", "authenticated"]
    return command, "/ferry/contacts/", "/ferry/calendar/"


def start_xandikos(root, port, args):
    # Let Xandikos create its default layout once, then load the files and commit once.
    init = subprocess.Popen([tool("xandikos"), "--defaults", "-d", root, "-l", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_listening(port, init)
    init.kill()
    init.wait()
    book = os.path.join(root, "user", "contacts", "addressbook")
    cal = os.path.join(root, "user", "calendars", "calendar")
    write_items(book, args.cards, 0, "card")
    write_items(cal, 0, args.events, "event")
    git_commit(book)
    git_commit(cal)
    command = [tool("xandikos"), "-d", root, "-l", "127.0.0.1", "-p", str(port)]
    return command, "/user/contacts/addressbook/", "/user/calendars/calendar/"


def main():
    # Foundation's Process on Linux starts children with most signals blocked; unblock them so
    # SIGTERM reaches us (and the servers we start, which inherit this mask).
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", choices=["radicale", "xandikos"], required=True)
    parser.add_argument("--cards", type=int, default=10)
    parser.add_argument("--events", type=int, default=5)
    parser.add_argument("--auth", help="USER:PASSWORD (Radicale only: htpasswd plain)")
    parser.add_argument("--dir", help="use this directory instead of a fresh temporary one (kept)")
    parser.add_argument("--no-sync-collection", action="store_true",
                        help="put a proxy in front that answers REPORT sync-collection with 501 "
                             "(a server without RFC 6578), and print the proxy's port")
    parser.add_argument("--truncate-sync", type=int, metavar="K",
                        help="put a proxy in front that answers sync-collection with at most K members, "
                             "marking partial answers the RFC 6578 way (a 507 response for the collection "
                             "with DAV:number-of-matches-within-limits) and a continuation token")
    parser.add_argument("--query", choices=["refuse", "subset", "truncate"],
                        help="put a proxy in front whose addressbook-query / calendar-query answers are "
                             "refused (501), cut to --query-keep members silently (a server that caps "
                             "queries), or cut and marked partial (507 + number-of-matches-within-limits)")
    parser.add_argument("--query-keep", type=int, default=10, metavar="K")
    args = parser.parse_args()

    root = args.dir or tempfile.mkdtemp(prefix=f"ferry-{args.server}-")
    port = free_port()
    if args.server == "radicale":
        command, book, cal = start_radicale(root, port, args)
    else:
        command, book, cal = start_xandikos(root, port, args)
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=sys.stderr)

    def stop(*_):
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    wait_listening(port, process)
    proxied = args.no_sync_collection or args.truncate_sync or args.query
    public_port = start_proxy(port, args.no_sync_collection, args.truncate_sync, args.query, args.query_keep) \
        if proxied else port
    print(f"ADDRESSBOOK {book}")
    print(f"CALENDAR {cal}")
    print(f"PORT {public_port}", flush=True)
    # Also stop when the test process that started us is gone (a killed or crashed test run
    # must not leave servers behind).
    parent = os.getppid()
    while process.poll() is None and os.getppid() == parent:
        time.sleep(0.5)
    stop()


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
