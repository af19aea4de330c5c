"""Every registered mechanism in memory at 10^5, 10^6 and 10^7 rows: time, peak RSS, exponent.

    python benchmarks/bench_every_mechanism.py [--sizes 1e5 1e6 1e7] [--repeats 3]
                                               [--single-run-above 30] [--mechanisms ...]
                                               [--set alphabeta.max_rows=100000000]
                                               [--timeout 300] [--max-rss-gb 10]
                                               [--hierarchies DIR] [--json FILE]

Each (mechanism, N) runs in a fresh process of its own: it draws the N-row seeded resample
of the bundled Adult table (``adult(...).resample(N, random_state=2024)``), then times
``publish(table, random_state=r)`` for r = 0, 1, ... ``--repeats`` times, or once when the first
run takes more than ``--single-run-above`` seconds. Reported per row: the median time and the
number of runs, the process's peak RSS (``ru_maxrss`` from ``os.wait4``, imports and table
included) beside its RSS just before the first publish, and the growth exponent of the time
from the previous size (``log(t2/t1) / log(N2/N1)``; 1.0 is linear). A process still running
after ``--timeout`` seconds or above ``--max-rss-gb`` of RSS (checked every 0.1 s) is killed
and its row says so; so does one whose mechanism refuses the table.

Parameters are those of the README's examples, with occupation sensitive: splu gamma = 5;
anatomy l = 5; dbr; laplace epsilon = 0.69 (its publish keeps the table and draws nothing, so
its time includes answering ``sex = 'Female' AND occupation = 'Sales'``, which counts a
contingency table over the N rows); uniform and sdr (rho1, rho2) = (1/13, 1/5); ambiguity
alpha = 0.1, beta = 0.2; mondrian k = 10, l = 5 with Adult's ARX hierarchies
(``--hierarchies``, default ``../shared/datasets/adult/hierarchies`` beside the repository);
alphabeta and frapp k = 10, gamma = 0.2 on the table without a sensitive column (every column
an attribute of the tuple). ``--set NAME.KEY=VALUE`` changes one parameter (repeatable).
Results are printed and written to ``benchmarks/results/every_mechanism.json`` unless
``--json`` names another file.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_HIERARCHIES = ROOT / ".." / "shared" / "datasets" / "adult" / "hierarchies"
SENSITIVE = "occupation"
PARAMETERS: dict[str, dict[str, object]] = {
    "splu": {"gamma": 5},
    "anatomy": {"l": 5},
    "dbr": {},
    "laplace": {"epsilon": 0.69},
    "uniform": {"rho1": 1 / 13, "rho2": 1 / 5},
    "sdr": {"rho1": 1 / 13, "rho2": 1 / 5},
    "frapp": {"k": 10, "gamma": 0.2},
    "alphabeta": {"k": 10, "gamma": 0.2},
    "ambiguity": {"alpha": 0.1, "beta": 0.2},
    "mondrian": {"k": 10, "l": 5},
}
TUPLE_MECHANISMS = {"alphabeta", "frapp"}
LAPLACE_QUERY = "sex = 'Female' AND occupation = 'Sales'"
SEED = 2024


def rss_bytes(pid: int | str = "self") -> int | None:
    """The current resident set size of a process, from /proc (None where there is none)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def worker(name: str, n_rows: int, repeats: int, single_run_above: float,
           settings: dict[str, str], hierarchies: Path) -> None:
    """Publish one mechanism on one resample, printing the times as one JSON line.

    Fails when the registry holds a mechanism that ``PARAMETERS`` does not name.
    """
    import ppdp
    from ppdp.data.hierarchy import read_hierarchies
    from ppdp.errors import InfeasibleError
    from ppdp.mechanisms import Mechanism, get_mechanism

    missing = sorted(set(Mechanism.registry) - set(PARAMETERS))
    if missing:
        raise SystemExit(f"no parameters for the registered mechanism(s) {', '.join(missing)}")
    mechanism_class = get_mechanism(name)
    mechanism = mechanism_class.from_params({**PARAMETERS[name], **settings})
    if name == "mondrian":
        mechanism = mechanism_class(**mechanism.parameter_values, **mechanism.resource_values,
                                    hierarchies=read_hierarchies(hierarchies))
    sensitive = None if name in TUPLE_MECHANISMS else SENSITIVE
    table = ppdp.datasets.adult(sensitive=sensitive).resample(n_rows, random_state=SEED)
    report: dict[str, object] = {"table_bytes": table.nbytes, "rss_before_bytes": rss_bytes()}
    times = []
    try:
        for repeat in range(repeats):
            start = time.perf_counter()
            release = mechanism.publish(table, random_state=repeat)
            if name == "laplace":
                release.count(LAPLACE_QUERY)
            times.append(time.perf_counter() - start)
            del release
            if times[0] > single_run_above:
                break
    except InfeasibleError as error:
        report["refused"] = str(error)
    report["times"] = times
    print(json.dumps(report), flush=True)


def measure(name: str, n_rows: int, args: argparse.Namespace) -> dict:
    """One worker process for (name, N): its report, peak RSS, and whether it was stopped."""
    command = [sys.executable, __file__, "--worker", name, str(n_rows),
               "--repeats", str(args.repeats), "--single-run-above",
               str(args.single_run_above), "--hierarchies", str(args.hierarchies),
               *[f"--set={item}" for item in args.set]]
    limit = args.max_rss_gb * 2**30
    stopped, peak_seen = None, 0
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=stdout, stderr=stderr)
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            peak_seen = max(peak_seen, rss_bytes(process.pid) or 0)
            if peak_seen > limit:
                stopped = f"stopped above {args.max_rss_gb:g} GB of RSS"
            elif time.perf_counter() - start > args.timeout:
                stopped = f"stopped after {args.timeout:g} s"
            if stopped:
                process.send_signal(signal.SIGKILL)
                _, status, usage = os.wait4(process.pid, 0)
                break
            time.sleep(0.1)
        stdout.seek(0)
        stderr.seek(0)
        output, errors = stdout.read().decode(), stderr.read().decode().strip()
    result: dict = {"mechanism": name, "n_rows": n_rows,
                    "peak_rss_bytes": usage.ru_maxrss * 1024,
                    "elapsed_seconds": time.perf_counter() - start}
    if stopped:
        result["stopped"] = stopped
    elif os.waitstatus_to_exitcode(status) != 0:
        result["failed"] = errors.splitlines()[-1] if errors else "failed"
    else:
        result.update(json.loads(output.strip().splitlines()[-1]))
        if result["times"]:
            result["seconds"] = statistics.median(result["times"])
    return result


def parse_settings(items: list[str]) -> dict[str, dict[str, str]]:
    """``NAME.KEY=VALUE`` items as {name: {key: value}} (values converted by the worker)."""
    settings: dict[str, dict[str, str]] = {}
    for item in items:
        target, _, value = item.partition("=")
        name, _, key = target.partition(".")
        if name not in PARAMETERS or not key or not value:
            raise SystemExit(f"--set {item!r}: expected NAME.KEY=VALUE with NAME one of "
                             f"{', '.join(PARAMETERS)}")
        settings.setdefault(name, {})[key] = value
    return settings


def cell(result: dict) -> str:
    """The time column of one row: median seconds and runs, or why there is none."""
    if "seconds" in result:
        runs = len(result["times"])
        return f"{result['seconds']:.3f} ({runs} run{'s' if runs > 1 else ''})"
    if "refused" in result:
        return "refused by the mechanism"
    return result.get("stopped") or result.get("failed", "")


def main() -> None:
    """Measure every (mechanism, N) in a process of its own and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=lambda s: int(float(s)),
                        default=[10**5, 10**6, 10**7])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--single-run-above", type=float, default=30.0)
    parser.add_argument("--mechanisms", nargs="+", choices=sorted(PARAMETERS),
                        default=list(PARAMETERS))
    parser.add_argument("--set", action="append", default=[], metavar="NAME.KEY=VALUE")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--max-rss-gb", type=float, default=10.0)
    parser.add_argument("--hierarchies", type=Path, default=DEFAULT_HIERARCHIES)
    parser.add_argument("--json", type=Path,
                        default=Path(__file__).parent / "results" / "every_mechanism.json")
    parser.add_argument("--worker", nargs=2, metavar=("NAME", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    settings = parse_settings(args.set)
    if args.worker:
        name, n_rows = args.worker
        worker(name, int(n_rows), args.repeats, args.single_run_above, settings.get(name, {}),
               args.hierarchies)
        return
    # The parent imports nothing heavy: Linux counts its RSS in every child's ru_maxrss.
    results = []
    print(f"{'mechanism':10s} {'N':>12s} {'time (s)':>18s} {'peak RSS':>10s} "
          f"{'before':>8s} {'exponent':>9s}", flush=True)
    for name in args.mechanisms:
        previous = None
        for n_rows in sorted(args.sizes):
            result = measure(name, n_rows, args)
            if previous is not None and "seconds" in result and "seconds" in previous:
                result["exponent"] = math.log(result["seconds"] / previous["seconds"]) / \
                    math.log(n_rows / previous["n_rows"])
            results.append(result)
            previous = result
            before = result.get("rss_before_bytes")
            exponent = result.get("exponent")
            print(f"{name:10s} {n_rows:>12,} {cell(result):>18s} "
                  f"{result['peak_rss_bytes'] / 2**20:7.0f} MB "
                  f"{'' if before is None else f'{before / 2**20:5.0f} MB':>8s} "
                  f"{'' if exponent is None else f'{exponent:.2f}':>9s}", flush=True)
            if "refused" in result or "failed" in result:
                print(f"    {result.get('refused') or result['failed']}", flush=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    parameters = {name: {**values, **settings.get(name, {})} for name, values in
                  PARAMETERS.items()}
    args.json.write_text(json.dumps({
        "parameters": parameters, "launcher_rss_bytes": rss_bytes(), "results": results},
        indent=2) + "\n")
    print("\n| mechanism | N | time (s), median of runs | peak RSS (MB) | RSS before publish "
          "(MB) | exponent |")
    print("|---|---:|---:|---:|---:|---:|")
    for result in results:
        before = result.get("rss_before_bytes")
        exponent = result.get("exponent")
        print(f"| {result['mechanism']} | {result['n_rows']:,} | {cell(result)} | "
              f"{result['peak_rss_bytes'] / 2**20:,.0f} | "
              f"{'' if before is None else f'{before / 2**20:,.0f}'} | "
              f"{'' if exponent is None else f'{exponent:.2f}'} |")


if __name__ == "__main__":
    main()
