"""Uniform Perturbation under (rho1, rho2)-privacy, and the release it shares with Perturbation
Partitioning (Small Domain Randomization, Sections 3-4 and Appendix 10.2).

Each row's sensitive value x is kept with the retention probability p and otherwise replaced by
a value drawn uniformly from the domain (x included), so Pr[x -> x] = p + q and Pr[x -> y] = q
with q = (1 - p)/m (Eq. 1). The ratio gamma = (p + q)/q is the largest that gives
(rho1, rho2)-privacy (Theorem 1, Eq. 6); then p = (gamma - 1)/(m - 1 + gamma) and
q = 1/(m - 1 + gamma) (Eq. 4). Several sensitive columns form one compound attribute over the
product of their domains (Section 3).

Perturbation Partitioning (``sdr``) publishes the same kind of rows, with each row's sub-table
T_i, and perturbs within the sub-table's own domain SA_i and ratio gamma_i (Eq. 9-10). A uniform
release is the special case of one sub-table whose domain is the whole product.

Estimation (Section 3.3, Eq. 7; Appendix 10.10): on the rows Res of sub-table i that satisfy
the condition on the other columns, the count of a set S of sensitive values is estimated by
``(o_S - s q_i |Res|)/p_i``, where o_S is how many of them were published with a value in S and
s = |S ∩ SA_i|; estimates are summed over sub-tables. Its variance is that of o_S, which under
the paper's model (the values of Res drawn independently from one distribution) is binomial:
``|Res| pi (1 - pi) / p_i^2`` with pi estimated by o_S/|Res|, clipped to [s q_i, p_i + s q_i],
the range a true share in [0, 1] allows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ppdp.errors import InfeasibleError, SchemaError
from ppdp.keyed import KeyedStream
from ppdp.mechanisms.base import (
    Mechanism,
    Parameter,
    publish_in_memory,
    require_open_unit,
    require_sensitive,
)
from ppdp.plans import PublishedRows, QuotaAssignment, RowPlan, split_parts
from ppdp.query import (
    MAX_CUBE_CELLS,
    BoundQuery,
    Cube,
    Predicate,
    RowCondition,
    ScanCube,
    count_histogram,
    split,
)
from ppdp.randomness import RandomState
from ppdp.release import Release, rows_from_arrow, rows_to_arrow, scan_rows
from ppdp.sorted_search import GroupedSortedSearch
from ppdp.sources import Source, TableSource
from ppdp.table import Role, Schema, Table

SUBTABLE_COLUMN = "subtable"
"""The published sub-table of each row, and the key of the sub-table domain file."""

# -- the paper's formulas --------------------------------------------------------------------


def check_privacy(rho1: float, rho2: float) -> tuple[float, float]:
    """Validate a (rho1, rho2)-privacy requirement: 0 < rho1 < rho2 < 1 (Section 3.2)."""
    rho1, rho2 = require_open_unit("rho1", rho1), require_open_unit("rho2", rho2)
    if rho1 >= rho2:
        raise ValueError(f"(rho1, rho2)-privacy needs rho1 < rho2 (the posterior bound must "
                         f"exceed the prior bound), got rho1 = {rho1:g} >= rho2 = {rho2:g}; "
                         f"lower rho1 below {rho2:g} or raise rho2 above {rho1:g}")
    return rho1, rho2


def check_delta(delta: float) -> float:
    """Validate the confidence parameter delta of the error bound (it holds with probability
    1 - delta): 0 < delta < 1."""
    return require_open_unit("delta", delta)


def amplification_gamma(rho1: float | np.ndarray, rho2: float) -> Any:
    """The largest amplification ratio gamma giving (rho1, rho2)-privacy.

    Section 3.2, Eq. 6 (and Eq. 10 with rho1_i for a sub-table):
    ``gamma = rho2 (1 - rho1) / (rho1 (1 - rho2))``.
    """
    return rho2 * (1 - np.asarray(rho1, dtype=float)) / (np.asarray(rho1, dtype=float)
                                                          * (1 - rho2))


def uniform_probabilities(gamma: Any, m: Any) -> tuple[Any, Any]:
    """Retention probability p and replacement probability q of Uniform Perturbation.

    Section 3.2, Eq. 4: ``p = (gamma - 1)/(m - 1 + gamma)``, ``q = 1/(m - 1 + gamma)``;
    Pr[x -> x] = p + q = gamma q.
    """
    gamma, m = np.asarray(gamma, dtype=float), np.asarray(m, dtype=float)
    return (gamma - 1) / (m - 1 + gamma), 1 / (m - 1 + gamma)


def perturbation_matrix(gamma: float, m: int) -> np.ndarray:
    """The m x m perturbation matrix P[j][i] = Pr[x_i -> y_j] (Section 3.2, Eq. 5)."""
    _, q = uniform_probabilities(gamma, m)
    return np.full((m, m), float(q)) + np.eye(m) * float(q) * (gamma - 1)


def error_bound(n: Any, m: Any, gamma: Any, delta: float) -> Any:
    """The relative-frequency error bound eps of Theorem 2 at equality (Section 4.2, Eq. 11).

    ``eps = a/sqrt(n) * (m/(gamma - 1) + 1)`` with ``a = 2 sqrt(log(2/delta))``: with
    probability at least 1 - delta every reconstructed frequency f*/n is within eps of f/n.
    """
    a = 2 * math.sqrt(math.log(2 / delta))
    n, m, gamma = (np.asarray(v, dtype=float) for v in (n, m, gamma))
    return a / np.sqrt(n) * (m / (gamma - 1) + 1)


def protected_values(frequencies: np.ndarray, rho1: float) -> np.ndarray:
    """SA': the values whose relative frequency is at most rho1 (Section 4.1, Eq. 9).

    Raises InfeasibleError when no value qualifies: (rho1, rho2)-privacy then bounds nothing.
    """
    n = int(frequencies.sum())
    present = frequencies > 0
    # f/n <= rho1 rather than f <= rho1 n: a rho1 given as a relative frequency (1/161)
    # rounds like f/n does, while rho1 * n can round below f and drop the value from SA'.
    protected = present & (frequencies / n <= rho1)
    if not protected.any():
        least = int(frequencies[present].min())
        raise InfeasibleError(
            f"every sensitive value is more frequent than rho1 = {rho1:g} (the least frequent "
            f"has relative frequency {least / n:.4g}), so (rho1, rho2)-privacy protects "
            f"nothing; raise rho1 to at least {least / n:.4g} (and rho2 above it)")
    return protected


# -- compound sensitive attribute ----------------------------------------------------------


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


# -- publishing ------------------------------------------------------------------------------


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


def compound_frequencies(source: Table | Source, compound: CompoundAttribute) -> np.ndarray:
    """How many rows hold each compound sensitive value (a flat histogram)."""
    if isinstance(source, Table):
        source = TableSource(source)
    return np.asarray(source.histogram(compound.columns)).reshape(-1)


def perturbation_plan(mechanism: str, schema: Schema, compound: CompoundAttribute,
                      domains: np.ndarray, gammas: np.ndarray, parameters: dict[str, Any],
                      key: int, assignment: QuotaAssignment | None = None) -> RowPlan:
    """The row plan of Uniform Perturbation within sub-tables: each row's sub-table (from
    ``assignment``, else the only one), its sensitive value perturbed, the other columns kept."""
    if SUBTABLE_COLUMN in schema:
        raise SchemaError(f"a column is named {SUBTABLE_COLUMN!r}, the name the release uses "
                          f"for sub-tables; rename it")
    names = [c.name for c in schema.columns if c.role != Role.IGNORED]
    published = schema.select(names)
    stream = KeyedStream(key, "perturb")
    several = len(gammas) > 1
    perturb = PerturbWithin(domains, gammas)

    def kernel(codes: Mapping[str, np.ndarray], start: int) -> dict[str, np.ndarray]:
        values = compound.encode(codes)
        subtable = assignment.labels(start, codes) if assignment is not None \
            else np.zeros(len(values), dtype=np.uint8)
        perturbed = compound.decode(perturb(values, subtable, stream.raw(start, len(values))),
                                    schema)
        rows = {name: perturbed.get(name, codes[name]) for name in names}
        if several:
            rows[SUBTABLE_COLUMN] = subtable
        return rows

    return RowPlan(mechanism, published, kernel, parameters,
                   passes=assignment.passes if assignment is not None else [],
                   extra=(SUBTABLE_COLUMN,) if several else (),
                   tables={"subtables": subtable_domains(published, compound, domains)},
                   state={"domains": domains})


def subtable_domains(schema: Schema, compound: CompoundAttribute,
                     domains: np.ndarray) -> pa.Table:
    """The published sub-table domains SA_i: one row per (sub-table, value)."""
    subtables, values = np.nonzero(domains)
    return rows_to_arrow(schema.select(compound.columns), compound.decode(values, schema),
                         {SUBTABLE_COLUMN: subtables.astype(np.int32)})


def published_domains(schema: Schema, compound: CompoundAttribute, listing: pa.Table,
                      k: int) -> np.ndarray:
    """The sub-table domains SA_i of a loaded release, from its listing of (sub-table, value)
    rows: a boolean (sub-tables x compound values) mask."""
    members = compound.encode(rows_from_arrow(schema.select(compound.columns), listing,
                                              listing.num_rows))
    owners = listing.column(SUBTABLE_COLUMN).to_numpy()
    if len(owners) and (owners.min() < 0 or owners.max() >= k):
        raise ValueError("sub-table domain ids out of range")
    domains = np.zeros((k, compound.size), dtype=bool)
    domains[owners, members] = True
    return domains


def perturbation_release(release_class: type[PerturbationRelease], plan: RowPlan,
                         rows: PublishedRows) -> PerturbationRelease:
    """The in-memory release of a perturbation plan's rows."""
    codes = dict(rows.codes)
    n_rows = rows.n_rows
    subtable = codes.pop(SUBTABLE_COLUMN, None)
    if subtable is None:
        subtable = np.zeros(n_rows, dtype=np.uint8)
    release = release_class(plan.schema, plan.parameters, n_rows, codes, subtable,
                            plan.state["domains"])
    release.part_rows = rows.part_rows
    return release


class UniformPerturbation(Mechanism):
    """Uniform Perturbation (UP) of the sensitive attribute over its whole domain (Sec. 3)."""

    name = "uniform"
    summary = ("uniform perturbation: keep the sensitive value with probability p, else draw "
               "one uniformly from the whole domain; (rho1, rho2)-privacy")
    parameters = (
        Parameter("rho1", float, "prior bound rho1 of (rho1, rho2)-privacy (0 < rho1 < rho2)"),
        Parameter("rho2", float, "posterior bound rho2 of (rho1, rho2)-privacy (rho2 < 1)"),
    )
    guarantee_uses_table = True
    guarantee_parameters = (
        Parameter("m", int, "sensitive domain size m (taken from the table when one is given)",
                  default=None),
        Parameter("n", int, "number of rows |T| for the error bound (taken from the table)",
                  default=None),
        Parameter("delta", float, "the error bound holds with probability 1 - delta",
                  default=0.05),
    )

    def __init__(self, *, rho1: float, rho2: float) -> None:
        self.rho1, self.rho2 = check_privacy(rho1, rho2)

    @property
    def gamma(self) -> float:
        """gamma of Eq. 6."""
        return float(amplification_gamma(self.rho1, self.rho2))

    def publish(self, table: Table, *, random_state: RandomState = None) -> PerturbationRelease:
        """Perturb the (compound) sensitive value of every row over the whole domain."""
        self.check_memory(table)
        plan, rows = publish_in_memory(self, table, random_state)
        return perturbation_release(PerturbationRelease, plan, rows)

    def row_plan(self, source: Source, key: int) -> RowPlan:
        """The plan: one sub-table, the whole (compound) domain, gamma of Eq. 6."""
        compound = self._compound(source)
        domains = np.ones((1, compound.size), dtype=bool)
        parameters = {"rho1": self.rho1, "rho2": self.rho2, "gamma": [self.gamma]}
        return perturbation_plan(self.name, source.schema, compound, domains,
                                 np.array([self.gamma]), parameters, key)

    def _compound(self, source: Table | Source, *, publishing: bool = True
                  ) -> CompoundAttribute:
        """The sensitive attribute, checked to have a value that rho1 protects."""
        sensitive = require_sensitive(source, "Uniform perturbation", publishing=publishing)
        compound = CompoundAttribute.of(source.schema, sensitive)
        protected_values(compound_frequencies(source, compound), self.rho1)
        return compound

    def guarantee(self, table: Table | None = None, *, m: int | None = None,
                  n: int | None = None, delta: float = 0.05) -> PerturbationGuarantee:
        """gamma, p, q (Eq. 4, 6) and the error bound eps (Eq. 11) for a domain of size m and
        n rows, taken from ``table`` when it is given."""
        if table is not None:
            compound = self._compound(table, publishing=False)
            m, n = compound.size, table.n_rows
        return PerturbationGuarantee.of(self.rho1, self.rho2, check_delta(delta),
                                        self.gamma, m, n)


# -- guarantee --------------------------------------------------------------------------------


@dataclass(frozen=True)
class SubTableSummary:
    """One sub-table T_i of a partition: size, domain size m_i, rho1_i, gamma_i, p_i, eps_i."""

    rows: int
    m: int
    rho1: float
    gamma: float
    retention: float
    diagonal: float
    epsilon: float


@dataclass(frozen=True)
class PerturbationGuarantee:
    """(rho1, rho2)-privacy and the utility bound of a (partitioned) uniform perturbation.

    ``retention`` is p of Eq. 4 (the paper's Table 2 reports it); ``diagonal`` is
    Pr[x -> x] = p + q (Example 1's "retention probability on the main diagonal"). ``epsilon``
    is the bound of Eq. 11 (Eq. 12 for a partition) at confidence 1 - delta, when n is known.
    """

    rho1: float
    rho2: float
    delta: float
    gamma: float
    m: int | None
    n: int | None
    retention: float | None
    replacement: float | None
    diagonal: float | None
    epsilon: float | None
    subtables: tuple[SubTableSummary, ...] = field(default=())

    @classmethod
    def of(cls, rho1: float, rho2: float, delta: float, gamma: float, m: int | None,
           n: int | None) -> PerturbationGuarantee:
        for name, value, low in (("m", m, 2), ("n", n, 1)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < low):
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        p = q = eps = None
        if m is not None:
            p, q = (float(v) for v in uniform_probabilities(gamma, m))
            if n is not None:
                eps = float(error_bound(n, m, gamma, delta))
        return cls(rho1, rho2, delta, gamma, m, n, p, q, None if p is None else p + q, eps)

    @property
    def partitioned(self) -> bool:
        return bool(self.subtables)

    def partition_statistics(self) -> dict[str, float | None]:
        """The columns of the paper's Tables 2-3: number of sub-tables, average m_i, gamma_i
        and retention p_i (over sub-tables, and weighted by rows).

        A guarantee without sub-tables (Uniform Perturbation, or Perturbation Partitioning
        asked without a table) describes one perturbation over the whole domain: Uniform
        Perturbation is the partition into a single sub-table T_1 = T with m_1 = m and
        gamma_1 = gamma (Section 4.1), so the statistics are those of that sub-table. Entries
        that need the domain size (m and the retention p of Eq. 4) are None when m is unknown.
        """
        parts = self.subtables
        if not parts:
            # Averages over an empty tuple of sub-tables would be NaN (and warn); the whole
            # table is the one sub-table here.
            return {
                "subtables": 1,
                "mean_m": None if self.m is None else float(self.m),
                "mean_gamma": self.gamma,
                "mean_retention": self.retention,
                "row_weighted_retention": self.retention,
            }
        rows = np.array([s.rows for s in parts], dtype=float)
        retention = np.array([s.retention for s in parts])
        return {
            "subtables": len(parts),
            "mean_m": float(np.mean([s.m for s in parts])),
            "mean_gamma": float(np.mean([s.gamma for s in parts])),
            "mean_retention": float(retention.mean()),
            "row_weighted_retention": float((retention * rows).sum() / rows.sum()),
        }

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "mechanism": "sdr" if self.partitioned else "uniform",
            "rho1": self.rho1, "rho2": self.rho2, "delta": self.delta, "gamma": self.gamma,
            "m": self.m, "n": self.n, "retention": self.retention,
            "replacement": self.replacement, "diagonal": self.diagonal,
            "epsilon": self.epsilon,
        }
        if self.partitioned:
            # The top-level p, q are those of Uniform Perturbation over the whole domain, kept
            # for comparison; the partition's own are per sub-table.
            for key in ("retention", "replacement", "diagonal"):
                data[f"uniform_{key}"] = data.pop(key)
            data.update(self.partition_statistics())
            data["subtable_details"] = [vars(s) for s in self.subtables]
        data["statement"] = self.statement()
        return data

    def statement(self) -> str:
        bound = ("" if self.epsilon is None else
                 f"; with probability >= {1 - self.delta:g} every reconstructed relative "
                 f"frequency is within {self.epsilon:.4g} of the truth "
                 f"({'Eq. 12' if self.partitioned else 'Theorem 2, Eq. 11'})")
        scope = ("each sub-table T_i perturbed with its gamma_i from rho1_i <= rho2 (Eq. 9-10), "
                 "which acts as (rho1, rho2)-privacy on the table (Corollary 1)"
                 if self.partitioned else f"gamma = {self.gamma:.4g} (Eq. 6)")
        return (f"(rho1, rho2)-privacy with rho1 = {self.rho1:g}, rho2 = {self.rho2:g}: for a "
                f"value x whose relative frequency is at most rho1, Pr[X = x | Y = y] <= "
                f"{self.rho2:g} (Theorem 1); {scope}{bound}")


# -- the release -----------------------------------------------------------------------------


class PerturbationRelease(Release):
    """Rows with perturbed sensitive values, each row's sub-table, and per sub-table its domain
    SA_i and gamma_i (one sub-table, the whole domain, for Uniform Perturbation).

    Published, it holds its rows' codes and sub-tables; loaded, it counts from its files (a
    `ScanCube` whose ``subtable`` column is each row's sub-table) and reads the rows only when
    ``codes`` or ``subtable`` is asked for (pass the ScanCube as ``codes`` and no
    ``subtable``).
    """

    mechanism = "uniform"
    scanned = frozenset({"rows"})

    def __init__(self, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                 codes: Mapping[str, np.ndarray] | ScanCube, subtable: np.ndarray | None,
                 domains: np.ndarray) -> None:
        super().__init__(schema, parameters, n_rows)
        self.domains = np.asarray(domains, dtype=bool)
        self.gammas = np.asarray(parameters["gamma"], dtype=float)
        self.compound = CompoundAttribute.of(schema, schema.sensitive)
        self.retention, self.replacement = uniform_probabilities(self.gammas,
                                                                 self.domains.sum(axis=1))
        self._codes: dict[str, np.ndarray] | None
        self._subtable: np.ndarray | None
        self._cube: Cube
        if isinstance(codes, ScanCube):
            self._codes = self._subtable = None
            self._cube = codes
        else:
            self._codes = dict(codes)
            self._subtable = np.asarray(subtable)
            self._cube = Cube({**self._codes, SUBTABLE_COLUMN: self._subtable},
                              {**schema.sizes(), SUBTABLE_COLUMN: len(self.gammas)}, n_rows)

    @property
    def codes(self) -> dict[str, np.ndarray]:
        """Every published row's codes, by column; a loaded release reads them from its files
        on first use (the whole table in memory: counting never needs them)."""
        self._read_rows()
        assert self._codes is not None
        return self._codes

    @property
    def subtable(self) -> np.ndarray:
        """Every published row's sub-table (read like ``codes``)."""
        self._read_rows()
        assert self._subtable is not None
        return self._subtable

    def _read_rows(self) -> None:
        if self._codes is None:
            assert isinstance(self._cube, ScanCube)
            codes = self._cube.read_codes()
            self._subtable = codes.pop(SUBTABLE_COLUMN)
            self._codes = codes

    @property
    def n_subtables(self) -> int:
        return len(self.gammas)

    def _tables(self) -> dict[str, pa.Table]:
        extra = {SUBTABLE_COLUMN: self.subtable} if self.n_subtables > 1 else None
        return {"rows": split_parts(rows_to_arrow(self.schema, self.codes, extra),
                                    self.part_rows),
                "subtables": subtable_domains(self.schema, self.compound, self.domains)}

    @classmethod
    def _from_tables(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                     tables: Mapping[str, pa.Table]) -> PerturbationRelease:
        gammas = np.asarray(parameters["gamma"], dtype=float)
        k = len(gammas)
        if k == 0 or not np.all(gammas > 1):
            raise ValueError("every sub-table needs gamma > 1")
        rows = tables["rows"]
        codes = rows_from_arrow(schema, rows, n_rows)
        if k > 1:
            subtable = rows.column(SUBTABLE_COLUMN).to_numpy()
            if len(subtable) and (subtable.min() < 0 or subtable.max() >= k):
                raise ValueError("sub-table ids out of range")
            subtable = subtable.astype(np.min_scalar_type(k - 1))
        else:
            subtable = np.zeros(n_rows, dtype=np.uint8)
        compound = CompoundAttribute.of(schema, schema.sensitive)
        domains = published_domains(schema, compound, tables["subtables"], k)
        if not domains[subtable, compound.encode(codes)].all():
            raise ValueError("a published value lies outside its sub-table's domain")
        return cls(schema, parameters, n_rows, codes, subtable, domains)

    @classmethod
    def _from_files(cls, schema: Schema, parameters: Mapping[str, Any], n_rows: int,
                    tables: Mapping[str, pa.Table], scans: Mapping[str, Sequence[Path]]
                    ) -> PerturbationRelease:
        """The release counting from its rows' files, checked as `_from_tables` checks them:
        sub-table ids in range, and no row published outside its sub-table's domain (counted
        over the cells of sub-table and sensitive values, or in batches)."""
        gammas = np.asarray(parameters["gamma"], dtype=float)
        k = len(gammas)
        if k == 0 or not np.all(gammas > 1):
            raise ValueError("every sub-table needs gamma > 1")
        # One sub-table: the rows carry no sub-table column; every row is in sub-table 0.
        extra, constants = ({SUBTABLE_COLUMN: pa.array(range(k), pa.int64())}, ()) if k > 1 \
            else ({}, (SUBTABLE_COLUMN,))
        cube = scan_rows(schema, scans["rows"], n_rows, extra, constants)
        compound = CompoundAttribute.of(schema, schema.sensitive)
        domains = published_domains(schema, compound, tables["subtables"], k)

        def outside(codes: Mapping[str, np.ndarray]) -> np.ndarray:
            return ~domains[codes[SUBTABLE_COLUMN], compound.encode(codes)]

        check = RowCondition(outside, frozenset({SUBTABLE_COLUMN, *compound.columns}),
                             "outside its sub-table's domain")
        if count_histogram(cube, check, ()) > 0:
            raise ValueError("a published value lies outside its sub-table's domain")
        return cls(schema, parameters, n_rows, cube, None, domains)

    def _prefetch(self, queries: Sequence[BoundQuery]) -> None:
        if isinstance(self._cube, ScanCube):
            # A query on sensitive columns counts over the sub-tables and sensitive values.
            randomized = {SUBTABLE_COLUMN, *self.compound.columns}
            self._cube.prefetch(query.columns | randomized if query.columns & randomized
                                else query.columns for query in queries)

    def _estimate(self, queries: Sequence[BoundQuery]
                  ) -> list[tuple[np.ndarray, np.ndarray | None]]:
        return [self._estimate_one(q) for q in queries]

    def _estimate_one(self, query: BoundQuery) -> tuple[np.ndarray, np.ndarray]:
        sensitive = list(self.compound.columns)
        if not query.columns & set(sensitive):
            counts = np.asarray(count_histogram(self._cube, query.predicate, query.group_by),
                                dtype=float)
            return counts, np.zeros(counts.shape)
        plain = [c for c in query.group_by if c not in sensitive]
        grouped_sensitive = [c for c in sensitive if c in query.group_by]
        dims = [*plain, SUBTABLE_COLUMN, *sensitive]
        value = variance = 0.0
        for observed, values in self._observed_classes(query.predicate, dims):
            part_value, part_variance = self._reconstruct(observed, values, len(plain),
                                                          grouped_sensitive)
            value = value + part_value
            variance = variance + part_variance
        value, variance = np.asarray(value), np.asarray(variance)
        # Axes are [plain..., grouped sensitive (schema order)]; put them in GROUP BY order.
        present = [*plain, *grouped_sensitive]
        order = [present.index(c) for c in query.group_by]
        return np.transpose(value, order), np.sqrt(np.transpose(variance, order))

    def _observed_classes(self, predicate: Predicate, dims: list[str]
                          ) -> list[tuple[np.ndarray, np.ndarray]]:
        """Published counts over ``dims`` per class of rows, with the sensitive values each
        class asks for.

        The predicate is split on the sensitive columns into disjoint pieces (condition on the
        other columns, set of sensitive values). Rows satisfying the same pieces form a class
        that asks for the union of their sets; classes are disjoint, so their estimates and
        variances add.
        """
        pieces = split(predicate, list(self.compound.columns), self.schema.sizes())
        if len(pieces) == 1:
            rest, values = pieces[0]
            return [(count_histogram(self._cube, rest, dims), values)]
        classes = []
        for member, observed in self._cube.class_histograms([rest for rest, _ in pieces], dims):
            values = np.zeros(self.compound.shape, dtype=bool)
            for bit, (_, piece_values) in enumerate(pieces):
                if (member >> bit) & 1:
                    values |= piece_values
            classes.append((observed, values))
        return classes

    def _reconstruct(self, observed: np.ndarray, values: np.ndarray, n_plain: int,
                     grouped: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Eq. 7 per sub-table on the observed counts, summed over sub-tables, with variance.

        ``observed`` has axes [plain..., sub-table, sensitive columns...]; ``values`` marks the
        sensitive values asked for. Returns arrays over [plain..., grouped sensitive...].
        """
        columns = self.compound.columns
        sensitive_axes = tuple(range(n_plain + 1, n_plain + 1 + len(columns)))
        summed = tuple(a for a, c in zip(sensitive_axes, columns, strict=True)
                       if c not in grouped)
        res = observed.sum(axis=sensitive_axes)  # |Res| per [plain..., sub-table]
        asked = (observed * values).sum(axis=summed)  # o_S per [plain..., sub-table, grouped]
        domains = self.domains.reshape(self.n_subtables, *self.compound.shape)
        in_domain = (domains & values).sum(axis=tuple(a - n_plain for a in summed))
        extra = (1,) * len(grouped)
        res = res.reshape(res.shape + extra).astype(float)
        p = self.retention.reshape(-1, *extra)
        q = self.replacement.reshape(-1, *extra)
        estimate = (asked - in_domain * q * res) / p
        # The observed share o_S/|Res| estimates pi = p f_S/|Res| + s q; clipping it to the
        # range that a true share f_S/|Res| in [0, 1] allows keeps the variance from vanishing
        # when no row (or every row) of a small Res was published with a value in S.
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(res > 0, asked / res, 0.0)
        share = np.clip(share, in_domain * q, p + in_domain * q)
        variance = res * share * (1 - share) / p ** 2
        return estimate.sum(axis=n_plain), variance.sum(axis=n_plain)
