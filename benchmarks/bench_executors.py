"""One mechanism on one Parquet input through the three executors: wall time and CPU time.

    python benchmarks/bench_executors.py adult-1e7.parquet [--mechanism dbr] [--runs 3]
        [--executors memory,streaming,spark] [--master local[2]] [--workdir DIR]
        [--block-rows 5e6] [--spark-rows]

Each run publishes the input with the mechanism (Adult's columns, ``occupation`` sensitive,
the bundled codebook domains, seed 1, the parameters of ``MECHANISMS``) and writes the release
into ``--workdir``:

- ``memory`` and ``streaming``: ``ppdp publish ... --engine E`` in a fresh process; its wall
  time and its CPU time (user + system, from the process's resource usage);
- ``spark``: one Spark session started first (its start time printed, not counted), then in
  each run ``ppdp.spark.publish`` (the aggregations that build the plan) and ``save`` (the
  kernel, the exchanges, the writing of the parts), timed apart; the tasks read the row groups
  of ``read_parquet``'s files with pyarrow, or with ``--spark-rows`` take Spark's rows (a
  DataFrame derived from it, ``select("*")``). Spark's CPU time is spent in
  the JVM and in its Python workers, so it is read machine-wide from ``/proc/stat`` (all
  cores' user + system time) around each run: run this on an otherwise idle machine.

Prints each run, then the median of each executor: wall seconds, CPU seconds, CPU seconds per
10^7 rows, and the wall time 10^9 rows would take on a cluster at that rate
(``--cluster-cores``, default 100, cores kept as busy as here). Inputs: ``generate_data.py``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import pyarrow.parquet as pq

import ppdp.datasets
import ppdp.plan.blocks

MECHANISMS = {
    "uniform": ["rho1=0.1", "rho2=0.5"],
    "dbr": [],
    "frapp": ["k=0.01", "gamma=0.2"],
    "sdr": ["rho1=0.077", "rho2=0.2"],
    "splu": ["gamma=5"],
    "anatomy": ["l=5"],
    "ambiguity": ["alpha=0.1", "beta=0.2"],
    "mondrian": ["k=10"],
}


def machine_cpu_seconds() -> float:
    """User + system time of every core since boot (``/proc/stat``), in seconds."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    # user nice system idle iowait irq softirq steal ...: all but idle and iowait.
    busy = sum(int(value) for index, value in enumerate(fields[:8]) if index not in (3, 4))
    return busy / os.sysconf("SC_CLK_TCK")


def domains_file() -> str:
    with resources.as_file(resources.files(ppdp.datasets) / "adult.domains.json") as path:
        return str(path)


def run_cli(engine: str, mechanism: str, source: str, out: Path) -> tuple[float, float]:
    """Wall and CPU seconds of ``ppdp publish --engine ENGINE`` in a fresh process."""
    command = [sys.executable, "-m", "ppdp.cli", "publish", source, "-m", mechanism,
               "-s", "occupation", "--domains", domains_file(), "--engine", engine,
               "--seed", "1", "-o", str(out), "--overwrite"]
    for value in MECHANISMS[mechanism]:
        command += ["-p", value]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


class SparkRunner:
    """One Spark session for every run; each run's wall time, split into publish and save."""

    def __init__(self, master: str, spark_rows: bool) -> None:
        from ppdp.engines.spark import require_java

        require_java()
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        from pyspark.sql import SparkSession

        started = time.perf_counter()
        self.spark = (SparkSession.builder.master(master).appName("ppdp-bench")
                      .config("spark.ui.enabled", "false")
                      .config("spark.ui.showConsoleProgress", "false").getOrCreate())
        self.spark.sparkContext.setLogLevel("ERROR")
        print(f"spark session on {master}: {time.perf_counter() - started:.1f} s (not counted)")
        from ppdp.data.domains import read_domains_file

        self.domains = read_domains_file(domains_file())
        self.spark_rows = spark_rows

    def run(self, mechanism: str, source: str, out: Path) -> tuple[float, float, str]:
        from ppdp.engines.spark import publish, read_parquet
        from ppdp.mechanisms import get_mechanism

        instance = get_mechanism(mechanism).from_params(
            dict(value.split("=", 1) for value in MECHANISMS[mechanism]))
        cpu, started = machine_cpu_seconds(), time.perf_counter()
        frame = read_parquet(self.spark, source)
        if self.spark_rows:
            frame = frame.select("*")
        release = publish(instance, frame, sensitive="occupation", domains=self.domains,
                          random_state=1)
        planned = time.perf_counter()
        release.save(out, overwrite=True)
        saved = time.perf_counter()
        return saved - started, machine_cpu_seconds() - cpu, \
            f"publish {planned - started:.1f} s, save {saved - planned:.1f} s"

    def stop(self) -> None:
        self.spark.stop()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", help="a Parquet file or folder of Adult-shaped rows")
    parser.add_argument("--mechanism", choices=sorted(MECHANISMS), default="dbr")
    parser.add_argument("--executors", default="memory,streaming,spark")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--cluster-cores", type=int, default=100)
    parser.add_argument("--workdir", default="bench-executors")
    parser.add_argument("--block-rows", type=float, default=None,
                        help="on Spark: rows per block of splu, anatomy and ambiguity "
                             "(default ppdp.plan.blocks.BLOCK_ROWS, 10^7)")
    parser.add_argument("--spark-rows", action="store_true",
                        help="on Spark: take Spark's rows, not the files read by the tasks")
    args = parser.parse_args(argv)
    if args.block_rows is not None:
        # Read when each publish starts (ppdp.spark.blocks): a task a block.
        ppdp.plan.blocks.BLOCK_ROWS = int(args.block_rows)
    executors = args.executors.split(",")
    rows = sum(pq.ParquetFile(path).metadata.num_rows for path in
               ([args.input] if Path(args.input).is_file()
                else sorted(Path(args.input).glob("*.parquet"))))
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    spark = SparkRunner(args.master, args.spark_rows) if "spark" in executors else None
    measured: dict[str, list[tuple[float, float]]] = {name: [] for name in executors}
    try:
        for run in range(1, args.runs + 1):
            for name in executors:
                out = work / f"release-{name}"
                if name == "spark":
                    assert spark is not None
                    wall, cpu, phases = spark.run(args.mechanism, args.input, out)
                else:
                    (wall, cpu), phases = run_cli(name, args.mechanism, args.input, out), ""
                measured[name].append((wall, cpu))
                print(f"run {run} {name}: {wall:.1f} s wall, {cpu:.1f} s CPU {phases}",
                      flush=True)
    finally:
        if spark is not None:
            spark.stop()
    print(f"\n{args.mechanism}, {rows:,} rows, medians of {args.runs} runs")
    print("executor    wall s   CPU s   CPU s per 1e7 rows   10^9 rows on "
          f"{args.cluster_cores} cores")
    for name, values in measured.items():
        wall = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        per = cpu / rows * 1e7
        projected = per * 100 / args.cluster_cores
        print(f"{name:<10} {wall:7.1f} {cpu:7.1f} {per:12.1f}          {projected:8.0f} s")


if __name__ == "__main__":
    main()
