"""Several sensitive columns as one compound attribute over the product of their domains
(Section 3), and the perturbation of its values within sub-tables."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ppdp.data.schema import Schema
from ppdp.errors import SchemaError
from ppdp.mechanisms.sdr.formulas import uniform_probabilities
from ppdp.plan.sorted_search import GroupedSortedSearch
from ppdp.query.cube import MAX_CUBE_CELLS
from ppdp.table.source import SummarySource, TableSource
from ppdp.table.table import Table


@dataclass(frozen=True)
class CompoundAttribute:
    """Several sensitive columns as one attribute over the product of their domains (Sec. 3)."""

    columns: tuple[str, ...]
    shape: tuple[int, ...]

    @classmethod
    def of(cls, schema: Schema, columns: Sequence[str]) -> CompoundAttribute:
        shape = tuple(schema[c].size for c in columns)
        size = math.prod(shape)
        if size > MAX_CUBE_CELLS:
            raise SchemaError(f"the sensitive columns {list(columns)} span {size:,} value "
                              f"combinations, more than the {MAX_CUBE_CELLS:,} supported; "
                              f"perturb fewer columns or coarsen their domains")
        return cls(tuple(columns), shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def dtype(self) -> np.dtype:
        """The smallest unsigned integer type that holds every compound value."""
        return np.min_scalar_type(max(self.size - 1, 0))

    def encode(self, codes: Mapping[str, np.ndarray]) -> np.ndarray:
        """Each row's compound value (row-major index over the product of the domains)."""
        if len(self.columns) == 1:
            return np.asarray(codes[self.columns[0]]).astype(self.dtype, copy=False)
        return np.ravel_multi_index(tuple(codes[c] for c in self.columns),
                                    self.shape).astype(self.dtype)

    def decode(self, values: np.ndarray, schema: Schema) -> dict[str, np.ndarray]:
        parts = np.unravel_index(values, self.shape)
        return {c: part.astype(schema[c].dtype) for c, part in zip(self.columns, parts,
                                                                     strict=True)}


class PerturbWithin:
    """Uniform Perturbation of every row within its sub-table's domain (Eq. 1 with m_i, p_i),
    from one 64-bit draw u a row.

    ``domains``: boolean (sub-tables x compound values) membership of SA_i; ``gammas``:
    gamma_i. In sub-table i the value is kept when u < T_0 = floor(p_i 2^64); otherwise u
    picks the k-th value of SA_i (x itself possibly), T_k <= u < T_(k+1) with
    ``T_k = T_0 + floor(k (2^64 - T_0) / m_i)``, which is what makes Pr[x -> x] = p_i + q_i
    and Pr[x -> y] = q_i (to within 2^-64). The outcome of each row is found by one table
    lookup (`GroupedSortedSearch`) rather than by floating-point arithmetic and three gathers.
    """

    def __init__(self, domains: np.ndarray, gammas: np.ndarray) -> None:
        domains = np.atleast_2d(np.asarray(domains, dtype=bool))
        sizes = domains.sum(axis=1)
        retention, _ = uniform_probabilities(np.asarray(gammas, dtype=np.float64), sizes)
        whole = 1 << 64
        edges = []
        for p, size in zip(retention.tolist(), sizes.tolist(), strict=True):
            kept = min(int(p * whole), whole - 1)
            edges.append(np.array([kept] + [kept + (whole - kept) * k // size
                                            for k in range(1, size)], dtype=np.uint64))
        self._search = GroupedSortedSearch(edges, side="right")
        # The published value of each slot: -1 (the row's own) for answer 0, else the
        # (answer - 1)-th value of SA_i.
        outcome = np.full(len(self._search.position), -1, dtype=np.int64)
        for index, members in enumerate(domains):
            first = int(self._search.base[index]) + 1
            outcome[first:first + int(sizes[index])] = np.flatnonzero(members)
        self._outcome = outcome

    def __call__(self, values: np.ndarray, subtable: np.ndarray,
                 draws: np.ndarray) -> np.ndarray:
        """The published compound values of rows with these ``values`` in sub-tables
        ``subtable``, from their draws (uint64)."""
        slots, _ = self._search.search(subtable, draws)
        published = np.take(self._outcome, slots)
        kept = published < 0
        published = published.astype(values.dtype)
        np.copyto(published, values, where=kept)
        return published


def compound_frequencies(source: Table | SummarySource, compound: CompoundAttribute) -> np.ndarray:
    """How many rows hold each compound sensitive value (a flat histogram)."""
    if isinstance(source, Table):
        source = TableSource(source)
    return np.asarray(source.histogram(compound.columns)).reshape(-1)
