"""Publishing through the command line from Parquet, against N: time, peak memory, exponent.

    python benchmarks/bench_publish_scale.py [--sizes 1e6 1e7 1e8] [--repeats 1]
                                             [--mechanisms dbr uniform sdr frapp]
                                             [--engine streaming] [--workdir DIR]
                                             [--hierarchies DIR] [--json FILE]

For every N the input is ``WORKDIR/adult-<N>.parquet``, a seeded row-resample of Adult written
by ``generate_data.py`` (made here when missing, with seed 0; 10^9 rows take 2.7 GB and about
5 minutes). Each run is ``ppdp publish FILE -m M ... --engine ENGINE --seed 1 -o DIR`` in a
process of its own, timed from start to exit; its peak resident memory is that process's
``ru_maxrss`` (from ``os.wait4``, so it is the child's own). The release is deleted after each
run. Reported per mechanism and N: the median wall time, its rows per second, the median peak
RSS, and the growth exponent of time between successive sizes (``log(t2/t1) / log(N2/N1)``;
1.0 is linear).

The mechanisms run with Adult's sensitive attribute occupation (observed domains declared
public): dbr; uniform and sdr with (rho1, rho2) = (0.077, 0.2); frapp k = 0.01, gamma = 0.2;
splu gamma = 5; anatomy l = 5; ambiguity alpha = 0.2, beta = 0.2; mondrian k = 10 with the ARX
hierarchies of Adult (``--hierarchies``, default ``../shared/datasets/adult/hierarchies``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_HIERARCHIES = ROOT / ".." / "shared" / "datasets" / "adult" / "hierarchies"

OPTIONS = {
    "dbr": ["-s", "occupation"],
    "uniform": ["-s", "occupation", "-p", "rho1=0.077", "-p", "rho2=0.2"],
    "sdr": ["-s", "occupation", "-p", "rho1=0.077", "-p", "rho2=0.2"],
    "frapp": ["-p", "k=0.01", "-p", "gamma=0.2"],
    "splu": ["-s", "occupation", "-p", "gamma=5"],
    "anatomy": ["-s", "occupation", "-p", "l=5"],
    "ambiguity": ["-s", "occupation", "-p", "alpha=0.2", "-p", "beta=0.2"],
    "mondrian": ["-s", "occupation", "-p", "k=10"],
}


def input_file(workdir: Path, n_rows: int) -> Path:
    """The N-row Parquet input, generated when missing."""
    path = workdir / f"adult-{n_rows}.parquet"
    if not path.exists():
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "generate_data.py"),
                        "--rows", str(n_rows), "--seed", "0", "--out", str(path)], check=True)
    return path


def run(command: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one command, in a process of its own."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    stderr = process.stderr.read().decode() if process.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{stderr}")
    return elapsed, usage.ru_maxrss / 1024


def measure(mechanism: str, path: Path, engine: str, repeats: int, workdir: Path,
            hierarchies: Path) -> dict:
    output = workdir / f"release-{mechanism}"
    command = [sys.executable, "-m", "ppdp.cli", "publish", str(path), "-m", mechanism,
               *OPTIONS[mechanism], "--observed-domains", "--engine", engine, "--seed", "1",
               "-o", str(output)]
    if mechanism == "mondrian":
        command += ["--hierarchies", str(hierarchies)]
    times, peaks = [], []
    for _ in range(repeats):
        shutil.rmtree(output, ignore_errors=True)
        elapsed, peak = run(command)
        times.append(elapsed)
        peaks.append(peak)
        shutil.rmtree(output, ignore_errors=True)
    return {"seconds": statistics.median(times), "peak_mb": statistics.median(peaks),
            "runs": times}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", type=lambda s: int(float(s)),
                        default=[10**6, 10**7, 10**8])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--mechanisms", nargs="+", choices=sorted(OPTIONS),
                        default=["dbr", "uniform", "sdr", "frapp"])
    parser.add_argument("--engine", default="streaming", choices=["streaming", "memory",
                                                                   "auto"])
    parser.add_argument("--workdir", type=Path, default=Path("bench-data"))
    parser.add_argument("--hierarchies", type=Path, default=DEFAULT_HIERARCHIES)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[int, dict]] = {}
    print(f"{'mechanism':10s} {'N':>14s} {'seconds':>9s} {'rows/s':>12s} {'peak MB':>9s} "
          f"{'exponent':>9s}", flush=True)
    for mechanism in args.mechanisms:
        results[mechanism] = {}
        previous: tuple[int, float] | None = None
        for n_rows in args.sizes:
            result = measure(mechanism, input_file(args.workdir, n_rows), args.engine,
                             args.repeats, args.workdir, args.hierarchies)
            exponent = (math.log(result["seconds"] / previous[1]) / math.log(n_rows /
                        previous[0])) if previous else None
            result["exponent"] = exponent
            results[mechanism][n_rows] = result
            shown = "" if exponent is None else f"{exponent:.2f}"
            print(f"{mechanism:10s} {n_rows:>14,} {result['seconds']:9.1f} "
                  f"{n_rows / result['seconds']:12,.0f} {result['peak_mb']:9.0f} {shown:>9s}",
                  flush=True)
            previous = (n_rows, result["seconds"])
    if args.json:
        args.json.write_text(json.dumps({"engine": args.engine, "results": results},
                                        indent=2) + "\n")


if __name__ == "__main__":
    main()
