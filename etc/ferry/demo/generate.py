#!/usr/bin/env python3
"""Generate Ferry's bundled demo dataset: a chain of JSON pages of quotes.

    python3 etc/ferry/demo/generate.py [--pages 5] [--per-page 200] [--out DIR]

Writes quotes-0001.json ... quotes-NNNN.json next to this script (or into DIR). Each page is
{"results": [{"id", "updated_at", "author", "text"}, ...], "next": "quotes-0002.json"}, and the
last page has "next": null. The default configuration (etc/ferry/ferry.conf, [store demo])
reads it with url = file:demo/quotes-0001.json, records-path = results, id-field = id,
version-field = updated_at, pagination = next-url:next.

The output is deterministic (fixed seed, no clock), so regenerating changes nothing unless
this script changes. Stdlib only.
"""

import argparse
import datetime
import json
import os
import random

SEED = 20261123

AUTHORS = [
    "Ada Lovelace", "Alan Kay", "Barbara Liskov", "Donald Knuth", "Edsger Dijkstra",
    "Fred Brooks", "Grace Hopper", "Ken Thompson", "Leslie Lamport", "Margaret Hamilton",
    "Niklaus Wirth", "Radia Perlman", "Rob Pike", "Tony Hoare", "Frances Allen",
]

SUBJECTS = ["A program", "The cache", "Every interface", "A good test", "The network",
            "Simplicity", "A deadline", "The compiler", "An index", "A log line",
            "The schema", "Concurrency", "A retry", "The daemon", "Documentation"]
VERBS = ["is", "becomes", "hides", "reveals", "outlives", "costs", "repays", "deserves",
         "forgives", "remembers"]
OBJECTS = ["its author's intent", "more than it saves", "the next bug", "every shortcut taken",
           "a second look", "what the user needed", "the shape of the data",
           "a clear error message", "the slowest path", "one more edge case",
           "the price of cleverness", "a quiet machine"]


def quote(rng):
    return "%s %s %s." % (rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=5)
    ap.add_argument("--per-page", type=int, default=200)
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    a = ap.parse_args()

    rng = random.Random(SEED)
    base = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    ids = set()
    for page in range(1, a.pages + 1):
        results = []
        for _ in range(a.per_page):
            while True:
                record_id = "q%016x" % rng.getrandbits(64)
                if record_id not in ids:
                    ids.add(record_id)
                    break
            updated = base + datetime.timedelta(seconds=rng.randrange(0, 300 * 86400))
            results.append({
                "id": record_id,
                "updated_at": updated.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "author": rng.choice(AUTHORS),
                "text": quote(rng),
            })
        nxt = "quotes-%04d.json" % (page + 1) if page < a.pages else None
        path = os.path.join(a.out, "quotes-%04d.json" % page)
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"results": results, "next": nxt}, f, indent=1, ensure_ascii=False)
            f.write("\n")
    print("wrote %d pages x %d records to %s" % (a.pages, a.per_page, a.out))


if __name__ == "__main__":
    main()
