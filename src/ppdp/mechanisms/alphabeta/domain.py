"""The tuple domain D = D_1 x .. x D_l of alpha-beta and FRAPP: each tuple numbered by a
mixed-radix key, and sets of keys looked up without enumerating D."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ppdp.data.schema import Role, Schema
from ppdp.errors import SchemaError
from ppdp.plan.resources import (
    format_count,
)

MAX_DOMAIN = (1 << 62) - 1
"""The largest domain m supported: tuples are keyed by their index in D as 64-bit integers."""


@dataclass(frozen=True)
class TupleDomain:
    """The domain D of a table's published columns, tuples keyed by their index in D."""

    columns: tuple[str, ...]
    shape: tuple[int, ...]

    @classmethod
    def of(cls, schema: Schema) -> TupleDomain:
        columns = tuple(c.name for c in schema.columns if c.role != Role.IGNORED)
        shape = tuple(schema[c].size for c in columns)
        size = math.prod(shape)
        if size > MAX_DOMAIN:
            # format_count: the size of a domain of many columns does not fit a float.
            raise SchemaError(f"the domain of {len(columns)} columns has {format_count(size)} "
                              f"tuples, more than the 2^62 supported; leave columns out "
                              f"(role 'ignored') or coarsen their domains")
        return cls(columns, shape)

    @property
    def size(self) -> int:
        """m = |D|."""
        return math.prod(self.shape)

    def keys(self, codes: Mapping[str, np.ndarray]) -> np.ndarray:
        return np.ravel_multi_index(tuple(codes[c] for c in self.columns), self.shape)

    def codes(self, keys: np.ndarray, schema: Schema) -> dict[str, np.ndarray]:
        # Last column fastest, as ``keys``; divmod is twice as fast as np.unravel_index here.
        parts, rest = {}, np.asarray(keys, dtype=np.int64)
        for column, size in zip(self.columns[:0:-1], self.shape[:0:-1], strict=True):
            rest, parts[column] = np.divmod(rest, size)
        parts[self.columns[0]] = rest
        return {c: parts[c].astype(schema[c].dtype) for c in self.columns}


def _sorted_unique(keys: np.ndarray) -> np.ndarray:
    """The distinct keys, sorted (a sort is faster than numpy's hashing unique here)."""
    ordered = np.sort(keys)
    return ordered[np.concatenate([[True], ordered[1:] != ordered[:-1]])] if len(ordered) \
        else ordered


def _contains(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    if len(sorted_keys) == 0:
        return np.zeros(len(keys), dtype=bool)
    where = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return sorted_keys[where] == keys


TUPLE_DOMAIN_RISK = (
    "the guarantee is about the presence of tuples, while a release over those domains lists "
    "every value present and draws no tuple with a value that is absent")
