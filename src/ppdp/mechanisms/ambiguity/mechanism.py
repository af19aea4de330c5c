"""Ambiguity's publishing (Section 3, Definition 3.3): for a partition of the rows into
QI-groups (Algorithm 2, `ppdp.mechanisms.ambiguity.groups`), one duplicate-free auxiliary table
AT_i = (QI_i, GroupID) per quasi-identifier and a sensitive table ST = (GroupID, S, Frequency)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ppdp.data.schema import code_dtype
from ppdp.mechanisms.ambiguity.groups import ambiguity_groups, sorted_unique
from ppdp.mechanisms.ambiguity.guarantee import ambiguity_guarantee
from ppdp.mechanisms.ambiguity.release import (
    AmbiguityRelease,
    check_ambiguity_columns,
    check_bounds,
)
from ppdp.mechanisms.base import GroupMechanism, require_sensitive
from ppdp.mechanisms.parameters import Parameter
from ppdp.plan.resources import Footprint
from ppdp.table.source import SummarySource
from ppdp.table.table import Table

_DENSE_BYTES = 1 << 28
"""Largest table of (group, code) cells, one byte (present) or eight (counted) per cell,
beyond which distinct pairs are found by sorting instead."""


class Ambiguity(GroupMechanism):
    """Ambiguity (alpha-presence, beta-association): per-attribute tables of QI-groups (in
    memory with ``publish``, block by block from a source with ``publish_source``, see
    `ppdp.blocks`)."""

    name = "ambiguity"
    summary = ("Ambiguity: QI-groups published as one table per quasi-identifier plus a "
               "sensitive table (alpha-presence, beta-association)")
    # Measured (`ppdp.plan.resources`): 139.5 and 273.8 bytes a row for 4 and 9 columns (the int64
    # (group, value) keys of each quasi-identifier).
    footprint = Footprint(per_row=40, per_column=27)
    parameters = (
        Parameter("alpha", float, "presence bound alpha in (0, 1]"),
        Parameter("beta", float, "association bound beta in (0, 1]; groups hold at least "
                                 "ceil(1/beta) distinct sensitive values"),
    )

    def __init__(self, *, alpha: float, beta: float) -> None:
        self.alpha, self.beta = check_bounds(alpha, beta)

    def sensitive_columns(self, data: Table | SummarySource) -> tuple[str, ...]:
        """The one sensitive column, with a declared domain (and at least one
        quasi-identifier beside it)."""
        require_sensitive(data, "ambiguity", exactly_one=True)
        return check_ambiguity_columns(data.schema)

    def publish_block(self, table: Table, rng: np.random.Generator) -> AmbiguityRelease:
        """The QI-groups of Algorithm 2 (Section 7), published as the ambiguity scheme
        (Definition 3.3)."""
        (sensitive,) = self.sensitive_columns(table)
        quasi = table.schema.quasi_identifiers
        column = table.schema[sensitive]
        groups = ambiguity_groups(
            [table.codes[q] for q in quasi], [table.schema[q].size for q in quasi],
            table.codes[sensitive], column.size, alpha=self.alpha, beta=self.beta, rng=rng,
            sensitive_name=sensitive, domain=column.domain)
        return scheme_from_groups(table, groups.group_of_rows, groups.n_groups, rng,
                                  {"alpha": self.alpha, "beta": self.beta})

    def guarantee(self) -> Any:
        return ambiguity_guarantee(alpha=self.alpha, beta=self.beta)


def scheme_from_groups(table: Table, group_of_rows: np.ndarray, n_groups: int,
                       rng: np.random.Generator, parameters: Mapping[str, Any]
                       ) -> AmbiguityRelease:
    """The ambiguity scheme of a partition (Definition 3.3): AT_i and ST of its groups.

    Any partition will do; Theorem 6.1's proof builds one from a generalization's groups.
    Only the construction of Algorithm 2 comes with alpha and beta.
    """
    (sensitive,) = require_sensitive(table, "ambiguity", exactly_one=True)
    quasi = table.schema.quasi_identifiers
    column = table.schema[sensitive]
    # Group ids in random order: construction order says which buckets were largest.
    group_of_rows = rng.permutation(n_groups)[group_of_rows]
    auxiliary = {}
    for q in quasi:
        size = table.schema[q].size
        auxiliary[q] = _split(_distinct_keys(group_of_rows * size + table.codes[q],
                                             n_groups * size), size)
    keys, frequency = _counted_keys(group_of_rows * column.size + table.codes[sensitive],
                                    n_groups * column.size)
    st = (*_split(keys, column.size), frequency)
    return AmbiguityRelease(table.schema.select([*quasi, sensitive]),
                            {**parameters, "n_groups": n_groups}, table.n_rows, auxiliary, st)


def _distinct_keys(keys: np.ndarray, cells: int) -> np.ndarray:
    """The distinct keys in ``0 .. cells - 1``, sorted (a set, in canonical order, so nothing
    of the row order survives): marked in a table of the cells when it is small enough, since
    that is several times faster than sorting the keys."""
    if cells > _DENSE_BYTES:
        return sorted_unique(keys)
    present = np.zeros(cells, dtype=bool)
    present[keys] = True
    return np.flatnonzero(present)


def _counted_keys(keys: np.ndarray, cells: int) -> tuple[np.ndarray, np.ndarray]:
    """``_distinct_keys`` with how many times each occurs."""
    if cells * 8 > _DENSE_BYTES:
        return np.unique(keys, return_counts=True)
    frequency = np.bincount(keys, minlength=cells)
    keys = np.flatnonzero(frequency)
    return keys, frequency[keys]


def _split(keys: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``group * size + code`` keys as (group, code) columns."""
    groups, codes = np.divmod(keys, size)
    return groups.astype(np.int32), codes.astype(code_dtype(size))
