"""Scaling of publishing and estimation on seeded row-resamples of Adult.

    python benchmarks/bench_scaling.py [--sizes 100000 1000000 10000000] [--repeats 3]
                                       [--mechanisms splu anatomy uniform sdr]

For every N: median wall time of SPLU-Gen (gamma=5), Anatomy (l=5), Uniform Perturbation and
Perturbation Partitioning ((rho1, rho2) = (1/13, 1/5)) publishing, and the peak memory traced
during one publish (numpy and Arrow allocations, via tracemalloc) as a multiple of the encoded
table's size. For Perturbation Partitioning also the time of the partitioning alone (balancing,
rearranging, merging on the value counts), which Theorem 4 says does not grow with N.
Then, on the 10^6-row SPLU-Gen release, the time to estimate 10,000 queries of the paper's
large-count pool (Section 6.1; on a resample true counts of 1..10 hardly exist) in one batch.
Results are printed and written to benchmarks/results/scaling.json.
Timings are medians of the repeats; the ratio column is time per row relative to the smallest
N (1.0 means linear scaling).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

import ppdp
from ppdp.evaluate.workloads import splu_pools
from ppdp.mechanisms.sdr.partition import perturbation_partition

RHO1, RHO2 = 1 / 13, 1 / 5


def timed(function, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def peak_memory(function):
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--mechanisms", nargs="+", default=["splu", "anatomy", "uniform", "sdr"])
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()

    adult = ppdp.datasets.adult(sensitive="occupation")
    available = {"splu": ppdp.SPLUGen(gamma=5), "anatomy": ppdp.Anatomy(l=5),
                 "uniform": ppdp.UniformPerturbation(rho1=RHO1, rho2=RHO2),
                 "sdr": ppdp.PerturbationPartitioning(rho1=RHO1, rho2=RHO2)}
    mechanisms = {name: available[name] for name in args.mechanisms}
    rows = []
    query_timing = None
    for n_rows in args.sizes:
        table = adult.resample(n_rows, random_state=2024)
        for name, mechanism in mechanisms.items():
            seconds, _ = timed(lambda m=mechanism, t=table: m.publish(t, random_state=1),
                               args.repeats)
            peak = peak_memory(lambda m=mechanism, t=table: m.publish(t, random_state=1))
            rows.append({"mechanism": name, "n_rows": n_rows, "publish_seconds": seconds,
                         "peak_bytes": peak, "table_bytes": table.nbytes,
                         "peak_over_table": peak / table.nbytes})
            print(f"{name:8s} N={n_rows:>10,d}  publish {seconds:7.3f} s   "
                  f"peak {peak / 2**20:7.1f} MiB = {peak / table.nbytes:4.2f} x table",
                  flush=True)
            if name == "sdr":
                counts = np.bincount(table.codes["occupation"])
                partition_seconds, partition = timed(
                    lambda c=counts: perturbation_partition(c, rho1=RHO1, rho2=RHO2),
                    args.repeats)
                rows[-1]["partition_seconds"] = partition_seconds
                rows[-1]["initial_groups"] = len(partition.groups)
                rows[-1]["subtables"] = len(partition.counts)
                print(f"sdr      N={n_rows:>10,d}  partitioning alone {partition_seconds:.4f} s "
                      f"({len(partition.groups)} initial groups, {len(partition.counts)} "
                      f"sub-tables)", flush=True)
            if name == "splu" and n_rows == 1_000_000:
                # On a resample every original row appears ~N/30,162 times, so true counts of
                # 1..10 hardly exist: time 10,000 pool queries of the large-count band.
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    _, large = splu_pools(table, size=10_000, random_state=7)
                queries = list(large.queries)
                fresh = mechanism.publish(table, random_state=2)
                seconds_q, _ = timed(lambda r=fresh, q=queries: r.count_all(q), 1)
                query_timing = {"n_rows": n_rows, "queries": len(queries),
                                "seconds": seconds_q}
                print(f"splu     N={n_rows:>10,d}  {len(queries)} pool queries in "
                      f"{seconds_q:.2f} s (first batch, contingency tables built cold)",
                      flush=True)
    smallest = {m: next(r for r in rows if r["mechanism"] == m) for m in mechanisms}
    for row in rows:
        base = smallest[row["mechanism"]]
        row["time_per_row_ratio"] = (row["publish_seconds"] / row["n_rows"]) / (
            base["publish_seconds"] / base["n_rows"])
    args.output.mkdir(parents=True, exist_ok=True)
    report = {"publish": rows, "pool_queries": query_timing}
    (args.output / "scaling.json").write_text(json.dumps(report, indent=2) + "\n")
    print("\n| mechanism | N | publish (median s) | time/row vs smallest N | peak / table |")
    print("|---|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['mechanism']} | {row['n_rows']:,} | {row['publish_seconds']:.3f} | "
              f"{row['time_per_row_ratio']:.2f} | {row['peak_over_table']:.2f} |")


if __name__ == "__main__":
    main()
