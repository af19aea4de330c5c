"""The group mechanisms on seeded row-resamples of Adult: blocked (`ppdp.blocks`) and in memory.

    python benchmarks/bench_blocks.py [--sizes 1000000 10000000] [--repeats 3]
                                      [--mechanisms splu anatomy ambiguity]
                                      [--in-memory splu anatomy]

For every N: for each of ``--mechanisms``, ``publish_source`` from a TableSource (Adult
resampled with ``random_state=1``, sensitive occupation) into a fresh release directory; for
each of ``--in-memory``, the in-memory ``publish``. SPLU-Gen gamma = 5, Anatomy l = 5,
ambiguity alpha = 0.2, beta = 1/5. Each measurement runs in a process of its own and reports
the median wall and CPU time (both cores added up) over ``--repeats`` seeds, its peak resident
memory (``ru_maxrss``) beside the peak before publishing (reading and resampling the table),
and the one-minute load average before and after: on a shared machine, wall times above the
CPU times mean that other jobs held the cores. Results are printed and written to
benchmarks/results/blocks.json.
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
import warnings
from pathlib import Path

MECHANISMS = {
    "splu": ("SPLUGen", {"gamma": 5}),
    "anatomy": ("Anatomy", {"l": 5}),
    "ambiguity": ("Ambiguity", {"alpha": 0.2, "beta": 1 / 5}),
}


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(name: str, n_rows: int, mode: str, repeats: int) -> dict:
    """Run in a child process: time ``repeats`` publishes of one mechanism at one size."""
    import ppdp
    from ppdp.table.source import TableSource

    # The in-memory publish warns when it expects to need more memory than is free.
    warnings.simplefilter("ignore")
    table = ppdp.datasets.adult(sensitive="occupation").resample(n_rows, random_state=1)
    class_name, parameters = MECHANISMS[name]
    mechanism = getattr(ppdp, class_name)(**parameters)
    before = peak_mb()
    load_before = os.getloadavg()[0]
    times, cpus = [], []
    with tempfile.TemporaryDirectory() as scratch:
        for repeat in range(repeats):
            start, cpu = time.perf_counter(), time.process_time()
            if mode == "blocked":
                mechanism.publish_source(TableSource(table), Path(scratch) / str(repeat),
                                         random_state=repeat)
            else:
                mechanism.publish(table, random_state=repeat)
            times.append(time.perf_counter() - start)
            cpus.append(time.process_time() - cpu)
    return {"mechanism": name, "n": n_rows, "mode": mode, "repeats": repeats,
            "median_s": statistics.median(times), "median_cpu_s": statistics.median(cpus),
            "times_s": times, "cpu_s": cpus, "peak_before_mb": round(before),
            "peak_mb": round(peak_mb()), "load": [load_before, os.getloadavg()[0]]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--mechanisms", nargs="+", default=list(MECHANISMS))
    parser.add_argument("--in-memory", nargs="*", default=["splu", "anatomy"])
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(**json.loads(args.child))))
        return
    runs = [(name, n, mode) for n in args.sizes
            for mode, names in (("blocked", args.mechanisms), ("in-memory", args.in_memory))
            for name in names]
    results = []
    for name, n_rows, mode in runs:
        child = json.dumps({"name": name, "n_rows": n_rows, "mode": mode,
                            "repeats": args.repeats})
        output = subprocess.run([sys.executable, __file__, "--child", child], check=True,
                                capture_output=True, text=True).stdout
        row = json.loads(output.splitlines()[-1])
        results.append(row)
        print(f"{mode:>9} {name:>9} N={n_rows:>10,}: median {row['median_s']:7.2f} s wall, "
              f"{row['median_cpu_s']:7.2f} s CPU; peak RSS {row['peak_mb']:6} MB (before "
              f"publishing {row['peak_before_mb']} MB); load {row['load'][0]:.1f} -> "
              f"{row['load'][1]:.1f}", flush=True)
    args.output.mkdir(parents=True, exist_ok=True)
    (args.output / "blocks.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
