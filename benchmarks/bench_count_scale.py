"""Counting from a large saved release: load, one query, then 1,000 distinct queries.

    python benchmarks/bench_count_scale.py RELEASE_DIR [--repeats 3] [--queries 1000]
                                           [--seed 0]

Each repetition loads the release afresh (digests verified, the rows' values checked against
their domains), answers one count query, then a batch of distinct queries with
``count_all``: conjunctions of conditions on 1 to 3 columns of the release, drawn with a fixed
seed from the schema's domains (an equality, an IN list, or a range on numeric columns).
Row-publishing releases count from their Parquet files (`ppdp.query.ScanCube`), so memory
stays that of contingency tables whatever the number of rows. Reported: the median wall time
of each step over the repetitions (the first one reads the files cold, the others from the
page cache) and the process's peak resident memory (getrusage).

A release to try it on: Adult resampled to 10^7 rows and published with DBR, e.g.
``DBR().publish(ppdp.datasets.adult(sensitive="occupation").resample(10**7, random_state=1))
.save("adult-dbr-1e7")``.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ppdp.release import load_release
from ppdp.table import Column, Schema


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


def peak_rss_mb() -> float:
    """The process's peak resident memory so far, in MB (Linux reports KB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20 if sys.platform == "darwin" else 1 << 10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("release", type=Path, help="a saved release directory")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    times: dict[str, list[float]] = {"load": [], "one query": [], "queries": []}
    for _ in range(args.repeats):
        start = time.perf_counter()
        release = load_release(args.release)
        times["load"].append(time.perf_counter() - start)
        pool = query_pool(release.schema, args.queries + 1, args.seed)
        start = time.perf_counter()
        release.count(pool[0])
        times["one query"].append(time.perf_counter() - start)
        start = time.perf_counter()
        release.count_all(pool[1:])
        times["queries"].append(time.perf_counter() - start)
    print(f"{args.release}: {release.mechanism}, {release.n_rows:,} rows, "
          f"{len(release.part_rows or (0,))} part(s); medians of {args.repeats} repetitions")
    print(f"  load (digests, domain check)     {statistics.median(times['load']):8.2f} s")
    print(f"  one count query                  {statistics.median(times['one query']):8.2f} s")
    print(f"  {args.queries:,} distinct queries (count_all)"
          f"{statistics.median(times['queries']):8.2f} s")
    print(f"  peak resident memory             {peak_rss_mb():8.0f} MB")


if __name__ == "__main__":
    main()
