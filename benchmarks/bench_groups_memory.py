"""In-memory publishing of the distinct-value group mechanisms (SPLU-Gen, Anatomy) as N grows.

    python benchmarks/bench_groups_memory.py [--sizes 100000 1000000 10000000] [--repeats 3]
                                             [--mechanisms splu anatomy] [--parquet FILE]

For every N and mechanism: the median wall time and the median CPU time (both cores added up)
of ``publish(table, random_state=r)`` over ``--repeats`` seeds, with SPLU-Gen gamma = 5 and
Anatomy l = 5 on Adult's occupation. The table is Adult resampled to N rows
(``random_state=1``), or the first N rows of ``--parquet`` (read with ``observed_domains``).
Each (mechanism, N) runs in a process of its own and reports its peak resident memory
(``ru_maxrss``) beside the peak before publishing (reading the table), and the one-minute load
average before and after: on a shared machine, wall times above the CPU times mean that other
jobs held the cores. Results are printed and written to benchmarks/results/groups_memory.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

MECHANISMS = {
    "splu": ("SPLUGen", {"gamma": 5}),
    "anatomy": ("Anatomy", {"l": 5}),
}


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load_table(n_rows: int, parquet: str | None):
    import ppdp

    if parquet is None:
        return ppdp.datasets.adult(sensitive="occupation").resample(n_rows, random_state=1)
    table = ppdp.read_table(parquet, sensitive="occupation", observed_domains=True)
    if n_rows > table.n_rows:
        raise SystemExit(f"{parquet} has {table.n_rows} rows, fewer than {n_rows}")
    return table if n_rows == table.n_rows else table.take(np.arange(n_rows))


def measure(name: str, n_rows: int, repeats: int, parquet: str | None) -> dict:
    """Run in a child process: time ``repeats`` publishes of one mechanism at one size."""
    import ppdp

    # Declaring observed domains and the memory check warn; neither matters here.
    warnings.simplefilter("ignore")
    table = load_table(n_rows, parquet)
    class_name, parameters = MECHANISMS[name]
    mechanism = getattr(ppdp, class_name)(**parameters)
    before = peak_mb()
    load_before = os.getloadavg()[0]
    walls, cpus = [], []
    for repeat in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        mechanism.publish(table, random_state=repeat)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return {"mechanism": name, "n": n_rows, "repeats": repeats,
            "median_s": statistics.median(walls), "median_cpu_s": statistics.median(cpus),
            "times_s": walls, "cpu_s": cpus, "peak_before_mb": round(before),
            "peak_mb": round(peak_mb()), "load": [load_before, os.getloadavg()[0]]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+",
                        default=[100_000, 1_000_000, 10_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--mechanisms", nargs="+", default=list(MECHANISMS),
                        choices=list(MECHANISMS))
    parser.add_argument("--parquet", help="read the table from this file instead")
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(**json.loads(args.child))))
        return
    results = []
    for n_rows in args.sizes:
        for name in args.mechanisms:
            child = json.dumps({"name": name, "n_rows": n_rows, "repeats": args.repeats,
                                "parquet": args.parquet})
            output = subprocess.run([sys.executable, __file__, "--child", child], check=True,
                                    capture_output=True, text=True).stdout
            row = json.loads(output.splitlines()[-1])
            results.append(row)
            print(f"{name:>8} N={n_rows:>10,}: median {row['median_s']:6.2f} s wall, "
                  f"{row['median_cpu_s']:6.2f} s CPU; peak RSS {row['peak_mb']:5} MB "
                  f"(before publishing {row['peak_before_mb']} MB); load "
                  f"{row['load'][0]:.1f} -> {row['load'][1]:.1f}", flush=True)
    args.output.mkdir(parents=True, exist_ok=True)
    (args.output / "groups_memory.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
