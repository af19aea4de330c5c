"""The custodian's side of an attack: the source table seen through a release's domains, the
individuals attacked, and the independent sample of the population that gives the baselines.

The adversary of every attack knows a target's quasi-identifiers (the columns the release
publishes beside the attribute attacked) and the release; the custodian, who runs the attacks,
also knows each target's true values. The source rows are split at random into two halves:
the *targets* (half A), on which success is measured, and the *population* (half B), an
independent sample of the same population standing for what an adversary may learn without
the release. Every release is made from the whole table, so both halves are in it; the
population half only teaches the baselines, never the attacks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ppdp.data.schema import list_names
from ppdp.errors import SchemaError
from ppdp.randomness import RandomState, make_rng
from ppdp.release.base import Release
from ppdp.risk import codes_in_release
from ppdp.table.table import Table

__all__ = ["Targets", "expected_accuracy", "joint_keys", "target_of"]


@dataclass
class Targets:
    """A source table against a release: its codes in the release's domains, the attribute
    attacked, the quasi-identifiers an adversary knows, and the two halves."""

    release: Release
    table: Table
    codes: dict[str, np.ndarray]
    """Every column the release publishes, the source's values as the release's codes."""
    quasi: tuple[str, ...]
    """The published columns other than the attribute attacked."""
    sensitive: str | None
    """The attribute attacked (None: the release publishes none the source marks sensitive)."""
    evaluation: np.ndarray
    """Row positions of half A, the targets whose attack success is measured."""
    population: np.ndarray
    """Row positions of half B, the independent sample that teaches the baselines."""
    rng: np.random.Generator
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def n_rows(self) -> int:
        return self.table.n_rows

    @property
    def sizes(self) -> dict[str, int]:
        return self.release.schema.sizes()

    @property
    def encoded(self) -> Table:
        """The source in the release's encoding and column roles."""
        return self.cached("encoded", lambda: Table(self.release.schema, self.codes))

    def cached(self, name: str, compute: Any) -> Any:
        """A value shared by several attacks (the population baseline), computed once."""
        if name not in self._cache:
            self._cache[name] = compute()
        return self._cache[name]


def target_of(release: Release, table: Table, sensitive: str | None) -> str | None:
    """The attribute an attack infers: ``sensitive`` if given, else the release's single
    sensitive column, else the source's (alpha-beta and FRAPP publish every column alike)."""
    published = release.schema.names
    if sensitive is not None:
        if sensitive not in published:
            raise ValueError(f"the release does not publish {sensitive!r}; it publishes "
                             f"{list_names(published)}")
        return sensitive
    for candidates in (release.schema.sensitive, table.schema.sensitive):
        inside = [c for c in candidates if c in published]
        if len(inside) > 1:
            raise ValueError(f"several sensitive columns ({list_names(inside)}); name the one to "
                             f"attack (sensitive=..., CLI: --sensitive COL)")
        if inside:
            return inside[0]
    return None


def build_targets(release: Release, table: Table, *, sensitive: str | None = None,
                  random_state: RandomState = None) -> Targets:
    """The source ``table`` (the one ``release`` was published from) against the release,
    split at random into targets and population."""
    published = list(release.schema.names)
    missing = [c for c in published if c not in table.schema]
    if missing:
        raise SchemaError(f"the source has no column {missing[0]!r}, which the release "
                         f"publishes; attack the release with the table it was published from")
    if release.mechanism not in ("alphabeta",) and table.n_rows != release.n_rows:
        raise SchemaError(f"the source has {table.n_rows} rows and the release {release.n_rows}; "
                         f"attack the release with the table it was published from")
    codes, known = codes_in_release(table, release.schema, published)
    if not known.all():
        raise ValueError(f"{int((~known).sum())} source rows hold values outside the release's "
                         f"domains; attack the release with the table it was published from")
    target = target_of(release, table, sensitive)
    quasi = tuple(c for c in published if c != target
                  and (c not in release.schema.sensitive or release.mechanism in
                       ("alphabeta", "frapp")))
    rng = make_rng(random_state)
    order = rng.permutation(table.n_rows)
    half = table.n_rows // 2
    return Targets(release, table, codes, quasi, target, np.sort(order[:half]),
                   np.sort(order[half:]), rng)


def joint_keys(parts: Sequence[Mapping[str, np.ndarray]], columns: Sequence[str],
               sizes: Mapping[str, int]) -> list[np.ndarray]:
    """One integer key per row of each part for its values of ``columns``, equal across parts
    exactly when the values are: the index in the product of the domains when it fits in 63
    bits, else a number of the distinct combinations of all parts."""
    lengths = [len(next(iter(part.values()))) if part else 0 for part in parts]
    if not columns:
        return [np.zeros(n, dtype=np.int64) for n in lengths]
    shape = tuple(int(sizes[c]) for c in columns)
    if math.prod(shape) < 2**63:
        return [np.ravel_multi_index(tuple(np.asarray(part[c], dtype=np.int64)
                                           for c in columns), shape).astype(np.int64)
                for part in parts]
    stacked = np.concatenate([np.stack([np.asarray(part[c], dtype=np.int64) for c in columns],
                                       axis=1) for part in parts])
    _, inverse = np.unique(stacked, axis=0, return_inverse=True)
    return np.split(inverse.reshape(-1).astype(np.int64), np.cumsum(lengths)[:-1])


def expected_accuracy(posterior: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """For each row, the chance that the guess of the most likely value is the true one, ties
    broken uniformly at random: 1/|ties| when the true value is among the most likely, else
    0 (so that no order of the domain favours an attack)."""
    best = posterior.max(axis=1, keepdims=True)
    # Shares computed along different paths differ in the last bits: equal within 1e-9.
    ties = posterior >= best - 1e-9 * np.maximum(best, 1e-300)
    own = ties[np.arange(len(truth)), truth]
    return np.where(own, 1.0 / ties.sum(axis=1), 0.0)
