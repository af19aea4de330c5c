"""Measured disclosure risk of a release: what an adversary can infer, computed from the release.

* Ambiguity (ambiguity paper, Section 5): every group's presence probability
  ``|G| / prod_i |G_ATi|`` (Theorem 5.1) and every (group, sensitive value) association
  probability ``c / |G|`` (Theorem 5.2); with the source table, the same for every source tuple
  through the groups that cover it (Definition 5.1, Lemma 5.1).
* Generalization (Mondrian): k (smallest class), distinct l (fewest sensitive values in a class),
  the normalized certainty penalty, and the same two probabilities per class: presence
  ``|G| / prod_i |cover_i|`` over the domain values its generalized values cover (Theorem 5.1)
  and its largest association ``c / |G|`` (Theorem 5.2).

A source tuple may be covered by several groups (all of its values appear in each of their
auxiliary tables). Theorem 5.1 speaks of one covering group; ``presence`` reports the largest
of the covering groups' probabilities, and ``presence_any`` the probability that at least one
of them holds the tuple, ``1 - prod_g (1 - p_g)``, taking the groups as independent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import scipy.sparse as sp

from ppdp.data.schema import Schema
from ppdp.errors import SchemaError
from ppdp.mechanisms.ambiguity.release import AmbiguityRelease
from ppdp.release.base import Release
from ppdp.table.table import Table

__all__ = ["ambiguity_incidence", "ambiguity_summary", "codes_in_release", "covering_groups",
           "release_risk", "tuple_risk"]


def release_risk(release: Release) -> dict[str, Any]:
    """The risk measures of a release that defines them (ambiguity, mondrian)."""
    if isinstance(release, AmbiguityRelease):
        return ambiguity_summary(release)
    measure = getattr(release, "risk", None)
    if measure is None:
        raise ValueError(f"risk measures are defined for ambiguity and mondrian releases, not "
                         f"{release.mechanism}")
    return {"mechanism": release.mechanism, **measure()}


def ambiguity_summary(release: AmbiguityRelease) -> dict[str, Any]:
    """Presence and association over all groups of an ambiguity release, against its alpha
    and beta."""
    presence = release.presence()
    association = release.association()
    sizes = release.group_sizes()
    diversity = np.bincount(release.st[0], minlength=release.n_groups)
    # A scheme built from another partition (Theorem 6.1) has no alpha or beta to meet.
    alpha = float(release.parameters.get("alpha", 1.0))
    beta = float(release.parameters.get("beta", 1.0))
    return {
        "mechanism": "ambiguity",
        "groups": release.n_groups,
        "alpha": alpha,
        "beta": beta,
        "presence_max": float(presence.max()),
        "presence_mean": float(presence.mean()),
        "presence_median": float(np.median(presence)),
        "groups_over_alpha": int(np.count_nonzero(presence > alpha * (1 + 1e-12))),
        "association_max": float(association.max()),
        "associations_over_beta": int(np.count_nonzero(association > beta * (1 + 1e-12))),
        "group_size_min": int(sizes.min()),
        "group_size_mean": float(sizes.mean()),
        "group_size_max": int(sizes.max()),
        "diversity_min": int(diversity.min()),
    }


def tuple_risk(release: AmbiguityRelease, source: Table) -> pa.Table:
    """For every row of the source table: how many groups cover it, its presence probability
    (the largest over the covering groups, Theorem 5.1), the probability that some covering
    group holds it, and its association probability with its own sensitive value (the largest
    over the covering groups that publish that value, Theorem 5.2).

    Rows with a value the release does not know are covered by no group (all zeros).
    """
    columns = [*release.quasi_identifiers, release.sensitive]
    codes, known = codes_in_release(source, release.schema, columns)
    n_groups = release.n_groups
    # Distinct (quasi-identifiers, sensitive) combinations: each is evaluated once.
    combos = np.stack([codes[c] for c in columns], axis=1)
    distinct, inverse = np.unique(combos[known], axis=0, return_inverse=True)
    covering = covering_groups(
        {q: distinct[:, columns.index(q)] for q in release.quasi_identifiers},
        ambiguity_incidence(release))
    presence = release.presence()
    n_cover = np.diff(covering.indptr)
    group_of_entry = covering.indices
    row_of_entry = np.repeat(np.arange(len(distinct)), n_cover)
    presence_max = np.zeros(len(distinct))
    np.maximum.at(presence_max, row_of_entry, presence[group_of_entry])
    log_absent = np.zeros(len(distinct))
    np.add.at(log_absent, row_of_entry, np.log1p(-np.minimum(presence[group_of_entry], 1.0)))
    # Association of the row's own sensitive value in each covering group that publishes it.
    st_groups, st_values, st_counts = release.st
    share = sp.csr_array((st_counts / release.group_sizes()[st_groups],
                          (st_values, st_groups)),
                         shape=(release.schema[release.sensitive].size, n_groups))
    own = share[distinct[:, -1]].multiply(covering)
    association = np.asarray(sp.csr_array(own).max(axis=1).todense()).reshape(-1)

    def expand(values: np.ndarray, dtype: type) -> pa.Array:
        full: np.ndarray = np.zeros(source.n_rows, dtype=dtype)
        full[known] = values[inverse.reshape(-1)]
        return pa.array(full)

    return pa.table({
        "covering_groups": expand(n_cover, np.int64),
        "presence": expand(presence_max, np.float64),
        "presence_any": expand(-np.expm1(log_absent), np.float64),
        "association": expand(association, np.float64),
    })


def ambiguity_incidence(release: AmbiguityRelease) -> dict[str, sp.csr_array]:
    """For every quasi-identifier, which groups list each of its values in their auxiliary
    table AT_i (values x groups, 1 where listed)."""
    incidence = {}
    for q in release.quasi_identifiers:
        groups, values = release.auxiliary[q]
        incidence[q] = sp.csr_array((np.ones(len(groups), dtype=np.int8), (values, groups)),
                                    shape=(release.schema[q].size, release.n_groups))
    return incidence


COVERING_BLOCK = 4096
"""Tuples whose candidate groups are filtered at a time (memory follows the block)."""


def covering_groups(tuples: Mapping[str, np.ndarray],
                    incidence: Mapping[str, sp.csr_array]) -> sp.csr_array:
    """Which groups cover each tuple (tuples x groups, 1 where every value of the tuple is
    listed by the group; Definition 5.1: a group covers a tuple when all its values appear in
    the group's auxiliary tables), from each attribute's incidence (values x groups).

    The groups listing the tuple's value of the attribute with the most values are the
    candidates; each other attribute keeps those that list its value too, looked up by
    (value, group) key. Tuples are taken in blocks, so memory follows a block's candidates
    rather than the (dense) rows of attributes with few values."""
    if not incidence:
        raise ValueError("covering groups need at least one quasi-identifier")
    order = sorted(incidence, key=lambda name: -incidence[name].shape[0])
    first = sp.csr_array(incidence[order[0]])
    n_tuples, n_groups = len(tuples[order[0]]), first.shape[1]
    listed = {}
    for name in order[1:]:
        pairs = sp.csr_array(incidence[name])
        values = np.repeat(np.arange(pairs.shape[0], dtype=np.int64), np.diff(pairs.indptr))
        listed[name] = np.sort(values * n_groups + pairs.indices)
    found_rows, found_groups = [], []
    for start in range(0, n_tuples, COVERING_BLOCK):
        block = np.arange(start, min(start + COVERING_BLOCK, n_tuples))
        candidates = first[np.asarray(tuples[order[0]])[block]]
        rows = np.repeat(block, np.diff(candidates.indptr))
        groups = candidates.indices.astype(np.int64)
        for name, keys in listed.items():
            wanted = np.asarray(tuples[name], dtype=np.int64)[rows] * n_groups + groups
            where = np.minimum(np.searchsorted(keys, wanted), max(len(keys) - 1, 0))
            keep = keys[where] == wanted if len(keys) else np.zeros(len(wanted), dtype=bool)
            rows, groups = rows[keep], groups[keep]
        found_rows.append(rows)
        found_groups.append(groups)
    rows = np.concatenate(found_rows) if found_rows else np.zeros(0, dtype=np.int64)
    indptr = np.zeros(n_tuples + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_tuples), out=indptr[1:])
    groups = np.concatenate(found_groups) if found_groups else np.zeros(0, dtype=np.int64)
    return sp.csr_array((np.ones(len(rows), dtype=np.int8), groups, indptr),
                        shape=(n_tuples, n_groups))


def codes_in_release(source: Table, schema: Schema, columns: Sequence[str]
                     ) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The source's codes re-encoded against the release's domains, and which rows have only
    values the release knows."""
    known = np.ones(source.n_rows, dtype=bool)
    codes = {}
    for name in columns:
        if name not in source.schema:
            raise SchemaError(f"the source has no column {name!r}, which the release "
                              f"publishes")
        index = {value: code for code, value in enumerate(schema[name].domain)}
        lut = np.asarray([index.get(value, -1) for value in source.schema[name].domain],
                         dtype=np.int64)
        mapped = lut[source.codes[name]]
        known &= mapped >= 0
        codes[name] = np.maximum(mapped, 0)
    return codes, known
