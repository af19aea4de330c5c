"""What the server says of a release: its mechanism, public parameters, rows, columns and,
where it needs no source table, its guarantee (`release_summary`)."""

from __future__ import annotations

from typing import Any

from ppdp.jsonable import json_ready
from ppdp.mechanisms.base import get_mechanism, mechanism_of
from ppdp.release.base import Release

__all__ = ["release_guarantee", "release_summary"]


def release_summary(name: str, release: Release) -> dict[str, Any]:
    """``name``, ``mechanism``, ``parameters``, ``n_rows``, ``columns`` (name, role, kind and
    number of values of each) and ``guarantee`` (`release_guarantee`) of ``release``."""
    columns = [{"name": column.name, "role": str(column.role), "kind": column.kind,
                "values": column.size} for column in release.schema.columns]
    data: dict[str, Any] = json_ready({
        "name": name, "mechanism": release.mechanism, "parameters": release.parameters,
        "n_rows": release.n_rows, "columns": columns,
        "guarantee": release_guarantee(release)})
    return data


def release_guarantee(release: Release) -> dict[str, Any] | None:
    """The guarantee of the mechanism with the release's parameters, as ``ppdp guarantee
    --json`` gives it; None where it depends on the source table (uniform perturbation,
    partitioning, alpha-beta, FRAPP), which the server does not have."""
    if get_mechanism(release.mechanism).guarantee_uses_table:
        return None
    guarantee: dict[str, Any] = mechanism_of(release).guarantee().to_dict()
    return guarantee
