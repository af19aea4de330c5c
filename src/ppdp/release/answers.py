"""A release's answer to a count query as JSON: what ``ppdp count --json`` prints and
``ppdp serve`` returns, built in one place so that both say the same."""

from __future__ import annotations

from typing import Any

from ppdp.estimate import Estimate, GroupedEstimate
from ppdp.jsonable import json_ready

__all__ = ["answer_json"]


def answer_json(answer: Estimate | GroupedEstimate) -> dict[str, Any]:
    """``answer`` as strict JSON data: ``estimate``, ``stderr``, ``ci95`` (and ``converged:
    false`` where the estimator stopped early), or ``groups`` of those with their ``key``;
    numpy scalars as Python numbers, non-finite numbers as null (`ppdp.jsonable.json_ready`)."""
    data: dict[str, Any] = json_ready(answer.to_dict())
    return data
