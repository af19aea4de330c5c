"""Publishing (and counting) on 1, 2, ... workers: wall time, CPU time, CPU/wall, peak RSS.

    python benchmarks/bench_workers.py adult-1e7.parquet [--mechanisms sdr,splu]
        [--engines memory,streaming] [--workers 1,2] [--runs 3] [--count] [--workdir DIR]

Each run is ``ppdp publish SOURCE -m MECHANISM --engine ENGINE --workers N`` in a fresh
process (Adult's columns, ``occupation`` sensitive, the bundled codebook's domains, seed 1, the
parameters of ``bench_executors.MECHANISMS``), started by a small Python process that reports
the command's resource usage: its wall time, its CPU time (user + system, every thread) and
its peak resident memory. With ``--count``, the release of each run is then loaded and counted
(``ppdp count RELEASE QUERY --workers N``, a query grouped by occupation and sex) and timed
the same way.

Every worker count must write the same files: the release's ``release.json`` (which holds the
digest of every file) is compared across worker counts and a difference stops the benchmark.

Prints each run, then a Markdown table of medians: rows, mechanism, engine, workers, wall s,
CPU s, CPU/wall, CPU s per 10^7 rows, peak RSS MiB. Inputs: ``generate_data.py``. Run it on
an otherwise idle machine: CPU/wall is only meaningful when the cores are free.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pyarrow.parquet as pq
from bench_executors import MECHANISMS, domains_file

QUERY = "SELECT COUNT(*) FROM t WHERE age >= 40 GROUP BY occupation, sex"

_MEASURE = """
import resource, subprocess, sys, time
started = time.perf_counter()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
wall = time.perf_counter() - started
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)
"""


def measured(command: Sequence[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MiB) of a command run in a fresh process."""
    out = subprocess.run([sys.executable, "-c", _MEASURE, *command], check=True,
                         capture_output=True, text=True).stdout.split()
    wall, cpu, rss = (float(value) for value in out)
    return wall, cpu, rss


def publish_command(source: str, mechanism: str, engine: str, workers: int,
                    out: Path) -> list[str]:
    command = [sys.executable, "-m", "ppdp.cli", "publish", source, "-m", mechanism, "-s",
               "occupation", "--domains", domains_file(), "--engine", engine, "--seed", "1",
               "--workers", str(workers), "-o", str(out), "--overwrite"]
    for value in MECHANISMS[mechanism]:
        command += ["-p", value]
    return command


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", help="a Parquet file of Adult-shaped rows")
    parser.add_argument("--mechanisms", default="sdr,splu")
    parser.add_argument("--engines", default="memory,streaming")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--count", action="store_true", help="also count each release")
    parser.add_argument("--workdir", default="bench-workers")
    args = parser.parse_args(argv)
    rows = pq.ParquetFile(args.input).metadata.num_rows
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    table = []
    for mechanism in args.mechanisms.split(","):
        for engine in args.engines.split(","):
            metadata = None
            for workers in (int(w) for w in args.workers.split(",")):
                out = work / f"{mechanism}-{engine}"
                results, counts = [], []
                for run in range(1, args.runs + 1):
                    wall, cpu, rss = measured(publish_command(args.input, mechanism, engine,
                                                              workers, out))
                    results.append((wall, cpu, rss))
                    print(f"{mechanism} {engine} workers {workers} run {run}: {wall:.2f} s "
                          f"wall, {cpu:.2f} s CPU, {rss:.0f} MiB", flush=True)
                    if args.count:
                        counts.append(measured([sys.executable, "-m", "ppdp.cli", "count",
                                                str(out), QUERY, "--workers", str(workers)]))
                written = json.loads((out / "release.json").read_text())["digests"]
                if metadata is not None and written != metadata:
                    raise SystemExit(f"{mechanism} on {engine}: {workers} workers wrote other "
                                     f"files than the first worker count")
                metadata = written
                table.append((f"publish {mechanism}", engine, workers, results))
                if counts:
                    table.append((f"count {mechanism}", engine, workers, counts))
    print(f"\n{rows:,} rows, medians of {args.runs} runs\n")
    print("| rows | work | engine | workers | wall s | CPU s | CPU/wall | CPU s per 10^7 rows "
          "| peak RSS MiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for work_done, engine, workers, results in table:
        wall = statistics.median(r[0] for r in results)
        cpu = statistics.median(r[1] for r in results)
        rss = statistics.median(r[2] for r in results)
        print(f"| {rows:.0e} | {work_done} | {engine} | {workers} | {wall:.2f} | {cpu:.2f} | "
              f"{cpu / wall:.2f} | {cpu / rows * 1e7:.2f} | {rss:.0f} |")


if __name__ == "__main__":
    main()
