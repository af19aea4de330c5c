"""Threads or processes for the engines' workers: the same work on a pool of each.

    python benchmarks/bench_threads_processes.py adult-1e7.parquet [--workers 1,2] [--runs 3]

`ppdp.workers` runs independent work on threads, on the argument that numpy, Arrow and Polars
release the GIL in their heavy calls. This measures that choice on two stages of publishing
sdr (rho1 = 0.077, rho2 = 0.2) from an Adult resample, each cut into the chunks the memory
engine cuts from a large table (`ppdp.workers.MAX_CHUNK_ROWS` rows):

- ``kernel``: each chunk's sub-tables and perturbed values (keyed draws and table lookups);
- ``parquet``: each chunk's published rows written as a Parquet part (`write_parquet`:
  dictionary encoding and zstd compression).

Each runs on a thread pool and on a process pool (``fork``: the chunks' inputs are inherited,
not copied; the kernel's outputs come back pickled, as a process pool must return them), with
each number of ``--workers``; the pool is started inside the timed span, as each publish would
start it. Reported per stage, pool and workers: the median wall seconds and CPU seconds (this
process and its reaped children) of ``--runs`` runs.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

import ppdp.datasets
from ppdp.data.domains import read_domains_file
from ppdp.io.read import read_table
from ppdp.mechanisms import get_mechanism
from ppdp.plan.keyed import make_key
from ppdp.plan.rows import run_passes
from ppdp.release.arrow import rows_to_arrow
from ppdp.release.write import write_parquet
from ppdp.table.source import TableSource
from ppdp.workers import MAX_CHUNK_ROWS as CHUNK_ROWS

# What the pools' tasks read: set before the pools start, inherited by forked processes.
STATE: dict[str, Any] = {}


def kernel_chunk(start: int) -> dict[str, np.ndarray]:
    """One chunk's published codes."""
    plan, codes = STATE["plan"], STATE["codes"]
    rows = {name: values[start:start + CHUNK_ROWS] for name, values in codes.items()}
    return dict(plan.kernel(rows, start))


def parquet_chunk(start: int) -> str:
    """One chunk's published rows written as a Parquet part; its digest."""
    published, schema, folder = STATE["published"], STATE["schema"], STATE["folder"]
    rows = {name: values[start:start + CHUNK_ROWS] for name, values in published.items()}
    table = rows_to_arrow(schema, {name: rows[name] for name in schema.names})
    return write_parquet(Path(folder) / f"part-{start}.parquet", table)


def cpu_seconds() -> float:
    """CPU seconds of this process and of its children reaped so far."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(pool: Callable[[int], Executor], workers: int, task: Callable[[int], Any],
          starts: Sequence[int]) -> tuple[float, float]:
    """Wall and CPU seconds of ``task`` over ``starts`` on a new pool of ``workers``."""
    cpu, wall = cpu_seconds(), time.perf_counter()
    with pool(workers) as executor:
        list(executor.map(task, starts))
    return time.perf_counter() - wall, cpu_seconds() - cpu


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", help="a Parquet file of Adult-shaped rows")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    with resources.as_file(resources.files(ppdp.datasets) / "adult.domains.json") as path:
        domains = read_domains_file(path)
    table = read_table(args.input, sensitive=["occupation"], domains=domains)
    mechanism = get_mechanism("sdr").from_params({"rho1": 0.077, "rho2": 0.2})
    source = TableSource(table)
    plan = mechanism.row_plan(source, make_key(1))
    run_passes(plan.passes, source, table.n_rows)
    STATE.update(plan=plan, codes={name: table.codes[name] for name in plan.input_columns})
    starts = list(range(0, table.n_rows, CHUNK_ROWS))
    chunks = [kernel_chunk(start) for start in starts]
    STATE.update(published={name: np.concatenate([chunk[name] for chunk in chunks])
                            for name in chunks[0]}, schema=plan.schema)
    del chunks
    fork = multiprocessing.get_context("fork")
    pools: dict[str, Callable[[int], Executor]] = {
        "threads": lambda n: ThreadPoolExecutor(max_workers=n),
        "processes": lambda n: ProcessPoolExecutor(max_workers=n, mp_context=fork)}
    print(f"{table.n_rows:,} rows in {len(starts)} chunks of {CHUNK_ROWS:,}; "
          f"{len(os.sched_getaffinity(0))} cores")
    print(f"{'stage':<8} {'pool':<10} {'workers':>7} {'wall s':>8} {'CPU s':>8} "
          f"{'CPU/wall':>8}")
    for stage, task in (("kernel", kernel_chunk), ("parquet", parquet_chunk)):
        for workers in (int(w) for w in args.workers.split(",")):
            for name, pool in pools.items():
                results = []
                for _ in range(args.runs):
                    folder = tempfile.mkdtemp(prefix="ppdp-pools-")
                    STATE["folder"] = folder
                    try:
                        results.append(timed(pool, workers, task, starts))
                    finally:
                        shutil.rmtree(folder)
                wall = statistics.median(r[0] for r in results)
                cpu = statistics.median(r[1] for r in results)
                print(f"{stage:<8} {name:<10} {workers:>7} {wall:8.2f} {cpu:8.2f} "
                      f"{cpu / wall:8.2f}", flush=True)


if __name__ == "__main__":
    main()
