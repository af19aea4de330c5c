"""Ambiguity: alpha-presence and beta-association by publishing each quasi-identifier apart.

The ambiguity paper (Section 3, Definition 3.3) publishes, for a partition of the rows into
QI-groups, one duplicate-free auxiliary table AT_i = (QI_i, GroupID) per quasi-identifier and a
sensitive table ST = (GroupID, S, Frequency). Joining the auxiliary tables of a group gives
``prod_i |G_ATi|`` candidate tuples of which only ``|G|`` are real, so a covered individual is
present with probability ``|G| / prod_i |G_ATi|`` (Theorem 5.1) and holds a sensitive value s
with probability ``c / |G|`` given presence (Theorem 5.2). The groups come from Algorithm 2
(see ``ambiguity_groups``) and meet both bounds (Theorems 7.1-7.2).

Counts are estimated by ``sum_j c_j * prod_i l_ij / m_ij`` (Section 6, Example 6.1; see
``group_product``). No standard error is reported: the error is a bias of the independence
assumption inside each group, not sampling noise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import scipy.sparse as sp

from ppdp.blocks import GROUP_COLUMN, GroupMechanism
from ppdp.errors import SchemaError
from ppdp.guarantees import ambiguity_guarantee
from ppdp.mechanisms.ambiguity_groups import (
    ambiguity_groups,
    presence_probability,
    sorted_unique,
)
from ppdp.mechanisms.base import (
    Mechanism,
    Parameter,
    require_sensitive,
    require_unit_interval,
)
from ppdp.mechanisms.group_product import GroupProduct
from ppdp.query import BoundQuery
from ppdp.release import Release, rows_from_arrow, rows_to_arrow
from ppdp.sources import Source
from ppdp.table import Schema, Table, code_dtype

FREQUENCY_COLUMN = "Frequency"

_DENSE_BYTES = 1 << 28
"""Largest table of (group, code) cells, one byte (present) or eight (counted) per cell,
beyond which distinct pairs are found by sorting instead."""


class Ambiguity(GroupMechanism, Mechanism):
    """Ambiguity (alpha-presence, beta-association): per-attribute tables of QI-groups (in
    memory with ``publish``, block by block from a source with ``publish_source``, see
    `ppdp.blocks`)."""

    name = "ambiguity"
    summary = ("Ambiguity: QI-groups published as one table per quasi-identifier plus a "
               "sensitive table (alpha-presence, beta-association)")
    parameters = (
        Parameter("alpha", float, "presence bound alpha in (0, 1]"),
        Parameter("beta", float, "association bound beta in (0, 1]; groups hold at least "
                                 "ceil(1/beta) distinct sensitive values"),
    )

    def __init__(self, *, alpha: float, beta: float) -> None:
        self.alpha = require_unit_interval("alpha", alpha)
        self.beta = require_unit_interval("beta", beta)

    def sensitive_columns(self, data: Table | Source) -> tuple[str, ...]:
        """The one sensitive column, with a declared domain (and at least one
        quasi-identifier beside it)."""
        sensitive = require_sensitive(data, "ambiguity", exactly_one=True)
        if not data.schema.quasi_identifiers:
            raise SchemaError("ambiguity needs at least one quasi-identifier column")
        return sensitive

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


class AmbiguityRelease(Release):
    """An ambiguity scheme: AT_i = (QI_i, GroupID) for each quasi-identifier, and
    ST = (GroupID, S, Frequency) (Definition 3.3)."""

    mechanism = "ambiguity"

    def __init__(self, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                 auxiliary: Mapping[str, tuple[np.ndarray, np.ndarray]],
                 st: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        super().__init__(schema, parameters, n_rows)
        (self.sensitive,) = schema.sensitive
        self.quasi_identifiers = tuple(schema.quasi_identifiers)
        self.n_groups = int(parameters["n_groups"])
        # Codes in their columns' compact types: the tables hold a pair per value of a group.
        self.auxiliary = {q: (np.asarray(g, dtype=np.int32), np.asarray(v, dtype=schema[q].dtype))
                          for q, (g, v) in auxiliary.items()}
        self.st = (np.asarray(st[0], dtype=np.int32),
                   np.asarray(st[1], dtype=schema[self.sensitive].dtype),
                   np.asarray(st[2], dtype=np.int64))
        self._estimator: GroupProduct | None = None

    # -- measurements (Section 5) ---------------------------------------------------------

    def group_sizes(self) -> np.ndarray:
        """|G| for every group (the sum of its frequencies in ST)."""
        return np.bincount(self.st[0], weights=self.st[2], minlength=self.n_groups
                           ).astype(np.int64)

    def distinct_counts(self) -> np.ndarray:
        """|G_ATi| for every group (rows) and quasi-identifier (columns)."""
        return np.stack([np.bincount(self.auxiliary[q][0], minlength=self.n_groups)
                         for q in self.quasi_identifiers], axis=1)

    def presence(self) -> np.ndarray:
        """The presence probability of a tuple covered by each group (Theorem 5.1)."""
        return presence_probability(self.group_sizes(), self.distinct_counts())

    def association(self) -> np.ndarray:
        """For each line (j, s, c) of ST, the association probability c / |G_j| of s with an
        individual of group j, given presence (Theorem 5.2)."""
        return self.st[2] / self.group_sizes()[self.st[0]]

    # -- estimation (Section 6) -------------------------------------------------------------

    @property
    def estimator(self) -> GroupProduct:
        if self._estimator is None:
            sizes = self.schema.sizes()
            shape = (self.n_groups,)
            factors: dict[str, sp.csr_array] = {}
            for q in self.quasi_identifiers:
                groups, codes = self.auxiliary[q]
                per_group = np.bincount(groups, minlength=self.n_groups)
                factors[q] = sp.csr_array((1.0 / per_group[groups], (groups, codes)),
                                          shape=(*shape, sizes[q]))
            groups, values, counts = self.st
            factors[self.sensitive] = sp.csr_array(
                (counts.astype(np.float64), (groups, values)),
                shape=(*shape, sizes[self.sensitive]))
            self._estimator = GroupProduct(factors, sizes)
        return self._estimator

    def _estimate(self, queries: Sequence[BoundQuery]
                  ) -> list[tuple[np.ndarray, np.ndarray | None]]:
        return [(self.estimator.estimate(q.predicate, q.group_by), None) for q in queries]

    # -- files ------------------------------------------------------------------------------

    def _tables(self) -> dict[str, pa.Table]:
        tables = {}
        for index, q in enumerate(self.quasi_identifiers, start=1):
            groups, codes = self.auxiliary[q]
            tables[f"at_{index}"] = rows_to_arrow(self.schema.select([q]), {q: codes},
                                                  {GROUP_COLUMN: groups})
        groups, values, counts = self.st
        st = rows_to_arrow(self.schema.select([self.sensitive]), {self.sensitive: values})
        tables["st"] = pa.table({GROUP_COLUMN: groups,
                                 self.sensitive: st.column(self.sensitive),
                                 FREQUENCY_COLUMN: counts})
        return tables

    @classmethod
    def scanned_on_spark(cls, stems: Iterable[str]) -> frozenset[str]:
        return frozenset(stems)

    @classmethod
    def _from_files(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                    tables: Mapping[str, pa.Table], scans: Mapping[str, Sequence[Path]]
                    ) -> AmbiguityRelease:
        """Loaded with ``engine="spark"``: AT_1..AT_m and ST stay in their files, every count
        a Spark job (`ppdp.spark.ambiguity`)."""
        from ppdp.spark.ambiguity import SparkAmbiguityRelease

        return SparkAmbiguityRelease(schema, parameters, n_rows, scans)

    @classmethod
    def _from_tables(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                     tables: Mapping[str, pa.Table]) -> AmbiguityRelease:
        (sensitive,) = schema.sensitive
        n_groups = int(parameters["n_groups"])
        auxiliary = {}
        for index, q in enumerate(schema.quasi_identifiers, start=1):
            table = tables[f"at_{index}"]
            codes = rows_from_arrow(schema.select([q]), table.select([q]), table.num_rows)[q]
            groups = table.column(GROUP_COLUMN).to_numpy()
            _check_groups(groups, n_groups, f"AT_{index} ({q})")
            if len(np.unique(groups.astype(np.int64) * schema[q].size + codes)) != len(codes):
                raise ValueError(f"AT_{index} ({q}) repeats a (value, GroupID) pair")
            auxiliary[q] = (groups, codes)
        st_table = tables["st"]
        values = rows_from_arrow(schema.select([sensitive]), st_table.select([sensitive]),
                                 st_table.num_rows)[sensitive]
        st_groups = st_table.column(GROUP_COLUMN).to_numpy()
        counts = st_table.column(FREQUENCY_COLUMN).to_numpy()
        _check_groups(st_groups, n_groups, "ST")
        if (counts <= 0).any() or int(counts.sum()) != n_rows:
            raise ValueError(f"ST frequencies must be positive and add up to {n_rows} rows")
        return cls(schema, parameters, n_rows, auxiliary, (st_groups, values, counts))


def _check_groups(groups: np.ndarray, n_groups: int, where: str) -> None:
    if len(groups) and (groups.min() < 0 or groups.max() >= n_groups):
        raise ValueError(f"{where} has group ids outside 0..{n_groups - 1}")
    if len(np.unique(groups)) != n_groups:
        raise ValueError(f"{where} does not list every one of the {n_groups} groups")
