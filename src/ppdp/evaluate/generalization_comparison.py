"""Ambiguity against generalization (Mondrian): the ambiguity paper's Section 8.3.

For each beta, ambiguity is published with (alpha, beta) and Mondrian at matched privacy:
frequency l-diversity with l = ceil(1/beta) (and k = l), so that no sensitive value exceeds a
share beta of a class, c/|G| <= beta, as the paper's baseline (Xiao and Tao's generalization,
with l-diversity bounding every value's frequency by 1/l) and as ambiguity's beta-association.
Mondrian with distinct l-diversity (at least ceil(1/beta) distinct values a class, Theorem 7.2's
"comparable privacy") is kept beside it, marked as not matched: on Adult at beta = 0.2 its
classes reach c/|G| = 0.83. Every row carries the largest association and presence measured on
the release. A third scheme is the one of Theorem 6.1's proof: ambiguity's tables built on
Mondrian's own (matched) groups. All answer the same pools: by default the range pools of
``workloads.range_pool`` (``comparison_pools``): quasi-identifier selectivity near 1 %, 5 % and
10 % (Figure 8) and conditions on 3, 4 and 5 attributes (Figure 9); ``paper_workloads`` gives
Section 8.1's workloads in their three forms (range, IN-list, GROUP BY) for ``pools=``. Every
point is the mean over several publications with its standard deviation. Theorem 6.1 says
ambiguity's error is the lower.

A beta that the data cannot meet (too few distinct sensitive values, or one value more
frequent than Algorithm 2 allows) is reported as infeasible with the reason, for both
mechanisms, rather than skipped silently.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ppdp.data.hierarchy import Hierarchy
from ppdp.errors import InfeasibleError
from ppdp.evaluate.metrics import relative_errors
from ppdp.evaluate.workloads import (
    AMBIGUITY_SELECTIVITIES,
    QueryPool,
    group_by_pool,
    in_list_pool,
    ordered_range_pool,
    range_columns,
    range_pool,
)
from ppdp.mechanisms.ambiguity.mechanism import Ambiguity, scheme_from_groups
from ppdp.mechanisms.ambiguity.release import AmbiguityRelease
from ppdp.mechanisms.base import Mechanism
from ppdp.mechanisms.mondrian.mechanism import Mondrian
from ppdp.mechanisms.mondrian.release import MondrianRelease
from ppdp.mechanisms.presence import association_group_size
from ppdp.randomness import RandomState, make_rng
from ppdp.table.table import Table

__all__ = ["ComparisonRow", "compare_with_generalization", "comparison_pools",
           "paper_workloads"]

PAPER_BETAS = (0.1, 0.05, 0.025)
"""The betas of the paper's Figure 8."""

ATTRIBUTE_COUNTS = (3, 4, 5)
"""Numbers of attributes in the conditions of the paper's Figure 9."""

ATTRIBUTE_POOL_SELECTIVITY = 0.05


@dataclass(frozen=True)
class ComparisonRow:
    """One mechanism on one pool at one beta: mean and spread of the average relative error."""

    beta: float
    l: int  # noqa: E741 - the usual symbol
    mechanism: str
    pool: str
    queries: int
    error_mean: float
    error_std: float
    publications: int
    presence_max: float = float("nan")
    """The largest presence probability of a group or class (Theorem 5.1)."""
    association_max: float = float("nan")
    """The largest association c/|G| of a sensitive value in a group or class (Theorem 5.2)."""
    group_size_mean: float = float("nan")
    """The mean size of a group or class (Section 8.3 explains errors by it)."""
    publish_s: float = float("nan")
    """The median seconds of one publication (Section 8.2, Figures 6-7: run time)."""
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def comparison_pools(table: Table, *, size: int = 300, random_state: RandomState = None
                     ) -> list[QueryPool]:
    """The pools of Figures 8 (selectivity 1/5/10 %, 1-3 attributes) and 9 (3/4/5
    attributes at 5 %), with true counts > 0 only."""
    rng = make_rng(random_state)
    pools = [range_pool(table, selectivity=s, size=size, random_state=rng)
             for s in AMBIGUITY_SELECTIVITIES]
    most = len(table.schema.quasi_identifiers)
    pools += [range_pool(table, selectivity=ATTRIBUTE_POOL_SELECTIVITY, attributes=(k,),
                         size=size, random_state=rng)
              for k in ATTRIBUTE_COUNTS if k <= most]
    return [_positive(pool) for pool in pools]


def paper_workloads(table: Table, *, size: int = 300, random_state: RandomState = None
                    ) -> list[QueryPool]:
    """Section 8.1's workloads in three forms, true counts > 0 only: range, IN-list and
    GROUP BY pools at selectivity 1/5/10 % on 1-3 attributes, then range and IN-list pools
    on exactly 3, 4 and 5 attributes at 5 % (Figure 9 (1)).

    Range conditions need ordered columns (`range_columns`): their pools keep to the numbers
    of attributes the table has (Adult has one ordered quasi-identifier, age, so its range
    pools are on age alone and it has none on 3-5 attributes). GROUP BY pools have no 3-5
    attribute form: grouping by 3 or more attributes makes cells far below 5 %.
    """
    rng = make_rng(random_state)
    ordered = len(range_columns(table))
    quasi = len(table.schema.quasi_identifiers)
    few = tuple(k for k in (1, 2, 3) if k <= ordered)
    pools = []
    for selectivity in AMBIGUITY_SELECTIVITIES:
        if few:
            pools.append(ordered_range_pool(table, selectivity=selectivity, attributes=few,
                                            size=size, random_state=rng))
        pools.append(in_list_pool(table, selectivity=selectivity, size=size,
                                  random_state=rng))
        pools.append(group_by_pool(table, selectivity=selectivity, size=size,
                                   random_state=rng))
    for k in ATTRIBUTE_COUNTS:
        if k <= ordered:
            pools.append(ordered_range_pool(table, selectivity=ATTRIBUTE_POOL_SELECTIVITY,
                                            attributes=(k,), size=size, random_state=rng))
        if k <= quasi:
            pools.append(in_list_pool(table, selectivity=ATTRIBUTE_POOL_SELECTIVITY,
                                      attributes=(k,), size=size, random_state=rng))
    return [_positive(pool) for pool in pools]


def _positive(pool: QueryPool) -> QueryPool:
    keep = pool.truth > 0
    return QueryPool(pool.name, tuple(q for q, k in zip(pool.queries, keep, strict=True) if k),
                     pool.truth[keep])


def compare_with_generalization(
        table: Table, *, betas: Sequence[float] = PAPER_BETAS, alpha: float = 0.1,
        hierarchies: Mapping[str, Hierarchy] | None = None, publications: int = 3,
        pools: Sequence[QueryPool] | None = None, size: int = 300,
        random_state: RandomState = None,
        progress: Callable[[str], None] | None = None) -> list[ComparisonRow]:
    """Average relative errors of ambiguity and Mondrian (l = ceil(1/beta)) on the pools."""
    rng = make_rng(random_state)
    if pools is None:
        pools = comparison_pools(table, size=size, random_state=rng)
    rows: list[ComparisonRow] = []
    for beta in betas:
        l = association_group_size(beta)  # noqa: E741
        mondrian = Mondrian(k=l, l=l, diversity="frequency", hierarchies=hierarchies)
        mechanisms: list[tuple[str, Mechanism | _SchemeOfGroups]] = [
            ("ambiguity", Ambiguity(alpha=alpha, beta=beta)),
            ("mondrian", mondrian),
            ("ambiguity on mondrian groups", _SchemeOfGroups(mondrian)),
            ("mondrian, distinct l (not matched)",
             Mondrian(k=l, l=l, hierarchies=hierarchies)),
        ]
        for name, mechanism in mechanisms:
            if progress is not None:
                progress(f"beta={beta:g}: {name}")
            errors: list[list[float]] = [[] for _ in pools]
            presence: list[float] = []
            association: list[float] = []
            sizes: list[float] = []
            seconds: list[float] = []
            note = ""
            for _ in range(publications):
                start = time.perf_counter()
                try:
                    release = mechanism.publish(table, random_state=rng)
                except InfeasibleError as exc:
                    note = f"infeasible: {exc}"
                    break
                seconds.append(time.perf_counter() - start)
                if isinstance(release, AmbiguityRelease | MondrianRelease):
                    presence.append(float(release.presence().max()))
                    association.append(float(release.association().max()))
                    sizes.append(float(np.mean(release.group_sizes()
                                               if isinstance(release, AmbiguityRelease)
                                               else release.class_sizes())))
                for index, pool in enumerate(pools):
                    estimates, _ = release.count_all(pool.queries)
                    errors[index].append(float(relative_errors(pool.truth, estimates).mean()))
            for pool, values in zip(pools, errors, strict=True):
                rows.append(ComparisonRow(
                    beta=beta, l=l, mechanism=name, pool=pool.name, queries=len(pool),
                    error_mean=float(np.mean(values)) if values else float("nan"),
                    error_std=float(np.std(values, ddof=1)) if len(values) > 1 else float("nan"),
                    publications=len(values),
                    presence_max=max(presence) if presence else float("nan"),
                    association_max=max(association) if association else float("nan"),
                    group_size_mean=float(np.mean(sizes)) if sizes else float("nan"),
                    publish_s=float(np.median(seconds)) if seconds else float("nan"),
                    note=note))
    return rows


class _SchemeOfGroups:
    """Theorem 6.1's construction: ambiguity tables over a generalization's groups."""

    def __init__(self, mondrian: Mondrian) -> None:
        self.mondrian = mondrian

    def publish(self, table: Table, *, random_state: RandomState = None) -> AmbiguityRelease:
        _, groups = np.unique(self.mondrian.partition(table), return_inverse=True)
        return scheme_from_groups(table, groups.reshape(-1), int(groups.max()) + 1,
                                  make_rng(random_state), {"groups_of": "mondrian"})
