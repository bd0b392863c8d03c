"""API-shaped listings for json_pages_server.py: the same items, paged, filtered and
reporting deletions the way each API documents it, for the panel of real API shapes
(Tests/FerryKitTests/Remote/JSON/APIShapePanelTests.swift) and the examples in
etc/ferry/examples/.

Every shape answers `answer(shape, method, path, q, body, host, items)` with (status, object,
headers) or None when the path is not its own; `items` are the server's items sorted by
(updated_at, id), soft-deleted ones (`"deleted": true`) included, which only the APIs that
report deletions show (as their tombstones). `expected(shape, items)` is what a replica of
that shape must hold: [[id, version], ...] of the live items, in the shape's own id form.

  shape        path                                                   pages by
  gitlab       GET /api/v4/projects/1/issues                         Link rel=next, X-Next-Page
  shopify      GET /admin/api/2024-01/products.json                  Link rel=next with page_info
  zendesk      GET /api/v2/incremental/tickets/cursor.json           after_url until end_of_stream
  hubspot      GET /crm/v3/objects/contacts                          paging.next.after
  airtable     GET /v0/appFerry/Table                                offset in the page
  salesforce   GET /services/data/v59.0/query?q=SOQL                 nextRecordsUrl until done
  google       GET /calendar/v3/calendars/primary/events             nextPageToken, then nextSyncToken
  stripe       GET /v1/customers                                     starting_after=<last id>, has_more
"""

import base64
import json
import re
from urllib.parse import quote, urlencode

SHAPES = ("gitlab", "shopify", "zendesk", "hubspot", "airtable", "salesforce", "google", "stripe")


def seconds(text):
    return text.replace(" ", "T").rstrip("Z")[:19]


def unix(text):
    """The server's stamps (2024-01-01T00:00:00.000123) as Unix seconds with the counter in
    the fraction, so they keep their order."""
    fraction = int(text[20:26]) if len(text) > 19 else 0
    return 1704067200 + fraction


def ident(shape, item):
    i = item["id"]
    return {"hubspot": str(i), "airtable": "rec%014d" % i, "salesforce": "001%015d" % i,
            "google": "evt%d" % i, "stripe": "cus_%08d" % i}.get(shape, i)


def version(shape, item):
    if shape == "stripe":
        # Stripe's objects have no update time: the replica's version is Ferry's digest of
        # the object (version-field = none), FNV-1a 64 over its JSON without whitespace.
        digest = 0xcbf29ce484222325
        for byte in json.dumps(stripe_customer(item), ensure_ascii=False, separators=(",", ":")).encode():
            digest = ((digest ^ byte) * 0x100000001b3) & 0xffffffffffffffff
        return "%016x" % digest
    return str(unix(item["updated_at"])) if shape == "zendesk" else item["updated_at"]


def expected(shape, items):
    return [[str(ident(shape, it)), version(shape, it)] for it in items if not it.get("deleted")]


def live(items):
    return [it for it in items if not it.get("deleted")]


def token(value):
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def untoken(text):
    return json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def answer(shape, method, path, q, body, host, items):
    handler = globals()["_" + shape]
    return handler(method, path, q, body, "http://%s" % host, items)


def _gitlab(method, path, q, body, base, items):
    if path != "/api/v4/projects/1/issues":
        return None
    per = min(int(q.get("per_page", 20)), 100)
    page = int(q.get("page", 1))
    rows = live(items)
    if q.get("updated_after"):
        rows = [it for it in rows if it["updated_at"] >= q["updated_after"].rstrip("Z")]
    pages = max(1, -(-len(rows) // per))
    chunk = rows[(page - 1) * per: page * per]
    issues = [{"id": it["id"], "iid": it["id"], "project_id": 1, "title": it["name"], "updated_at": it["updated_at"]}
              for it in chunk]
    headers = [("X-Total", str(len(rows))), ("X-Total-Pages", str(pages)), ("X-Page", str(page)),
               ("X-Next-Page", str(page + 1) if page < pages else "")]
    if page < pages:
        rest = {k: v for k, v in q.items() if k != "page"}
        headers.append(("Link", '<%s%s?%s>; rel="next"' % (base, path, urlencode(dict(rest, page=page + 1)))))
    return 200, issues, headers


def _shopify(method, path, q, body, base, items):
    if path != "/admin/api/2024-01/products.json":
        return None
    limit = min(int(q.get("limit", 50)), 250)
    if q.get("page_info"):
        # Shopify refuses any filter beside page_info: the cursor carries them.
        if set(q) - {"page_info", "limit"}:
            return 400, {"errors": "page_info cannot be combined with other parameters"}, []
        state = untoken(q["page_info"])
    else:
        state = {"after": None, "min": q.get("updated_at_min")}
    rows = live(items)
    if state["min"]:
        rows = [it for it in rows if it["updated_at"] >= state["min"].rstrip("Z")]
    if state["after"]:
        rows = [it for it in rows if (it["updated_at"], it["id"]) > tuple(state["after"])]
    chunk = rows[:limit]
    products = [{"id": it["id"], "title": it["name"], "updated_at": it["updated_at"]} for it in chunk]
    headers = []
    if len(rows) > limit:
        last = chunk[-1]
        info = token({"after": [last["updated_at"], last["id"]], "min": state["min"]})
        headers.append(("Link", '<%s%s?limit=%d&page_info=%s>; rel="next"' % (base, path, limit, info)))
    return 200, {"products": products}, headers


def _zendesk(method, path, q, body, base, items):
    if path != "/api/v2/incremental/tickets/cursor.json":
        return None
    per = 100
    if q.get("cursor"):
        after = untoken(q["cursor"])
    elif q.get("start_time") is not None:
        after = [int(q["start_time"]) - 1, 1 << 62]
    else:
        return 400, {"error": "InvalidPaginationParameter", "description": "start_time or cursor is required"}, []
    rows = [it for it in items if (unix(it["updated_at"]), it["id"]) > tuple(after)]
    chunk = rows[:per]
    tickets = [{"id": it["id"], "subject": it["name"], "status": "deleted" if it.get("deleted") else "open",
                "generated_timestamp": unix(it["updated_at"])} for it in chunk]
    last = [unix(chunk[-1]["updated_at"]), chunk[-1]["id"]] if chunk else after
    cursor = token(last)
    return 200, {"tickets": tickets, "after_cursor": cursor, "before_cursor": None,
                 "after_url": "%s%s?cursor=%s" % (base, path, cursor), "end_of_stream": len(rows) <= per}, []


def _hubspot(method, path, q, body, base, items):
    if path != "/crm/v3/objects/contacts":
        return None
    limit = min(int(q.get("limit", 10)), 100)
    rows = live(items)
    start = 0
    if q.get("after"):
        start = next((n + 1 for n, it in enumerate(rows) if str(it["id"]) == q["after"]), len(rows))
    chunk = rows[start:start + limit]
    results = [{"id": str(it["id"]), "properties": {"firstname": it["name"], "lastmodifieddate": it["updated_at"]},
                "createdAt": "2024-01-01T00:00:00Z", "updatedAt": it["updated_at"], "archived": False} for it in chunk]
    page = {"results": results}
    if start + limit < len(rows):
        after = str(chunk[-1]["id"])
        page["paging"] = {"next": {"after": after, "link": "%s%s?after=%s" % (base, path, after)}}
    return 200, page, []


def _airtable(method, path, q, body, base, items):
    if path != "/v0/appFerry/Table":
        return None
    size = min(int(q.get("pageSize", 100)), 100)
    rows = live(items)
    start = 0
    if q.get("offset"):
        try:
            start = untoken(q["offset"])
        except ValueError:
            return 422, {"error": {"type": "LIST_RECORDS_ITERATOR_NOT_AVAILABLE"}}, []
    chunk = rows[start:start + size]
    records = [{"id": "rec%014d" % it["id"], "createdTime": "2024-01-01T00:00:00.000Z",
                "fields": {"Name": it["name"], "Last Modified": it["updated_at"]}} for it in chunk]
    page = {"records": records}
    if start + size < len(rows):
        page["offset"] = token(start + size)
    return 200, page, []


SOQL_SINCE = re.compile(r"SystemModstamp\s*>\s*(\S+)")


def _salesforce(method, path, q, body, base, items):
    prefix = "/services/data/v59.0/query"
    if not path.startswith(prefix):
        return None
    per = 100
    if path == prefix:
        soql = q.get("q", "")
        if "FROM Account" not in soql:
            return 400, [{"message": "sObject type is not supported", "errorCode": "INVALID_TYPE"}], []
        match = SOQL_SINCE.search(soql)
        since = match.group(1).rstrip("Z") if match else None
        start = 0
    else:
        state = untoken(path[len(prefix) + 1:])
        since, start = state["since"], state["start"]
    rows = live(items)
    if since:
        rows = [it for it in rows if it["updated_at"] > since]
    chunk = rows[start:start + per]
    records = [{"attributes": {"type": "Account", "url": "/services/data/v59.0/sobjects/Account/001%015d" % it["id"]},
                "Id": "001%015d" % it["id"], "Name": it["name"], "SystemModstamp": it["updated_at"]} for it in chunk]
    page = {"totalSize": len(rows), "done": start + per >= len(rows), "records": records}
    if not page["done"]:
        page["nextRecordsUrl"] = "%s/%s" % (prefix, token({"since": since, "start": start + per}))
    return 200, page, []


def _google(method, path, q, body, base, items):
    if path != "/calendar/v3/calendars/primary/events":
        return None
    per = min(int(q.get("maxResults", 250)), 2500)
    if q.get("pageToken"):
        state = untoken(q["pageToken"])
    elif q.get("syncToken"):
        since = untoken(q["syncToken"])
        if since.get("expired"):
            return 410, {"error": {"code": 410, "message": "Sync token is no longer valid, a full sync is required.",
                                   "errors": [{"domain": "calendar", "reason": "fullSyncRequired"}]}}, []
        state = {"since": since["stamp"], "start": 0}
    else:
        state = {"since": None, "start": 0}
    if state["since"]:
        rows = [it for it in items if it["updated_at"] > state["since"]]
    else:
        rows = live(items)
    chunk = rows[state["start"]:state["start"] + per]
    events = [{"kind": "calendar#event", "id": "evt%d" % it["id"], "status": "cancelled" if it.get("deleted") else "confirmed",
               "summary": it["name"], "updated": it["updated_at"]} for it in chunk]
    page = {"kind": "calendar#events", "items": events}
    if state["start"] + per < len(rows):
        page["nextPageToken"] = token({"since": state["since"], "start": state["start"] + per})
    else:
        newest = max((it["updated_at"] for it in items), default="2024-01-01T00:00:00.000000")
        page["nextSyncToken"] = token({"stamp": newest})
    return 200, page, []


def stripe_customer(item):
    return {"id": "cus_%08d" % item["id"], "object": "customer", "created": 1704067200 + item["id"],
            "email": "customer%d@example.com" % item["id"], "name": item["name"], "livemode": False,
            "metadata": {"revision": str(item.get("rev", 0))}}


def _stripe(method, path, q, body, base, items):
    """Newest created first; starting_after names the last object of the page before, which
    may have been deleted since (the order is by creation, so the place stays known)."""
    if path != "/v1/customers":
        return None
    limit = min(int(q.get("limit", 10)), 100)
    rows = sorted(live(items), key=lambda it: -it["id"])
    if q.get("starting_after"):
        after = q["starting_after"]
        if not re.fullmatch(r"cus_\d{8}", after):
            return 400, {"error": {"type": "invalid_request_error", "code": "resource_missing",
                                   "param": "starting_after", "message": "No such customer: '%s'" % after}}, []
        rows = [it for it in rows if it["id"] < int(after[4:])]
    chunk = rows[:limit]
    return 200, {"object": "list", "url": "/v1/customers", "has_more": len(rows) > limit,
                 "data": [stripe_customer(it) for it in chunk]}, []


def rate_limited(path, now):
    """How the API serving `path` says "too many requests", as its documentation shows it:
    (status, object, headers), waits of a second where the API names one."""
    reset = str(int(now) + 1)
    answers = [
        ("/api/v4/", (429, "Retry later", [("RateLimit-Remaining", "0"), ("RateLimit-Reset", reset)])),
        ("/admin/api/", (429, {"errors": "Exceeded 2 calls per second for api client. Reduce request rates to resume uninterrupted service."},
                         [("Retry-After", "1.0")])),
        ("/api/v2/incremental/", (429, {"error": "APIRateLimitExceeded", "description": "Number of allowed incremental export API requests per minute exceeded"},
                                  [("Retry-After", "1")])),
        ("/crm/v3/", (429, {"status": "error", "message": "You have reached your secondly limit.", "errorType": "RATE_LIMIT",
                            "policyName": "SECONDLY"}, [])),
        ("/v0/", (429, {"errors": [{"error": "RATE_LIMIT_REACHED", "message": "Rate limit exceeded. Please try again later"}]}, [])),
        ("/services/data/", (403, [{"message": "TotalRequests Limit exceeded.", "errorCode": "REQUEST_LIMIT_EXCEEDED"}], [])),
        ("/calendar/v3/", (403, {"error": {"errors": [{"domain": "usageLimits", "reason": "rateLimitExceeded", "message": "Rate Limit Exceeded"}],
                                           "code": 403, "message": "Rate Limit Exceeded"}}, [])),
        ("/v1/customers", (429, {"error": {"code": "rate_limit", "message": "Too many requests hit the API too quickly.",
                                           "type": "invalid_request_error"}}, [])),
        ("/jira/", (429, {"errorMessages": ["Rate limit exceeded."]}, [("Retry-After", "1"), ("X-RateLimit-Reset", "2027-01-15T08:00Z")])),
        ("/notion/", (429, {"object": "error", "status": 429, "code": "rate_limited",
                            "message": "You have been rate limited. Please try again in a few minutes."}, [("Retry-After", "1")])),
        ("/graph/", (429, {"error": {"code": "TooManyRequests", "message": "Please retry after 1 seconds."}}, [("Retry-After", "1")])),
        ("/graphql", (200, {"data": None, "errors": [{"type": "RATE_LIMITED", "message": "API rate limit exceeded for user ID 1."}]},
                      [("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", reset)])),
    ]
    for prefix, answer in answers:
        if path.startswith(prefix):
            return answer
    return 429, "Too Many Requests", [("Retry-After", "1")]
