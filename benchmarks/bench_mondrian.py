"""Scaling of Mondrian publishing on seeded row-resamples of Adult, with the Adult hierarchies.

    python benchmarks/bench_mondrian.py [--sizes 100000 1000000] [--large] [--repeats 3]
                                        [--hierarchies DIR] [--json FILE]

For every N (10^5 and 10^6; 10^7 too with --large) and every setting (k = 10; k = 10 with
l = 5): the median wall time of ``Mondrian.publish`` over the repeats, and the ratio of the
time to that of the previous N (10 means linear scaling for a tenfold N). Adult's sensitive
attribute is occupation, the other eight columns are quasi-identifiers, each generalized by its
ARX hierarchy. The target is 10^6 rows in at most 10 seconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import ppdp
from ppdp.data.hierarchy import read_hierarchies
from ppdp.mechanisms.mondrian.mechanism import Mondrian

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_HIERARCHIES = ROOT / ".." / "shared" / "datasets" / "adult" / "hierarchies"
SETTINGS = {"k=10": {"k": 10}, "k=10,l=5": {"k": 10, "l": 5}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--large", action="store_true", help="also run N = 10^7")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--hierarchies", type=Path, default=DEFAULT_HIERARCHIES,
                        help="folder of adult_hierarchy_<column>.csv files")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args()

    hierarchies = read_hierarchies(args.hierarchies)
    adult = ppdp.datasets.adult(sensitive="occupation")
    sizes = sorted(set(args.sizes) | ({10_000_000} if args.large else set()))
    results = []
    previous: dict[str, float] = {}
    for n_rows in sizes:
        table = adult.resample(n_rows, random_state=2024)
        for label, parameters in SETTINGS.items():
            mechanism = Mondrian(**parameters, hierarchies=hierarchies)
            times = []
            for repeat in range(args.repeats):
                start = time.perf_counter()
                release = mechanism.publish(table, random_state=repeat)
                times.append(time.perf_counter() - start)
            median = statistics.median(times)
            ratio = median / previous[label] if label in previous else None
            previous[label] = median
            risk = release.risk()
            results.append({"n_rows": n_rows, "setting": label, "median_seconds": median,
                            "times": times, "ratio_to_previous_n": ratio, **risk})
            shown = f"{ratio:6.2f}" if ratio is not None else "     -"
            print(f"N={n_rows:>10,d}  {label:9s}  median {median:7.3f} s  ratio {shown}  "
                  f"classes {risk['classes']:>8,d}  k {risk['k']}  l {risk['l']}  "
                  f"ncp {risk['ncp']:.4f}", flush=True)
            del release
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
