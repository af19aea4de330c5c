"""Counting from a large saved release: load, one query, 1,000 distinct queries, and the CLI.

    python benchmarks/bench_count_scale.py RELEASE_DIR [--repeats 3] [--queries 1000]
                                           [--loop-queries 1000] [--seed 0]
                                           [--cache cold|warm]

Each repetition runs every step in a fresh Python process, so that each one loads the release
as a user would (digests verified, values checked against their domains) and reports
its own peak resident memory (getrusage):

* ``count``: load, then one count query;
* ``count_all``: load, then ``count_all`` of ``--queries`` distinct queries;
* ``loop``: load, then ``count`` of ``--loop-queries`` of those queries, one at a time;
* ``cli``: ``ppdp count RELEASE QUERY``, the whole command.

Queries are conjunctions of conditions on 1 to 3 columns of the release, drawn with a fixed
seed from the schema's domains (an equality, an IN list, or a range on numeric columns).

Loading a row-publishing release reads the counts of its distinct rows that its publisher
wrote (``row_counts.parquet``, `ppdp.row_counts`). A release without them (more than 2^22
distinct rows, or its file removed from ``release.json``) is aggregated once into those counts,
kept in the user's cache directory (`ppdp.query.cache_directory`), as is the record of the
files whose digests were verified. ``--cache cold`` (default) gives every process an empty
cache directory of its own, so that every load hashes every file (and makes any full pass);
``--cache warm`` fills one cache directory first (untimed) and shares it, as every load but the
first of a release would. Reported: the median of each time over the
repetitions (the files themselves are read from the page cache after the first), and the
largest peak resident memory of each step.

Releases to try it on: ``ppdp publish adult-1e8.parquet -m dbr -s occupation
--observed-domains --engine streaming -o dbr-1e8`` on a table written by
``generate_data.py --rows 1e8``. A release of 10^9 rows for this benchmark only can be made of
ten copies of that release's parts, renamed, with ``release.json`` written again by
`ppdp.release.write_metadata` (``n_rows`` times ten, the copies' digests): every value then
occurs ten times as often, and the distinct tuples are the same.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ppdp.data.schema import Column, Schema

STEPS = ("count", "count_all", "loop", "cli")


def sql_name(name: str) -> str:
    """A column name quoted for SQL."""
    return '"' + name.replace('"', '""') + '"'


def sql_value(value: Any) -> str:
    """A domain value as an SQL literal."""
    if isinstance(value, bool | np.bool_):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value.item() if isinstance(value, np.generic) else value)


def condition(column: Column, rng: np.random.Generator) -> str:
    """A random condition on one column: an equality, an IN list, or a range."""
    name, domain = sql_name(column.name), column.domain
    kind = rng.integers(3)
    if kind == 2 and column.kind in ("int", "float") and column.size > 2:
        low, high = sorted(rng.choice(column.size, size=2, replace=False))
        return f"{name} BETWEEN {sql_value(domain[low])} AND {sql_value(domain[high])}"
    if kind >= 1 and column.size > 2:
        picked = sorted(rng.choice(column.size, size=2, replace=False))
        return f"{name} IN ({', '.join(sql_value(domain[i]) for i in picked)})"
    return f"{name} = {sql_value(domain[int(rng.integers(column.size))])}"


def query_pool(schema: Schema, count: int, seed: int) -> list[str]:
    """``count`` distinct conjunctions of conditions on 1 to 3 columns, drawn with a seed."""
    rng = np.random.default_rng(seed)
    columns = list(schema.columns)
    queries: dict[str, None] = {}
    while len(queries) < count:
        width = int(rng.integers(1, min(3, len(columns)) + 1))
        chosen = rng.choice(len(columns), size=width, replace=False)
        queries[" AND ".join(condition(columns[i], rng) for i in sorted(chosen))] = None
    return list(queries)


def peak_rss_mb(who: int) -> float:
    """Peak resident memory of this process or its children, in MB (Linux reports KB)."""
    peak = resource.getrusage(who).ru_maxrss
    return peak / (1 << 20 if sys.platform == "darwin" else 1 << 10)


def run_step(release_dir: Path, step: str, queries: int, loop_queries: int, seed: int
             ) -> dict[str, float]:
    """One step in this process (the CLI in a child of it): its times and peak memory."""
    if step == "cli":
        query = query_pool(load_schema(release_dir), 1, seed)[0]
        start = time.perf_counter()
        subprocess.run([str(Path(sys.executable).with_name("ppdp")), "count",
                        str(release_dir), query], check=True, stdout=subprocess.DEVNULL)
        return {"answer": time.perf_counter() - start,
                "rss": peak_rss_mb(resource.RUSAGE_CHILDREN)}
    from ppdp.release.load import load_release

    start = time.perf_counter()
    release = load_release(release_dir)
    loaded = time.perf_counter()
    pool = query_pool(release.schema, queries + 1, seed)
    answered = time.perf_counter()
    if step == "count":
        release.count(pool[0])
    elif step == "count_all":
        release.count_all(pool[1:])
    else:
        for query in pool[1:loop_queries + 1]:
            release.count(query)
    done = time.perf_counter()
    return {"load": loaded - start, "answer": done - answered,
            "rss": peak_rss_mb(resource.RUSAGE_SELF)}


def in_child(args: argparse.Namespace, step: str, cache: str) -> dict[str, float]:
    """Run one step in a fresh process with this cache directory; its report."""
    command = [sys.executable, __file__, str(args.release), "--step", step,
               "--queries", str(args.queries), "--loop-queries", str(args.loop_queries),
               "--seed", str(args.seed)]
    output = subprocess.run(command, env={**os.environ, "PPDP_CACHE_DIR": cache}, check=True,
                            capture_output=True, text=True).stdout
    return json.loads(output.splitlines()[-1])  # type: ignore[no-any-return]


def load_schema(release_dir: Path) -> Schema:
    return Schema.from_json(json.loads((release_dir / "release.json").read_text())["schema"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("release", type=Path, help="a saved release directory")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--loop-queries", type=int, default=1000,
                        help="how many of the queries the loop of count answers")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", choices=("cold", "warm"), default="cold")
    parser.add_argument("--steps", default=",".join(STEPS),
                        help=f"comma-separated steps among {', '.join(STEPS)}")
    parser.add_argument("--step", choices=STEPS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step is not None:
        print(json.dumps(run_step(args.release, args.step, args.queries, args.loop_queries,
                                  args.seed)))
        return

    steps = args.steps.split(",")
    reports: dict[str, list[dict[str, float]]] = {step: [] for step in steps}
    with tempfile.TemporaryDirectory(prefix="ppdp-bench-cache-") as root:
        shared = str(Path(root) / "shared")
        if args.cache == "warm":
            in_child(args, "count", shared)
        for repeat in range(args.repeats):
            for step in steps:
                cache = shared if args.cache == "warm" else str(Path(root) / f"{step}-{repeat}")
                reports[step].append(in_child(args, step, cache))

    metadata = json.loads((args.release / "release.json").read_text())
    parts = metadata["files"]["rows"]
    print(f"{args.release}: {metadata['mechanism']}, {metadata['n_rows']:,} rows, "
          f"{len(parts) if isinstance(parts, list) else 1} part(s); cache {args.cache}; "
          f"medians of {args.repeats} repetitions; load average {os.getloadavg()[0]:.2f}")
    labels = {"count": "one query", "count_all": f"{args.queries:,} queries (count_all)",
              "loop": f"{args.loop_queries:,} queries (loop of count)",
              "cli": "ppdp count (whole command)"}
    for step in steps:
        runs = reports[step]
        load = (f"load {statistics.median(r['load'] for r in runs):7.2f} s   "
                if step != "cli" else " " * 19)
        print(f"  {labels[step]:34} {load}answers "
              f"{statistics.median(r['answer'] for r in runs):7.2f} s   "
              f"peak RSS {max(r['rss'] for r in runs):6.0f} MB")


if __name__ == "__main__":
    main()
