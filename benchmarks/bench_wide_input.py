"""Reading awkward shapes of input: a CSV of many columns and a Parquet file of many tiny row
groups, each read by `ppdp.read_table` in a fresh process.

    python benchmarks/bench_wide_input.py [--columns 1000 4000 16000 100000] [--rows 3]
                                          [--row-groups 100000] [--timeout 600]

* ``wide``: a CSV of ``--rows`` rows of 0s and 1s and each of ``--columns`` columns
  (``c0``, ``c1``, ...), read with ``observed_domains=True`` and ``sensitive="c0"``;
* ``row groups``: a Parquet file of ``--row-groups`` row groups of one row each (an integer
  and a text column), read the same way.

Each reading runs in a process of its own; reported are its wall time and its CPU time (user
and system, from getrusage of the child), which a machine shared with other work inflates less
than the wall time. A process past ``--timeout`` seconds is killed and its row says so. The
input files are written to a temporary directory, untimed.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

_READ = """
import logging, sys
from ppdp.io.read import read_table
logging.getLogger("ppdp").setLevel(logging.ERROR)
table = read_table(sys.argv[1], sensitive="c0", observed_domains=True)
assert table.n_rows > 0
"""


def write_wide(path: Path, n_columns: int, n_rows: int) -> Path:
    lines = [",".join(f"c{i}" for i in range(n_columns))]
    lines += [",".join(str((i + r) % 2) for i in range(n_columns)) for r in range(n_rows)]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_row_groups(path: Path, n_groups: int) -> Path:
    rng = np.random.default_rng(0)
    table = pa.table({"c0": np.array(["M", "F"])[rng.integers(0, 2, n_groups)],
                      "age": rng.integers(20, 60, n_groups)})
    pq.write_table(table, path, row_group_size=1)
    return path


def timed(path: Path, timeout: float) -> str:
    """Wall and CPU time of reading ``path`` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        subprocess.run([sys.executable, "-c", _READ, str(path)], check=True,
                       timeout=timeout, capture_output=True)
    except subprocess.TimeoutExpired:
        return f"killed after {timeout:.0f} s"
    except subprocess.CalledProcessError as exc:
        return f"failed: {exc.stderr.decode().strip().splitlines()[-1]}"
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return f"wall {wall:7.1f} s  cpu {cpu:7.1f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--columns", type=int, nargs="*", default=[1000, 4000, 16000, 100000])
    parser.add_argument("--rows", type=int, default=3)
    parser.add_argument("--row-groups", type=int, nargs="*", default=[100000])
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for n in args.columns:
            path = write_wide(Path(folder) / f"wide{n}.csv", n, args.rows)
            print(f"wide CSV, {n:>7} columns x {args.rows} rows: {timed(path, args.timeout)}",
                  flush=True)
        for n in args.row_groups:
            path = write_row_groups(Path(folder) / f"groups{n}.parquet", n)
            print(f"Parquet, {n:>7} row groups of one row: {timed(path, args.timeout)}",
                  flush=True)


if __name__ == "__main__":
    main()
