"""Values made ready for strict JSON (RFC 8259 has no NaN or infinity)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["json_ready"]


def json_ready(value: Any) -> Any:
    """numpy scalars to Python numbers, tuples to lists, mapping keys to text and non-finite
    floats to None, at any depth."""
    if isinstance(value, Mapping):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(v) for v in value]
    # numpy only when a value may be one of its scalars: the command line starts without it.
    if type(value).__module__ == "numpy":
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
