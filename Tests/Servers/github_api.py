#!/usr/bin/env python3
"""A stand-in for the GitHub REST API's issues of one repository, answering as api.github.com
does for what `etc/ferry/examples/github-issues.conf` uses, so that example is exercised
offline.  Stdlib only; 127.0.0.1 only (http_core.py).

    github_api.py --token TOKEN [--issues N] [--port 0]

Prints "PORT <n>", serves until SIGTERM/SIGINT.

  GET /repos/<owner>/<repo>/issues?state=&sort=&direction=&since=&per_page=&page=
      Authorization: Bearer TOKEN (or "token TOKEN") required: 401 {"message":"Bad credentials"}.
      state: open (GitHub's default), closed or all.  sort: created (default) or updated;
      direction: desc (default) or asc.  since: ISO 8601; only issues updated at or after it.
      per_page: at most 100 (default 30); page from 1.  Answers a JSON array with
      Link: <absolute URL>; rel="next", rel="last" while more pages exist, a weak-free ETag of
      the body (304 without a body for a matching If-None-Match, not counted against the rate
      limit, as GitHub does), and X-RateLimit-Limit/-Remaining/-Used/-Reset/-Resource.
      With the limit used up: 403 {"message":"API rate limit exceeded for user ID 1."} and
      X-RateLimit-Remaining: 0 with the reset time, as GitHub's primary rate limit.
  POST /admin/update {"numbers":[...]}       new title and updated_at for those issues
  POST /admin/ratelimit {"remaining":N,"reset_in":S}
  GET  /admin/requests                        every request seen: [{"path","query","auth",
                                              "if_none_match"}]

Issue n (1..N): id 1000+n, number n, title "Issue n", state "closed" for every 4th,
user.login "user-(n % 3)", created_at and updated_at n minutes after 2024-01-01T00:00:00Z.
"""
import argparse
import datetime
import hashlib
import json
import threading
import time
from urllib.parse import parse_qs, urlencode, urlsplit

import http_core

LOCK = threading.Lock()
ISSUES = {}
RATE = {"limit": 5000, "remaining": 5000, "reset": 0}
SEEN = []
TOKEN = [""]
BASE = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
CLOCK = [0]


def iso(minutes):
    return (BASE + datetime.timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_issue(n):
    return {"id": 1000 + n, "number": n, "title": f"Issue {n}", "state": "closed" if n % 4 == 0 else "open",
            "user": {"login": f"user-{n % 3}"}, "created_at": iso(n), "updated_at": iso(n),
            "html_url": f"https://github.com/owner/repo/issues/{n}"}


class Handler(http_core.Handler):
    methods = {"GET", "POST"}

    def send(self, status, obj, headers=()):
        body = json.dumps(obj).encode()
        self.write_response(status, [("Content-Type", "application/json; charset=utf-8")] + list(headers), body)

    def rate_headers(self):
        return [("X-RateLimit-Limit", str(RATE["limit"])), ("X-RateLimit-Remaining", str(RATE["remaining"])),
                ("X-RateLimit-Used", str(RATE["limit"] - RATE["remaining"])), ("X-RateLimit-Reset", str(RATE["reset"])),
                ("X-RateLimit-Resource", "core")]

    def dispatch(self):
        parts = urlsplit(self.path)
        q = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        if parts.path.startswith("/admin/"):
            return self.admin(parts.path)
        with LOCK:
            SEEN.append({"path": parts.path, "query": q, "auth": self.headers.get("Authorization", ""),
                         "if_none_match": self.headers.get("If-None-Match")})
        segments = parts.path.strip("/").split("/")
        if len(segments) != 4 or segments[0] != "repos" or segments[3] != "issues" or self.command != "GET":
            return self.send(404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})
        auth = self.headers.get("Authorization", "")
        if auth not in (f"Bearer {TOKEN[0]}", f"token {TOKEN[0]}"):
            return self.send(401, {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"})
        with LOCK:
            if RATE["remaining"] <= 0:
                return self.send(403, {"message": "API rate limit exceeded for user ID 1."}, self.rate_headers())
            issues = list(ISSUES.values())
        state = q.get("state", "open")
        if state != "all":
            issues = [i for i in issues if i["state"] == state]
        if "since" in q:
            issues = [i for i in issues if i["updated_at"] >= q["since"]]
        key = "updated_at" if q.get("sort") == "updated" else "created_at"
        issues.sort(key=lambda i: (i[key], i["id"]), reverse=q.get("direction", "desc") != "asc")
        per_page = min(int(q.get("per_page", "30")), 100)
        page = int(q.get("page", "1"))
        chunk = issues[(page - 1) * per_page:page * per_page]
        last = max(1, -(-len(issues) // per_page))
        body = json.dumps(chunk).encode()
        etag = '"' + hashlib.sha256(body).hexdigest()[:40] + '"'
        headers = [("ETag", etag), ("Cache-Control", "private, max-age=60, s-maxage=60"), ("Vary", "Accept, Authorization")]
        if self.headers.get("If-None-Match") == etag:
            return self.write_response(304, headers + self.rate_headers())
        with LOCK:
            RATE["remaining"] -= 1
        links = []
        host = self.headers.get("Host", "127.0.0.1")
        for rel, number in (("next", page + 1), ("last", last)):
            if page < last:
                links.append(f'<http://{host}{parts.path}?{urlencode(dict(q, page=number))}>; rel="{rel}"')
        if links:
            headers.append(("Link", ", ".join(links)))
        self.write_response(200, [("Content-Type", "application/json; charset=utf-8")] + headers + self.rate_headers(), body)

    def admin(self, path):
        body = json.loads(self.body or b"{}") if self.command == "POST" else {}
        with LOCK:
            if path == "/admin/update":
                for n in body.get("numbers", []):
                    CLOCK[0] += 1
                    ISSUES[n]["title"] = f"Issue {n}, edited"
                    ISSUES[n]["updated_at"] = iso(len(ISSUES) + CLOCK[0])
                return self.send(200, {"updated": body.get("numbers", [])})
            if path == "/admin/ratelimit":
                RATE["remaining"] = int(body.get("remaining", RATE["limit"]))
                RATE["reset"] = int(time.time()) + int(body.get("reset_in", 60))
                return self.send(200, RATE)
            if path == "/admin/requests":
                return self.send(200, SEEN)
        self.send(404, {"message": "Not Found"})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--issues", type=int, default=120)
    ap.add_argument("--token", required=True)
    args = ap.parse_args()
    TOKEN[0] = args.token
    RATE["reset"] = int(time.time()) + 3600
    for n in range(1, args.issues + 1):
        ISSUES[n] = make_issue(n)
    http_core.handle_signals()
    http_core.serve(http_core.Server(Handler, args.port))


if __name__ == "__main__":
    main()
