"""An ambiguity release and its estimator.

Joining the auxiliary tables of a group gives ``prod_i |G_ATi|`` candidate tuples of which only
``|G|`` are real, so a covered individual is present with probability ``|G| / prod_i |G_ATi|``
(Theorem 5.1) and holds a sensitive value s with probability ``c / |G|`` given presence
(Theorem 5.2). Counts are estimated by ``sum_j c_j * prod_i l_ij / m_ij`` (Section 6, Example
6.1; see `ppdp.estimators.group_product`). No standard error is reported: the error is a bias
of the independence assumption inside each group, not sampling noise."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import scipy.sparse as sp

from ppdp.data.schema import Schema
from ppdp.errors import SchemaError
from ppdp.estimators.group_product import GroupProduct
from ppdp.mechanisms.base import check_sensitive
from ppdp.mechanisms.parameters import require_integer, require_unit_interval
from ppdp.mechanisms.presence import presence_probability
from ppdp.plan.blocks import GROUP_COLUMN
from ppdp.query.binding import BoundQuery
from ppdp.query.codes import sorted_distinct
from ppdp.release.arrow import rows_from_arrow, rows_to_arrow
from ppdp.release.base import Release

FREQUENCY_COLUMN = "Frequency"


def check_bounds(alpha: Any, beta: Any) -> tuple[float, float]:
    """The presence bound alpha and the association bound beta, each in (0, 1]."""
    return require_unit_interval("alpha", alpha), require_unit_interval("beta", beta)


def check_ambiguity_columns(schema: Schema) -> tuple[str]:
    """The one sensitive column, with at least one quasi-identifier beside it."""
    sensitive = check_sensitive(schema, "ambiguity", exactly_one=True)
    if not schema.quasi_identifiers:
        raise SchemaError("ambiguity needs at least one quasi-identifier column")
    (name,) = sensitive
    return (name,)


class AmbiguityRelease(Release):
    """An ambiguity scheme: AT_i = (QI_i, GroupID) for each quasi-identifier, and
    ST = (GroupID, S, Frequency) (Definition 3.3)."""

    mechanism = "ambiguity"
    # One table per quasi-identifier and the sensitive table: none is the main one.
    main_table = None

    @classmethod
    def check_parameters(cls, schema: Schema, parameters: Mapping[str, Any]) -> None:
        """The columns, and alpha and beta (of Algorithm 2; a scheme over other groups has
        neither), as `Ambiguity` checks them, and a whole number of groups."""
        check_ambiguity_columns(schema)
        if "alpha" in parameters or "beta" in parameters:
            check_bounds(parameters["alpha"], parameters["beta"])
        require_integer("n_groups", parameters["n_groups"], 1)

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
            if len(sorted_distinct(groups.astype(np.int64) * schema[q].size + codes)) != len(codes):
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
    if len(sorted_distinct(groups)) != n_groups:
        raise ValueError(f"{where} does not list every one of the {n_groups} groups")
