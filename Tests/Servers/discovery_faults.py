#!/usr/bin/env python3
"""A CardDAV/CalDAV server that gets discovery wrong in one chosen way, for Ferry's tests of
what real servers will not do on demand.  Stdlib only; 127.0.0.1 only (http_core.py).

    discovery_faults.py --scenario NAME [--collections N] [--port 0]

Prints "PORT <n>", serves until SIGTERM/SIGINT.  Scenarios:

  loop        /.well-known/carddav and /.well-known/caldav answer 301 to themselves
  html        every request: 200 text/html, a login page
  no-home     the well-known URLs redirect (301) to the principal /principals/ferry/, which
              names itself as current-user-principal and has no home set
  no-principal the well-known URLs are 404; the root answers a multistatus without
              current-user-principal
  many        principal /principals/ferry/ with home sets /home/ferry/; the home lists N
              address books (/home/ferry/book-<i>/, "Book <i>") and N calendars
              (/home/ferry/cal-<i>/, "Calendar <i>", VEVENT); default N 1500
  both        the home lists /home/ferry/both/ (address book and calendar at once), an
              address book /home/ferry/book/ and a calendar /home/ferry/cal/
  collide     the home lists address books /home/ferry/a-b/ and /home/ferry/a_b/ (one table
              name once mapped) and /home/ferry/other/

Every collection answers sync-collection with an empty listing and token "t-1".
"""
import argparse
from urllib.parse import urlsplit

import http_core

PRINCIPAL = "/principals/ferry/"
HOME = "/home/ferry/"


def prop(name, inner=""):
    return f"<{name}>{inner}</{name}>" if inner else f"<{name}/>"


def response(href, props, missing=()):
    body = f"<D:response><D:href>{href}</D:href><D:propstat><D:prop>{''.join(props)}</D:prop>"
    body += "<D:status>HTTP/1.1 200 OK</D:status></D:propstat>"
    if missing:
        body += f"<D:propstat><D:prop>{''.join(missing)}</D:prop><D:status>HTTP/1.1 404 Not Found</D:status></D:propstat>"
    return body + "</D:response>"


def multistatus(responses):
    return ('<?xml version="1.0" encoding="utf-8"?><D:multistatus xmlns:D="DAV:" '
            'xmlns:C="urn:ietf:params:xml:ns:caldav" xmlns:A="urn:ietf:params:xml:ns:carddav" '
            'xmlns:I="http://apple.com/ns/ical/">' + "".join(responses) + "</D:multistatus>").encode()


def principal_response(with_homes):
    props = [prop("D:resourcetype", "<D:principal/><D:collection/>"),
             prop("D:current-user-principal", f"<D:href>{PRINCIPAL}</D:href>")]
    if with_homes:
        props += [prop("A:addressbook-home-set", f"<D:href>{HOME}</D:href>"),
                  prop("C:calendar-home-set", f"<D:href>{HOME}</D:href>")]
    return response(PRINCIPAL, props)


def collection(href, name, types, components=()):
    props = [prop("D:resourcetype", "<D:collection/>" + types), prop("D:displayname", name),
             prop("D:supported-report-set", "<D:supported-report><D:report><D:sync-collection/></D:report></D:supported-report>")]
    if components:
        props.append(prop("C:supported-calendar-component-set", "".join(f'<C:comp name="{c}"/>' for c in components)))
    return response(href, props)


BOOK = "<A:addressbook/>"
CAL = "<C:calendar/>"


def home_members(scenario, count):
    if scenario == "many":
        return ([collection(f"{HOME}book-{i}/", f"Book {i}", BOOK) for i in range(count)]
                + [collection(f"{HOME}cal-{i}/", f"Calendar {i}", CAL, ["VEVENT"]) for i in range(count)])
    if scenario == "both":
        return [collection(f"{HOME}both/", "Both", BOOK + CAL), collection(f"{HOME}book/", "Book", BOOK),
                collection(f"{HOME}cal/", "Cal", CAL, ["VEVENT"])]
    if scenario == "collide":
        return [collection(f"{HOME}a-b/", "A dash B", BOOK), collection(f"{HOME}a_b/", "A underscore B", BOOK),
                collection(f"{HOME}other/", "Other", BOOK)]
    return []


class Handler(http_core.Handler):
    methods = {"GET", "PROPFIND", "REPORT", "OPTIONS"}
    scenario = "loop"
    count = 1500

    def xml(self, status, body):
        self.write_response(status, [("Content-Type", "application/xml; charset=utf-8")], body)

    def dispatch(self):
        path = urlsplit(self.path).path
        scenario = self.scenario
        if scenario == "html":
            page = b"<!DOCTYPE html><html><head><title>Sign in</title></head><body><form>Password</form></body></html>"
            return self.write_response(200, [("Content-Type", "text/html; charset=utf-8")], page)
        if path.startswith("/.well-known/"):
            if scenario == "loop":
                return self.write_response(301, [("Location", path)], b"")
            if scenario == "no-principal":
                return self.write_response(404, [("Content-Type", "text/plain")], b"not found\n")
            return self.write_response(301, [("Location", PRINCIPAL)], b"")
        if scenario == "no-principal" and path == "/":
            return self.xml(207, multistatus([response("/", [prop("D:resourcetype", "<D:collection/>")],
                                                        [prop("D:current-user-principal")])]))
        if path == PRINCIPAL:
            return self.xml(207, multistatus([principal_response(scenario != "no-home")]))
        if path == HOME and self.command == "PROPFIND":
            own = response(HOME, [prop("D:resourcetype", "<D:collection/>")])
            members = home_members(scenario, self.count) if self.headers.get("Depth") == "1" else []
            return self.xml(207, multistatus([own] + members))
        if path.startswith(HOME) and self.command == "REPORT":
            return self.xml(207, multistatus([]).replace(b"</D:multistatus>", b"<D:sync-token>t-1</D:sync-token></D:multistatus>"))
        if path.startswith(HOME) and self.command == "PROPFIND":
            types = CAL if "/cal" in path else BOOK
            return self.xml(207, multistatus([response(path, [prop("D:resourcetype", "<D:collection/>" + types)])]))
        self.write_response(404, [("Content-Type", "text/plain")], b"not found\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--scenario", required=True,
                    choices=["loop", "html", "no-home", "no-principal", "many", "both", "collide"])
    ap.add_argument("--collections", type=int, default=1500)
    args = ap.parse_args()
    Handler.scenario = args.scenario
    Handler.count = args.collections
    http_core.handle_signals()
    http_core.serve(http_core.Server(Handler, args.port))


if __name__ == "__main__":
    main()
