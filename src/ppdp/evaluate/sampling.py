"""Samples of a table that keep its sensitive shares, for the quick experiments.

A grid of privacy parameters chosen for a whole table must stay feasible on a sample of it.
The group sizes (SPLU-Gen's gamma, Anatomy's l, ambiguity's ceil(1/beta), Mondrian's frequency
l) are feasible only while the most frequent sensitive value fits in distinct groups,
``f_max * size <= N`` (SPLU-Gen Section 3.1; ambiguity Section 7, Step 1). A uniform sample
moves ``f_max`` by its binomial noise: on 2,000 rows of Adult, Prof-specialty (13.4 % of the
rows) occurs 268 ± 15 times, and above 285 (= 2000/7) gamma = 7 is refused: 11 % of 3,000
seeds. A sample with proportional quotas per sensitive value keeps every count within one row
of its share, so a size feasible on the table with one row to spare is feasible on every
sample.
"""

from __future__ import annotations

import numpy as np

from ppdp.table.table import Table

__all__ = ["proportional_quotas", "proportional_sample"]


def proportional_quotas(counts: np.ndarray, n_rows: int) -> np.ndarray:
    """Each value's rows in a sample of ``n_rows``: ``floor(n f_v / N)``, and one more for the
    values with the largest remainders (ties to the smaller code) until they add up to
    ``n_rows`` (the largest-remainder rule); each quota is ``n f_v / N`` rounded down or up."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if not 0 <= n_rows <= total:
        raise ValueError(f"a sample of {n_rows} rows from {total}: it must be 0..{total}")
    exact = counts * n_rows  # quotas times total, in integers: no rounding
    quotas, remainders = np.divmod(exact, total)
    missing = n_rows - int(quotas.sum())
    # A stable sort: among equal remainders, the smaller code first.
    quotas[np.argsort(-remainders, kind="stable")[:missing]] += 1
    return quotas


def proportional_sample(table: Table, n_rows: int, column: str,
                        rng: np.random.Generator) -> Table:
    """``n_rows`` rows drawn without replacement, each value of ``column`` given its
    `proportional_quotas` and its rows drawn uniformly among the table's rows of that value;
    the rows keep the table's order."""
    codes = table.codes[column]
    quotas = proportional_quotas(np.bincount(codes, minlength=table.schema[column].size),
                                 n_rows)
    by_value = np.argsort(codes, kind="stable")
    starts = np.searchsorted(codes[by_value], np.arange(len(quotas)))
    chosen = [rng.choice(by_value[start:start + count], quota, replace=False)
              for start, count, quota in zip(starts, np.bincount(codes, minlength=len(quotas)),
                                             quotas, strict=True) if quota]
    return table.take(np.sort(np.concatenate(chosen)) if chosen
                      else np.zeros(0, dtype=np.int64))
