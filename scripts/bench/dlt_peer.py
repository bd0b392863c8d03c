#!/usr/bin/env python3
"""dlt's rest_api source as ferry-bench json-e2e's peer: the same chain of JSON pages loaded
into SQLite with dlt (https://dlthub.com), merged on the primary key, as its documentation
configures a paginated REST API.

    python3 dlt_peer.py --url http://127.0.0.1:PORT/pages/1.json --database /tmp/dlt.db [--runs 2]

Needs `pip install "dlt[sqlalchemy]"` (ferry-bench json-e2e --dlt says so when it is missing).
Prints one JSON line per run: {"run": n, "seconds": s, "rows": r}: run 1 is the first pull
into an empty database, run 2 the same listing again with nothing changed (a merge that
finds every row already there).
"""

import argparse
import warnings
import json
import os
import sqlite3
import sys
import tempfile
import time
from urllib.parse import urlsplit


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True, help="the first page's URL")
    ap.add_argument("--database", required=True)
    ap.add_argument("--runs", type=int, default=2)
    a = ap.parse_args()
    os.environ.setdefault("RUNTIME__LOG_LEVEL", "WARNING")
    warnings.filterwarnings("ignore")  # SQLAlchemy's deprecation notes from inside dlt
    # dlt keeps its pipeline state and extracted files under this directory: a fresh one, as a
    # first run on a new machine.
    os.environ["DLT_DATA_DIR"] = tempfile.mkdtemp(prefix="ferry-bench-dlt-")
    try:
        import dlt
        from dlt.sources.rest_api import rest_api_source
    except ImportError as e:
        print(json.dumps({"error": "dlt is not installed (pip install \"dlt[sqlalchemy]\"): %s" % e}))
        return 2
    parts = urlsplit(a.url)
    base = "%s://%s" % (parts.scheme, parts.netloc)
    for run in range(1, a.runs + 1):
        source = rest_api_source({
            "client": {"base_url": base, "paginator": {"type": "json_link", "next_url_path": "next"}},
            "resources": [{
                "name": "records",
                "endpoint": {"path": parts.path.lstrip("/"), "data_selector": "results"},
                "primary_key": "objectId",
                "write_disposition": "merge",
            }],
        })
        pipeline = dlt.pipeline(pipeline_name="ferry_bench", destination=dlt.destinations.sqlalchemy("sqlite:///" + a.database),
                                dataset_name="main")
        start = time.monotonic()
        pipeline.run(source)
        seconds = time.monotonic() - start
        with sqlite3.connect(a.database) as connection:
            rows = connection.execute("SELECT count(*) FROM records").fetchone()[0]
        print(json.dumps({"run": run, "seconds": seconds, "rows": rows}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
