#!/usr/bin/env python3
"""An OAuth2 authorization server and a resource server it protects, on 127.0.0.1, for
Ferry's OAuth2 tests: the refresh-token and client-credentials grants (RFC 6749), the device
authorization grant (RFC 8628), bearer tokens (RFC 6750), and the faults real servers show
only now and then: expiry mid-pass, rotation, revocation, a skewed clock, a slow endpoint.
Stdlib only (http_core.py).

    oauth2_server.py --client-id ID [--client-secret S] [--refresh-token R] [--lifetime SECONDS]
                     [--rotate] [--records N] [--port 0]

Prints "PORT <n>", serves until SIGTERM/SIGINT.

  POST /token        application/x-www-form-urlencoded; the client authenticates with HTTP
                     Basic (form-encoded id and secret) or client_id/client_secret in the body;
                     a client without --client-secret is public (client_id only).
      grant_type=refresh_token&refresh_token=R    R must be valid: --refresh-token, or one
          issued since.  With rotation (--rotate) the answer carries a new refresh token and
          R dies at once (a reused dead token is counted in "reused"); with "grace", R lives
          on until its successor is first used (Okta's and Auth0's reuse interval): a client
          that dies before it has the successor can go on with R, and one that used the
          successor can never go back.
      grant_type=client_credentials               needs --client-secret.
      grant_type=urn:ietf:params:oauth:grant-type:device_code&device_code=D
          authorization_pending until approved (POST /admin/approve, or automatically after
          "approve_after" polls), slow_down when polled faster than the interval,
          access_denied, expired_token.
      Answers {"access_token","token_type":"Bearer","expires_in",["refresh_token"]} with
      Cache-Control: no-store; errors as RFC 6749 §5.2 ({"error","error_description"}; 401
      with WWW-Authenticate for a bad client).
  POST /device       device authorization: {"device_code","user_code","verification_uri",
                     "verification_uri_complete","expires_in","interval"}.
  GET  /records?page=N   the protected resource: pages of 10 records as a JSON array with
                     Link rel="next"; needs Authorization: Bearer <live access token>, else 401
                     with WWW-Authenticate: Bearer error="invalid_token".
  ANY  /echo         {"method","body"} of the request, for a live access token (else 401)
  POST /admin/config {"lifetime","rotate","grace","delay","early","date_skew","token_status",
                      "approve_after","device_expires","die_after_requests","quote_authorization",
                      "quote_device_code"}
      delay: seconds /token waits before answering.  early: seconds before their announced
      expiry the resource server already refuses access tokens (a server clock running
      ahead).  date_skew: seconds added to the Date header of every answer.  token_status:
      answer /token with this HTTP status (503, say) until set to 0.  die_after_requests: an
      access token is refused after this many resource requests (expiry mid-pass).
      quote_authorization: /records answers 502 with an error page quoting the request's
      Authorization header, as a misconfigured proxy's page does (the token in
      /admin/state's "last_access_token").  quote_device_code: a device-code poll is
      refused with an error_description quoting the device code (in "last_device_code").
  POST /admin/revoke {"refresh": true, "access": true}   every refresh / access token dies
  POST /admin/issue  {"refresh_token"}: a new valid refresh token, as a person's consent gives
  POST /admin/approve {"user_code": C, "deny": false}
  POST /admin/update {"ids": [..]}                       those records change
  GET  /admin/state  {"token_requests", "grants": {grant: n}, "valid_refresh_tokens", "presented"
                      (every refresh token sent, in order),
                      "reused", "resource_ok", "resource_401", "max_concurrent_token"}
"""
import argparse
import base64
import email.utils
import json
import secrets
import threading
import time
from urllib.parse import parse_qs, unquote_plus, urlsplit

import http_core

LOCK = threading.Lock()
CONFIG = {"lifetime": 3600, "rotate": False, "grace": False, "delay": 0.0, "early": 0.0, "date_skew": 0, "token_status": 0,
          "approve_after": 0, "device_expires": 600, "die_after_requests": 0, "quote_authorization": False,
          "quote_device_code": False}
CLIENT = {"id": "", "secret": None}
REFRESH = {}      # refresh token -> alive
PARENT = {}       # with grace: a rotated refresh token -> the one it replaced, still alive
ACCESS = {}       # access token -> {"expires": t, "requests": n}
DEVICES = {}      # device_code -> {"user_code", "state", "polls", "expires", "last_poll"}
STATE = {"token_requests": 0, "grants": {}, "reused": 0, "presented": [], "resource_ok": 0, "resource_401": 0,
         "concurrent_token": 0, "max_concurrent_token": 0}
RECORDS = {}


def form(body):
    fields = {}
    for pair in (body or b"").decode().split("&"):
        if pair:
            key, _, value = pair.partition("=")
            fields[unquote_plus(key)] = unquote_plus(value)
    return fields


class Handler(http_core.Handler):
    methods = {"GET", "POST", "PUT", "REPORT", "PROPFIND"}

    def send(self, status, obj, headers=()):
        body = json.dumps(obj).encode()
        date = email.utils.formatdate(time.time() + CONFIG["date_skew"], usegmt=True)
        self.write_response(status, [("Content-Type", "application/json"), ("Cache-Control", "no-store"),
                                     ("Date", date)] + list(headers), body)

    def dispatch(self):
        parts = urlsplit(self.path)
        if parts.path.startswith("/admin/"):
            return self.admin(parts.path)
        if parts.path == "/token" and self.command == "POST":
            return self.token()
        if parts.path == "/device" and self.command == "POST":
            return self.device()
        if parts.path == "/records" and self.command == "GET":
            return self.records(parse_qs(parts.query))
        if parts.path == "/echo":
            return self.echo()
        self.send(404, {"error": "not_found"})

    # The client's identity (RFC 6749 §2.3.1), or None after answering 401.
    def client(self, fields):
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Basic "):
            ident, _, secret = base64.b64decode(auth[6:]).decode().partition(":")
            ident, secret = unquote_plus(ident), unquote_plus(secret)
        else:
            ident, secret = fields.get("client_id", ""), fields.get("client_secret")
        if ident != CLIENT["id"] or (CLIENT["secret"] is not None and secret != CLIENT["secret"]):
            self.send(401, {"error": "invalid_client", "error_description": "Client authentication failed"},
                      [("WWW-Authenticate", 'Basic realm="token"')])
            return None
        return ident

    def issue(self, with_refresh):
        access = secrets.token_urlsafe(24)
        ACCESS[access] = {"expires": time.time() + CONFIG["lifetime"], "requests": 0}
        answer = {"access_token": access, "token_type": "Bearer", "expires_in": CONFIG["lifetime"]}
        if with_refresh:
            refresh = secrets.token_urlsafe(24)
            REFRESH[refresh] = True
            answer["refresh_token"] = refresh
        return answer

    def token(self):
        with LOCK:
            STATE["concurrent_token"] += 1
            STATE["max_concurrent_token"] = max(STATE["max_concurrent_token"], STATE["concurrent_token"])
        try:
            if CONFIG["delay"]:
                time.sleep(CONFIG["delay"])
            self.token_answer()
        finally:
            with LOCK:
                STATE["concurrent_token"] -= 1

    def token_answer(self):
        fields = form(self.body)
        grant = fields.get("grant_type", "")
        with LOCK:
            STATE["token_requests"] += 1
            STATE["grants"][grant] = STATE["grants"].get(grant, 0) + 1
            status = CONFIG["token_status"]
        if status:
            return self.send(status, {"message": "temporarily unavailable"})
        if self.client(fields) is None:
            return
        with LOCK:
            if grant == "refresh_token":
                token = fields.get("refresh_token", "")
                STATE["presented"].append(token)
                if not REFRESH.get(token):
                    if token in REFRESH:
                        STATE["reused"] += 1
                    return self.send(400, {"error": "invalid_grant", "error_description": "Token is not active"})
                if token in PARENT:
                    REFRESH[PARENT.pop(token)] = False
                if CONFIG["rotate"]:
                    answer = self.issue(True)
                    if CONFIG["grace"]:
                        PARENT[answer["refresh_token"]] = token
                    else:
                        REFRESH[token] = False
                    return self.send(200, answer)
                return self.send(200, self.issue(False))
            if grant == "client_credentials":
                if CLIENT["secret"] is None:
                    return self.send(400, {"error": "unauthorized_client"})
                return self.send(200, self.issue(False))
            if grant == "urn:ietf:params:oauth:grant-type:device_code":
                device = DEVICES.get(fields.get("device_code", ""))
                if device is not None and CONFIG["quote_device_code"]:
                    STATE["last_device_code"] = fields["device_code"]
                    return self.send(400, {"error": "invalid_request",
                                           "error_description": "device_code %s is not valid here" % fields["device_code"]})
                if device is None:
                    return self.send(400, {"error": "invalid_grant"})
                now = time.time()
                if now > device["expires"]:
                    return self.send(400, {"error": "expired_token"})
                device["polls"] += 1
                too_fast = now - device["last_poll"] < device["interval"] - 0.2
                device["last_poll"] = now
                if CONFIG["approve_after"] and device["polls"] >= CONFIG["approve_after"] and device["state"] == "pending":
                    device["state"] = "approved"
                if device["state"] == "denied":
                    return self.send(400, {"error": "access_denied"})
                if device["state"] == "approved":
                    device["state"] = "used"
                    return self.send(200, self.issue(True))
                if too_fast:
                    device["interval"] += 5
                    return self.send(400, {"error": "slow_down"})
                return self.send(400, {"error": "authorization_pending"})
        self.send(400, {"error": "unsupported_grant_type"})

    def device(self):
        fields = form(self.body)
        if self.client(fields) is None:
            return
        code = secrets.token_urlsafe(16)
        user = "%04d-%04d" % (secrets.randbelow(10000), secrets.randbelow(10000))
        host = self.headers.get("Host", "127.0.0.1")
        with LOCK:
            DEVICES[code] = {"user_code": user, "state": "pending", "polls": 0, "interval": 1,
                             "last_poll": 0, "expires": time.time() + CONFIG["device_expires"]}
        self.send(200, {"device_code": code, "user_code": user, "verification_uri": f"http://{host}/activate",
                        "verification_uri_complete": f"http://{host}/activate?user_code={user}",
                        "expires_in": CONFIG["device_expires"], "interval": 1})

    def authorized(self):
        """Whether the request carries a live access token; answers 401 when not."""
        auth = self.headers.get("Authorization", "")
        token = auth[7:] if auth.startswith("Bearer ") else ""
        with LOCK:
            entry = ACCESS.get(token)
            alive = entry is not None and time.time() < entry["expires"] - CONFIG["early"]
            if alive and CONFIG["die_after_requests"]:
                entry["requests"] += 1
                alive = entry["requests"] <= CONFIG["die_after_requests"]
            if not alive:
                STATE["resource_401"] += 1
            else:
                STATE["resource_ok"] += 1
        if not alive:
            self.send(401, {"error": "invalid_token"}, [("WWW-Authenticate", 'Bearer realm="records", error="invalid_token"')])
        return alive

    def echo(self):
        if self.authorized():
            self.send(200, {"method": self.command, "body": (self.body or b"").decode()})

    def records(self, query):
        if not self.authorized():
            return
        if CONFIG["quote_authorization"]:
            auth = self.headers.get("Authorization", "")
            with LOCK:
                STATE["last_access_token"] = auth[7:]
            return self.send(502, {"error": "upstream refused the request sent with Authorization: " + auth})
        with LOCK:
            ids = sorted(RECORDS)
        page = int(query.get("page", ["1"])[-1])
        chunk = [RECORDS[i] for i in ids[(page - 1) * 10:page * 10]]
        headers = []
        if page * 10 < len(ids):
            host = self.headers.get("Host", "127.0.0.1")
            headers.append(("Link", f'<http://{host}/records?page={page + 1}>; rel="next"'))
        self.send(200, chunk, headers)

    def admin(self, path):
        body = json.loads(self.body or b"{}") if self.command == "POST" else {}
        with LOCK:
            if path == "/admin/config":
                for key, value in body.items():
                    if key not in CONFIG:
                        return self.send(400, {"error": f"unknown setting {key}"})
                    CONFIG[key] = value
                return self.send(200, CONFIG)
            if path == "/admin/revoke":
                if body.get("refresh", True):
                    for token in REFRESH:
                        REFRESH[token] = False
                if body.get("access", True):
                    for entry in ACCESS.values():
                        entry["expires"] = 0
                return self.send(200, {})
            if path == "/admin/issue":
                token = secrets.token_urlsafe(24)
                REFRESH[token] = True
                return self.send(200, {"refresh_token": token})
            if path == "/admin/approve":
                for device in DEVICES.values():
                    if device["user_code"] == body.get("user_code"):
                        device["state"] = "denied" if body.get("deny") else "approved"
                        return self.send(200, {})
                return self.send(404, {"error": "no such code"})
            if path == "/admin/update":
                for i in body.get("ids", []):
                    RECORDS[i]["version"] += 1
                    RECORDS[i]["title"] = f"record {i}, version {RECORDS[i]['version']}"
                return self.send(200, {})
            if path == "/admin/state":
                state = dict(STATE)
                state["valid_refresh_tokens"] = sum(1 for alive in REFRESH.values() if alive)
                return self.send(200, state)
        self.send(404, {"error": "not_found"})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--client-id", required=True)
    ap.add_argument("--client-secret")
    ap.add_argument("--refresh-token")
    ap.add_argument("--lifetime", type=float, default=3600)
    ap.add_argument("--rotate", action="store_true")
    ap.add_argument("--records", type=int, default=35)
    args = ap.parse_args()
    CLIENT["id"], CLIENT["secret"] = args.client_id, args.client_secret
    if args.refresh_token:
        REFRESH[args.refresh_token] = True
    CONFIG["lifetime"], CONFIG["rotate"] = args.lifetime, args.rotate
    for i in range(1, args.records + 1):
        RECORDS[i] = {"id": i, "title": f"record {i}, version 1", "version": 1}
    http_core.handle_signals()
    http_core.serve(http_core.Server(Handler, args.port))


if __name__ == "__main__":
    main()
