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

from ppdp.mechanisms.ambiguity import AmbiguityRelease
from ppdp.release import Release
from ppdp.table import Schema, Table

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
        full = np.zeros(source.n_rows, dtype=dtype)
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


def covering_groups(tuples: Mapping[str, np.ndarray],
                    incidence: Mapping[str, sp.csr_array]) -> sp.csr_array:
    """Which groups cover each tuple (tuples x groups, 1 where every value of the tuple is
    listed by the group): the product of the rows of each attribute's incidence (values x
    groups) at the tuple's values (Definition 5.1: a group covers a tuple when all its values
    appear in the group's auxiliary tables)."""
    covering: sp.csr_array | None = None
    # Most distinct values first: their rows of the incidence are the sparsest.
    for name in sorted(incidence, key=lambda name: -incidence[name].shape[0]):
        rows = incidence[name][tuples[name]]
        covering = rows if covering is None else covering.multiply(rows)
    if covering is None:
        raise ValueError("covering groups need at least one quasi-identifier")
    covering = sp.csr_array(covering)
    covering.eliminate_zeros()
    return covering


def codes_in_release(source: Table, schema: Schema, columns: Sequence[str]
                     ) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The source's codes re-encoded against the release's domains, and which rows have only
    values the release knows."""
    known = np.ones(source.n_rows, dtype=bool)
    codes = {}
    for name in columns:
        if name not in source.schema:
            raise ValueError(f"the source has no column {name!r}, which the release publishes")
        index = {value: code for code, value in enumerate(schema[name].domain)}
        lut = np.asarray([index.get(value, -1) for value in source.schema[name].domain],
                         dtype=np.int64)
        mapped = lut[source.codes[name]]
        known &= mapped >= 0
        codes[name] = np.maximum(mapped, 0)
    return codes, known
