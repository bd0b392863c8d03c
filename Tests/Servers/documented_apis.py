#!/usr/bin/env python3
"""Stand-ins for eight real JSON APIs, each written from that API's public documentation (the
address of the page is in a comment above each behaviour), not from what Ferry expects: the
harness api_convergence.py runs Ferry's shipped examples against them.  Stdlib only; 127.0.0.1
only (http_core.py).

    documented_apis.py --api NAME [--count 150] [--port 0] [--token T] [--jira-legacy-removed]

NAME is one of wordpress, jira, stripe, notion, github, msgraph, google, hubspot.  One process
serves one API at that API's own paths (as the real hosts do):

  wordpress  GET    /wp-json/wp/v2/posts                      page/per_page, X-WP-Total(Pages)
             DELETE /wp-json/wp/v2/posts/<id>[?force=true]    trash, or delete for good
  jira       GET    /rest/api/3/search?jql=&startAt=&maxResults=&fields=     (the example's)
             GET    /rest/api/3/search/jql?jql=&nextPageToken=&maxResults=&fields=  (today's)
  stripe     GET    /v1/customers, GET /v1/events, DELETE /v1/customers/<id>
  notion     POST   /v1/databases/<DATABASE>/query
  github     POST   /graphql                                   repository(owner,name){issues}
  msgraph    GET    /v1.0/me/contactFolders/<FOLDER>/contacts/delta (and /users/<id>/...)
  google     GET    /calendar/v3/calendars/<calendarId>/events
  hubspot    GET    /crm/v3/objects/contacts, POST /crm/v3/objects/contacts/search

Every record has a key (1, 2, ...: the harness's handle), the API's own id, a revision and a
name that carries the revision (so a replica that kept an older version shows it), and stamps
from one controllable clock, written at the API's own precision: Notion's last_edited_time is
rounded down to the minute, WordPress/GitHub/Graph write whole seconds, Jira/Google/HubSpot
milliseconds, Stripe whole seconds (created only).  Two edits in one stamp are two versions
with one name.

Control (never counted as API requests):
  GET  /admin/live        [{"key","id","name","version"}] the records a correct replica holds
  GET  /admin/gone        [{"key","id","how"}] the records it must not hold, and how they went
  GET  /admin/stats       {"requests": n}  API requests so far
  GET  /admin/requests    the last 500 API requests: [{"method","path","query","status"}]
  POST /admin/create      {"count": n}                       new records (newest stamps)
  POST /admin/update      {"keys": [...]}                    a new revision of each
  POST /admin/delete      {"keys": [...], "how": "trash"|"archive"|"delete"}
                          how defaults to the API's ordinary delete (WordPress trash, HubSpot
                          archive, Notion trash, Google cancel, the others delete for good)
  POST /admin/clock       {"freeze": bool, "advance_ms": n, "step_ms": n}
                          every change takes the clock's time, then the clock moves step_ms
                          (default 1000) unless frozen: frozen, changes share one stamp
  POST /admin/schedule    {"at": N, "ops": [{"op": "update"|"create"|"delete", ...}]}
                          applied just before the N-th API request from now is answered (a
                          listing that moves under a pass); {"clear": true} drops what has not
                          happened yet, and every fault
  POST /admin/fault       {"kind": "status"|"reset"|"ratelimit"|"secondary"|"short",
                           "count": n, "at": 1, "status": 503, "size": 7}
                          the n requests starting with the at-th from now: answer status, reset
                          the connection, the API's documented rate-limit answer (GitHub's
                          secondary limit with "secondary"), or shorter pages where the API's
                          documentation says it may shorten them (Jira, Google, Graph; other
                          APIs answer {"short": false} and ignore it)
  POST /admin/expire      every delta/sync token handed out so far is expired (Graph 410
                          syncStateNotFound, Google 410 fullSyncRequired); Stripe: the clock
                          moves 31 days on, past the 30 days events are kept
"""

import argparse
import base64
import datetime
import hashlib
import json
import re
import threading
import time
import uuid
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import api_shapes
import http_core

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
START_MS = 1705330800000  # 2024-01-15T15:00:00Z


def utc(ms):
    return EPOCH + datetime.timedelta(milliseconds=ms)


def iso_ms_z(ms):
    return utc(ms).strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (ms % 1000)


def iso_s_z(ms):
    return utc(ms).strftime("%Y-%m-%dT%H:%M:%SZ")


def b64(value):
    return base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode()).decode().rstrip("=")


def unb64(text):
    try:
        return json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except Exception:
        return None


def parse_iso(text):
    """An ISO 8601 date or date-time (Z or an offset; a date alone is midnight UTC) as Unix
    milliseconds, or None."""
    if not isinstance(text, str):
        return None
    t = text.strip()
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", t):
            return int(datetime.datetime.fromisoformat(t).replace(tzinfo=datetime.timezone.utc).timestamp() * 1000)
        if t.endswith("Z") or t.endswith("z"):
            t = t[:-1] + "+00:00"
        d = datetime.datetime.fromisoformat(t)
        if d.tzinfo is None:
            return None
        return int(round(d.timestamp() * 1000))
    except ValueError:
        return None


# ---- the records, the clock and the change log ------------------------------------------------

class Store:
    def __init__(self):
        self.lock = threading.RLock()
        self.records = {}      # key -> record dict
        self.clock = START_MS
        self.step = 1000
        self.frozen = False
        self.seq = 0           # change sequence (delta/sync tokens, events)
        self.changes = []      # (seq, key, kind, ms) kind: created/updated/deleted
        self.next_key = 1

    def now(self):
        return self.clock

    def tick(self):
        """The time a change takes, then the clock moves on (unless frozen)."""
        t = self.clock
        if not self.frozen:
            self.clock += self.step
        return t

    def log(self, key, kind, ms):
        self.seq += 1
        self.changes.append((self.seq, key, kind, ms))
        self.records.get(key, {})["seq"] = self.seq

    def create(self):
        key = self.next_key
        self.next_key += 1
        t = self.tick()
        self.records[key] = {"key": key, "rev": 0, "created": t, "modified": t, "state": "live"}
        self.log(key, "created", t)
        return key

    def update(self, key):
        # A record deleted, trashed, archived or cancelled is not edited by these APIs' clients
        # (Stripe: "No such customer"; HubSpot and Notion answer 404 for archived objects).
        r = self.records.get(key)
        if r is None or r["state"] != "live":
            return False
        r["rev"] += 1
        r["modified"] = self.tick()
        self.log(key, "updated", r["modified"])
        return True

    def remove(self, key, how):
        r = self.records.get(key)
        if r is None or r["state"] != "live":
            return False
        r["state"] = how  # trash, archive, delete (gone for good), cancel
        r["modified"] = self.tick()
        self.log(key, "deleted", r["modified"])
        return True


STORE = Store()


# ---- one class per API ---------------------------------------------------------------------

class API:
    name = ""
    default_delete = "delete"
    shortens = False
    rate_prefix = ""

    def __init__(self, token):
        self.token = token

    def record_name(self, r):
        return "%s %d rev %d \u00e9" % (self.noun, r["key"], r["rev"])

    def visible(self, r):
        return r["state"] == "live"

    def live(self):
        rows = []
        for r in sorted(STORE.records.values(), key=lambda r: r["key"]):
            if self.visible(r):
                rows.append({"key": r["key"], "id": str(self.ident(r)), "name": self.record_name(r),
                             "version": self.version(r)})
        return rows

    def rate_limited(self, kind):
        return api_shapes.rate_limited(self.rate_prefix, time.time())

    def unauthorized(self):
        return 401, {"message": "unauthorized"}, []

    def authorized(self, headers):
        return headers.get("Authorization") == "Bearer " + self.token


class WordPress(API):
    # https://developer.wordpress.org/rest-api/reference/posts/ (List Posts, Delete a Post)
    # https://developer.wordpress.org/rest-api/using-the-rest-api/pagination/
    name, noun, default_delete = "wordpress", "Post", "trash"
    rate_prefix = "/wordpress/"  # core WordPress names no rate limit: a host's plain 429

    def ident(self, r):
        return r["key"]

    def version(self, r):
        return self.gmt(r["modified"])

    @staticmethod
    def gmt(ms):
        # modified_gmt is "the date the post was last modified, as GMT", written without a zone
        # and in whole seconds (MySQL DATETIME).
        return utc(ms).strftime("%Y-%m-%dT%H:%M:%S")

    def authorized(self, headers):
        want = "Basic " + base64.b64encode(("ferry:" + self.token).encode()).decode()
        return headers.get("Authorization") == want

    def unauthorized(self):
        return 401, {"code": "rest_not_logged_in", "message": "You are not currently logged in.", "data": {"status": 401}}, []

    def render(self, r):
        stamp = self.gmt(r["modified"])
        created = self.gmt(r["created"])
        return {"id": r["key"], "date": created, "date_gmt": created, "guid": {"rendered": "https://blog.example.com/?p=%d" % r["key"]},
                "modified": stamp, "modified_gmt": stamp, "slug": "post-%d" % r["key"],
                "status": "trash" if r["state"] == "trash" else "publish", "type": "post",
                "link": "https://blog.example.com/post-%d/" % r["key"], "title": {"rendered": self.record_name(r)},
                "content": {"rendered": "<p>%s</p>\n" % self.record_name(r), "protected": False},
                "author": 1, "comment_status": "open", "sticky": False, "format": "standard", "meta": [], "categories": [1], "tags": []}

    def handle(self, method, path, q, body, headers, host):
        m = re.fullmatch(r"/wp-json/wp/v2/posts(?:/(\d+))?", path)
        if not m:
            return 404, {"code": "rest_no_route", "message": "No route was found matching the URL and request method.", "data": {"status": 404}}, []
        authed = self.authorized(headers)
        if headers.get("Authorization") and not authed:
            return 401, {"code": "invalid_username", "message": "Unknown username. Check again or try your email address.", "data": {"status": 401}}, []
        if m.group(1):
            key = int(m.group(1))
            r = STORE.records.get(key)
            if r is None or r["state"] == "delete":
                return 404, {"code": "rest_post_invalid_id", "message": "Invalid post ID.", "data": {"status": 404}}, []
            if method == "DELETE":
                if not authed:
                    return 401, {"code": "rest_cannot_delete", "message": "Sorry, you are not allowed to delete this post.", "data": {"status": 401}}, []
                # Delete a Post: without force=true the post goes to the trash; with it, for good.
                if q.get("force") in ("true", "1"):
                    before = self.render(r)
                    STORE.remove(key, "delete")
                    return 200, {"deleted": True, "previous": before}, []
                if r["state"] == "trash":
                    return 410, {"code": "rest_already_trashed", "message": "The post has already been deleted.", "data": {"status": 410}}, []
                STORE.remove(key, "trash")
                return 200, self.render(r), []
            if method != "GET":
                return 404, {"code": "rest_no_route", "message": "No route was found matching the URL and request method.", "data": {"status": 404}}, []
            if r["state"] == "trash" and not authed:
                return 401, {"code": "rest_forbidden", "message": "Sorry, you are not allowed to do that.", "data": {"status": 401}}, []
            return 200, self.render(r), []
        if method != "GET":
            return 404, {"code": "rest_no_route", "message": "No route was found matching the URL and request method.", "data": {"status": 404}}, []

        def invalid(param, why):
            return 400, {"code": "rest_invalid_param", "message": "Invalid parameter(s): %s" % param,
                         "data": {"status": 400, "params": {param: why}, "details": {}}}, []

        # per_page: "Maximum number of items to be returned in result set", 1 to 100, default 10.
        try:
            per = int(q.get("per_page", 10))
            page = int(q.get("page", 1))
        except ValueError:
            return invalid("per_page", "per_page is not of type integer.")
        if not 1 <= per <= 100:
            return invalid("per_page", "per_page must be between 1 (inclusive) and 100 (inclusive)")
        if page < 1:
            return invalid("page", "page must be greater than or equal to 1")
        # status defaults to publish; any other status needs a user who may edit posts.
        statuses = (q.get("status") or "publish").split(",")
        if any(s not in ("publish", "future", "draft", "pending", "private", "trash", "any") for s in statuses):
            return invalid("status", "status[0] is not one of publish, future, draft, pending, private, trash, and any.")
        if statuses != ["publish"] and not authed:
            return 400, {"code": "rest_invalid_param", "message": "Invalid parameter(s): status",
                         "data": {"status": 400, "params": {"status": "Status is forbidden."}}}, []
        want = set()
        for s in statuses:
            want |= {"live", "trash"} if s == "any" else ({"trash"} if s == "trash" else ({"live"} if s == "publish" else set()))
        if "any" in statuses:
            want.discard("trash")  # "any" is every status except trash
        rows = [r for r in STORE.records.values() if r["state"] in want]
        # modified_after / modified_before: "Limit response to posts modified after a given ISO8601
        # compliant date" -- a WP_Date_Query on post_modified, exclusive, in whole seconds
        # (https://core.trac.wordpress.org/changeset/50024). The site's time zone is UTC here.
        for param, cmp in (("modified_after", lambda a, b: a > b), ("modified_before", lambda a, b: a < b)):
            if q.get(param):
                mark = parse_iso(q[param]) if re.search(r"[zZ]|[+-]\d\d:?\d\d$", q[param]) else parse_iso(q[param] + "Z")
                if mark is None:
                    return invalid(param, "Invalid date.")
                rows = [r for r in rows if cmp(r["modified"] // 1000, mark // 1000)]
        orderby = q.get("orderby", "date")
        if orderby not in ("author", "date", "id", "include", "modified", "parent", "relevance", "slug", "include_slugs", "title"):
            return invalid("orderby", "orderby is not one of author, date, id, include, modified, parent, relevance, slug, include_slugs, and title.")
        order = q.get("order", "desc")
        keyf = {"modified": lambda r: (r["modified"] // 1000, r["key"]), "id": lambda r: r["key"],
                "title": lambda r: self.record_name(r)}.get(orderby, lambda r: (r["created"] // 1000, r["key"]))
        rows.sort(key=keyf, reverse=(order == "desc"))
        total = len(rows)
        pages = -(-total // per)
        # "The page number requested is larger than the number of pages available."
        # https://core.trac.wordpress.org/changeset/39967
        if page > pages and total > 0:
            return 400, {"code": "rest_post_invalid_page_number", "message": "The page number requested is larger than the number of pages available.",
                         "data": {"status": 400}}, []
        chunk = rows[(page - 1) * per: page * per]
        out = [self.render(r) for r in chunk]
        base = "http://%s%s" % (host, path)
        rest = {k: v for k, v in q.items() if k != "page"}
        links = []
        if page > 1:
            links.append('<%s?%s>; rel="prev"' % (base, urlencode(dict(rest, page=page - 1))))
        if page < pages:
            links.append('<%s?%s>; rel="next"' % (base, urlencode(dict(rest, page=page + 1))))
        hdrs = [("X-WP-Total", str(total)), ("X-WP-TotalPages", str(pages))]
        if links:
            hdrs.append(("Link", ", ".join(links)))
        return 200, out, hdrs


class Jira(API):
    # https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issue-search/
    name, noun = "jira", "Issue"
    rate_prefix = "/jira/"
    shortens = True
    legacy_removed = False
    user_offset_minutes = 0  # the user's time zone, in which JQL dates are read

    def ident(self, r):
        return str(10000 + r["key"])

    def version(self, r):
        return self.stamp(r["modified"])

    def stamp(self, ms):
        # Jira writes date-times with milliseconds and an offset without a colon:
        # 2024-01-15T15:08:24.237+0000
        return utc(ms).strftime("%Y-%m-%dT%H:%M:%S.") + "%03d+0000" % (ms % 1000)

    def authorized(self, headers):
        want = "Basic " + base64.b64encode(("ferry@example.com:" + self.token).encode()).decode()
        return headers.get("Authorization") == want

    def unauthorized(self):
        return 401, {"errorMessages": ["You are not authenticated. Authentication required to perform this operation."], "errors": {}}, []

    def render(self, r, fields, host):
        issue = {"expand": "operations,versionedRepresentations,editmeta,changelog,renderedFields", "id": self.ident(r),
                 "self": "http://%s/rest/api/3/issue/%s" % (host, self.ident(r)), "key": "KAN-%d" % r["key"]}
        everything = {"summary": self.record_name(r), "updated": self.stamp(r["modified"]), "created": self.stamp(r["created"]),
                      "status": {"name": "To Do", "id": "10000"}, "project": {"key": "KAN", "id": "10000"}}
        if fields is None:
            fields = ["*navigable"]
        if "*all" in fields or "*navigable" in fields:
            issue["fields"] = everything
        else:
            issue["fields"] = {f: everything[f] for f in fields if f in everything}
        return issue

    # JQL: "Use one of the following formats: "yyyy/MM/dd HH:mm", "yyyy-MM-dd HH:mm",
    # "yyyy/MM/dd", "yyyy-MM-dd"; or use "w" (weeks), "d" (days), "h" (hours) or "m" (minutes) to
    # specify a date relative to the current time", read in the user's time zone.
    # https://support.atlassian.com/jira-software-cloud/docs/jql-fields/#Updated
    JQL_DATE = re.compile(r"(\d{4})[/-](\d{2})[/-](\d{2})(?: (\d{2}):(\d{2}))?")

    def jql_date(self, text):
        t = text.strip()
        m = self.JQL_DATE.fullmatch(t)
        if m and (t[4] == t[7]):
            y, mo, d, hh, mm = m.groups()
            local = datetime.datetime(int(y), int(mo), int(d), int(hh or 0), int(mm or 0), tzinfo=datetime.timezone.utc)
            return int(local.timestamp() * 1000) - self.user_offset_minutes * 60000
        rel = re.fullmatch(r"([-+]?)\s*((?:\d+[wdhm]\s*)+)", t)
        if rel:
            total = 0
            for n, unit in re.findall(r"(\d+)([wdhm])", rel.group(2)):
                total += int(n) * {"w": 604800000, "d": 86400000, "h": 3600000, "m": 60000}[unit]
            return STORE.now() + (-total if rel.group(1) == "-" else total)
        return None

    JQL = re.compile(r"""\s*(?:project\s*=\s*(?P<project>"[^"]*"|\w+))?\s*(?:AND\s+)?"""
                     r"""(?:updated\s*(?P<op>>=|>|<=|<|=)\s*(?P<date>"[^"]*"|'[^']*'|[-+]?\d+[wdhm]))?\s*"""
                     r"""(?:ORDER\s+BY\s+(?P<order>\w+)(?:\s+(?P<dir>ASC|DESC))?)?\s*""", re.I)

    def query(self, jql):
        """(rows, None) or (None, error answer)."""
        m = self.JQL.fullmatch(jql or "")
        if not m:
            return None, (400, {"errorMessages": ["Error in the JQL Query: the query could not be parsed (stand-in parses project, updated and ORDER BY only): %s" % jql],
                                "errors": {}, "warningMessages": []}, [])
        if m.group("project") and m.group("project").strip('"').upper() != "KAN":
            return None, (400, {"errorMessages": ["The value '%s' does not exist for the field 'project'." % m.group("project").strip('"')],
                                "errors": {}, "warningMessages": []}, [])
        rows = [r for r in STORE.records.values() if r["state"] == "live"]
        if m.group("date"):
            raw = m.group("date").strip("\"'")
            mark = self.jql_date(raw)
            if mark is None:
                # The answer Jira gives a date in another form (a 400 with errorMessages).
                return None, (400, {"errorMessages": ["Date value '%s' for field 'updated' is invalid. Valid formats include: 'yyyy/MM/dd HH:mm', 'yyyy-MM-dd HH:mm', 'yyyy/MM/dd', 'yyyy-MM-dd', or a period format e.g. '-5d', '4w 2d'." % raw],
                                    "errors": {}, "warningMessages": []}, [])
            op = m.group("op")
            # A minute-precision date compares with the issue's time to the millisecond.
            test = {">=": lambda a: a >= mark, ">": lambda a: a > mark, "<=": lambda a: a <= mark, "<": lambda a: a < mark,
                    "=": lambda a: a == mark}[op]
            rows = [r for r in rows if test(r["modified"])]
        order = (m.group("order") or "").lower()
        desc = (m.group("dir") or ("DESC" if order else "ASC")).upper() == "DESC"
        if order == "updated":
            rows.sort(key=lambda r: (r["modified"], r["key"]), reverse=desc)
        elif order in ("created", "key", "id", ""):
            rows.sort(key=lambda r: r["key"], reverse=(desc if order else True))
        else:
            return None, (400, {"errorMessages": ["Field '%s' does not exist or you do not have permission to view it." % m.group("order")], "errors": {}}, [])
        return rows, None

    def handle(self, method, path, q, body, headers, host, short=None):
        if method != "GET" or path not in ("/rest/api/3/search", "/rest/api/3/search/jql"):
            return 404, {"errorMessages": ["null for uri: http://%s%s" % (host, path)]}, []
        fields = q["fields"].split(",") if q.get("fields") else None
        try:
            asked = int(q.get("maxResults", 50))
        except ValueError:
            return 400, {"errorMessages": ["maxResults must be a number"], "errors": {}}, []
        # "To manage page size, API may return fewer issues per page where a large number of
        # fields or properties are requested" -- a page ends where maxResults in the answer says.
        most = min(asked, 100)
        if short:
            most = min(most, short)
        if path == "/rest/api/3/search":
            # GET /rest/api/3/search: startAt (0-based), maxResults (default 50), total.
            # Deprecated, and removed from Jira Cloud (CHANGE-2046, 410 Gone):
            # https://developer.atlassian.com/changelog/#CHANGE-2046
            if self.legacy_removed:
                return 410, {"errorMessages": ["The requested API has been removed. Please migrate to the /rest/api/3/search/jql API. A full migration guideline is available at https://developer.atlassian.com/changelog/#CHANGE-2046"],
                             "errors": {}}, []
            rows, error = self.query(q.get("jql", ""))
            if error:
                return error
            start = int(q.get("startAt", 0))
            chunk = rows[start:start + most]
            return 200, {"expand": "schema,names", "startAt": start, "maxResults": most, "total": len(rows),
                         "issues": [self.render(r, fields, host) for r in chunk]}, []
        # GET /rest/api/3/search/jql: nextPageToken pages, isLast, no total; only ids unless
        # fields are named; the JQL must be bounded (a restriction such as project = KAN).
        if not re.search(r"\S", (q.get("jql") or "").split("ORDER")[0]):
            return 400, {"errorMessages": ["Unbounded JQL queries are not allowed here. Please add a search restriction to your query."], "errors": {}}, []
        rows, error = self.query(q.get("jql", ""))
        if error:
            return error
        start = 0
        if q.get("nextPageToken"):
            state = unb64(q["nextPageToken"])
            if not isinstance(state, int):
                return 400, {"errorMessages": ["Invalid nextPageToken"], "errors": {}}, []
            start = state
        chunk = rows[start:start + most]
        page = {"issues": [self.render(r, fields or ["id"], host) for r in chunk], "isLast": start + most >= len(rows)}
        if not page["isLast"]:
            page["nextPageToken"] = b64(start + most)
        return 200, page, []


class Stripe(API):
    # https://docs.stripe.com/api/customers/list, https://docs.stripe.com/api/events/list,
    # https://docs.stripe.com/api/pagination
    name, noun = "stripe", "Customer"
    rate_prefix = "/v1/customers"

    def ident(self, r):
        return "cus_" + hashlib.sha256(b"cus%d" % r["key"]).hexdigest()[:14].replace("0", "Q")

    def version(self, r):
        return "rev%d" % r["rev"]  # customers carry no update time

    def unauthorized(self):
        return 401, {"error": {"message": "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY').",
                               "type": "invalid_request_error"}}, []

    def render(self, r):
        return {"id": self.ident(r), "object": "customer", "address": None, "balance": 0, "created": r["created"] // 1000,
                "currency": None, "default_source": None, "delinquent": False, "description": None, "discount": None,
                "email": "customer%d@example.com" % r["key"], "invoice_prefix": "F%06X" % r["key"],
                "invoice_settings": {"custom_fields": None, "default_payment_method": None, "footer": None, "rendering_options": None},
                "livemode": False, "metadata": {"revision": str(r["rev"])}, "name": self.record_name(r), "next_invoice_sequence": 1,
                "phone": None, "preferred_locales": [], "shipping": None, "tax_exempt": "none", "test_clock": None}

    def event_id(self, seq):
        return "evt_" + hashlib.sha256(b"evt%d" % seq).hexdigest()[:24]

    def events(self):
        """Every event still kept, newest first. "List events, going back up to 30 days.\""""
        horizon = STORE.now() - 30 * 86400000
        out = []
        snapshots = {}
        for seq, key, kind, ms in STORE.changes:
            r = STORE.records[key]
            # Each event's data.object is the customer as it was right after that change.
            snapshots[key] = snap = dict(r, rev=snapshots.get(key, {}).get("rev", -1) + (1 if kind != "deleted" else 0))
            if ms < horizon:
                continue
            obj = self.render(snap)
            ev = {"id": self.event_id(seq), "object": "event", "api_version": "2024-06-20", "created": ms // 1000,
                  "data": {"object": obj}, "livemode": False, "pending_webhooks": 0,
                  "request": {"id": "req_%d" % seq, "idempotency_key": None}, "type": "customer." + kind, "seq": seq}
            if kind == "updated":
                ev["data"]["previous_attributes"] = {"name": "%s %d rev %d \u00e9" % (self.noun, key, snap["rev"] - 1)}
            out.append(ev)
        out.reverse()
        return out

    def handle(self, method, path, q, body, headers, host):
        def bad(param, message, code="parameter_invalid_integer"):
            return 400, {"error": {"code": code, "doc_url": "https://stripe.com/docs/error-codes/" + code.replace("_", "-"),
                                   "message": message, "param": param, "type": "invalid_request_error"}}, []
        try:
            limit = int(q.get("limit", 10))
        except ValueError:
            return bad("limit", "Invalid integer: %s" % q.get("limit"))
        # "A limit on the number of objects to be returned. Limit can range between 1 and 100"
        if not 1 <= limit <= 100:
            return bad("limit", "This value must be less than or equal to 100 (it currently is '%d')." % limit)
        if q.get("starting_after") and q.get("ending_before"):
            return bad("starting_after", "You may only specify one of these parameters: ending_before, starting_after.", "parameter_unknown")
        m = re.fullmatch(r"/v1/customers(?:/(cus_\w+))?", path)
        if m and m.group(1):
            r = next((r for r in STORE.records.values() if self.ident(r) == m.group(1)), None)
            if r is None:
                return 404, {"error": {"code": "resource_missing", "message": "No such customer: '%s'" % m.group(1), "param": "id", "type": "invalid_request_error"}}, []
            if method == "DELETE":
                if r["state"] == "live":
                    STORE.remove(r["key"], "delete")
                return 200, {"id": self.ident(r), "object": "customer", "deleted": True}, []
            if r["state"] != "live":
                return 200, {"id": self.ident(r), "object": "customer", "deleted": True}, []
            return 200, self.render(r), []
        if m and method == "GET":
            # Customers list: "sorted, with the most recent customers appearing first"; deleted
            # customers are not listed.
            rows = sorted((r for r in STORE.records.values() if r["state"] == "live"),
                          key=lambda r: (r["created"] // 1000, r["key"]), reverse=True)
            objs = [(self.ident(r), r) for r in rows]
            keyed = {self.ident(r): (r["created"] // 1000, r["key"]) for r in STORE.records.values()}
            cursor = q.get("starting_after") or q.get("ending_before")
            if cursor and cursor not in keyed:
                return bad("starting_after" if q.get("starting_after") else "ending_before", "No such customer: '%s'" % cursor, "resource_missing")
            if q.get("starting_after"):
                objs = [o for o in objs if (o[1]["created"] // 1000, o[1]["key"]) < keyed[cursor]]
                chunk = objs[:limit]
            elif q.get("ending_before"):
                objs = [o for o in objs if (o[1]["created"] // 1000, o[1]["key"]) > keyed[cursor]]
                chunk = objs[-limit:]
            else:
                chunk = objs[:limit]
            return 200, {"object": "list", "data": [self.render(r) for _, r in chunk], "has_more": len(objs) > len(chunk),
                         "url": "/v1/customers"}, []
        if path == "/v1/events" and method == "GET":
            evs = self.events()
            # type: "A string containing a specific event name, or group of events using * as a
            # wildcard"; types: "An array of up to 20 strings containing specific event names".
            types = [v for k, v in q.items() if re.fullmatch(r"types\[\d*\]", k)]
            if q.get("type") and types:
                return bad("types", "You cannot specify both `type` and `types`.", "parameter_unknown")
            if q.get("type"):
                pattern = re.compile("^" + re.escape(q["type"]).replace(r"\*", ".*") + "$")
                evs = [e for e in evs if pattern.match(e["type"])]
            elif types:
                evs = [e for e in evs if e["type"] in types]
            ids = {self.event_id(seq): seq for seq, _, _, _ in STORE.changes}
            cursor = q.get("starting_after") or q.get("ending_before")
            if cursor:
                kept = {e["id"] for e in self.events()}
                if cursor not in ids or cursor not in kept:
                    return bad("starting_after" if q.get("starting_after") else "ending_before", "No such event: '%s'" % cursor, "resource_missing")
            if q.get("starting_after"):
                evs = [e for e in evs if e["seq"] < ids[cursor]]
                chunk = evs[:limit]
            elif q.get("ending_before"):
                evs = [e for e in evs if e["seq"] > ids[cursor]]
                chunk = evs[-limit:]  # the page just before the cursor, still newest first
            else:
                chunk = evs[:limit]
            data = [{k: v for k, v in e.items() if k != "seq"} for e in chunk]
            return 200, {"object": "list", "data": data, "has_more": len(evs) > len(chunk), "url": "/v1/events"}, []
        return 404, {"error": {"message": "Unrecognized request URL (%s: %s). Please see https://stripe.com/docs or we can help at https://support.stripe.com/." % (method, path),
                               "type": "invalid_request_error"}}, []


class Notion(API):
    # https://developers.notion.com/reference/post-database-query
    # https://developers.notion.com/reference/post-database-query-filter#timestamp
    # https://developers.notion.com/reference/page
    name, noun, default_delete = "notion", "Page", "trash"
    rate_prefix = "/notion/"
    DATABASE = "8a2f3c1e-5b7d-4e9f-a1c3-0d2e4f6a8b9c"

    def ident(self, r):
        return str(uuid.UUID(hashlib.md5(b"page%d" % r["key"]).hexdigest()))

    @staticmethod
    def minute(ms):
        # "the last_edited_time and created_time properties will be rounded down to the closest
        # minute" https://developers.notion.com/changelog/last-edited-time-is-now-rounded-to-the-nearest-minute
        return ms - ms % 60000

    def version(self, r):
        return iso_ms_z(self.minute(r["modified"]))

    def unauthorized(self):
        return 401, {"object": "error", "status": 401, "code": "unauthorized", "message": "API token is invalid.", "request_id": str(uuid.uuid4())}, []

    def render(self, r):
        text = self.record_name(r)
        return {"object": "page", "id": self.ident(r), "created_time": iso_ms_z(self.minute(r["created"])),
                "last_edited_time": iso_ms_z(self.minute(r["modified"])),
                "created_by": {"object": "user", "id": "c2f20311-9e54-4d11-8c79-7398424ae41e"},
                "last_edited_by": {"object": "user", "id": "c2f20311-9e54-4d11-8c79-7398424ae41e"},
                "cover": None, "icon": None, "parent": {"type": "database_id", "database_id": self.DATABASE},
                "archived": r["state"] != "live", "in_trash": r["state"] != "live",
                "properties": {"Name": {"id": "title", "type": "title", "title": [
                    {"type": "text", "text": {"content": text, "link": None},
                     "annotations": {"bold": False, "italic": False, "strikethrough": False, "underline": False, "code": False, "color": "default"},
                     "plain_text": text, "href": None}]}},
                "url": "https://www.notion.so/%s" % self.ident(r).replace("-", ""), "public_url": None}

    def error(self, status, code, message):
        return status, {"object": "error", "status": status, "code": code, "message": message, "request_id": str(uuid.uuid4())}, []

    def condition(self, where, cond):
        """A timestamp filter's condition as a test on Unix ms, or an error text."""
        if not isinstance(cond, dict) or len(cond) != 1:
            return "body failed validation: body.filter.%s should be an object with one condition" % where
        (op, value), = cond.items()
        if op in ("past_week", "past_month", "past_year", "next_week", "next_month", "next_year", "this_week"):
            span = {"past_week": -7, "past_month": -30, "past_year": -365}.get(op, 0) * 86400000
            return lambda ms: ms >= STORE.now() + span
        if op in ("is_empty", "is_not_empty"):
            return lambda ms: op == "is_not_empty"
        if op not in ("equals", "before", "after", "on_or_before", "on_or_after"):
            return "body failed validation: body.filter.%s.%s is not a valid condition" % (where, op)
        mark = parse_iso(value) if isinstance(value, str) else None
        if mark is None and isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?", value):
            mark = parse_iso(value + "Z")  # a date-time without a zone is taken as UTC
        if mark is None:
            return "body failed validation: body.filter.%s.%s should be a valid ISO 8601 date string, instead was `%s`." % (where, op, json.dumps(value))
        if op == "equals":
            return lambda ms: ms == mark
        return {"before": lambda ms: ms < mark, "after": lambda ms: ms > mark, "on_or_before": lambda ms: ms <= mark,
                "on_or_after": lambda ms: ms >= mark}[op]

    def compile_filter(self, f):
        if not isinstance(f, dict):
            return "body failed validation: body.filter should be an object"
        for compound in ("and", "or"):
            if compound in f:
                parts = [self.compile_filter(x) for x in f[compound]]
                bad = next((p for p in parts if isinstance(p, str)), None)
                if bad:
                    return bad
                return (lambda r: all(p(r) for p in parts)) if compound == "and" else (lambda r: any(p(r) for p in parts))
        stamp = f.get("timestamp")
        if stamp in ("last_edited_time", "created_time"):
            test = self.condition(stamp, f.get(stamp))
            if isinstance(test, str):
                return test
            field = "modified" if stamp == "last_edited_time" else "created"
            return lambda r: test(self.minute(r[field]))
        if f.get("property") in ("Name", "title"):
            cond = f.get("title") or f.get("rich_text") or {}
            if "contains" in cond:
                return lambda r: cond["contains"] in self.record_name(r)
            if "equals" in cond:
                return lambda r: cond["equals"] == self.record_name(r)
        if "property" in f:
            return "Could not find property with name or id: %s" % f["property"]
        return "body failed validation. Fix one: body.filter.or should be defined, instead was `undefined`. body.filter.and should be defined, instead was `undefined`. body.filter.property should be defined, instead was `undefined`. body.filter.timestamp should be defined, instead was `undefined`."

    def handle(self, method, path, q, body, headers, host):
        m = re.fullmatch(r"/v1/databases/([0-9a-fA-F-]{32,36})/query", path)
        if not m or method != "POST":
            return self.error(400, "invalid_request_url", "Invalid request URL.")
        # "Notion-Version: required"  https://developers.notion.com/reference/versioning
        if not headers.get("Notion-Version"):
            return self.error(400, "missing_version", "Notion-Version header failed validation: Notion-Version header should be defined, instead was `undefined`.")
        if m.group(1).replace("-", "") != self.DATABASE.replace("-", ""):
            return self.error(404, "object_not_found", "Could not find database with ID: %s. Make sure the relevant pages and databases are shared with your integration." % m.group(1))
        try:
            req = json.loads(body or b"{}")
        except ValueError:
            return self.error(400, "invalid_json", "Error parsing JSON body.")
        if not isinstance(req, dict):
            return self.error(400, "validation_error", "body failed validation: body should be an object")
        # page_size: "The number of items from the full list desired in the response. Maximum: 100"
        size = req.get("page_size", 100)
        if not isinstance(size, int) or not 1 <= size <= 100:
            return self.error(400, "validation_error", "body failed validation: body.page_size should be a number less than or equal to `100`, instead was `%s`." % json.dumps(size))
        # Archived (trashed) pages are not in a database query's results.
        rows = [r for r in STORE.records.values() if r["state"] == "live"]
        if req.get("filter") is not None:
            test = self.compile_filter(req["filter"])
            if isinstance(test, str):
                return self.error(400, "validation_error", test)
            rows = [r for r in rows if test(r)]
        sorts = req.get("sorts") or []
        # Without sorts, the stand-in lists by creation, oldest first (the docs name no default).
        keyf = [lambda r: (r["created"], r["key"])]
        desc = False
        if sorts:
            s = sorts[0]
            if s.get("timestamp") in ("last_edited_time", "created_time"):
                field = "modified" if s["timestamp"] == "last_edited_time" else "created"
                keyf = [lambda r, f=field: (self.minute(r[f]), r["key"])]
            elif s.get("property") not in ("Name", "title"):
                return self.error(400, "validation_error", "Could not find sort property with name or id: %s" % s.get("property"))
            else:
                keyf = [lambda r: (self.record_name(r), r["key"])]
            desc = s.get("direction") == "descending"
        rows.sort(key=keyf[0], reverse=desc)
        start = 0
        cursor = req.get("start_cursor")
        if cursor is not None:
            # A cursor names the first page of the next chunk; it goes on from that page's
            # place in the order.
            target = next((r for r in STORE.records.values() if self.ident(r) == cursor), None) if isinstance(cursor, str) else None
            if target is None:
                return self.error(400, "validation_error", "body failed validation: body.start_cursor should be a valid uuid, instead was `%s`." % json.dumps(cursor))
            mark = keyf[0](target)
            start = sum(1 for r in rows if ((keyf[0](r) > mark) if desc else (keyf[0](r) < mark)))
        chunk = rows[start:start + size]
        more = start + size < len(rows)
        return 200, {"object": "list", "results": [self.render(r) for r in chunk],
                     "next_cursor": self.ident(rows[start + size]) if more else None, "has_more": more,
                     "type": "page_or_database", "page_or_database": {}, "request_id": str(uuid.uuid4())}, []


class GitHub(API):
    # https://docs.github.com/en/graphql/reference/objects#repository (issues connection)
    # https://docs.github.com/en/graphql/reference/input-objects#issuefilters
    # https://docs.github.com/en/graphql/guides/using-pagination-in-the-graphql-api
    # https://docs.github.com/en/graphql/overview/rate-limits-and-query-limits-for-the-graphql-api
    name, noun = "github", "Issue"
    rate_prefix = "/graphql"
    OWNER, REPO = "ferry-owner", "ferry-repo"

    def ident(self, r):
        return "I_kwDOFerry" + base64.b64encode(b"%06d" % r["key"]).decode().rstrip("=")

    def version(self, r):
        return iso_s_z(r["modified"])

    def unauthorized(self):
        return 401, {"message": "This endpoint requires you to be authenticated.",
                     "documentation_url": "https://docs.github.com/graphql/guides/forming-calls-with-graphql#authenticating-with-graphql"}, []

    def rate_limited(self, kind):
        if kind == "secondary":
            # "you will receive a 403 or 429 response and an error message that indicates that
            # you exceeded a secondary rate limit", with retry-after when it names a wait.
            return 403, {"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID.",
                         "documentation_url": "https://docs.github.com/graphql/overview/rate-limits-and-query-limits-for-the-graphql-api#secondary-rate-limits"}, [("Retry-After", "1")]
        return super().rate_limited(kind)

    def issue_field(self, r, field, errors, path):
        value = {"id": self.ident(r), "number": r["key"], "title": self.record_name(r), "body": "",
                 "state": "OPEN", "closed": False, "createdAt": iso_s_z(r["created"]), "updatedAt": iso_s_z(r["modified"]),
                 "url": "https://github.com/%s/%s/issues/%d" % (self.OWNER, self.REPO, r["key"]), "__typename": "Issue"}
        if field.name == "author":
            return gql_select({"login": "octocat", "__typename": "User"}, field.selections, "Actor", errors, path)
        if field.name not in value:
            errors.append(gql_undefined("Issue", field, path))
            return None
        return value[field.name]

    def issues(self, field, variables, errors, path):
        args = field.args(variables)
        first, last = args.get("first"), args.get("last")
        if first is None and last is None:
            errors.append({"message": "You must provide a `first` or `last` value to properly paginate the `issues` connection.",
                           "locations": field.locations(), "path": path, "type": "MISSING_PAGINATION_BOUNDARIES"})
            return None
        n = first if first is not None else last
        if not isinstance(n, int) or not 1 <= n <= 100:
            which = "first" if first is not None else "last"
            errors.append({"message": "Requesting %d records on the `issues` connection exceeds the `%s` limit of 100 records." % (n, which),
                           "locations": field.locations(), "path": path, "type": "EXCESSIVE_PAGINATION"})
            return None
        rows = [r for r in STORE.records.values() if r["state"] == "live"]
        since = (args.get("filterBy") or {}).get("since")
        if since is not None:
            mark = parse_iso(since)
            if mark is None:
                errors.append({"message": "Argument 'since' on InputObject 'IssueFilters' has an invalid value (%s). Expected type 'DateTime'." % json.dumps(since),
                               "locations": field.locations(), "path": path, "extensions": {"code": "argumentLiteralsIncompatible"}})
                return None
            # since: "List issues that have been updated at or after the given date."
            rows = [r for r in rows if r["modified"] // 1000 * 1000 >= mark]
        order = args.get("orderBy") or {"field": "CREATED_AT", "direction": "ASC"}
        fieldname = {"CREATED_AT": "created", "UPDATED_AT": "modified", "COMMENTS": "created"}.get(order.get("field"), "created")
        # Cursors are keyset places (the stamp in whole seconds, then the id), so they hold while
        # issues change.
        keyf = lambda r: (r[fieldname] // 1000, r["key"])
        desc = order.get("direction") == "DESC"
        rows.sort(key=keyf, reverse=desc)
        total = len(rows)
        if args.get("after"):
            mark = unb64(args["after"][len("Y3Vyc29y"):]) if args["after"].startswith("Y3Vyc29y") else None
            if not isinstance(mark, list):
                errors.append({"message": "`%s` does not appear to be a valid cursor." % args["after"], "locations": field.locations(),
                               "path": path, "type": "INVALID_CURSOR_ARGUMENTS"})
                return None
            mark = tuple(mark)
            rows = [r for r in rows if (keyf(r) < mark if desc else keyf(r) > mark)]
        chunk = rows[:n] if first is not None else rows[-n:]
        cursor = lambda r: "Y3Vyc29y" + b64(list(keyf(r)))
        conn = {"totalCount": total, "__typename": "IssueConnection",
                "pageInfo": {"hasNextPage": len(rows) > len(chunk) and first is not None, "hasPreviousPage": bool(args.get("after")),
                             "endCursor": cursor(chunk[-1]) if chunk else None, "startCursor": cursor(chunk[0]) if chunk else None,
                             "__typename": "PageInfo"}}
        out = {}
        for sub in field.selections:
            key = sub.alias or sub.name
            if sub.name in ("totalCount", "__typename"):
                out[key] = conn[sub.name]
            elif sub.name == "pageInfo":
                out[key] = gql_select(conn["pageInfo"], sub.selections, "PageInfo", errors, path + [key])
            elif sub.name == "nodes":
                out[key] = [{(s.alias or s.name): self.issue_field(r, s, errors, path + [key, i]) for s in sub.selections}
                            for i, r in enumerate(chunk)]
            elif sub.name == "edges":
                edges = []
                for i, r in enumerate(chunk):
                    e = {}
                    for s in sub.selections:
                        if s.name == "cursor":
                            e[s.alias or s.name] = cursor(r)
                        elif s.name == "node":
                            e[s.alias or s.name] = {(t.alias or t.name): self.issue_field(r, t, errors, path + [key, i, "node"]) for t in s.selections}
                        else:
                            errors.append(gql_undefined("IssueEdge", s, path + [key, i]))
                    edges.append(e)
                out[key] = edges
            else:
                errors.append(gql_undefined("IssueConnection", sub, path))
        return out

    def handle(self, method, path, q, body, headers, host):
        if path != "/graphql":
            return 404, {"message": "Not Found", "documentation_url": "https://docs.github.com/graphql"}, []
        if method != "POST":
            return 404, {"message": "Not Found"}, []
        try:
            req = json.loads(body or b"{}")
        except ValueError:
            return 400, {"message": "Problems parsing JSON", "documentation_url": "https://docs.github.com/graphql"}, []
        try:
            doc = GQLParser(req.get("query") or "").document()
        except GQLError as e:
            return 200, {"errors": [{"message": str(e), "locations": [{"line": e.line, "column": e.column}]}]}, []
        variables = req.get("variables") or {}
        # Declared variables' types are checked against the arguments they feed.
        expected = {"first": "Int", "last": "Int", "after": "String", "before": "String", "since": "DateTime"}
        errors = []
        for name, vtype in doc.variables.items():
            for arg, use in doc.uses.get(name, []):
                want = expected.get(arg)
                if want and vtype.rstrip("!") != want:
                    errors.append({"message": "Type mismatch on variable $%s and argument %s (%s / %s)" % (name, arg, vtype, want + ("" if arg != "since" else "")),
                                   "locations": [use], "path": ["query"], "extensions": {"code": "variableMismatch", "variableName": name,
                                                                                             "typeName": vtype, "argumentName": arg, "errorMessage": "Type mismatch"}})
            if name not in doc.uses:
                errors.append({"message": "Variable $%s is declared by anonymous query but not used" % name, "locations": [{"line": 1, "column": 1}],
                               "path": ["query"], "extensions": {"code": "variableNotUsed", "variableName": name}})
        if errors:
            return 200, {"errors": errors}, []
        data = {}
        for field in doc.selections:
            key = field.alias or field.name
            if field.name == "repository":
                args = field.args(variables)
                if (args.get("owner"), args.get("name")) != (self.OWNER, self.REPO):
                    data[key] = None
                    errors.append({"type": "NOT_FOUND", "path": [key], "locations": field.locations(),
                                   "message": "Could not resolve to a Repository with the name '%s/%s'." % (args.get("owner"), args.get("name"))})
                    continue
                repo = {}
                for sub in field.selections:
                    skey = sub.alias or sub.name
                    if sub.name == "issues":
                        repo[skey] = self.issues(sub, variables, errors, [key, skey])
                    elif sub.name in ("name", "nameWithOwner", "id", "__typename"):
                        repo[skey] = {"name": self.REPO, "nameWithOwner": "%s/%s" % (self.OWNER, self.REPO), "id": "R_kgDOFerry",
                                      "__typename": "Repository"}[sub.name]
                    else:
                        errors.append(gql_undefined("Repository", sub, [key]))
                data[key] = repo
            elif field.name == "rateLimit":
                data[key] = gql_select({"limit": 5000, "cost": 1, "remaining": 4999, "used": 1, "nodeCount": 100,
                                        "resetAt": iso_s_z(int(time.time() * 1000) + 3600000)}, field.selections, "RateLimit", errors, [key])
            elif field.name == "viewer":
                data[key] = gql_select({"login": "ferry", "__typename": "User"}, field.selections, "User", errors, [key])
            else:
                errors.append(gql_undefined("Query", field, ["query"]))
        if any(e.get("extensions", {}).get("code") == "undefinedField" for e in errors):
            return 200, {"errors": errors}, []  # a validation error: no data at all
        answer = {"data": data}
        if errors:
            answer["errors"] = errors
        return 200, answer, []


class MSGraph(API):
    # https://learn.microsoft.com/en-us/graph/api/contact-delta
    # https://learn.microsoft.com/en-us/graph/delta-query-overview
    # https://learn.microsoft.com/en-us/graph/api/resources/contact
    name, noun = "msgraph", "Contact"
    rate_prefix = "/graph/"
    shortens = True
    FOLDER = "AAMkADFerryContactsFolder="

    def __init__(self, token):
        super().__init__(token)
        self.generation = 0  # tokens of an older generation have expired

    def ident(self, r):
        return "AAMkADFerry" + base64.b64encode(b"contact-%06d" % r["key"]).decode()

    def change_key(self, r):
        # changeKey: "Identifies the version of the contact. Every time the contact is changed,
        # ChangeKey changes as well."
        return base64.b64encode(hashlib.sha1(b"%d/%d" % (r["key"], r["rev"])).digest()[:12]).decode()

    def version(self, r):
        return self.change_key(r)

    def unauthorized(self):
        return 401, {"error": {"code": "InvalidAuthenticationToken", "message": "Access token is empty.",
                               "innerError": {"date": iso_s_z(STORE.now()), "request-id": str(uuid.uuid4())}}}, []

    def render(self, r):
        return {"@odata.etag": 'W/"%s"' % self.change_key(r), "id": self.ident(r),
                "createdDateTime": iso_s_z(r["created"]), "lastModifiedDateTime": iso_s_z(r["modified"]),
                "changeKey": self.change_key(r), "categories": [], "parentFolderId": self.FOLDER, "birthday": None,
                "fileAs": "", "displayName": self.record_name(r), "givenName": "Contact", "initials": None, "middleName": None,
                "nickName": None, "surname": "%d" % r["key"], "title": None, "yomiGivenName": None, "yomiSurname": None,
                "yomiCompanyName": None, "generation": None, "imAddresses": [], "jobTitle": None, "companyName": None,
                "department": None, "officeLocation": None, "profession": None, "businessHomePage": None, "assistantName": None,
                "manager": None, "homePhones": [], "mobilePhone": None, "businessPhones": [], "spouseName": None,
                "personalNotes": "", "children": [],
                "emailAddresses": [{"name": self.record_name(r), "address": "contact%d@example.com" % r["key"]}],
                "homeAddress": {}, "businessAddress": {}, "otherAddress": {}}

    def handle(self, method, path, q, body, headers, host, short=None):
        m = re.fullmatch(r"/v1\.0/(?:me|users/[^/]+)/contactFolders/([^/]+)/contacts/delta", path, re.I)
        if not m:
            if re.fullmatch(r"/v1\.0/(?:me|users/[^/]+)/contacts/delta", path, re.I):
                # The documented request is GET /me/contactFolders/{id}/contacts/delta; the stand-in
                # answers the documented path only.
                return 400, {"error": {"code": "BadRequest", "message": "Resource not found for the segment 'delta'.",
                                       "innerError": {"date": iso_s_z(STORE.now()), "request-id": str(uuid.uuid4())}}}, []
            return 404, {"error": {"code": "ResourceNotFound", "message": "Resource not found."}}, []
        if m.group(1) != self.FOLDER:
            return 404, {"error": {"code": "ErrorItemNotFound", "message": "The specified object was not found in the store."}}, []
        if method != "GET":
            return 405, {"error": {"code": "Request_BadRequest", "message": "Method not allowed."}}, []
        # Prefer: odata.maxpagesize={x} sets the page size the client would like; the service
        # may page differently (server-driven paging): a page ends where @odata.nextLink says.
        size = 10
        pref = re.search(r"odata\.maxpagesize=(\d+)", headers.get("Prefer") or "")
        if pref:
            size = max(1, int(pref.group(1)))
        if short:
            size = min(size, short)
        base = "http://%s%s" % (host, path)
        if q.get("$skiptoken"):
            state = unb64(q["$skiptoken"])
            if not isinstance(state, dict):
                return 400, {"error": {"code": "badRequest", "message": "Invalid skip token."}}, []
        elif q.get("$deltatoken"):
            token = unb64(q["$deltatoken"])
            if not (isinstance(token, list) and len(token) == 2):
                return 400, {"error": {"code": "badRequest", "message": "Invalid delta token."}}, []
            since, generation = token
            if generation < self.generation:
                # "If the state token is expired, the service should respond with a 410 Gone ...
                # syncStateNotFound": the client starts a new full round.
                return 410, {"error": {"code": "syncStateNotFound", "message": "The sync state generation is not found. Please resync.",
                                       "innerError": {"date": iso_s_z(STORE.now()), "request-id": str(uuid.uuid4())}}}, []
            state = {"since": since, "upto": STORE.seq, "after": 0}
        else:
            state = {"since": None, "upto": STORE.seq, "after": 0}
        # A round lists the state as of its first request (upto); later changes are the next
        # round's. A round without a token lists every contact; with one, what changed since:
        # changed contacts whole, deleted ones as {"id", "@removed": {"reason": "deleted"}}.
        if state["since"] is None:
            keys = sorted(k for k, r in STORE.records.items() if self.state_at(r, state["upto"]) == "live")
        else:
            keys = sorted({k for seq, k, kind, ms in STORE.changes if state["since"] < seq <= state["upto"]})
        keys = [k for k in keys if k > state["after"]]
        chunk = keys[:size]
        values = []
        for k in chunk:
            r = STORE.records[k]
            if r["state"] == "live":
                values.append(self.render(r))
            else:
                values.append({"id": self.ident(r), "@removed": {"reason": "deleted"}})
        page = {"@odata.context": "https://graph.microsoft.com/v1.0/$metadata#Collection(contact)"}
        if len(keys) > size:
            page["@odata.nextLink"] = base + "?$skiptoken=" + b64(dict(state, after=chunk[-1]))
        else:
            page["@odata.deltaLink"] = base + "?$deltatoken=" + b64([state["upto"], self.generation])
        page["value"] = values
        return 200, page, []

    @staticmethod
    def state_at(r, upto):
        # A contact deleted after the round began is still listed whole in it.
        if r["state"] == "live":
            return "live"
        last = max((seq for seq, k, kind, ms in STORE.changes if k == r["key"] and kind == "deleted"), default=0)
        return "live" if last > upto else r["state"]


class Google(API):
    # https://developers.google.com/calendar/api/v3/reference/events/list
    # https://developers.google.com/calendar/api/guides/sync
    # https://developers.google.com/calendar/api/guides/errors
    name, noun, default_delete = "google", "Event", "cancel"
    rate_prefix = "/calendar/v3/"
    shortens = True

    def __init__(self, token):
        super().__init__(token)
        self.generation = 0  # tokens of an older generation have expired

    def ident(self, r):
        # Event ids use base32hex characters (a-v and 0-9).
        return "ev%08d" % r["key"]

    def version(self, r):
        return iso_ms_z(r["modified"])

    def unauthorized(self):
        return 401, {"error": {"code": 401, "message": "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
                               "errors": [{"message": "Login Required.", "domain": "global", "reason": "required", "location": "Authorization", "locationType": "header"}],
                               "status": "UNAUTHENTICATED"}}, []

    def render(self, r, incremental):
        etag = '"%d"' % (3400000000000000 + r["seq"])
        if r["state"] != "live":
            # A cancelled event: status cancelled; in an incremental sync only kind, etag, id
            # and status are guaranteed.
            return {"kind": "calendar#event", "etag": etag, "id": self.ident(r), "status": "cancelled"}
        start = utc(START_MS + r["key"] * 3600000)
        return {"kind": "calendar#event", "etag": etag, "id": self.ident(r), "status": "confirmed",
                "htmlLink": "https://www.google.com/calendar/event?eid=%s" % self.ident(r),
                "created": iso_ms_z(r["created"]), "updated": iso_ms_z(r["modified"]), "summary": self.record_name(r),
                "creator": {"email": "ferry@example.com", "self": True}, "organizer": {"email": "ferry@example.com", "self": True},
                "start": {"dateTime": start.strftime("%Y-%m-%dT%H:%M:%SZ"), "timeZone": "UTC"},
                "end": {"dateTime": (start + datetime.timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%M:%SZ"), "timeZone": "UTC"},
                "iCalUID": "%s@google.com" % self.ident(r), "sequence": r["rev"], "reminders": {"useDefault": True}, "eventType": "default"}

    def error(self, status, reason, message, domain="global"):
        return status, {"error": {"errors": [{"domain": domain, "reason": reason, "message": message}], "code": status, "message": message}}, []

    def handle(self, method, path, q, body, headers, host, short=None):
        m = re.fullmatch(r"/calendar/v3/calendars/([^/]+)/events", path)
        if not m or method != "GET":
            return self.error(404, "notFound", "Not Found")
        if m.group(1) not in ("primary", "ferry%40example.com", "ferry@example.com"):
            return self.error(404, "notFound", "Not Found")
        try:
            per = int(q.get("maxResults", 250))
        except ValueError:
            return self.error(400, "invalid", "Invalid value for: maxResults")
        # maxResults: default 250, at most 2500; "the number of events in the resulting page may
        # be less than this value, or none at all, even if there are more events matching the
        # query. Incomplete pages can be detected by a non-empty nextPageToken field".
        per = max(1, min(per, 2500))
        if short:
            per = min(per, short)
        show_deleted = q.get("showDeleted") == "true"
        if q.get("syncToken"):
            # "There are several query parameters that cannot be specified together with
            # nextSyncToken ... iCalUID, orderBy, privateExtendedProperty, q,
            # sharedExtendedProperty, timeMin, timeMax, updatedMin"; and "it is not allowed to set
            # showDeleted to False" with a syncToken.
            for p in ("iCalUID", "orderBy", "privateExtendedProperty", "q", "sharedExtendedProperty", "timeMin", "timeMax", "updatedMin"):
                if p in q:
                    return self.error(400, "invalid", "Sync token cannot be used with other request restrictions.")
            if q.get("showDeleted") == "false":
                return self.error(400, "invalid", "Sync token cannot be used with showDeleted=false.")
        base_q = {k: v for k, v in q.items() if k not in ("pageToken",)}
        if q.get("pageToken"):
            state = unb64(q["pageToken"])
            if not isinstance(state, dict):
                return self.error(400, "invalid", "Invalid Value")
        elif q.get("syncToken"):
            token = unb64(q["syncToken"])
            if not (isinstance(token, list) and len(token) == 2):
                return self.error(400, "invalid", "Invalid sync token value.")
            since, generation = token
            if generation < self.generation:
                # "If the syncToken expires, the server will respond with a 410 GONE response
                # code and the client should clear its storage and perform a full
                # synchronization without any syncToken."
                return self.error(410, "fullSyncRequired", "Sync token is no longer valid, a full sync is required.", "calendar")
            state = {"since": since, "upto": STORE.seq, "after": 0, "q": base_q}
        else:
            state = {"since": None, "upto": STORE.seq, "after": 0, "q": base_q}
        if state["since"] is None:
            # A full listing: cancelled events only with showDeleted=true.
            keys = sorted(k for k, r in STORE.records.items() if r["state"] == "live" or (show_deleted and r["state"] == "cancel"))
            incremental = False
        else:
            # "Deletions since the previous list request will always be in the result set"
            keys = sorted({k for seq, k, kind, ms in STORE.changes if state["since"] < seq <= state["upto"]})
            incremental = True
        keys = [k for k in keys if k > state["after"]]
        chunk = keys[:per]
        page = {"kind": "calendar#events", "etag": '"p3%012d"' % STORE.seq, "summary": "ferry@example.com", "description": "",
                "updated": iso_ms_z(STORE.now()), "timeZone": "UTC", "accessRole": "owner", "defaultReminders": []}
        if len(keys) > per:
            page["nextPageToken"] = b64(dict(state, after=chunk[-1]))
        else:
            # "nextSyncToken ... Omitted if further results are available, in which case
            # nextPageToken is provided."
            page["nextSyncToken"] = b64([state["upto"], self.generation])
        page["items"] = [self.render(STORE.records[k], incremental) for k in chunk]
        return 200, page, []


class HubSpot(API):
    # https://developers.hubspot.com/docs/api/crm/contacts
    # https://developers.hubspot.com/docs/api/crm/search
    # https://developers.hubspot.com/docs/api/usage-details
    name, noun, default_delete = "hubspot", "Contact", "archive"
    rate_prefix = "/crm/v3/"

    def ident(self, r):
        return str(1000 + r["key"])

    def version(self, r):
        return iso_ms_z(r["modified"])

    def unauthorized(self):
        return 401, {"status": "error", "message": "Authentication credentials not found. This API supports OAuth 2.0 authentication and you can find more details at https://developers.hubspot.com/docs/methods/auth/oauth-overview",
                     "correlationId": str(uuid.uuid4()), "category": "INVALID_AUTHENTICATION"}, []

    def render(self, r, props):
        everything = {"createdate": iso_ms_z(r["created"]), "email": "contact%d@example.com" % r["key"], "firstname": self.record_name(r),
                      "hs_object_id": self.ident(r), "lastmodifieddate": iso_ms_z(r["modified"]), "lastname": "Contact"}
        # Without properties, a list answers createdate, email, firstname, hs_object_id,
        # lastmodifieddate and lastname; properties names those wanted (unknown ones are left out).
        wanted = props or list(everything)
        out = {"id": self.ident(r), "properties": {p: everything.get(p) for p in wanted if p in everything or props},
               "createdAt": iso_ms_z(r["created"]), "updatedAt": iso_ms_z(r["modified"]), "archived": r["state"] != "live"}
        out["properties"].setdefault("hs_object_id", self.ident(r))
        if r["state"] != "live":
            out["archivedAt"] = iso_ms_z(r["modified"])
        return out

    def error(self, status, message, category="VALIDATION_ERROR"):
        return status, {"status": "error", "message": message, "correlationId": str(uuid.uuid4()), "category": category}, []

    def handle(self, method, path, q, body, headers, host):
        if path == "/crm/v3/objects/contacts" and method == "GET":
            try:
                limit = int(q.get("limit", 10))
            except ValueError:
                return self.error(400, "Invalid input JSON on line 1")
            # limit: "The maximum number of results to display per page." (at most 100)
            if not 1 <= limit <= 100:
                return self.error(400, "limit must be between 1 and 100")
            archived = q.get("archived") == "true"
            props = [p for p in (q.get("properties") or "").split(",") if p]
            rows = sorted((r for r in STORE.records.values() if (r["state"] != "live") == archived and r["state"] != "delete"),
                          key=lambda r: r["key"])
            if q.get("after"):
                if not q["after"].isdigit():
                    return self.error(400, "Invalid paging cursor: %s" % q["after"])
                rows = [r for r in rows if int(self.ident(r)) >= int(q["after"])]
            chunk = rows[:limit]
            page = {"results": [self.render(r, props) for r in chunk]}
            if len(rows) > limit:
                after = self.ident(rows[limit])
                page["paging"] = {"next": {"after": after, "link": "http://%s%s?%s" % (host, path, urlencode(dict(q, after=after)))}}
            return 200, page, []
        if path == "/crm/v3/objects/contacts/search" and method == "POST":
            try:
                req = json.loads(body or b"{}")
            except ValueError:
                return self.error(400, "Invalid input JSON on line 1, column 1")
            limit = req.get("limit", 10)
            # Search: "a maximum of 200 objects per page"; "you can only page through up to 10,000
            # total results"; paging by after; total counts every match.
            if not isinstance(limit, int) or not 1 <= limit <= 200:
                return self.error(400, "limit must be between 1 and 200")
            rows = [r for r in STORE.records.values() if r["state"] == "live"]
            groups = req.get("filterGroups") or []
            tests = []
            for g in groups:
                conds = []
                for f in g.get("filters", []):
                    prop, op, val = f.get("propertyName"), f.get("operator"), f.get("value")
                    if prop not in ("lastmodifieddate", "createdate", "hs_lastmodifieddate", "hs_object_id"):
                        return self.error(400, "There was a problem with the request.")
                    if val is None:
                        return self.error(400, "Filter value is required for operator %s" % op)
                    mark = int(val) if str(val).isdigit() else parse_iso(str(val))
                    if mark is None:
                        return self.error(400, "Could not parse %s for property %s" % (val, prop))
                    field = {"createdate": "created", "hs_object_id": "key"}.get(prop, "modified")
                    if field == "key":
                        mark = mark - 1000
                    fn = {"GT": lambda a, b: a > b, "GTE": lambda a, b: a >= b, "LT": lambda a, b: a < b, "LTE": lambda a, b: a <= b,
                          "EQ": lambda a, b: a == b}.get(op)
                    if fn is None:
                        return self.error(400, "Unsupported operator %s" % op)
                    conds.append(lambda r, fn=fn, field=field, mark=mark: fn(r[field], mark))
                tests.append(conds)
            if tests:
                rows = [r for r in rows if any(all(c(r) for c in conds) for conds in tests)]
            sorts = req.get("sorts") or []
            if sorts:
                s = sorts[0] if isinstance(sorts[0], dict) else {"propertyName": str(sorts[0]).lstrip("-"),
                                                                  "direction": "DESCENDING" if str(sorts[0]).startswith("-") else "ASCENDING"}
                field = {"createdate": "created", "hs_object_id": "key"}.get(s.get("propertyName"), "modified")
                rows.sort(key=lambda r: (r[field], r["key"]), reverse=s.get("direction") == "DESCENDING")
            else:
                rows.sort(key=lambda r: r["key"])
            after = int(req.get("after") or 0)
            if after + limit > 10000:
                return self.error(400, "The maximum number of results that can be returned by the search API is 10000.")
            chunk = rows[after:after + limit]
            page = {"total": len(rows), "results": [self.render(r, req.get("properties") or []) for r in chunk]}
            if after + limit < len(rows):
                page["paging"] = {"next": {"after": str(after + limit)}}
            return 200, page, []
        m = re.fullmatch(r"/crm/v3/objects/contacts/(\d+)", path)
        if m and method == "DELETE":
            r = next((r for r in STORE.records.values() if self.ident(r) == m.group(1)), None)
            if r is not None and r["state"] == "live":
                STORE.remove(r["key"], "archive")  # "Move an Object identified by {contactId} to the recycling bin."
            return 204, None, []
        return 404, {"status": "error", "message": "Unable to infer object type from: %s" % path, "category": "OBJECT_NOT_FOUND"}, []


# ---- a small GraphQL reader (enough of the October 2021 spec for queries) ----------------------

class GQLError(Exception):
    def __init__(self, message, line=1, column=1):
        super().__init__(message)
        self.line, self.column = line, column


class GQLField:
    def __init__(self, name, alias, arguments, selections, line, column):
        self.name, self.alias, self.arguments, self.selections = name, alias, arguments, selections
        self.line, self.column = line, column

    def locations(self):
        return [{"line": self.line, "column": self.column}]

    def args(self, variables):
        return {k: gql_value(v, variables) for k, v in self.arguments.items()}


def gql_value(v, variables):
    kind, x = v
    if kind == "var":
        return variables.get(x)
    if kind == "list":
        return [gql_value(i, variables) for i in x]
    if kind == "object":
        return {k: gql_value(i, variables) for k, i in x.items()}
    return x


def gql_undefined(type_name, field, path):
    return {"path": list(path) + [field.alias or field.name], "extensions": {"code": "undefinedField", "typeName": type_name, "fieldName": field.name},
            "locations": field.locations(), "message": "Field '%s' doesn't exist on type '%s'" % (field.name, type_name)}


def gql_select(obj, selections, type_name, errors, path):
    out = {}
    for s in selections:
        if s.name in obj:
            out[s.alias or s.name] = obj[s.name]
        else:
            errors.append(gql_undefined(type_name, s, path))
    return out


class GQLParser:
    TOKEN = re.compile(r'[\s,\ufeff]+|#[^\n]*|(?P<p>\.\.\.|[!$&()\:=@\[\]{|}])|(?P<n>[_A-Za-z][_0-9A-Za-z]*)|'
                       r'(?P<num>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|(?P<s>"(?:[^"\\\n]|\\.)*")')

    def __init__(self, text):
        self.tokens = []
        pos = 0
        while pos < len(text):
            m = self.TOKEN.match(text, pos)
            if not m:
                line = text.count("\n", 0, pos) + 1
                raise GQLError("Parse error on \"%s\" (error)" % text[pos], line, pos - text.rfind("\n", 0, pos))
            line = text.count("\n", 0, pos) + 1
            col = pos - text.rfind("\n", 0, pos)
            for kind in ("p", "n", "num", "s"):
                if m.group(kind) is not None:
                    self.tokens.append((kind, m.group(kind), line, col))
            pos = m.end()
        self.i = 0
        self.variables = {}
        self.uses = {}
        self.arg_stack = []

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else ("eof", "", 1, 1)

    def take(self, value=None, kind=None):
        tok = self.peek()
        if (value is not None and tok[1] != value) or (kind is not None and tok[0] != kind) or tok[0] == "eof":
            raise GQLError('Parse error on "%s" (%s) at [%d, %d]' % (tok[1] or "end of file", tok[0].upper(), tok[2], tok[3]), tok[2], tok[3])
        self.i += 1
        return tok

    def document(self):
        tok = self.peek()
        if tok[1] == "query":
            self.take()
            if self.peek()[0] == "n":
                self.take()
            if self.peek()[1] == "(":
                self.take("(")
                while self.peek()[1] != ")":
                    self.take("$")
                    name = self.take(kind="n")[1]
                    self.take(":")
                    self.variables[name] = self.type_ref()
                    if self.peek()[1] == "=":
                        self.take("=")
                        self.value()
                self.take(")")
        elif tok[1] in ("mutation", "subscription", "fragment"):
            raise GQLError("The stand-in reads queries only", tok[2], tok[3])
        self.selections = self.selection_set()
        if self.peek()[0] != "eof":
            tok = self.peek()
            raise GQLError('Parse error on "%s" at [%d, %d]' % (tok[1], tok[2], tok[3]), tok[2], tok[3])
        return self

    def type_ref(self):
        if self.peek()[1] == "[":
            self.take("[")
            inner = self.type_ref()
            self.take("]")
            t = "[%s]" % inner
        else:
            t = self.take(kind="n")[1]
        if self.peek()[1] == "!":
            self.take("!")
            t += "!"
        return t

    def selection_set(self):
        self.take("{")
        out = []
        while self.peek()[1] != "}":
            _, name, line, col = self.take(kind="n")
            alias = None
            if self.peek()[1] == ":":
                self.take(":")
                alias, name = name, self.take(kind="n")[1]
            args = {}
            if self.peek()[1] == "(":
                self.take("(")
                while self.peek()[1] != ")":
                    an = self.take(kind="n")[1]
                    self.take(":")
                    self.arg_stack.append(an)
                    args[an] = self.value()
                    self.arg_stack.pop()
                self.take(")")
            subs = self.selection_set() if self.peek()[1] == "{" else []
            out.append(GQLField(name, alias, args, subs, line, col))
        self.take("}")
        return out

    def value(self):
        kind, text, line, col = self.peek()
        if text == "$" and kind == "p":
            self.take()
            name = self.take(kind="n")[1]
            self.uses.setdefault(name, []).append((self.arg_stack[-1] if self.arg_stack else "", {"line": line, "column": col}))
            return ("var", name)
        if text == "[":
            self.take()
            items = []
            while self.peek()[1] != "]":
                items.append(self.value())
            self.take("]")
            return ("list", items)
        if text == "{":
            self.take()
            obj = {}
            while self.peek()[1] != "}":
                k = self.take(kind="n")[1]
                self.take(":")
                self.arg_stack.append(k)
                obj[k] = self.value()
                self.arg_stack.pop()
            self.take("}")
            return ("object", obj)
        self.take()
        if kind == "num":
            return ("const", float(text) if re.search(r"[.eE]", text) else int(text))
        if kind == "s":
            return ("const", json.loads(text))
        if kind == "n":
            return ("const", {"true": True, "false": False, "null": None}.get(text, text))
        raise GQLError('Parse error on "%s"' % text, line, col)


# ---- the server ------------------------------------------------------------------------------

APIS = {"wordpress": WordPress, "jira": Jira, "stripe": Stripe, "notion": Notion, "github": GitHub,
        "msgraph": MSGraph, "google": Google, "hubspot": HubSpot}
API_OBJ = [None]
FAULTS = []      # [{"kind", "from", "to", "status", "size"}] in request numbers
SCHEDULE = []    # [(request number, ops)]
REQUESTS = [0]
LOG = []


def apply_ops(ops):
    api = API_OBJ[0]
    done = []
    for op in ops:
        kind = op.get("op")
        if kind == "create":
            done += [STORE.create() for _ in range(int(op.get("count", 1)))]
        elif kind == "update":
            done += [k for k in op.get("keys", []) for _ in range(int(op.get("times", 1))) if STORE.update(k)]
        elif kind == "delete":
            how = op.get("how") or api.default_delete
            done += [k for k in op.get("keys", []) if STORE.remove(k, how)]
    return done


class Handler(http_core.Handler):
    methods = {"GET", "POST", "DELETE", "PATCH", "PUT"}

    def send(self, status, obj, headers=()):
        if obj is None:
            return self.write_response(status, list(headers))
        body = json.dumps(obj, ensure_ascii=False).encode()
        self.write_response(status, [("Content-Type", "application/json; charset=utf-8")] + list(headers), body)

    def dispatch(self):
        parts = urlsplit(self.path)
        path = parts.path
        q = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        if path.startswith("/admin/"):
            return self.admin(path, q)
        api = API_OBJ[0]
        with STORE.lock:
            REQUESTS[0] += 1
            n = REQUESTS[0]
            due = [ops for at, ops in SCHEDULE if at == n]
            SCHEDULE[:] = [(at, ops) for at, ops in SCHEDULE if at != n]
            for ops in due:
                apply_ops(ops)
            fault = next((f for f in FAULTS if f["from"] <= n < f["to"]), None)
            entry = {"n": n, "method": self.command, "path": path, "query": parts.query, "status": None}
            LOG.append(entry)
            del LOG[:-500]
            if fault and fault["kind"] == "reset":
                entry["status"] = "reset"
                return self.reset()
            if fault and fault["kind"] == "status":
                entry["status"] = fault["status"]
                return self.send(fault["status"], {"error": "failing on purpose"})
            if fault and fault["kind"] in ("ratelimit", "secondary"):
                status, obj, headers = api.rate_limited(fault["kind"])
                entry["status"] = status
                return self.send(status, obj, headers)
            if not api.authorized(self.headers) and not (api.name == "wordpress" and not self.headers.get("Authorization")):
                status, obj, headers = api.unauthorized()
                entry["status"] = status
                return self.send(status, obj, headers)
            short = fault["size"] if fault and fault["kind"] == "short" and api.shortens else None
            host = self.headers.get("Host") or "127.0.0.1"
            if api.shortens:
                status, obj, headers = api.handle(self.command, path, q, self.body, self.headers, host, short=short)
            else:
                status, obj, headers = api.handle(self.command, path, q, self.body, self.headers, host)
            entry["status"] = status
        self.send(status, obj, headers)

    def admin(self, path, q):
        api = API_OBJ[0]
        try:
            body = json.loads(self.body or b"{}")
        except ValueError:
            return self.send(400, {"error": "body is not JSON"})
        with STORE.lock:
            if path == "/admin/live":
                return self.send(200, api.live())
            if path == "/admin/gone":
                return self.send(200, [{"key": r["key"], "id": str(api.ident(r)), "how": r["state"]}
                                       for r in sorted(STORE.records.values(), key=lambda r: r["key"]) if not api.visible(r)])
            if path == "/admin/stats":
                return self.send(200, {"requests": REQUESTS[0], "seq": STORE.seq, "clock": iso_ms_z(STORE.now())})
            if path == "/admin/requests":
                return self.send(200, LOG)
            if path == "/admin/create":
                return self.send(200, {"created": apply_ops([{"op": "create", "count": body.get("count", 1)}])})
            if path == "/admin/update":
                return self.send(200, {"updated": apply_ops([{"op": "update", "keys": body.get("keys", []), "times": body.get("times", 1)}])})
            if path == "/admin/delete":
                return self.send(200, {"deleted": apply_ops([{"op": "delete", "keys": body.get("keys", []), "how": body.get("how")}])})
            if path == "/admin/clock":
                if "freeze" in body:
                    STORE.frozen = bool(body["freeze"])
                if "step_ms" in body:
                    STORE.step = int(body["step_ms"])
                STORE.clock += int(body.get("advance_ms", 0))
                return self.send(200, {"clock": iso_ms_z(STORE.now()), "frozen": STORE.frozen, "step_ms": STORE.step})
            if path == "/admin/schedule":
                if body.get("clear"):
                    SCHEDULE.clear()
                    FAULTS.clear()
                    return self.send(200, {"cleared": True})
                at = REQUESTS[0] + int(body.get("at", 1))
                SCHEDULE.append((at, body.get("ops", [])))
                return self.send(200, {"at_request": at})
            if path == "/admin/fault":
                start = REQUESTS[0] + int(body.get("at", 1))
                kind = body.get("kind", "status")
                FAULTS.append({"kind": kind, "from": start, "to": start + int(body.get("count", 1)),
                               "status": int(body.get("status", 503)), "size": int(body.get("size", 7))})
                applies = kind != "short" or api.shortens
                return self.send(200, {"from_request": start, "applies": applies, "short": api.shortens if kind == "short" else None})
            if path == "/admin/expire":
                if isinstance(api, (MSGraph, Google)):
                    api.generation += 1
                    return self.send(200, {"expired": True})
                if isinstance(api, Stripe):
                    STORE.clock += 31 * 86400000
                    return self.send(200, {"expired": True, "clock": iso_ms_z(STORE.now())})
                return self.send(200, {"expired": False})
        self.send(404, {"error": "no such admin endpoint"})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--api", required=True, choices=sorted(APIS))
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--count", type=int, default=150)
    ap.add_argument("--token", default="secret")
    ap.add_argument("--jira-legacy-removed", action="store_true",
                    help="answer GET /rest/api/3/search with 410 Gone, as Jira Cloud does since CHANGE-2046")
    ap.add_argument("--jira-user-offset-minutes", type=int, default=0, help="the Jira user's time zone, for JQL dates")
    args = ap.parse_args()
    api = APIS[args.api](args.token)
    if isinstance(api, Jira):
        api.legacy_removed = args.jira_legacy_removed
        api.user_offset_minutes = args.jira_user_offset_minutes
    API_OBJ[0] = api
    for _ in range(args.count):
        STORE.create()
    http_core.handle_signals()
    http_core.serve(http_core.Server(Handler, args.port))


if __name__ == "__main__":
    main()
