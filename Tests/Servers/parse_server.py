#!/usr/bin/env python3
"""Ferry test server: a stand-in for Parse Server's REST API, backed by sqlite3.

Parse Server itself cannot be installed here, so Ferry's Parse source is tested against this
server, written from the Parse REST guide (https://docs.parseplatform.org/rest/guide/) and
Parse Server's behaviour.  Stdlib only (Python 3.11+).  Binds 127.0.0.1 only.

    python3 parse_server.py [--port 0] [--app-id ferry-test] [--rest-key rest-secret]
                            [--master-key master-secret] [--mount /parse] [--db FILE]
                            [--allow-custom-object-id]

Prints exactly "PORT <n>" on stdout (flushed) once listening; serves until SIGTERM/SIGINT
(exit 0).  Threading, HTTP/1.1 keep-alive, TCP_NODELAY, no request logging (http_core.py).
Objects live in an in-memory sqlite3 database (or FILE with --db).

Parse API (under the mount, default /parse; needs X-Parse-Application-Id and either
X-Parse-REST-API-Key or X-Parse-Master-Key, else 403 {"error":"unauthorized"}):
  GET    /parse/classes/<C>?where=&order=&limit=&skip=&keys=&excludeKeys=&count=
  GET    /parse/classes/<C>/<id>[?keys=]          404 {"code":101,...} when missing
  POST   /parse/classes/<C>                       201 {"objectId","createdAt"} + Location
                                                  (an objectId in the body is refused, code 105,
                                                  unless --allow-custom-object-id, as Parse
                                                  Server's allowCustomObjectId: then an id taken
                                                  already is 400 code 137)
  PUT    /parse/classes/<C>/<id>                  200 {"updatedAt"} (+ values of __op fields)
  DELETE /parse/classes/<C>/<id>                  200 {}
  POST   /parse/batch                             {"requests":[{method,path,body}]}
  GET    /parse/health                            {"status":"ok"} (no auth, as Parse Server)
  where: equality, $lt $lte $gt $gte $ne $eq $in $nin $exists $all $regex(+$options),
  $or $and $nor; Date ({"__type":"Date","iso":...}) and Pointer operands.  order: comma list,
  "-" for descending; ties are broken by objectId (Parse/Mongo leaves ties unordered).
  limit: default 100, clamped to 1000; limit=0&count=1 returns only the count.
  Errors: invalid where JSON -> 400 {"code":107,"error":"invalid JSON"}; an unknown "$"
  operator -> 400 {"code":107,"error":"bad constraint: $x"} (what Parse Server's Mongo
  adapter answers); a Parse operator this server does not implement ($select, $inQuery,
  $relatedTo, geo, text...) -> 400 code 102; unknown query parameter -> 400 code 102
  "Invalid parameter for query: x" (as Parse Server).  Unknown class -> empty results.

Test control (no auth, JSON bodies):
  POST /__admin/seed    {"class":"Quote","count":N,"size":370,"same_updated_at":false,
                         "seed":null}  -> {"created":N}; one transaction.  Each object is
                         about `size` bytes serialized (fields text, author, n).  Timestamps:
                         distinct milliseconds ending now (back-dated by up
                         to `count` ms), or one shared timestamp with same_updated_at.  Never
                         before an earlier write nor in the future: seeding soon after other
                         writes spreads objects over the time since, sharing milliseconds.
  POST /__admin/mutate  {"class":"Quote","update":K,"delete":D,"create":C,
                         "same_updated_at":false} -> {"updated":[ids],"deleted":[ids],
                         "created":[ids]}; updates bump `rev`, rewrite `text`, new updatedAt.
                         Optional "ids":[...] updates exactly those objects; optional
                         "updated_at":ISO stamps every written object with that time (may be
                         in the past: a write stamped before it committed).
  GET  /__admin/dump?class=Quote   {"objects":[all objects sorted by objectId]}
  GET  /__admin/dump?class=Quote&lines=1   the same objects as text, one per line, each
                         byte for byte as a class GET renders it (for exact body comparisons)
  POST /__admin/delete  {"class":"Quote","ids":[...]} -> {"deleted":N} (those objects only)
  POST /__admin/clear   {"class":"Quote"} (or {} for everything) -> {"deleted":N}
  POST /__admin/fault   {"next":N,"status":503,"retry_after":2} or
                        {"next":N,"kind":"truncate"|"invalid-json"|"html200"|"reset"|"stall"|
                         "stall-body","seconds":S}, optional "after":M (let M GETs pass
                        first); applies to GETs under /parse/classes; {"clear":true} clears.
                        stall: sleep S before answering, then answer normally; stall-body:
                        headers + half the body, sleep S, close.
  GET  /__admin/stats   {"connections","requests","routes":{...},"faults_served",
                         "skip_used":<class GETs with skip>0>,"queries":[last 100 class GET
                         request targets, raw "path?query"],"listing_at_once":{class: the most
                         listing GETs of it ever in progress at the same time (two clients
                         listing one class at once make it 2)}};  POST /__admin/stats/reset
                         zeroes it.
"""

import argparse
import json
import random
import re
import sqlite3
import string
import threading
import time
from collections import deque
from datetime import datetime, timezone
from urllib.parse import parse_qs, unquote

import http_core
from http_core import REASONS

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
ALNUM = string.ascii_letters + string.digits
BUILTIN = ("objectId", "createdAt", "updatedAt")
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
CLASS_RE = re.compile(r"^_?[A-Za-z][A-Za-z0-9_]*$")
QUERY_PARAMS = {"skip", "limit", "order", "count", "keys", "excludeKeys", "include",
                "includeAll", "redirectClassNameForKey", "where", "readPreference",
                "includeReadPreference", "subqueryReadPreference", "hint", "explain",
                "comment"}
UNSUPPORTED_OPS = {"$select", "$dontSelect", "$inQuery", "$notInQuery", "$relatedTo",
                   "$text", "$nearSphere", "$maxDistance", "$maxDistanceInRadians",
                   "$maxDistanceInMiles", "$maxDistanceInKilometers", "$within",
                   "$geoWithin", "$geoIntersects", "$containedBy", "$centerSphere", "$box",
                   "$polygon", "$point", "$near"}
HTML_502 = (b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
            b"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
            b"</body>\r\n</html>\r\n")
WORDS = ("sync ferry river harbor tide current anchor rope deck wave shore island bridge "
         "crossing passage lantern compass north south east west morning evening voyage "
         "cargo captain pilot beacon mooring channel estuary ripple drift").split()


class ParseError(Exception):
    def __init__(self, code, message, status=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status or (404 if code == 101 else 500 if code == 1 else 400)


def jdump(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def fmt_ms(ms):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + ".%03dZ" % (ms % 1000)


def norm_iso(s):
    """Any ISO-8601 date -> Parse's canonical UTC form with milliseconds."""
    if not isinstance(s, str):
        raise ParseError(102, "invalid date: %r" % (s,))
    try:
        d = datetime.fromisoformat(s.strip().replace("z", "Z"))
    except ValueError:
        raise ParseError(102, "invalid date: %s" % s)
    if d.tzinfo is None:
        d = d.replace(tzinfo=timezone.utc)
    delta = d - EPOCH
    return fmt_ms(delta.days * 86400000 + delta.seconds * 1000 + delta.microseconds // 1000)


def new_id(rng=random):
    return "".join(rng.choices(ALNUM, k=10))


def is_date(v):
    return isinstance(v, dict) and v.get("__type") == "Date"


# ---------------------------------------------------------------------------------------
# Query translation: Parse `where` -> SQL
# ---------------------------------------------------------------------------------------

def json_path(field):
    segs = field.split(".")
    for s in segs:
        if not NAME_RE.match(s):
            raise ParseError(105, "Invalid field name: %s." % field)
    return "$" + "".join('."%s"' % s for s in segs)


def field_sql(field):
    if field in BUILTIN:
        return field
    return "json_extract(data,'%s')" % json_path(field)


def operand(field, v):
    """(sql expression for the field, bound value) for comparing field with v."""
    if field in ("createdAt", "updatedAt"):
        if is_date(v):
            return field, norm_iso(v.get("iso"))
        if isinstance(v, str):
            return field, norm_iso(v)
        raise ParseError(102, "invalid date value for %s" % field)
    if field == "objectId":
        if isinstance(v, (dict, list)):
            raise ParseError(102, "invalid objectId value")
        return field, v
    p = json_path(field)
    if is_date(v):
        return "json_extract(data,'%s.\"iso\"')" % p, norm_iso(v.get("iso"))
    if isinstance(v, dict) and v.get("__type") == "Pointer":
        return "json_extract(data,'%s.\"objectId\"')" % p, v.get("objectId")
    if isinstance(v, (dict, list)):
        return "json(json_extract(data,'%s'))" % p, ("__json__", jdump(v))
    return "json_extract(data,'%s')" % p, v


def bind(v, params):
    if isinstance(v, tuple) and v and v[0] == "__json__":
        params.append(v[1])
        return "json(?)"
    params.append(v)
    return "?"


def array_aware(field, cond_fmt, values, params):
    """Mongo semantics: a condition on an array field matches if any element matches."""
    if field in BUILTIN or any(is_date(v) or isinstance(v, (dict, list)) for v in values):
        return None
    p = json_path(field)
    ph1 = ",".join(bind(v, params) for v in values)
    ph2 = ",".join(bind(v, params) for v in values)
    return ("(CASE WHEN json_type(data,'{p}')='array' THEN EXISTS(SELECT 1 FROM "
            "json_each(data,'{p}') WHERE {c1}) ELSE {c2} END)").format(
        p=p, c1=cond_fmt.format(v="value", ph=ph1),
        c2=cond_fmt.format(v="json_extract(data,'%s')" % p, ph=ph2))


def eq_sql(field, v, params):
    if v is None:
        return "%s IS NULL" % field_sql(field)
    s = array_aware(field, "{v} = {ph}", [v], params)
    if s:
        return s
    expr, val = operand(field, v)
    return "%s = %s" % (expr, bind(val, params))


def where_sql(where, params):
    if not isinstance(where, dict):
        raise ParseError(102, "where must be a JSON object")
    parts = []
    for key, cond in where.items():
        if key in ("$or", "$and", "$nor"):
            if not isinstance(cond, list) or not cond:
                raise ParseError(102, "%s requires a non-empty array" % key)
            subs = ["(%s)" % where_sql(c, params) for c in cond]
            if key == "$or":
                parts.append("(" + " OR ".join(subs) + ")")
            elif key == "$and":
                parts.append("(" + " AND ".join(subs) + ")")
            else:
                parts.append("NOT (" + " OR ".join(subs) + ")")
            continue
        if key.startswith("$"):
            if key in UNSUPPORTED_OPS:
                raise ParseError(102, "unsupported by this test server: %s" % key)
            raise ParseError(107, "bad constraint: %s" % key)
        if isinstance(cond, dict) and any(k.startswith("$") for k in cond):
            parts.append(constraint_sql(key, cond, params))
        else:
            parts.append(eq_sql(key, cond, params))
    return " AND ".join(parts) if parts else "1"


def constraint_sql(field, cond, params):
    out = []
    cmp_ops = {"$lt": "<", "$lte": "<=", "$gt": ">", "$gte": ">="}
    for op, v in cond.items():
        if op in cmp_ops:
            expr, val = operand(field, v)
            out.append("%s %s %s" % (expr, cmp_ops[op], bind(val, params)))
        elif op == "$eq":
            out.append(eq_sql(field, v, params))
        elif op == "$ne":
            if v is None:
                out.append("%s IS NOT NULL" % field_sql(field))
            else:
                expr, val = operand(field, v)
                out.append("%s IS NOT %s" % (expr, bind(val, params)))
        elif op in ("$in", "$nin"):
            if not isinstance(v, list):
                raise ParseError(102, "bad %s value" % op)
            if not v:
                out.append("0" if op == "$in" else "1")
                continue
            if op == "$in":
                s = array_aware(field, "{v} IN ({ph})", v, params)
                if s:
                    out.append(s)
                    continue
            ops = [operand(field, x) for x in v]
            if len({e for e, _ in ops}) != 1:
                raise ParseError(102, "mixed value types in %s" % op)
            expr = ops[0][0]
            ph = ",".join(bind(val, params) for _, val in ops)
            if op == "$in":
                out.append("%s IN (%s)" % (expr, ph))
            else:
                out.append("(%s IS NULL OR %s NOT IN (%s))" % (expr, expr, ph))
        elif op == "$exists":
            if field in BUILTIN:
                out.append("1" if v else "0")
            else:
                out.append("json_type(data,'%s') IS %s NULL"
                           % (json_path(field), "NOT" if v else ""))
        elif op == "$all":
            if not isinstance(v, list):
                raise ParseError(102, "bad $all value")
            p = json_path(field)
            for x in v:
                out.append("EXISTS(SELECT 1 FROM json_each(data,'%s') WHERE value = %s)"
                           % (p, bind(x, params)))
        elif op == "$regex":
            opts = cond.get("$options", "")
            if not isinstance(v, str) or not isinstance(opts, str):
                raise ParseError(102, "bad $regex")
            flags = "".join(c for c in opts if c in "imsx")
            params.append(("(?%s)" % flags if flags else "") + v)
            out.append("regexp(?, %s)" % field_sql(field))
        elif op == "$options":
            if "$regex" not in cond:
                raise ParseError(102, "$options requires $regex")
        elif op in UNSUPPORTED_OPS:
            raise ParseError(102, "unsupported by this test server: %s" % op)
        else:
            raise ParseError(107, "bad constraint: %s" % op)
    return "(" + " AND ".join(out or ["1"]) + ")"


def lower_bounds(where):
    """Lower bounds on indexed columns implied by a where clause ({field: value}).

    Lets keyset pagination such as {"$or":[{"updatedAt":{"$gt":T}},
    {"updatedAt":T,"objectId":{"$gt":I}}]} use an index range instead of a scan from the
    start of the class (which makes paging through a large class quadratic)."""
    out = {}
    if not isinstance(where, dict):
        return out

    def tighten(f, v):
        if f not in out or v > out[f]:
            out[f] = v

    try:
        for key, cond in where.items():
            if key == "$or" and isinstance(cond, list) and cond:
                branches = [lower_bounds(c) for c in cond]
                for f in set(branches[0]).intersection(*branches[1:]):
                    tighten(f, min(b[f] for b in branches))
            elif key == "$and" and isinstance(cond, list):
                for c in cond:
                    for f, v in lower_bounds(c).items():
                        tighten(f, v)
            elif key in BUILTIN:
                if isinstance(cond, dict) and any(k.startswith("$") for k in cond):
                    for op in ("$gt", "$gte", "$eq"):
                        if op in cond:
                            tighten(key, operand(key, cond[op])[1])
                elif cond is not None:
                    tighten(key, operand(key, cond)[1])
    except (ParseError, TypeError):
        return {}
    return out


def order_sql(order):
    terms = []
    seen_oid = False
    for t in order.split(","):
        t = t.strip()
        if not t:
            continue
        desc = t.startswith("-")
        name = t[1:] if desc else t
        if name == "$score":
            raise ParseError(102, "unsupported by this test server: $score")
        if name in ("_created_at", "_updated_at"):
            name = "createdAt" if name == "_created_at" else "updatedAt"
        seen_oid = seen_oid or name == "objectId"
        terms.append(field_sql(name) + (" DESC" if desc else ""))
    if terms and not seen_oid:
        terms.append("objectId")
    return terms


def regexp(pattern, value):
    if not isinstance(value, str):
        return 0
    try:
        return 1 if re.search(pattern, value) else 0
    except re.error:
        return 0


# ---------------------------------------------------------------------------------------
# Store
# ---------------------------------------------------------------------------------------

def obj_text(oid, ca, ua, data):
    if data == "{}":
        return '{"objectId":"%s","createdAt":"%s","updatedAt":"%s"}' % (oid, ca, ua)
    return '{"objectId":"%s","createdAt":"%s","updatedAt":"%s",%s' % (oid, ca, ua, data[1:])


def clean_fields(body, creating, custom_ids=False):
    if not isinstance(body, dict):
        raise ParseError(107, "invalid JSON")
    out = {}
    for k, v in body.items():
        if k in ("createdAt", "updatedAt"):
            continue
        if k == "objectId":
            if creating and not custom_ids:
                raise ParseError(105, "objectId is an invalid field name.")
            if creating and not (isinstance(v, str) and v):
                raise ParseError(104, "objectId must be a non-empty string.")
            if creating:
                out[k] = v
            continue
        if k != "ACL" and not NAME_RE.match(k):
            raise ParseError(105, "Invalid field name: %s." % k)
        if is_date(v):
            v = {"__type": "Date", "iso": norm_iso(v.get("iso"))}
        out[k] = v
    return out


def apply_op(data, k, v):
    """Apply a Parse __op; returns the value to echo in the PUT response (or None)."""
    op = v.get("__op")
    if op == "Delete":
        data.pop(k, None)
        return None
    if op == "Increment":
        amt = v.get("amount", 1)
        if not isinstance(amt, (int, float)):
            raise ParseError(111, "Increment amount must be a number")
        data[k] = data.get(k, 0) + amt
        return data[k]
    if op in ("Add", "AddUnique", "Remove"):
        objs = v.get("objects")
        if not isinstance(objs, list):
            raise ParseError(111, "objects must be an array")
        cur = list(data.get(k) or [])
        if op == "Add":
            cur += objs
        elif op == "AddUnique":
            cur += [o for o in objs if o not in cur]
        else:
            cur = [o for o in cur if o not in objs]
        data[k] = cur
        return cur
    raise ParseError(111, "unsupported __op: %s" % op)


class Store:
    def __init__(self, path, custom_ids=False):
        self.custom_ids = custom_ids
        self.lock = threading.RLock()
        self.db = sqlite3.connect(path or ":memory:", check_same_thread=False,
                                  isolation_level=None)
        self.db.create_function("regexp", 2, regexp, deterministic=True)
        if path:
            self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=OFF")
        self.db.execute("PRAGMA cache_size=-262144")
        self.db.executescript("""
            CREATE TABLE IF NOT EXISTS objects(
                cls TEXT NOT NULL, objectId TEXT NOT NULL,
                createdAt TEXT NOT NULL, updatedAt TEXT NOT NULL, data TEXT NOT NULL,
                PRIMARY KEY(cls, objectId));
            CREATE INDEX IF NOT EXISTS objects_updated ON objects(cls, updatedAt, objectId);
            CREATE INDEX IF NOT EXISTS objects_created ON objects(cls, createdAt, objectId);
            -- (cls, rowid): insertion order when no `order` is given, like Mongo's natural order
            CREATE INDEX IF NOT EXISTS objects_cls ON objects(cls);
        """)
        row = self.db.execute("SELECT max(updatedAt) FROM objects").fetchone()
        self.last_ms = 0
        if row and row[0]:
            self.last_ms = int(datetime.fromisoformat(row[0]).timestamp() * 1000)

    def now_ms(self):
        """Non-decreasing millisecond clock (never behind an earlier write)."""
        with self.lock:
            t = max(int(time.time() * 1000), self.last_ms)
            self.last_ms = t
            return t

    # -- Parse operations ---------------------------------------------------------------

    def find(self, cls, q):
        for k in q:
            if k not in QUERY_PARAMS:
                raise ParseError(102, "Invalid parameter for query: %s" % k)
        params = [cls]
        sql_where = "cls = ?"
        if q.get("where") not in (None, ""):
            try:
                where = json.loads(q["where"])
            except ValueError:
                raise ParseError(107, "invalid JSON")
            sql_where += " AND (" + where_sql(where, params) + ")"
            for f, v in sorted(lower_bounds(where).items()):
                if isinstance(v, str):
                    sql_where += " AND %s >= ?" % f  # implied by `where`; helps the index
                    params.append(v)
        limit = 100
        if q.get("limit") not in (None, ""):
            try:
                limit = int(float(q["limit"]))
            except ValueError:
                raise ParseError(102, "Invalid limit: %s" % q["limit"])
        limit = max(0, min(limit, 1000))
        skip = 0
        if q.get("skip") not in (None, ""):
            try:
                skip = max(0, int(float(q["skip"])))
            except ValueError:
                raise ParseError(102, "Invalid skip: %s" % q["skip"])
        order = order_sql(q.get("order") or "")
        want_count = str(q.get("count", "")).lower() in ("1", "true")
        keys = self.key_filter(q)
        with self.lock:
            out = []
            if limit > 0:
                sql = ("SELECT objectId, createdAt, updatedAt, data FROM objects WHERE %s "
                       "ORDER BY %s LIMIT ? OFFSET ?"
                       % (sql_where, ", ".join(order) if order else "rowid"))
                rows = self.db.execute(sql, params + [limit, skip]).fetchall()
                out = [self.render(r, keys) for r in rows]
            count = None
            if want_count:
                count = self.db.execute("SELECT count(*) FROM objects WHERE " + sql_where,
                                        params).fetchone()[0]
        body = '{"results":[' + ",".join(out) + "]"
        if count is not None:
            body += ',"count":%d' % count
        return body + "}"

    @staticmethod
    def key_filter(q):
        keys = q.get("keys")
        excl = q.get("excludeKeys")
        if not keys and not excl:
            return None
        inc = {k.strip().split(".")[0] for k in keys.split(",") if k.strip()} if keys else None
        exc = {k.strip() for k in excl.split(",") if k.strip()} if excl else set()
        return inc, exc

    @staticmethod
    def render(row, keys):
        oid, ca, ua, data = row
        if keys is None:
            return obj_text(oid, ca, ua, data)
        inc, exc = keys
        if inc is not None and inc <= set(BUILTIN):
            # keys=objectId (id listings for reconciliation): no data field is kept, so skip
            # parsing every object's JSON (the listing of a large class is then ~3x faster).
            return obj_text(oid, ca, ua, "{}")
        d = json.loads(data)
        d = {k: v for k, v in d.items() if (inc is None or k in inc) and k not in exc}
        return obj_text(oid, ca, ua, jdump(d))

    def get(self, cls, oid, q):
        keys = self.key_filter(q)
        with self.lock:
            row = self.db.execute("SELECT objectId, createdAt, updatedAt, data FROM objects "
                                  "WHERE cls=? AND objectId=?", (cls, oid)).fetchone()
        if row is None:
            raise ParseError(101, "Object not found.")
        return self.render(row, keys)

    def create(self, cls, body):
        fields = clean_fields(body, True, self.custom_ids)
        chosen = fields.pop("objectId", None)
        for k, v in list(fields.items()):
            if isinstance(v, dict) and "__op" in v:
                fields.pop(k)
                apply_op(fields, k, v)
        with self.lock:
            ts = fmt_ms(self.now_ms())
            if chosen is not None:
                try:
                    self.db.execute("INSERT INTO objects VALUES (?,?,?,?,?)",
                                    (cls, chosen, ts, ts, jdump(fields)))
                except sqlite3.IntegrityError:
                    raise ParseError(137, "A duplicate value for a field with unique values was provided")
                return chosen, ts
            while True:
                oid = new_id()
                try:
                    self.db.execute("INSERT INTO objects VALUES (?,?,?,?,?)",
                                    (cls, oid, ts, ts, jdump(fields)))
                    break
                except sqlite3.IntegrityError:
                    continue
        return oid, ts

    def update(self, cls, oid, body):
        fields = clean_fields(body, False)
        with self.lock:
            row = self.db.execute("SELECT data FROM objects WHERE cls=? AND objectId=?",
                                  (cls, oid)).fetchone()
            if row is None:
                raise ParseError(101, "Object not found.")
            data = json.loads(row[0])
            echo = {}
            for k, v in fields.items():
                if isinstance(v, dict) and "__op" in v:
                    r = apply_op(data, k, v)
                    if v.get("__op") != "Delete":
                        echo[k] = r
                else:
                    data[k] = v
            ts = fmt_ms(self.now_ms())
            self.db.execute("UPDATE objects SET updatedAt=?, data=? WHERE cls=? AND objectId=?",
                            (ts, jdump(data), cls, oid))
        echo["updatedAt"] = ts
        return echo

    def delete(self, cls, oid):
        with self.lock:
            n = self.db.execute("DELETE FROM objects WHERE cls=? AND objectId=?",
                                (cls, oid)).rowcount
        if n == 0:
            raise ParseError(101, "Object not found.")

    # -- admin ----------------------------------------------------------------------------

    @staticmethod
    def word_pool(rng):
        return " ".join(rng.choice(WORDS) for _ in range(20000))

    # wrapper '{"objectId":..,"createdAt":..,"updatedAt":..,' plus '"text":"","author":"",'
    # '"n":}' : everything in a seeded object but the text, the author and the digits of n
    FIXED_LEN = len(obj_text("x" * 10, "x" * 24, "x" * 24, '{"text":"","author":"","n":}'))

    @staticmethod
    def make_fields(rng, pool, n, size, rev=0):
        """Fields text/author/n[/rev], sized so the serialized object is about `size` bytes.
        Words are ASCII letters, so lengths need no JSON escaping."""
        author = "%s %s" % (rng.choice(WORDS).title(), rng.choice(WORDS).title())
        extra = len(',"rev":%d' % rev) if rev else 0
        want = max(0, size - Store.FIXED_LEN - len(author) - len(str(n)) - extra)
        off = rng.randrange(0, len(pool) - want - 1) if want < len(pool) - 1 else 0
        d = {"text": pool[off:off + want].strip().ljust(want, "."), "author": author, "n": n}
        if rev:
            d["rev"] = rev
        return d

    def seed(self, cls, count, size, same, seed):
        rng = random.Random(seed)
        pool = self.word_pool(rng)
        with self.lock:
            floor = self.last_ms  # never date an object before an earlier write
            now = self.now_ms()
            # distinct milliseconds ending now; if an earlier write leaves less room than
            # `count` ms, spread over (earlier write, now] with shared milliseconds instead
            # (never future-dated, never before an earlier write)
            lo = now - (count - 1)
            if floor:
                lo = max(lo, floor + 1)
            lo = min(lo, now)
            span = now - lo + 1
            start_n = self.db.execute("SELECT count(*) FROM objects WHERE cls=?",
                                      (cls,)).fetchone()[0]
            rows = []
            ids = {r[0] for r in self.db.execute("SELECT objectId FROM objects WHERE cls=?",
                                                 (cls,))}
            for i in range(count):
                ts = fmt_ms(now if same else lo + (i * span) // count)
                oid = new_id(rng)
                while oid in ids:
                    oid = new_id(rng)
                ids.add(oid)
                d = self.make_fields(rng, pool, start_n + i, size)
                rows.append((cls, oid, ts, ts, '{"text":"%s","author":"%s","n":%d}'
                             % (d["text"], d["author"], d["n"])))
            self.db.execute("BEGIN")
            try:
                self.db.executemany("INSERT INTO objects VALUES (?,?,?,?,?)", rows)
                self.db.execute("COMMIT")
            except Exception:
                self.db.execute("ROLLBACK")
                raise
        return {"created": count}

    def mutate(self, cls, n_update, n_delete, n_create, same, size, seed, only_ids=None,
               updated_at=None):
        rng = random.Random(seed)
        pool = self.word_pool(rng)
        with self.lock:
            ids = [r[0] for r in self.db.execute(
                "SELECT objectId FROM objects WHERE cls=? ORDER BY objectId", (cls,))]
            if only_ids is not None:
                # update exactly these (existing) objects; deletes still pick at random
                known = set(ids)
                upd = [i for i in only_ids if i in known]
                rest = [i for i in ids if i not in set(upd)]
                dele = rng.sample(rest, min(len(rest), n_delete))
            else:
                picked = rng.sample(ids, min(len(ids), n_update + n_delete))
                upd, dele = picked[:n_update], picked[n_update:]
            self.db.execute("BEGIN")
            try:
                created = []
                ts_same = fmt_ms(self.now_ms())
                if updated_at is not None:
                    # An explicit stamp: what a write stamped earlier (another app server's
                    # clock, or a save that took long to commit) looks like once it lands.
                    ts_same, same = norm_iso(updated_at), True
                for oid in upd:
                    ts = ts_same if same else fmt_ms(self.now_ms())
                    data = json.loads(self.db.execute(
                        "SELECT data FROM objects WHERE cls=? AND objectId=?",
                        (cls, oid)).fetchone()[0])
                    rev = int(data.get("rev", 0)) + 1
                    nd = self.make_fields(rng, pool, data.get("n", 0), size or 370, rev)
                    nd["author"] = data.get("author", nd["author"])
                    for k, v in data.items():
                        if k not in nd:
                            nd[k] = v
                    self.db.execute("UPDATE objects SET updatedAt=?, data=? WHERE cls=? "
                                    "AND objectId=?", (ts, jdump(nd), cls, oid))
                self.db.executemany("DELETE FROM objects WHERE cls=? AND objectId=?",
                                    [(cls, oid) for oid in dele])
                existing = set(ids)
                for i in range(n_create):
                    ts = ts_same if same else fmt_ms(self.now_ms())
                    oid = new_id(rng)
                    while oid in existing:
                        oid = new_id(rng)
                    existing.add(oid)
                    created.append(oid)
                    self.db.execute("INSERT INTO objects VALUES (?,?,?,?,?)",
                                    (cls, oid, ts, ts,
                                     jdump(self.make_fields(rng, pool, len(ids) + i, size or 370))))
                self.db.execute("COMMIT")
            except Exception:
                self.db.execute("ROLLBACK")
                raise
        return {"updated": upd, "deleted": dele, "created": created}

    def dump(self, cls, lines=False):
        with self.lock:
            rows = self.db.execute("SELECT objectId, createdAt, updatedAt, data FROM objects "
                                   "WHERE cls=? ORDER BY objectId", (cls,)).fetchall()
        if lines:
            return "".join(obj_text(*r) + "\n" for r in rows)
        return '{"objects":[' + ",".join(obj_text(*r) for r in rows) + "]}"

    def delete_ids(self, cls, ids):
        # Not `delete`: that name is the Parse DELETE above, which a second definition would
        # replace (a DELETE of one object then deleted nothing and answered 200).
        with self.lock:
            return sum(self.db.execute("DELETE FROM objects WHERE cls=? AND objectId=?", (cls, i)).rowcount
                       for i in ids)

    def clear(self, cls):
        with self.lock:
            if cls:
                return self.db.execute("DELETE FROM objects WHERE cls=?", (cls,)).rowcount
            return self.db.execute("DELETE FROM objects").rowcount


# ---------------------------------------------------------------------------------------
# Faults and stats
# ---------------------------------------------------------------------------------------

class Faults:
    def __init__(self):
        self.lock = threading.Lock()
        self.spec = None
        self.remaining = 0
        self.after = 0

    def set(self, spec):
        with self.lock:
            if spec.get("clear"):
                self.spec, self.remaining, self.after = None, 0, 0
                return {"cleared": True}
            kind = spec.get("kind") or ("status" if "status" in spec else None)
            if kind not in ("status", "truncate", "invalid-json", "html200", "reset",
                            "stall", "stall-body"):
                raise ValueError("unknown fault kind: %r" % kind)
            self.spec = dict(spec, kind=kind)
            self.remaining = int(spec.get("next", 1))
            self.after = int(spec.get("after", 0))
            return {"armed": self.spec, "next": self.remaining, "after": self.after}

    def take(self):
        with self.lock:
            if not self.spec or self.remaining <= 0:
                return None
            if self.after > 0:
                self.after -= 1
                return None
            self.remaining -= 1
            spec = self.spec
            if self.remaining == 0:
                self.spec = None
            return spec


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        self.connections = 0
        self.requests = 0
        self.routes = {}
        self.faults_served = 0
        self.skip_used = 0
        self.queries = deque(maxlen=100)
        # Listings in progress now stay counted across a reset; the most at once starts over.
        self.listing = getattr(self, "listing", {})
        self.listing_at_once = dict(self.listing)

    def connection(self):
        with self.lock:
            self.connections += 1

    def hit(self, route):
        with self.lock:
            self.requests += 1
            self.routes[route] = self.routes.get(route, 0) + 1

    def snapshot(self):
        with self.lock:
            return {"connections": self.connections, "requests": self.requests,
                    "routes": dict(self.routes), "faults_served": self.faults_served,
                    "skip_used": self.skip_used, "queries": list(self.queries),
                    "listing_at_once": dict(self.listing_at_once)}

    def listing_began(self, cls):
        with self.lock:
            self.listing[cls] = self.listing.get(cls, 0) + 1
            self.listing_at_once[cls] = max(self.listing_at_once.get(cls, 0), self.listing[cls])

    def listing_ended(self, cls):
        with self.lock:
            self.listing[cls] -= 1


# ---------------------------------------------------------------------------------------
# HTTP
# ---------------------------------------------------------------------------------------

class Handler(http_core.Handler):
    server_version = "ferry-parse/1"  # in send_error()'s answers to malformed requests
    sys_version = ""
    fixed_headers = (("X-Powered-By", "Express"),)

    def respond(self, status, body, ctype="application/json; charset=utf-8", headers=()):
        if isinstance(body, str):
            body = body.encode("utf-8")
        hs = list(headers)
        if ctype:
            hs.append(("Content-Type", ctype))
        self.write_response(status, hs, body)

    def respond_json(self, status, obj, headers=()):
        self.respond(status, jdump(obj), headers=headers)

    def parse_error(self, e):
        self.respond_json(e.status, {"code": e.code, "error": e.message})

    # ---- dispatch ------------------------------------------------------------------------

    def dispatch(self):
        srv = self.server
        raw_path, _, self.query_string = self.path.partition("?")
        path = unquote(raw_path)
        q = {}
        if self.query_string:
            q = {k: v[-1] for k, v in
                 parse_qs(self.query_string, keep_blank_values=True).items()}
        if path.startswith("/__admin/"):
            srv.stats.hit("admin")
            try:
                return self.admin(path[len("/__admin/"):].strip("/"), q)
            except (ValueError, KeyError, TypeError) as e:
                return self.respond_json(400, {"error": "bad request: %s" % e})
        mount = srv.mount
        if not (path == mount or path.startswith(mount + "/")):
            srv.stats.hit("not_found")
            return self.respond(404, "Cannot %s %s\n" % (self.command, raw_path),
                                "text/html; charset=utf-8")
        sub = path[len(mount):].strip("/").split("/")
        if sub == ["health"]:
            srv.stats.hit("health")
            return self.respond_json(200, {"status": "ok"})
        if sub[0] == "classes" and self.command == "GET" and len(sub) == 2:
            # A listing's request, from its start (a stall included) until its answer is
            # written. It ends before the write: once the client has the answer it may ask
            # for the next page on another connection, before this thread runs again.
            self.listing_class = sub[1]
            srv.stats.listing_began(sub[1])
            try:
                return self.serve_class_get(sub, q)
            finally:
                self.end_listing()
        return self.serve_class_get(sub, q)

    def end_listing(self):
        cls, self.listing_class = getattr(self, "listing_class", None), None
        if cls is not None:
            self.server.stats.listing_ended(cls)

    def write_response(self, status, headers=(), body=None):
        self.end_listing()
        return super().write_response(status, headers, body)

    def serve_class_get(self, sub, q):
        srv = self.server
        if sub[0] == "classes" and self.command in ("GET", "HEAD") and len(sub) in (2, 3):
            with srv.stats.lock:
                srv.stats.queries.append(self.path)
                if len(sub) == 2 and q.get("skip") not in (None, "", "0"):
                    srv.stats.skip_used += 1
            fault = srv.faults.take()
            if fault:
                with srv.stats.lock:
                    srv.stats.faults_served += 1
                srv.stats.hit("fault")
                if self.serve_fault(fault, sub, q):
                    return
        if not self.authorized():
            srv.stats.hit("unauthorized")
            return self.respond(403, '{"error":"unauthorized"}')
        try:
            self.parse_api(sub, q)
        except ParseError as e:
            self.parse_error(e)

    def authorized(self):
        s = self.server
        h = self.headers
        if h.get("X-Parse-Application-Id") != s.app_id:
            return False
        return (h.get("X-Parse-REST-API-Key") == s.rest_key
                or h.get("X-Parse-Master-Key") == s.master_key)

    def json_body(self):
        if not self.body:
            return {}
        try:
            return json.loads(self.body)
        except ValueError:
            raise ParseError(107, "invalid JSON")

    def parse_api(self, sub, q):
        st = self.server.stats
        store = self.server.store
        m = self.command
        if sub[0] == "batch" and len(sub) == 1 and m == "POST":
            st.hit("batch")
            return self.respond_json(200, self.batch(self.json_body()))
        if sub[0] != "classes" or len(sub) not in (2, 3):
            st.hit("not_found")
            raise ParseError(119, "Invalid path.", 404)
        cls = sub[1]
        if not CLASS_RE.match(cls):
            raise ParseError(103, "Invalid class name: %s" % cls)
        if len(sub) == 2:
            if m in ("GET", "HEAD"):
                st.hit("find")
                return self.respond(200, store.find(cls, q))
            if m == "POST":
                st.hit("create")
                oid, ts = store.create(cls, self.json_body())
                host = self.headers.get("Host", "127.0.0.1:%d" % self.server.server_port)
                loc = "http://%s%s/classes/%s/%s" % (host, self.server.mount, cls, oid)
                return self.respond_json(201, {"objectId": oid, "createdAt": ts},
                                         [("Location", loc)])
        else:
            oid = sub[2]
            if m in ("GET", "HEAD"):
                st.hit("get")
                return self.respond(200, store.get(cls, oid, q))
            if m == "PUT":
                st.hit("update")
                return self.respond_json(200, store.update(cls, oid, self.json_body()))
            if m == "DELETE":
                st.hit("delete")
                store.delete(cls, oid)
                return self.respond_json(200, {})
        st.hit("not_found")
        self.respond(404, "Cannot %s %s\n" % (m, self.path), "text/html; charset=utf-8")

    def batch(self, body):
        reqs = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(reqs, list):
            raise ParseError(107, "requests must be an array")
        store = self.server.store
        out = []
        for r in reqs:
            try:
                method = str(r.get("method", "")).upper()
                path = str(r.get("path", ""))
                if path.startswith(self.server.mount + "/"):
                    path = path[len(self.server.mount):]
                sub = path.strip("/").split("/")
                if sub[0] != "classes" or len(sub) not in (2, 3):
                    raise ParseError(107, "cannot route batch path %s" % path)
                if not CLASS_RE.match(sub[1]):
                    raise ParseError(103, "Invalid class name: %s" % sub[1])
                b = r.get("body") or {}
                if method == "POST" and len(sub) == 2:
                    oid, ts = store.create(sub[1], b)
                    out.append({"success": {"objectId": oid, "createdAt": ts}})
                elif method == "PUT" and len(sub) == 3:
                    out.append({"success": store.update(sub[1], sub[2], b)})
                elif method == "DELETE" and len(sub) == 3:
                    store.delete(sub[1], sub[2])
                    out.append({"success": {}})
                else:
                    raise ParseError(107, "unsupported batch request %s %s" % (method, path))
            except ParseError as e:
                out.append({"error": {"code": e.code, "error": e.message}})
        return out

    # ---- faults --------------------------------------------------------------------------

    def real_response(self, sub, q):
        """The bytes the request would have got (used for partial/corrupt faults)."""
        try:
            if len(sub) == 2:
                return self.server.store.find(sub[1], q).encode()
            return self.server.store.get(sub[1], sub[2], q).encode()
        except ParseError as e:
            return jdump({"code": e.code, "error": e.message}).encode()

    def serve_fault(self, f, sub, q):
        """Returns True when the fault fully answered (or killed) the request."""
        kind = f["kind"]
        secs = float(f.get("seconds", 30))
        if kind == "status":
            code = int(f.get("status", 503))
            hs = []
            ra = f.get("retry_after")
            if ra is not None:
                hs.append(("Retry-After", str(ra)))
                if code == 429:
                    hs.append(("X-RateLimit-Remaining", "0"))
                    try:
                        hs.append(("X-RateLimit-Reset", str(int(time.time() + float(ra)))))
                    except ValueError:
                        pass
            body = f.get("body")
            if body is None:
                body = jdump({"code": 1 if code >= 500 else 155 if code == 429 else 141,
                              "error": REASONS.get(code, "error")})
            self.respond(code, body, headers=hs)
            return True
        if kind == "html200":
            self.respond(200, HTML_502, "text/html")
            return True
        if kind == "invalid-json":
            body = self.real_response(sub, q)
            self.respond(200, body[:max(1, len(body) // 2)])
            return True
        if kind == "truncate":
            body = self.real_response(sub, q)
            self.close_connection = True
            self.wfile.write(self.head_bytes(200, [("Content-Type",
                                                    "application/json; charset=utf-8")],
                                             len(body)) + body[:len(body) // 2])
            return True
        if kind == "stall-body":
            body = self.real_response(sub, q)
            self.close_connection = True
            self.wfile.write(self.head_bytes(200, [("Content-Type",
                                                    "application/json; charset=utf-8")],
                                             len(body)) + body[:len(body) // 2])
            time.sleep(secs)
            return True
        if kind == "reset":
            self.reset()
            return True
        if kind == "stall":
            time.sleep(secs)
            return False  # then answer normally
        return False

    # ---- admin ---------------------------------------------------------------------------

    def admin(self, what, q):
        store = self.server.store
        body = {}
        if self.body:
            body = json.loads(self.body)
        if what == "seed":
            t = time.monotonic()
            r = store.seed(body.get("class", "Quote"), int(body.get("count", 1000)),
                           int(body.get("size", 370)), bool(body.get("same_updated_at")),
                           body.get("seed"))
            r["seconds"] = round(time.monotonic() - t, 3)
            return self.respond_json(200, r)
        if what == "mutate":
            return self.respond_json(200, store.mutate(
                body.get("class", "Quote"), int(body.get("update", 0)),
                int(body.get("delete", 0)), int(body.get("create", 0)),
                bool(body.get("same_updated_at")), int(body.get("size", 370)),
                body.get("seed"), body.get("ids"), body.get("updated_at")))
        if what == "dump":
            lines = q.get("lines") in ("1", "true")
            return self.respond(200, store.dump(q.get("class") or body.get("class", "Quote"), lines),
                                "text/plain; charset=utf-8" if lines else
                                "application/json; charset=utf-8")
        if what == "delete":
            return self.respond_json(200, {"deleted": store.delete_ids(body.get("class", "Quote"),
                                                                   list(body.get("ids", [])))})
        if what == "clear":
            return self.respond_json(200, {"deleted": store.clear(body.get("class")
                                                                   or q.get("class"))})
        if what == "fault":
            return self.respond_json(200, self.server.faults.set(body))
        if what == "stats":
            return self.respond_json(200, self.server.stats.snapshot())
        if what == "stats/reset":
            with self.server.stats.lock:
                self.server.stats.reset()
            return self.respond_json(200, {"reset": True})
        self.respond_json(404, {"error": "unknown admin endpoint", "path": what})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--app-id", default="ferry-test")
    ap.add_argument("--rest-key", default="rest-secret")
    ap.add_argument("--master-key", default="master-secret")
    ap.add_argument("--mount", default="/parse")
    ap.add_argument("--db", default=None, help="sqlite file (default: in memory)")
    ap.add_argument("--allow-custom-object-id", action="store_true",
                    help="creates may choose their objectId (Parse Server's allowCustomObjectId)")
    a = ap.parse_args()
    http_core.handle_signals()

    stats = Stats()
    srv = http_core.Server(Handler, a.port, on_accept=stats.connection)
    srv.app_id, srv.rest_key, srv.master_key = a.app_id, a.rest_key, a.master_key
    srv.mount = "/" + a.mount.strip("/") if a.mount.strip("/") else ""
    srv.store = Store(a.db, a.allow_custom_object_id)
    srv.faults = Faults()
    srv.stats = stats
    http_core.serve(srv)


if __name__ == "__main__":
    main()
