"""Publishing a Parquet file on a local Spark: the time of each phase, run after run.

    python benchmarks/bench_spark.py adult-1e6.parquet [--mechanism dbr] [--master local[2]]
                                     [--runs 2] [--out spark-bench-release]
                                     [--block-rows 5e6]

Starts one Spark session (its time printed), then publishes the file ``--runs`` times with
the mechanism (Adult's columns, ``occupation`` sensitive, the bundled codebook domains,
seed 1) and saves each release over the last: per run, the time of the aggregations that
build the plan (with sdr's quota passes, and the block assignment's of splu, anatomy and
ambiguity) and the time of the save (kernel or blocks' publishing, exchanges, writing the
parts). The first run also pays the start of Spark's Python workers. Inputs:
``generate_data.py --kind adult``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from importlib import resources

import ppdp.blocks
import ppdp.datasets
from ppdp.declared_domains import read_domains_file
from ppdp.mechanisms import (
    DBR,
    FRAPP,
    Ambiguity,
    Anatomy,
    PerturbationPartitioning,
    SPLUGen,
    UniformPerturbation,
)
from ppdp.spark import publish, read_parquet, require_java

MECHANISMS = {
    "uniform": lambda: UniformPerturbation(rho1=0.1, rho2=0.5),
    "dbr": DBR,
    "frapp": lambda: FRAPP(k=0.01, gamma=0.2),
    "sdr": lambda: PerturbationPartitioning(rho1=0.077, rho2=0.2),
    # Group mechanisms, in blocks of ppdp.blocks.BLOCK_ROWS (10^7) rows: a task a block.
    "splu": lambda: SPLUGen(gamma=5),
    "anatomy": lambda: Anatomy(l=5),
    "ambiguity": lambda: Ambiguity(alpha=0.1, beta=1 / 7),
}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", help="a Parquet file or folder of Adult-shaped rows")
    parser.add_argument("--mechanism", choices=sorted(MECHANISMS), default="dbr")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--out", default="spark-bench-release")
    parser.add_argument("--block-rows", type=float, default=None,
                        help="rows per block of splu, anatomy and ambiguity (default "
                             "ppdp.blocks.BLOCK_ROWS, 10^7)")
    args = parser.parse_args(argv)
    if args.block_rows is not None:
        ppdp.blocks.BLOCK_ROWS = int(args.block_rows)
    require_java()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    started = time.perf_counter()
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(args.master).appName("ppdp-bench")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    print(f"session on {args.master}: {time.perf_counter() - started:.1f} s")
    with resources.as_file(resources.files(ppdp.datasets) / "adult.domains.json") as path:
        domains = read_domains_file(path)
    try:
        for run in range(1, args.runs + 1):
            started = time.perf_counter()
            release = publish(MECHANISMS[args.mechanism](), read_parquet(spark, args.input),
                              sensitive="occupation", domains=domains, random_state=1)
            planned = time.perf_counter()
            release.save(args.out, overwrite=True)
            saved = time.perf_counter()
            print(f"run {run}: {release.n_rows:,} rows, {args.mechanism}: aggregations "
                  f"{planned - started:.1f} s, save {saved - planned:.1f} s")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
