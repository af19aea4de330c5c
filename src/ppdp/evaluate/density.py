"""Denser tables for the ambiguity paper's Figures 9 (2) and 10 (Section 8.1).

Section 8.1 builds tables where "the sensitive values are distributed to (100/d)% of tuples
... The larger the d is, the denser the dataset is", and Section 8.3 names the mechanism:
"the dense datasets will produce QI-groups of larger size". It does not say how the tables
were made.

`with_density` keeps every row's sensitive value and concentrates the quasi-identifier part
onto (100/d) % of the rows: the rows are sorted by their quasi-identifier values (in schema
order, ties in a seeded random order) and cut into consecutive blocks of d rows; every row
of a block takes the quasi-identifier values of one row of the block, its *host*, drawn at
random. The N sensitive values then sit on ceil(N/d) tuples, about d on each; no sensitive
value is merged or moved, and a row's new tuple is a neighbour of its own in that order (the
leading quasi-identifiers mostly unchanged). d = 1 is the table as it is.

Algorithm 2 closes a group once it holds ceil(1/beta) rows of distinct sensitive values and
its presence ``|G| / prod_i m_i`` is at most alpha (Theorem 5.1), so groups grow only when the
rows it can pick share quasi-identifier values. On Adult (occupation, beta = 0.2, 3
publications per d, ``benchmarks/bench_density.py``) they do not grow: at alpha = 0.1 the
mean group holds 5.01 rows at d = 1, 5 and 100 and 5.05 at d = 1000 (31 distinct tuples left),
because five rows of five tuples already have a presence near 0.013, far below alpha; at
alpha = 0.005, where presence binds, 7.41 rows at d = 1 and 7.38 at d = 5 and 100. The
paper's mechanism does not switch on under this construction (the README gives the errors).
"""

from __future__ import annotations

import numpy as np

from ppdp.randomness import RandomState, make_rng
from ppdp.table.table import Table

__all__ = ["density_hosts", "with_density"]


def density_hosts(table: Table, d: int, *, random_state: RandomState = None) -> np.ndarray:
    """For each row, the row whose quasi-identifier values it takes at density ``d``
    (ambiguity Section 8.1; see the module doc): ceil(N/d) distinct hosts, each its own."""
    if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 1:
        raise ValueError(f"d must be a positive integer, got {d!r}")
    rng = make_rng(random_state)
    n = table.n_rows
    quasi = [name for name in table.schema.names if name not in table.schema.sensitive]
    # lexsort's last key is the primary one: the first non-sensitive column leads, and the
    # random key orders rows with equal values, so which of them share a block is seeded.
    order = np.lexsort((rng.random(n), *(table.codes[name] for name in reversed(quasi))))
    starts = np.arange(0, n, d)
    lengths = np.minimum(d, n - starts)
    chosen = order[starts + rng.integers(0, lengths)]
    hosts = np.empty(n, dtype=np.int64)
    hosts[order] = np.repeat(chosen, lengths)
    return hosts


def with_density(table: Table, d: int, *, random_state: RandomState = None) -> Table:
    """The table at density ``d``: sensitive values kept, quasi-identifier part concentrated
    on (100/d) % of the rows (ambiguity Section 8.1; see the module doc)."""
    hosts = density_hosts(table, d, random_state=random_state)
    sensitive = set(table.schema.sensitive)
    codes = {name: array if name in sensitive else array[hosts]
             for name, array in table.codes.items()}
    # The domains stay the source's: a value no host holds is still a possible value.
    return Table(table.schema, codes, name=table.name)
