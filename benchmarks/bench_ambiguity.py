"""Ambiguity: construction time on seeded row-resamples of Adult, and the Section 8.3
comparison with Mondrian on Adult and FARS.

    python benchmarks/bench_ambiguity.py [--sizes 100000 300000 500000] [--repeats 3]
                                         [--skip-timing] [--skip-comparison]
    python benchmarks/bench_ambiguity.py --scaling [--scaling-sizes 100000 1000000 10000000]
                                         [--repeats 3]

Timing: median wall time of Algorithm 2 (``Ambiguity.publish``) on Adult resampled to each N
(sensitive occupation, the 8 other columns as quasi-identifiers) for alpha in {0.5, 0.2, 0.1}
and the betas Adult's occupation admits (1/7, 1/5; the paper's 0.1 needs the most frequent
occupation below 10 % of the rows, and Adult's holds 13.4 %).

Scaling (``--scaling``, instead of the rest): the in-memory publish (groups and scheme) at
alpha = 0.1, beta = 0.2 on Adult resampled to 10^5, 10^6 and 10^7 rows: median wall and CPU
time and the median peak resident memory of the publish (Linux: the process's high-water
mark, reset before each run, less the memory held before it).

Comparison (Figures 8-9): average relative error of ambiguity and of Mondrian with
l = k = ceil(1/beta) (frequency l-diversity, matched to beta-association; distinct l beside it,
not matched), over 3 publications, on the paper's workloads (`paper_workloads`: range, IN-list
and GROUP BY pools), for the paper's betas 0.1, 0.05, 0.025 and the betas each dataset admits:
Adult/occupation (1/7, 1/5, 1/3), FARS/iinjury (1/2), FARS/iage as a sensitive attribute with a
large domain (0.1, 0.05, 0.025) and MEPS/ICD9CODX (0.1, 0.05). Infeasible settings are listed
with the reason. Results go to benchmarks/results/ambiguity/.
"""

from __future__ import annotations

import argparse
import csv
import gc
import json
import statistics
import time
from pathlib import Path

import ppdp
from ppdp.data.hierarchy import read_hierarchies
from ppdp.evaluate.experiments import read_meps
from ppdp.evaluate.generalization_comparison import (
    PAPER_BETAS,
    compare_with_generalization,
    paper_workloads,
)
from ppdp.mechanisms.ambiguity.mechanism import Ambiguity

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def timing(sizes: list[int], repeats: int) -> list[dict]:
    adult = ppdp.datasets.adult(sensitive="occupation")
    rows = []
    for n in sizes:
        table = adult.resample(n, random_state=n)
        for beta in (1 / 7, 1 / 5):
            for alpha in (0.5, 0.2, 0.1):
                times = []
                for repeat in range(repeats):
                    start = time.perf_counter()
                    release = Ambiguity(alpha=alpha, beta=beta).publish(table,
                                                                        random_state=repeat)
                    times.append(time.perf_counter() - start)
                row = {"n": n, "alpha": alpha, "beta": round(beta, 4),
                       "median_s": statistics.median(times), "groups": release.n_groups,
                       "presence_max": float(release.presence().max())}
                rows.append(row)
                print(f"N={n:>8,} alpha={alpha:<4} beta={beta:.3f}  "
                      f"{row['median_s']:6.2f} s  groups={row['groups']:,}  "
                      f"max presence={row['presence_max']:.3g}", flush=True)
    return rows


def resident_mb(field: str) -> float:
    """A memory figure of this process from /proc/self/status (VmRSS, VmHWM), in MiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


def scaling(sizes: list[int], repeats: int) -> list[dict]:
    adult = ppdp.datasets.adult(sensitive="occupation")
    rows = []
    for n in sizes:
        table = adult.resample(n, random_state=n)
        walls, cpus, peaks = [], [], []
        for repeat in range(repeats):
            gc.collect()
            before = resident_mb("VmRSS")
            with open("/proc/self/clear_refs", "w") as clear:
                clear.write("5")  # resets VmHWM to the current resident size
            start, cpu = time.perf_counter(), time.process_time()
            release = Ambiguity(alpha=0.1, beta=0.2).publish(table, random_state=repeat)
            walls.append(time.perf_counter() - start)
            cpus.append(time.process_time() - cpu)
            peaks.append(resident_mb("VmHWM") - before)
            del release
        row = {"n": n, "alpha": 0.1, "beta": 0.2, "repeats": repeats,
               "median_s": statistics.median(walls), "median_cpu_s": statistics.median(cpus),
               "median_peak_mb": statistics.median(peaks), "wall_s": walls, "peak_mb": peaks}
        rows.append(row)
        print(f"N={n:>11,}  {row['median_s']:7.2f} s (cpu {row['median_cpu_s']:6.2f} s)  "
              f"peak +{row['median_peak_mb']:7.0f} MiB", flush=True)
    return rows


def comparison() -> list[dict]:
    settings = [
        ("adult", "occupation", [*PAPER_BETAS, 1 / 7, 1 / 5, 1 / 3]),
        ("fars", "iinjury", [*PAPER_BETAS, 1 / 2]),
        ("fars", "iage", list(PAPER_BETAS)),
        ("meps", "ICD9CODX", [0.1, 0.05]),
    ]
    rows = []
    for dataset, sensitive, betas in settings:
        if dataset == "adult":
            table = ppdp.read_table(SHARED / "adult" / "adult-arx-9attr.csv", sensitive=sensitive)
        elif dataset == "meps":
            table = read_meps(SHARED / "more" / "meps2005_conditions.csv", sensitive=sensitive)
        else:
            table = ppdp.read_table(SHARED / "fars" / "fars_int.csv", sensitive=sensitive)
        # MEPS's quasi-identifiers are numbers: Mondrian generalizes them to ranges.
        hierarchies = {} if dataset == "meps" else {
            name: h for name, h in read_hierarchies(SHARED / dataset / "hierarchies").items()
            if name in table.schema.quasi_identifiers}
        print(f"\n{dataset} (N = {table.n_rows:,}), sensitive {sensitive}", flush=True)
        for row in compare_with_generalization(
                table, betas=betas, alpha=0.1, hierarchies=hierarchies, publications=3,
                pools=paper_workloads(table, size=300, random_state=7), random_state=7,
                progress=lambda m: print(f"  {m}", flush=True)):
            record = {"dataset": dataset, "sensitive": sensitive, **row.to_dict()}
            rows.append(record)
            shown = (f"{row.error_mean:.4f} ± {row.error_std:.4f}" if not row.note
                     else row.note[:90])
            print(f"    beta={row.beta:.4g} l={row.l:<3} {row.mechanism:<34} "
                  f"{row.pool:<44} {shown}", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 300_000, 500_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--skip-comparison", action="store_true")
    parser.add_argument("--scaling", action="store_true")
    parser.add_argument("--scaling-sizes", type=int, nargs="+",
                        default=[100_000, 1_000_000, 10_000_000])
    parser.add_argument("--output", type=Path,
                        default=Path(__file__).parent / "results" / "ambiguity")
    args = parser.parse_args()
    args.output.mkdir(parents=True, exist_ok=True)
    if args.scaling:
        rows = scaling(args.scaling_sizes, args.repeats)
        (args.output / "scaling.json").write_text(json.dumps(rows, indent=2) + "\n")
        return
    if not args.skip_timing:
        rows = timing(args.sizes, args.repeats)
        (args.output / "timing.json").write_text(json.dumps(rows, indent=2) + "\n")
    if not args.skip_comparison:
        rows = comparison()
        with open(args.output / "comparison.csv", "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        print(f"\nwrote {args.output / 'comparison.csv'}")


if __name__ == "__main__":
    main()
