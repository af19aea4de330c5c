"""The row plan of uniform perturbation within sub-tables, shared by Uniform Perturbation (one
sub-table, the whole domain) and Perturbation Partitioning (sub-tables T_i, their domains SA_i
and ratios gamma_i, Eq. 9-10), and the published sub-table domains."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from ppdp.data.schema import Role, Schema
from ppdp.errors import SchemaError
from ppdp.mechanisms.sdr.compound import CompoundAttribute, PerturbWithin
from ppdp.plan.keyed import KeyedStream
from ppdp.plan.quotas import QuotaAssignment
from ppdp.plan.rows import RowPlan
from ppdp.release.arrow import rows_from_arrow, rows_to_arrow

SUBTABLE_COLUMN = "subtable"
"""The published sub-table of each row, and the key of the sub-table domain file."""


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


