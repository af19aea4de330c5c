"""Blocked publishing (`ppdp.blocks`) of the group mechanisms on seeded row-resamples of Adult.

    python benchmarks/bench_blocks.py [--sizes 1000000 10000000] [--repeats 3]
                                      [--mechanisms splu anatomy ambiguity]
                                      [--in-memory splu anatomy]

For every N and mechanism: the median wall time of ``publish_source`` from a TableSource (Adult
resampled with ``random_state=1``, sensitive occupation) into a fresh release directory, with
SPLU-Gen gamma = 5, Anatomy l = 5 and ambiguity alpha = 0.2, beta = 1/5; then, at the largest N,
the in-memory ``publish`` of the mechanisms named by ``--in-memory``. Each measurement runs in a
process of its own and reports its peak resident memory (``ru_maxrss``) beside the peak before
publishing (reading and resampling the table). Results are printed and written to
benchmarks/results/blocks.json.
"""

from __future__ import annotations

import argparse
import json
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
    from ppdp.sources import TableSource

    # The in-memory publish warns when it expects to need more memory than is free.
    warnings.simplefilter("ignore")
    table = ppdp.datasets.adult(sensitive="occupation").resample(n_rows, random_state=1)
    class_name, parameters = MECHANISMS[name]
    mechanism = getattr(ppdp, class_name)(**parameters)
    before = peak_mb()
    times = []
    with tempfile.TemporaryDirectory() as scratch:
        for repeat in range(repeats):
            start = time.perf_counter()
            if mode == "blocked":
                mechanism.publish_source(TableSource(table), Path(scratch) / str(repeat),
                                         random_state=repeat)
            else:
                mechanism.publish(table, random_state=repeat)
            times.append(time.perf_counter() - start)
    return {"mechanism": name, "n": n_rows, "mode": mode, "repeats": repeats,
            "median_s": statistics.median(times), "times_s": times,
            "peak_before_mb": round(before), "peak_mb": round(peak_mb())}


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
    runs = [(name, n, "blocked") for n in args.sizes for name in args.mechanisms]
    runs += [(name, max(args.sizes), "in-memory") for name in args.in_memory]
    results = []
    for name, n_rows, mode in runs:
        child = json.dumps({"name": name, "n_rows": n_rows, "mode": mode,
                            "repeats": args.repeats})
        output = subprocess.run([sys.executable, __file__, "--child", child], check=True,
                                capture_output=True, text=True).stdout
        row = json.loads(output.splitlines()[-1])
        results.append(row)
        print(f"{mode:>9} {name:>9} N={n_rows:>10,}: median {row['median_s']:7.2f} s, peak RSS "
              f"{row['peak_mb']:6} MB (before publishing {row['peak_before_mb']} MB)",
              flush=True)
    args.output.mkdir(parents=True, exist_ok=True)
    (args.output / "blocks.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
