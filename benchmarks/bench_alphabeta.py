"""alpha-beta and FRAPP on the alpha-beta paper's table (Section 5).

    python benchmarks/bench_alphabeta.py [--repeats 5] [--output DIR]
    python benchmarks/bench_alphabeta.py --sizes 1000000 10000000 [--repeats 3]

Adult's 9-attribute table (n = 30,162, m = 648,023,040; the bundled copy of the paper's
adult-arx-9attr.csv) at (10n/m, 0.2)-privacy: the median time to publish an alpha-beta view
(about 1.5 million inserted tuples) and a FRAPP view, and the median time to estimate every
equality query over up to three attributes from each (one GROUP BY per attribute set,
contingency tables built cold). Then the
Section 5 reproduction (average absolute errors, their ratio, Figures 2-3) written to
benchmarks/results/alphabeta/.

With ``--sizes``, instead: one view of Adult resampled to each size (seeded) at (k, gamma) =
(1, 0.5), where beta m = 2 n' tuples are inserted (Section 4.2's parameters at n = 10^7 need
beta > 1/2): the median time to publish it in memory, to save it, and to publish it from the
table as a source, batch by batch, straight into a directory (``publish_source``; the same
files). Written to benchmarks/results/alphabeta/scaling.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import ppdp
from ppdp.evaluate.tuple_queries import equality_query_estimates, reproduce_section5
from ppdp.table.source import TableSource


def median_seconds(function, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def scaling(sizes, repeats, output):
    """Median seconds of one alpha-beta view of Adult resampled to each size."""
    adult = ppdp.datasets.adult()
    mechanism = ppdp.AlphaBeta(k=1, gamma=0.5, max_rows=10**8)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        target = Path(scratch) / "view"
        for n_rows in sizes:
            table = adult.resample(n_rows, random_state=2024)
            publish = median_seconds(lambda t=table: mechanism.publish(t, random_state=1),
                                     repeats)
            release = mechanism.publish(table, random_state=1)
            save = median_seconds(lambda r=release: r.save(target, overwrite=True), repeats)
            del release
            source = median_seconds(lambda t=table: mechanism.publish_source(
                TableSource(t), target, random_state=1, overwrite=True), repeats)
            view_rows = json.loads((target / "release.json").read_text())["n_rows"]
            rows.append({"n_rows": n_rows, "view_rows": view_rows, "publish_seconds": publish,
                         "save_seconds": save, "publish_source_seconds": source})
            print(f"N={n_rows:>11,d}  view {view_rows:>11,d} rows  publish {publish:7.2f} s  "
                  f"save {save:6.2f} s  publish_source {source:7.2f} s (medians of {repeats})",
                  flush=True)
    output.mkdir(parents=True, exist_ok=True)
    (output / "scaling.json").write_text(json.dumps(rows, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", type=Path,
                        default=Path(__file__).parent / "results" / "alphabeta")
    parser.add_argument("--sizes", type=int, nargs="+",
                        help="time one view at each of these numbers of rows instead")
    args = parser.parse_args()
    if args.sizes:
        scaling(args.sizes, args.repeats, args.output)
        return
    table = ppdp.datasets.adult()
    report = {}
    for mechanism in (ppdp.AlphaBeta(k=10, gamma=0.2), ppdp.FRAPP(k=10, gamma=0.2)):
        publish = median_seconds(lambda m=mechanism: m.publish(table, random_state=1),
                                 args.repeats)
        # Each timing on a fresh release: its contingency tables are built cold.
        releases = [mechanism.publish(table, random_state=seed) for seed in range(args.repeats)]
        times = []
        for release in releases:
            start = time.perf_counter()
            queries = len(equality_query_estimates(release, table).truth)
            times.append(time.perf_counter() - start)
        estimate = statistics.median(times)
        report[mechanism.name] = {"view_rows": release.n_rows, "publish_seconds": publish,
                                  "queries": queries, "estimate_seconds": estimate}
        print(f"{mechanism.name:9s} view {release.n_rows:>9,d} rows  publish {publish:6.3f} s  "
              f"{queries:,} equality queries in {estimate:6.3f} s (medians of {args.repeats})",
              flush=True)
    section5 = reproduce_section5(table, args.output, repeats=args.repeats, random_state=7)
    report["section5"] = section5.to_dict()
    print(f"average absolute error: alpha-beta {statistics.mean(section5.alphabeta_error):.2f}, "
          f"FRAPP {statistics.mean(section5.frapp_error):.2f}, ratio {section5.ratio:.2f} "
          f"(the paper: about 4.5)")
    args.output.mkdir(parents=True, exist_ok=True)
    (args.output / "timings.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
