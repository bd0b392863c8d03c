#!/usr/bin/env python3
"""Ferry test server: paginated JSON collections in the styles Ferry's json kind follows.

Stdlib only (Python 3.11+).  Binds 127.0.0.1 only.

    python3 json_pages_server.py [--port 0] [--count 250]

Prints exactly "PORT <n>" on stdout (flushed) once listening; serves until SIGTERM/SIGINT.
Threading, HTTP/1.1 keep-alive, TCP_NODELAY, no request logging (http_core.py).

The collection: `count` items {"id": <int>, "updated_at": "2024-01-01T00:00:00.000001"-style
increasing text, "name": ...}; items are sorted by (updated_at, id) everywhere.  Every listing
takes `since=<updated_at>` (only items with updated_at > since).

  GET /link?page=P&per_page=K      top-level JSON array; Link: <relative>; rel="next" (and
                                   rel="last") while more pages exist (GitHub style)
  GET /nexturl?page=P&per_page=K   {"items":[...],"next":"nexturl?page=.."|null,"total":N}
                                   (relative next URL)
  GET /cursor?after=T&limit=K      {"data":{"rows":[...]},"meta":{"next_token":T|null}}
  GET /ratelimited                 429 Retry-After: 3, X-RateLimit-Remaining: 0,
                                   X-RateLimit-Reset: now+3
  GET /exhausted?page=P&per_page=K like /link, but every page says X-RateLimit-Remaining: 0 and
                                   X-RateLimit-Reset: now+5
  GET /loop                        {"items":[...],"next":"loop"} (a chain pointing to itself)
  GET /loop2?step=N                step 1 links to step 2, step 2 back to step 1
  API-shaped listings (the same items, paged as each API documents it):
  GET /wp/posts?page=P&per_page=K  WordPress: a top-level array, X-WP-Total and X-WP-TotalPages;
                                   per_page capped at 100; a page past the last is 400
                                   rest_post_invalid_page_number
  GET /jira/search?startAt=S&maxResults=M
                                   Jira: {"startAt","maxResults","total","issues":[...]};
                                   maxResults capped at 50 whatever is asked
  GET /stripe/customers?limit=L&starting_after=ID
                                   Stripe: {"object":"list","data":[...],"has_more":bool};
                                   limit capped at 100
  GET /wp/posts?modified_after=T   WordPress's filter: whole seconds, exclusive
  POST /notion/query {"page_size","start_cursor","filter":{"last_edited_time":{"on_or_after"}}}
                                   Notion: {"object":"list","results":[...],"next_cursor","has_more"};
                                   on_or_after in whole seconds; a bad cursor is 400
  POST /graphql {"query":"...items...","variables":{"first","after","since"}}
                                   GraphQL: {"data":{"items":{"nodes":[...],"pageInfo":
                                   {"hasNextPage","endCursor"}}}}; a query without items is
                                   {"data":null,"errors":[...]}
  The shapes of api_shapes.py (GitLab, Shopify, Zendesk, HubSpot, Airtable, Salesforce,
  Google Calendar, Stripe) at their documented paths
  GET  /admin/expected?shape=S     [[id, version], ...] a replica of shape S must hold
  POST /admin/fail-next {"count": N, "status": S}
                                   the next N requests (any but /admin and /stats) answer S;
                                   429: the rate-limit answer of the API at that path, as it
                                   documents it (api_shapes.rate_limited: a 403 for Google and
                                   Salesforce, a 200 with errors for GraphQL)
  GET /headercursor?cursor=C&limit=L
                                   a top-level array; X-Next-Cursor while more follow
  POST /admin/softdelete {"ids":[...]}
                                   marks those items "deleted": true with a new updated_at: they
                                   stay in every listing, as tombstones
  GET /graph/delta?top=K[&$skiptoken=S][&$deltatoken=T]
                                   Microsoft Graph's delta query: {"value":[...]} paged by
                                   @odata.nextLink, the last page naming @odata.deltaLink; a
                                   delta link lists what changed since it, deleted items as
                                   {"id": i, "@removed": {...}}; an expired one is 410
  POST /admin/expire-deltas        every delta link handed out so far answers 410
  POST /admin/prepend-at {"request": N}
                                   when the N-th listing request arrives, first add an item that
                                   sorts before every other (a listing that moves while paged)
  POST /admin/fail-page {"page": N, "status": S}
                                   listing pages numbered N answer S until set to page 0
  The same items, writable (a REST API as Ferry's json writer expects one; ETag = the quoted
  updated_at):
  GET    /items?page=P&per_page=K  like /link
  GET    /items/<id>               the item, with its ETag; 404 when missing
  POST   /items                    creates an item from the JSON object (its id is assigned);
                                   201 with the item. An Idempotency-Key seen before answers its
                                   first answer again (201, the item as it was created, even if it
                                   was changed or deleted since) with Idempotent-Replayed: true,
                                   creating nothing, as Stripe documents it.
  PATCH  /items/<id>               merges a JSON merge patch (RFC 7396); PUT replaces the object
  DELETE /items/<id>               204; 404 when missing
  PATCH, PUT and DELETE honour If-Match (412 when it is not the item's ETag); a body with a
  member "invalid" is refused with 422 {"message": ...}
  POST /admin/update {"ids":[...]} gives those items a new, newest updated_at
  POST /admin/create {"count":N}   appends N new items
  GET /stats                       {"requests": n}
"""

import argparse
import hashlib
import json
import threading
import time
from urllib.parse import parse_qs, urlsplit

import api_shapes
import http_core

LOCK = threading.Lock()
ITEMS = {}
CLOCK = [0]
REQUESTS = [0]
NOT_MODIFIED = [0]
IDEMPOTENCY = {}


def stamp():
    CLOCK[0] += 1
    return "2024-01-01T00:00:00.%06d" % CLOCK[0]


def seconds_of(text):
    """A time in whole seconds, as an API whose filter counts seconds sees it."""
    return text.replace(" ", "T").rstrip("Z")[:19]


ISSUED = [0]  # the highest id ever given out
REUSE_IDS = [False]


def new_id():
    """The next record's id. Like most APIs (a sequence, never a freed number), unless the
    server runs with --reuse-ids: then like a table whose ids are max + 1, so a new record may
    take the id of one just deleted."""
    top = max(ITEMS, default=0)
    ISSUED[0] = top + 1 if REUSE_IDS[0] else max(ISSUED[0], top) + 1
    return ISSUED[0]


def add_item():
    i = new_id()
    ITEMS[i] = {"id": i, "updated_at": stamp(), "name": "item %d \u00e9" % i, "rev": 0}
    return i


PREPEND_AT = [None]
FAIL_PAGE = [0, 503]
FAIL_NEXT = [0, 503]  # the next N requests to an API shape fail with this status
DELTA_EXPIRED_BEFORE = [0]


def listing(q):
    since = q.get("since")
    with LOCK:
        if PREPEND_AT[0] is not None and REQUESTS[0] >= PREPEND_AT[0]:
            PREPEND_AT[0] = None
            i = new_id()
            ITEMS[i] = {"id": i, "updated_at": "2000-01-01T00:00:00.000000", "name": "early %d" % i, "rev": 0}
        items = sorted(ITEMS.values(), key=lambda it: (it["updated_at"], it["id"]))
        if since:
            items = [it for it in items if it["updated_at"] > since]
        return [dict(it) for it in items]


class Handler(http_core.Handler):
    server_header = True  # http.server's "BaseHTTP/0.6 Python/3.x"
    methods = {"GET", "POST", "PATCH", "PUT", "DELETE"}

    def send(self, status, obj, headers=()):
        body = json.dumps(obj, ensure_ascii=False).encode()
        self.write_response(status, [("Content-Type", "application/json; charset=utf-8")]
                            + list(headers), body)

    def dispatch(self):
        path = urlsplit(self.path).path
        if not path.startswith("/admin") and path != "/stats":
            with LOCK:
                failing = FAIL_NEXT[0] > 0
                if failing:
                    FAIL_NEXT[0] -= 1
            if failing and FAIL_NEXT[1] == 429:
                return self.send(*api_shapes.rate_limited(path, time.time()))
            if failing:
                return self.send(FAIL_NEXT[1], {"error": "failing on purpose"})
        if path.startswith("/items") and not (self.command == "GET" and path == "/items"):
            return self.items(path)
        if self.command == "POST":
            return self.post()
        self.get()

    @staticmethod
    def etag(item):
        return '"%s"' % item["updated_at"]

    def items(self, path):
        parts = path.strip("/").split("/")
        body = None
        if self.command in ("POST", "PATCH", "PUT"):
            try:
                body = json.loads(self.body or b"null")
            except ValueError:
                return self.send(400, {"message": "body is not JSON"})
            if not isinstance(body, dict):
                return self.send(400, {"message": "body must be a JSON object"})
            if "invalid" in body:
                return self.send(422, {"message": "Validation Failed: invalid is not allowed"})
        with LOCK:
            if len(parts) == 1 and self.command == "POST":
                key = self.headers.get("Idempotency-Key")
                if key and key in IDEMPOTENCY:
                    # As Stripe documents it (and the IETF Idempotency-Key draft): the first
                    # answer again, whatever happened to the item since, marked as a replay.
                    status, first, etag = IDEMPOTENCY[key]
                    return self.send(status, first, [("ETag", etag), ("Idempotent-Replayed", "true")])
                i = new_id()
                item = {k: v for k, v in body.items() if k not in ("id", "updated_at")}
                item.update({"id": i, "updated_at": stamp()})
                ITEMS[i] = item
                if key:
                    IDEMPOTENCY[key] = (201, dict(item), self.etag(item))
                return self.send(201, item, [("ETag", self.etag(item))])
            if len(parts) != 2 or not parts[1].isdigit():
                return self.send(404, {"message": "Not Found"})
            i = int(parts[1])
            item = ITEMS.get(i)
            if item is None:
                return self.send(404, {"message": "Not Found"})
            if self.command == "GET":
                return self.send(200, item, [("ETag", self.etag(item))])
            wanted = self.headers.get("If-Match")
            if wanted is not None and wanted != self.etag(item):
                return self.send(412, {"message": "Precondition Failed"})
            if self.command == "DELETE":
                del ITEMS[i]
                return self.write_response(204, [])
            if self.command == "PUT":
                item = {k: v for k, v in body.items() if k not in ("id", "updated_at")}
            else:
                item = dict(item)
                for k, v in body.items():
                    if k in ("id", "updated_at"):
                        continue
                    if v is None:
                        item.pop(k, None)
                    else:
                        item[k] = v
            item.update({"id": i, "updated_at": stamp()})
            ITEMS[i] = item
            return self.send(200, item, [("ETag", self.etag(item))])

    def post(self):
        body = json.loads(self.body or b"{}")
        path = urlsplit(self.path).path
        if path == "/notion/query":
            return self.notion(body)
        if path == "/graphql":
            return self.graphql(body)
        with LOCK:
            if path == "/admin/update":
                for i in body.get("ids", []):
                    ITEMS[i]["updated_at"] = stamp()
                    ITEMS[i]["rev"] = ITEMS[i].get("rev", 0) + 1
                return self.send(200, {"updated": body.get("ids", [])})
            if path == "/admin/softdelete":
                for i in body.get("ids", []):
                    ITEMS[i]["deleted"] = True
                    ITEMS[i]["updated_at"] = stamp()
                return self.send(200, {"deleted": body.get("ids", [])})
            if path == "/admin/expire-deltas":
                DELTA_EXPIRED_BEFORE[0] = CLOCK[0] + 1
                return self.send(200, {"expired_before": DELTA_EXPIRED_BEFORE[0]})
            if path == "/admin/prepend-at":
                PREPEND_AT[0] = int(body["request"])
                return self.send(200, {"prepend_at": PREPEND_AT[0]})
            if path == "/admin/fail-page":
                FAIL_PAGE[0], FAIL_PAGE[1] = int(body["page"]), int(body.get("status", 503))
                return self.send(200, {"page": FAIL_PAGE[0]})
            if path == "/admin/fail-next":
                FAIL_NEXT[0], FAIL_NEXT[1] = int(body.get("count", 1)), int(body.get("status", 503))
                return self.send(200, {"failing": FAIL_NEXT[0]})
            if path == "/admin/create":
                created = [add_item() for _ in range(int(body.get("count", 1)))]
                return self.send(200, {"created": created})
        self.send(404, {"error": "not found"})

    def notion(self, body):
        """Notion's database query: the cursor and the filter in the POST body, pages of
        page_size (at most 100), on_or_after compared in whole seconds."""
        REQUESTS[0] += 1
        per = min(int(body.get("page_size", 100)), 100)
        items = listing({})
        since = ((body.get("filter") or {}).get("last_edited_time") or {}).get("on_or_after")
        if since:
            items = [it for it in items if seconds_of(it["updated_at"]) >= seconds_of(since)]
        start = 0
        if body.get("start_cursor") is not None:
            cursor = body["start_cursor"]
            if not str(cursor).startswith("cur-"):
                return self.send(400, {"object": "error", "status": 400, "code": "validation_error",
                                       "message": "body.start_cursor should be a valid cursor"})
            start = int(cursor[4:])
        chunk = items[start:start + per]
        more = start + per < len(items)
        pages = [{"object": "page", "id": str(it["id"]), "last_edited_time": it["updated_at"],
                  "properties": {"name": it["name"]}} for it in chunk]
        return self.send(200, {"object": "list", "results": pages,
                               "next_cursor": "cur-%d" % (start + per) if more else None, "has_more": more})

    def graphql(self, body):
        """A GraphQL API: {"query", "variables": {"first", "after", "since"}}, answered with a
        Relay connection (nodes, pageInfo {hasNextPage endCursor}); errors in "errors"."""
        REQUESTS[0] += 1
        if "query" not in body or "items" not in body["query"]:
            return self.send(200, {"data": None, "errors": [{"message": "Cannot query field on type Query"}]})
        variables = body.get("variables") or {}
        per = min(int(variables.get("first", 50)), 100)
        items = listing({"since": variables.get("since")} if variables.get("since") else {})
        # The cursor is the last node's place in the (updated_at, id) order, so it stays valid
        # when that node is deleted.
        start = 0
        if variables.get("after"):
            after = tuple(api_shapes.untoken(variables["after"]))
            start = sum(1 for it in items if (it["updated_at"], it["id"]) <= after)
        chunk = items[start:start + per]
        more = start + per < len(items)
        nodes = [{"id": str(it["id"]), "updatedAt": it["updated_at"], "name": it["name"]} for it in chunk]
        end = api_shapes.token([chunk[-1]["updated_at"], chunk[-1]["id"]]) if chunk else None
        return self.send(200, {"data": {"items": {"nodes": nodes, "pageInfo": {"hasNextPage": more, "endCursor": end}}}})

    def shape(self, path, q):
        """An API shape's answer (api_shapes.py), or False when no shape has this path."""
        items = listing({})
        for name in api_shapes.SHAPES:
            result = api_shapes.answer(name, self.command, path, q, self.body, self.headers.get("Host"), items)
            if result is None:
                continue
            REQUESTS[0] += 1
            status, obj, headers = result
            self.send(status, obj, headers)
            return True
        return False

    def get(self):
        parts = urlsplit(self.path)
        q = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        path = parts.path
        if path == "/admin/expected":
            return self.send(200, api_shapes.expected(q["shape"], listing({})))
        if self.shape(path, q):
            return
        if path == "/stats":
            return self.send(200, {"requests": REQUESTS[0], "not_modified": NOT_MODIFIED[0]})
        REQUESTS[0] += 1
        if path in ("/link", "/exhausted", "/nexturl", "/items"):
            page = int(q.get("page", 1))
            per = int(q.get("per_page", 30))
            if FAIL_PAGE[0] and page == FAIL_PAGE[0]:
                return self.send(FAIL_PAGE[1], {"error": "failing page %d on purpose" % page})
            items = listing(q)
            chunk = items[(page - 1) * per: page * per]
            more = page * per < len(items)
            extra = "&since=" + q["since"] if q.get("since") else ""
            nxt = "%s?page=%d&per_page=%d%s" % (path.lstrip("/"), page + 1, per, extra)
            if path == "/nexturl":
                # Each page has an ETag of its own content, honoured by If-None-Match (304), as
                # a caching API's pages do: a 304 for page 1 says nothing of the others.
                obj = {"items": chunk, "next": nxt if more else None, "total": len(items)}
                etag = '"%s"' % hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]
                if self.headers.get("If-None-Match") == etag:
                    NOT_MODIFIED[0] += 1
                    return self.write_response(304, [("ETag", etag)])
                return self.send(200, obj, [("ETag", etag)])
            headers = []
            if more:
                last = max(1, -(-len(items) // per))
                headers.append(("Link", '<%s>; rel="next", <%s?page=%d&per_page=%d%s>; rel="last"'
                                % (nxt, path.lstrip("/"), last, per, extra)))
            if path == "/exhausted":
                headers += [("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", str(int(time.time()) + 5))]
            return self.send(200, chunk, headers)
        if path == "/cursor":
            limit = int(q.get("limit", 30))
            after = q.get("after")
            items = listing(q)
            if after:
                key = tuple(json.loads(after))
                items = [it for it in items if (it["updated_at"], it["id"]) > key]
            chunk = items[:limit]
            token = json.dumps([chunk[-1]["updated_at"], chunk[-1]["id"]]) if len(items) > limit else None
            return self.send(200, {"data": {"rows": chunk}, "meta": {"next_token": token}})
        if path == "/graph/delta":
            # Microsoft Graph's delta query: pages by $skiptoken, the last names the delta link;
            # a delta link lists what changed since, deleted items as {"id", "@removed"}.
            top = int(q.get("top", 10))
            token = q.get("$deltatoken")
            with LOCK:
                expired = token is not None and int(token) < DELTA_EXPIRED_BEFORE[0]
            if expired:
                return self.send(410, {"error": {"code": "syncStateNotFound", "message": "The sync state is not found."}})
            items = listing({})
            if token is not None:
                since = "2024-01-01T00:00:00.%06d" % int(token)
                items = [it for it in items if it["updated_at"] > since]
            else:
                items = [it for it in items if not it.get("deleted")]
            values = [{"id": it["id"], "@removed": {"reason": "deleted"}} if it.get("deleted") else it for it in items]
            skip = int(q.get("$skiptoken", 0))
            chunk = values[skip:skip + top]
            page = {"@odata.context": "https://graph.example.com/$metadata#items", "value": chunk}
            base = "http://%s/graph/delta?top=%d" % (self.headers.get("Host"), top)
            if skip + top < len(values):
                page["@odata.nextLink"] = base + "&$skiptoken=%d" % (skip + top) + ("&$deltatoken=" + token if token else "")
            else:
                page["@odata.deltaLink"] = base + "&$deltatoken=%d" % CLOCK[0]
            return self.send(200, page)
        if path == "/wp/posts":
            page = int(q.get("page", 1))
            per = min(int(q.get("per_page", 10)), 100)
            items = listing(q)
            if q.get("modified_after"):
                # WordPress compares whole seconds, exclusively: an edit in the mark's second
                # is not "after" it.
                after = seconds_of(q["modified_after"])
                items = [it for it in items if seconds_of(it["updated_at"]) > after]
            pages = max(1, -(-len(items) // per))
            if page > pages and items:
                return self.send(400, {"code": "rest_post_invalid_page_number",
                                       "message": "The page number requested is larger than the number of pages available."})
            posts = [dict(it, modified_gmt=it["updated_at"], title={"rendered": it["name"]}) for it in items[(page - 1) * per: page * per]]
            return self.send(200, posts, [("X-WP-Total", str(len(items))), ("X-WP-TotalPages", str(pages))])
        if path == "/jira/search":
            start = int(q.get("startAt", 0))
            most = min(int(q.get("maxResults", 50)), 50)
            items = listing(q)
            issues = [dict(it, fields={"summary": it["name"], "updated": it["updated_at"]}) for it in items[start:start + most]]
            return self.send(200, {"startAt": start, "maxResults": most, "total": len(items), "issues": issues})
        if path == "/stripe/customers":
            limit = min(int(q.get("limit", 10)), 100)
            items = listing(q)
            after = q.get("starting_after")
            if after:
                place = next((n for n, it in enumerate(items) if str(it["id"]) == after), None)
                if place is None:
                    return self.send(400, {"error": {"type": "invalid_request_error", "message": "No such customer: '%s'" % after}})
                items = items[place + 1:]
            return self.send(200, {"object": "list", "url": "/v1/customers", "data": items[:limit], "has_more": len(items) > limit})
        if path == "/headercursor":
            limit = int(q.get("limit", 30))
            cursor = int(q.get("cursor", 0))
            items = listing(q)
            headers = [("X-Next-Cursor", str(cursor + limit))] if cursor + limit < len(items) else []
            return self.send(200, items[cursor:cursor + limit], headers)
        if path == "/ratelimited":
            return self.send(429, {"message": "API rate limit exceeded"},
                             [("Retry-After", "3"), ("X-RateLimit-Remaining", "0"),
                              ("X-RateLimit-Reset", str(int(time.time()) + 3))])
        if path == "/loop":
            return self.send(200, {"items": listing(q)[:2], "next": "loop"})
        if path == "/loop2":
            step = int(q.get("step", 1))
            return self.send(200, {"items": listing(q)[2 * step - 2:2 * step], "next": "loop2?step=%d" % (2 if step == 1 else 1)})
        self.send(404, {"error": "not found"})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--count", type=int, default=250)
    ap.add_argument("--reuse-ids", action="store_true", help="give a new record the id max + 1, even one just freed")
    args = ap.parse_args()
    REUSE_IDS[0] = args.reuse_ids
    for _ in range(args.count):
        add_item()
    http_core.handle_signals()
    http_core.serve(http_core.Server(Handler, args.port))


if __name__ == "__main__":
    main()
