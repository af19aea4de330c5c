"""Ambiguity's QI-groups and error against the density d of the data (ambiguity Figures 9 (2)
and 10; `ppdp.evaluate.density.with_density`).

    python benchmarks/bench_density.py [--densities 1 2 3 4 5] [--publications 3] [--seed 1]
                                       [--alpha 0.1]

For each d, Adult (sensitive occupation, the 8 other columns as quasi-identifiers) at density
d (seed ``--seed``) is published with ambiguity (alpha from ``--alpha``, beta = 0.2) and with
Mondrian (k = l = 5, frequency l-diversity as in the comparison, with the ARX hierarchies
when the shared datasets are beside the repository). Printed per d: the distinct
quasi-identifier tuples, ambiguity's mean group size, the share of its groups of exactly
ceil(1/beta) = 5 rows and its mean presence probability, Mondrian's mean class size, and both
errors (means over the publications) on the IN-list pool at 5 % (300 queries drawn on the
table at that density, seed 7, true counts > 0).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import ppdp
from ppdp.data.hierarchy import read_hierarchies
from ppdp.evaluate.density import with_density
from ppdp.evaluate.metrics import average_relative_error
from ppdp.evaluate.workloads import in_list_pool

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--densities", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--publications", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--alpha", type=float, default=0.1)
    args = parser.parse_args()
    adult = ppdp.datasets.adult(observed_domains=True, sensitive="occupation")
    folder = SHARED / "adult" / "hierarchies"
    hierarchies = ({k: v for k, v in read_hierarchies(folder).items()
                    if k in adult.schema.quasi_identifiers} if folder.is_dir() else None)
    quasi = adult.schema.quasi_identifiers
    print("d    tuples  amb.size  amb.at5  presence  mond.size  amb.error  mond.error")
    for d in args.densities:
        table = with_density(adult, d, random_state=args.seed)
        tuples = len(np.unique(np.stack([table.codes[q] for q in quasi], axis=1), axis=0))
        pool = in_list_pool(table, selectivity=0.05, size=300, random_state=7)
        keep = pool.truth > 0
        queries = [q for q, k in zip(pool.queries, keep, strict=True) if k]
        # The comparison's matched baseline: no value above a share beta of a class.
        mondrian = ppdp.Mondrian(k=5, l=5, diversity="frequency", hierarchies=hierarchies)
        # Mondrian's cuts do not depend on the random state: its classes once per d.
        _, classes = np.unique(mondrian.partition(table), return_counts=True)
        sizes, at_five, presence, errors = [], [], [], {"amb": [], "mond": []}
        for run in range(args.publications):
            release = ppdp.Ambiguity(alpha=args.alpha, beta=0.2).publish(table,
                                                                         random_state=run)
            group_sizes = release.group_sizes()
            sizes.append(group_sizes.mean())
            at_five.append(np.mean(group_sizes == 5))
            presence.append(release.presence().mean())
            estimates, _ = release.count_all(queries)
            errors["amb"].append(average_relative_error(pool.truth[keep], estimates))
            estimates, _ = mondrian.publish(table, random_state=run).count_all(queries)
            errors["mond"].append(average_relative_error(pool.truth[keep], estimates))
        print(f"{d:<4} {tuples:>6,}  {np.mean(sizes):8.2f}  {np.mean(at_five):7.1%}  "
              f"{np.mean(presence):8.4f}  {np.mean(classes):9.2f}  "
              f"{np.mean(errors['amb']):9.3f}  {np.mean(errors['mond']):10.3f}", flush=True)


if __name__ == "__main__":
    main()
