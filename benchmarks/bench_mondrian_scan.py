"""Time and peak memory of Mondrian over a Parquet file: in memory, and as the hybrid of
``Mondrian.publish_source`` (top levels cut from histograms, the rest in memory per partition).

    python benchmarks/bench_mondrian_scan.py [--sizes 1000000 10000000] [--repeats 3]
                                             [--local-rows N] [--hierarchies DIR]
                                             [--workdir DIR] [--json FILE]

For every N the benchmark writes a seeded row-resample of Adult (sensitive attribute
occupation, the eight other columns quasi-identifiers, each generalized by its ARX hierarchy)
to a Parquet file, then, for every setting (k = 10; k = 10 with l = 5), runs each executor
``--repeats`` times, each run in a fresh process so that its peak RSS is its own:

``in-memory``
    ``read_table`` of the file, then ``Mondrian.publish`` and ``Release.save``;
``hybrid``
    ``scan_table`` of the file (a source read in batches), then ``Mondrian.publish_source``
    with ``LOCAL_ROWS = --local-rows`` (default N / 10, so that several levels are cut from
    histograms).

Reported per executor: the median wall and CPU time of publishing and saving (reading the
file, or its domain pass, is timed apart as ``load``), the median peak RSS of the process, and
its RSS once the input was loaded. Both executors must write the same release (the same
``release.json`` digest), which is checked.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

import ppdp
from ppdp.data.hierarchy import read_hierarchies
from ppdp.io.scan import scan_table
from ppdp.mechanisms.mondrian import steps as mondrian_steps
from ppdp.mechanisms.mondrian.mechanism import Mondrian

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_HIERARCHIES = ROOT / ".." / "shared" / "datasets" / "adult" / "hierarchies"
SETTINGS = {"k=10": {"k": 10}, "k=10,l=5": {"k": 10, "l": 5}}
EXECUTORS = ("in-memory", "hybrid")
SENSITIVE = "occupation"


def rss_bytes() -> int:
    """The process's resident memory now (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_once(spec: dict[str, Any]) -> dict[str, Any]:
    """One run in this process (``--child``): load, publish, save; times and memory."""
    hierarchies = read_hierarchies(Path(spec["hierarchies"]))
    mechanism = Mondrian(**spec["parameters"], hierarchies=hierarchies)
    output = Path(spec["output"])
    start = time.perf_counter()
    if spec["executor"] == "in-memory":
        table = ppdp.read_table(spec["data"], sensitive=SENSITIVE, observed_domains=True)
    else:
        source = scan_table(spec["data"], sensitive=SENSITIVE, observed_domains=True)
    loaded = time.perf_counter()
    rss_loaded = rss_bytes()
    cpu = cpu_seconds()
    if spec["executor"] == "in-memory":
        mechanism.publish(table, random_state=spec["seed"]).save(output)
    else:
        mondrian_steps.LOCAL_ROWS = spec["local_rows"]
        mechanism.publish_source(source, output, random_state=spec["seed"])
    done = time.perf_counter()
    digest = json.loads((output / "release.json").read_text())["metadata_digest"]
    return {"load_seconds": loaded - start, "seconds": done - loaded,
            "cpu_seconds": cpu_seconds() - cpu, "rss_loaded": rss_loaded,
            "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "digest": digest}


def run_child(spec: dict[str, Any]) -> dict[str, Any]:
    result = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)],
                            check=True, capture_output=True, text=True)
    return json.loads(result.stdout.splitlines()[-1])


def write_data(n_rows: int, path: Path) -> None:
    adult = ppdp.datasets.adult(sensitive=SENSITIVE)
    pq.write_table(adult.resample(n_rows, random_state=2024).to_arrow(), path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--local-rows", type=int, help="LOCAL_ROWS of the hybrid (default N/10)")
    parser.add_argument("--hierarchies", type=Path, default=DEFAULT_HIERARCHIES,
                        help="folder of adult_hierarchy_<column>.csv files")
    parser.add_argument("--workdir", type=Path, help="folder for the data and releases "
                                                     "(default: a temporary folder)")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_once(json.loads(args.child))))
        return

    workdir = Path(tempfile.mkdtemp(dir=args.workdir))
    results = []
    try:
        for n_rows in sorted(args.sizes):
            data = workdir / f"adult-{n_rows}.parquet"
            write_data(n_rows, data)
            local_rows = args.local_rows or max(n_rows // 10, 1)
            for label, parameters in SETTINGS.items():
                digests = set()
                for executor in EXECUTORS:
                    runs = []
                    for repeat in range(args.repeats):
                        output = workdir / f"release-{repeat}"
                        runs.append(run_child({
                            "executor": executor, "data": str(data), "output": str(output),
                            "parameters": parameters, "hierarchies": str(args.hierarchies),
                            "local_rows": local_rows, "seed": 7}))
                        shutil.rmtree(output)
                    digests |= {run["digest"] for run in runs}
                    row = {"n_rows": n_rows, "setting": label, "executor": executor,
                           "local_rows": local_rows if executor == "hybrid" else None,
                           **{key: statistics.median(run[key] for run in runs)
                              for key in ("seconds", "cpu_seconds", "load_seconds",
                                          "peak_rss", "rss_loaded")},
                           "times": [run["seconds"] for run in runs]}
                    results.append(row)
                    print(f"N={n_rows:>10,d}  {label:9s}  {executor:9s}  "
                          f"publish {row['seconds']:7.2f} s (CPU {row['cpu_seconds']:7.2f} s)  "
                          f"load {row['load_seconds']:6.2f} s"
                          f"  peak RSS {row['peak_rss'] / 2**20:7.0f} MiB  (loaded "
                          f"{row['rss_loaded'] / 2**20:6.0f} MiB)", flush=True)
                if len(digests) != 1:
                    raise SystemExit(f"N={n_rows} {label}: the executors wrote different "
                                     f"releases")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
