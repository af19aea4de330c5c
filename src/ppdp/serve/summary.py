"""What the server says of a release: its mechanism, public parameters, rows, columns and,
where it needs no source table, its guarantee (`release_summary`)."""

from __future__ import annotations

from typing import Any

from ppdp.jsonable import json_ready
from ppdp.mechanisms import get_mechanism
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
    mechanism = get_mechanism(release.mechanism)
    if mechanism.guarantee_uses_table:
        return None
    # A release records its privacy parameters and what the estimators need beyond them
    # (Anatomy's number of groups): only the mechanism's own build it again.
    own = {p.name for p in mechanism.parameters}
    instance = mechanism.from_params({k: v for k, v in release.parameters.items() if k in own})
    guarantee: dict[str, Any] = instance.guarantee().to_dict()
    return guarantee
