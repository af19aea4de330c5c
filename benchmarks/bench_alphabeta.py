"""alpha-beta and FRAPP on the alpha-beta paper's table (Section 5).

    python benchmarks/bench_alphabeta.py [--repeats 5] [--output DIR]

Adult's 9-attribute table (n = 30,162, m = 648,023,040; the bundled copy of the paper's
adult-arx-9attr.csv) at (10n/m, 0.2)-privacy: the median time to publish an alpha-beta view
(about 1.5 million inserted tuples) and a FRAPP view, and the median time to estimate every
equality query over up to three attributes from each (one GROUP BY per attribute set,
contingency tables built cold). Then the
Section 5 reproduction (average absolute errors, their ratio, Figures 2-3) written to
benchmarks/results/alphabeta/.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import ppdp
from ppdp.evaluate.tuple_queries import equality_query_estimates, reproduce_section5


def median_seconds(function, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", type=Path,
                        default=Path(__file__).parent / "results" / "alphabeta")
    args = parser.parse_args()
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
