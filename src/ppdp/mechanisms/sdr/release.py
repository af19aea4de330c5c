"""The release of uniform perturbation within sub-tables (UP: one sub-table; PP: several) and
its estimator (Section 3.3, Eq. 7; Appendix 10.10).

On the rows Res of sub-table i that satisfy the condition on the other columns, the count of a
set S of sensitive values is estimated by ``(o_S - s q_i |Res|)/p_i``, where o_S is how many of
them were published with a value in S and s = |S ∩ SA_i|; estimates are summed over
sub-tables. Its variance is that of o_S, which under the paper's model (the values of Res drawn
independently from one distribution) is binomial: ``|Res| pi (1 - pi) / p_i^2`` with pi
estimated by o_S/|Res|, clipped to [s q_i, p_i + s q_i], the range a true share in [0, 1]
allows."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from ppdp.data.schema import Schema
from ppdp.mechanisms.base import check_sensitive
from ppdp.mechanisms.parameters import is_real
from ppdp.mechanisms.sdr.compound import CompoundAttribute
from ppdp.mechanisms.sdr.formulas import amplification_gamma, check_privacy, uniform_probabilities
from ppdp.mechanisms.sdr.plan import SUBTABLE_COLUMN, published_domains, subtable_domains
from ppdp.plan.engine import ScannedFiles
from ppdp.plan.order import split_parts
from ppdp.plan.rows import PublishedRows, RowPlan
from ppdp.query.binding import BoundQuery
from ppdp.query.cube import Cube, count_histogram
from ppdp.query.predicates import Predicate, RowCondition
from ppdp.query.scan_cube import ScanCube
from ppdp.query.splitting import split
from ppdp.release.arrow import rows_from_arrow, rows_to_arrow
from ppdp.release.base import Release, rows_domains


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

    @classmethod
    def check_parameters(cls, schema: Schema, parameters: Mapping[str, Any]) -> None:
        """The sensitive columns and (rho1, rho2) as `UniformPerturbation` checks them, and
        gamma as it publishes it: one, Eq. 6's for (rho1, rho2)."""
        check_sensitive(schema, "Uniform perturbation")
        rho1, rho2 = check_privacy(parameters["rho1"], parameters["rho2"])
        (gamma,) = check_gammas(parameters["gamma"], at_most=1)
        if not math.isclose(gamma, float(amplification_gamma(rho1, rho2)), rel_tol=1e-9):
            raise ValueError(f"gamma = {gamma!r} is not rho2 (1 - rho1)/(rho1 (1 - rho2)) for "
                             f"rho1 = {rho1:g}, rho2 = {rho2:g} (Eq. 6)")

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

    def _rows_parts(self) -> tuple[list[Callable[[], pa.Table]], dict[str, pa.Table]]:
        # The parts made as they are written (see `RowsRelease._rows_parts`).
        return [partial(self._rows_part, start, stop) for start, stop in self._part_bounds()], \
            {"subtables": subtable_domains(self.schema, self.compound, self.domains)}

    def _rows_part(self, start: int, stop: int) -> pa.Table:
        extra = {SUBTABLE_COLUMN: self.subtable[start:stop]} if self.n_subtables > 1 else None
        return rows_to_arrow(self.schema, {name: values[start:stop]
                                           for name, values in self.codes.items()}, extra)

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
                    tables: Mapping[str, pa.Table], scans: ScannedFiles
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
        cube = scans.cube("rows", rows_domains(schema, extra), n_rows, constants=constants)
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
        # Sums over the classes of rows: 0 until the first class's arrays are added.
        value: np.ndarray | float = 0.0
        variance: np.ndarray | float = 0.0
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


def check_gammas(gammas: Any, *, at_most: int | None = None) -> list[float]:
    """gamma_i of each sub-table as a release lists them: finite numbers above 1 (a sub-table
    keeps its values with p_i = (gamma_i - 1)/(m_i - 1 + gamma_i) > 0, Eq. 4)."""
    if not isinstance(gammas, list) or not gammas or (at_most is not None
                                                      and len(gammas) > at_most):
        count = "one gamma" if at_most == 1 else "a gamma per sub-table"
        raise ValueError(f"gamma must be a list of {count}, got {gammas!r}")
    for gamma in gammas:
        if not is_real(gamma) or not math.isfinite(gamma) or gamma <= 1:
            raise ValueError(f"every sub-table needs gamma > 1, a finite number; got {gamma!r}")
    return [float(gamma) for gamma in gammas]


_Perturbed = TypeVar("_Perturbed", bound=PerturbationRelease)


def perturbation_release(release_class: type[_Perturbed], plan: RowPlan,
                         rows: PublishedRows) -> _Perturbed:
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
