"""An Anatomy release and its estimator (Small Domain Randomization, Appendix 10.10).

A query with non-sensitive condition P and sensitive value x is estimated by
``sum_g c(g, P) * c(g, x) / |g|``: every QIT row counts towards each sensitive value of its
group in proportion to that value's share of the group."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ppdp.data.schema import Schema
from ppdp.errors import QueryError
from ppdp.mechanisms.base import check_sensitive
from ppdp.mechanisms.parameters import require_integer
from ppdp.plan.blocks import GROUP_COLUMN
from ppdp.query.binding import BoundQuery
from ppdp.query.cube import Cube, count_histogram, flat_key
from ppdp.query.splitting import split
from ppdp.release.arrow import rows_from_arrow, rows_to_arrow
from ppdp.release.base import Release

if TYPE_CHECKING:

    import scipy.sparse as sp


def check_l(l: Any) -> int:  # noqa: E741 - the paper's symbol
    """Anatomy's diversity l: an integer >= 2 (distinct sensitive values per group)."""
    return require_integer("l", l, 2)


class AnatomyRelease(Release):
    """An Anatomy release: QIT (quasi-identifiers, GroupID) and ST (GroupID, value, count)."""

    mechanism = "anatomy"
    # The quasi-identifier table and the sensitive table: neither is the main one.
    main_table = None

    def __init__(self, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                 qit: Mapping[str, np.ndarray], qit_groups: np.ndarray,
                 st: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        super().__init__(schema, parameters, n_rows)
        (self.sensitive,) = schema.sensitive
        self.qit = dict(qit)
        self.qit_groups = np.asarray(qit_groups, dtype=np.int32)
        self.st = tuple(np.asarray(a) for a in st)
        self._group_sizes = np.bincount(self.qit_groups, minlength=int(parameters["n_groups"]))
        self._expected: _ExpectedCube | None = None

    @property
    def _cube(self) -> _ExpectedCube:
        # Built on the first query, not at publishing time.
        if self._expected is None:
            st_groups, st_values, st_counts = self.st
            self._expected = _ExpectedCube(self.qit, self.schema.sizes(), self.n_rows,
                                           self.sensitive, self.qit_groups, st_groups,
                                           st_values, st_counts / self._group_sizes[st_groups])
        return self._expected

    def _tables(self) -> dict[str, pa.Table]:
        quasi = self.schema.select(self.schema.quasi_identifiers)
        qit = rows_to_arrow(quasi, self.qit, {GROUP_COLUMN: self.qit_groups})
        groups, values, counts = self.st
        column = self.schema[self.sensitive]
        st = pa.table({
            GROUP_COLUMN: groups,
            self.sensitive: pa.DictionaryArray.from_arrays(pa.array(values.astype(np.int32)),
                                                           pa.array(list(column.domain))),
            "count": counts,
        })
        return {"qit": qit, "st": st}

    @classmethod
    def check_parameters(cls, schema: Schema, parameters: Mapping[str, Any]) -> None:
        """One sensitive column and l as `Anatomy` checks them, l no larger than its domain
        (each group holds l distinct values), and a whole number of groups."""
        l = check_l(parameters["l"])  # noqa: E741 - the paper's symbol
        (sensitive,) = check_sensitive(schema, "Anatomy", exactly_one=True)
        if l > schema[sensitive].size:
            raise ValueError(f"l = {l} exceeds the {schema[sensitive].size} values of "
                             f"{sensitive!r}: each group holds l distinct values")
        require_integer("n_groups", parameters["n_groups"], 1)

    @classmethod
    def _from_tables(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                     tables: Mapping[str, pa.Table]) -> AnatomyRelease:
        (sensitive,) = schema.sensitive
        quasi = schema.select(schema.quasi_identifiers)
        qit = rows_from_arrow(quasi, tables["qit"], n_rows)
        qit_groups = tables["qit"].column(GROUP_COLUMN).to_numpy()
        st_table = tables["st"]
        values = rows_from_arrow(schema.select([sensitive]), st_table.select([sensitive]),
                                 st_table.num_rows)[sensitive]
        st = (st_table.column(GROUP_COLUMN).to_numpy(), values,
              st_table.column("count").to_numpy())
        n_groups = int(parameters["n_groups"])
        if len(qit_groups) and (qit_groups.min() < 0 or qit_groups.max() >= n_groups):
            raise ValueError("QIT group ids out of range")
        if (len(st[0]) and (st[0].min() < 0 or st[0].max() >= n_groups)) or not np.array_equal(
                np.bincount(st[0], weights=st[2], minlength=n_groups),
                np.bincount(qit_groups, minlength=n_groups)):
            raise ValueError("ST counts do not add up to the QIT group sizes")
        return cls(schema, parameters, n_rows, qit, qit_groups, st)

    def _estimate(self, queries: Sequence[BoundQuery]
                  ) -> list[tuple[np.ndarray, np.ndarray | None]]:
        sizes = self.schema.sizes()
        results: list[tuple[np.ndarray, np.ndarray | None]] = []
        for query in queries:
            if self.sensitive not in query.columns:
                counts = count_histogram(self._cube, query.predicate, query.group_by)
                results.append((np.asarray(counts, dtype=float), np.zeros(counts.shape)))
                continue
            plain = [c for c in query.group_by if c != self.sensitive]
            values = np.zeros((*tuple(sizes[c] for c in plain), sizes[self.sensitive]))
            for rest, combos in split(query.predicate, [self.sensitive], sizes):
                values += count_histogram(self._cube, rest, [*plain, self.sensitive]) * combos
            if self.sensitive in query.group_by:
                order = [plain.index(c) if c in plain else len(plain) for c in query.group_by]
                values = np.transpose(values, order)
            else:
                values = values.sum(axis=-1)
            results.append((values, None))
        return results


class _ExpectedCube(Cube):
    """Contingency tables of the QIT in which the sensitive column holds expected counts.

    Each QIT row adds ``c(g, x) / |g|`` to every sensitive value x of its group g (Small
    Domain Randomization, Appendix 10.10). Over the cells k of the other columns this is the
    product ``E[k, x] = sum_g n(k, g) * share(g, x)``: ``n`` counts the QIT rows of group g in
    cell k (at most one entry per row) and ``share`` is the ST divided by the group sizes (one
    entry per ST line), both sparse: a table is one product of about rows * l multiply-adds in
    compiled code, instead of gathering and scattering a (rows x widest group) array.
    """

    def __init__(self, codes: Mapping[str, np.ndarray], sizes: Mapping[str, int], n_rows: int,
                 sensitive: str, row_groups: np.ndarray, st_groups: np.ndarray,
                 st_values: np.ndarray, st_shares: np.ndarray) -> None:
        super().__init__(codes, sizes, n_rows)
        self.sensitive = sensitive
        n_groups = int(max(row_groups.max(initial=-1), st_groups.max(initial=-1))) + 1
        self._n_groups = n_groups
        # Imported here: publishing needs no scipy (0.1-0.2 s of a command's start).
        import scipy.sparse as sp

        # share(g, x) transposed (values x groups), so that the product below runs over the
        # rows of each group's block once.
        self._shares_t = sp.csr_array(
            (np.asarray(st_shares, dtype=np.float64),
             (np.asarray(st_values, dtype=np.int64), np.asarray(st_groups, dtype=np.int64))),
            shape=(self.sizes[sensitive], n_groups))
        self._row_groups = np.asarray(row_groups)
        self._by_group: np.ndarray | None = None
        self._group_sizes = np.bincount(self._row_groups, minlength=n_groups)

    def _group_cells(self, key: np.ndarray, mask: np.ndarray | None, n_cells: int
                     ) -> sp.csr_array:
        """n(g, k) of the (masked) rows as a groups x cells CSR matrix (duplicates summed
        by the product)."""
        if self._by_group is None:
            # The QIT rows ordered by group, once (and only for tables with the sensitive
            # column): every table is then a CSR matrix over groups whose column indices are
            # the rows' cells, built without sorting again. Order within a group is free.
            self._by_group = np.argsort(self._row_groups)
        if mask is None:
            order, sizes = self._by_group, self._group_sizes
        else:
            order = self._by_group[mask[self._by_group]]
            sizes = np.bincount(self._row_groups[mask], minlength=self._n_groups)
        indptr = np.zeros(self._n_groups + 1, dtype=np.int64)
        np.cumsum(sizes, out=indptr[1:])
        import scipy.sparse as sp

        return sp.csr_array((np.ones(len(order)), key[order], indptr),
                            shape=(self._n_groups, n_cells))

    def _histogram(self, columns: tuple[str, ...], mask: np.ndarray | None) -> np.ndarray:
        if self.sensitive not in columns:
            return super()._histogram(columns, mask)
        if not self.fits(columns):
            raise QueryError(f"the columns {list(columns)} span "
                             f"{np.prod([self.sizes[c] for c in columns], dtype=float):.3g} "
                             f"value combinations, too many to count densely")
        plain = tuple(c for c in columns if c != self.sensitive)
        plain_shape = tuple(self.sizes[c] for c in plain)
        n_cells = int(np.prod(plain_shape, dtype=np.int64))
        # Keys of every row (the mask is applied through the group order above).
        key = (flat_key(self.codes, plain, self.sizes) if plain
               else np.zeros(len(self._row_groups), dtype=np.int64))
        expected = (self._shares_t @ self._group_cells(key, mask, n_cells)).toarray()
        counts = expected.T.reshape((*plain_shape, self.sizes[self.sensitive]))
        order = [plain.index(c) if c in plain else len(plain) for c in columns]
        return np.transpose(counts, order)
