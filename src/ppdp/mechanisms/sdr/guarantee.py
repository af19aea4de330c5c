"""The guarantee of uniform perturbation and of Perturbation Partitioning: gamma, p, q (Eq. 4,
6) and the error bound eps (Eq. 11) per sub-table, and (rho1, rho2)-privacy of the whole table
(Corollary 1)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ppdp.mechanisms.sdr.formulas import error_bound, uniform_probabilities


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
        p: float | None = None
        q: float | None = None
        diagonal: float | None = None
        eps: float | None = None
        if m is not None:
            p, q = (float(v) for v in uniform_probabilities(gamma, m))
            diagonal = p + q
            if n is not None:
                eps = float(error_bound(n, m, gamma, delta))
        return cls(rho1, rho2, delta, gamma, m, n, p, q, diagonal, eps)

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
