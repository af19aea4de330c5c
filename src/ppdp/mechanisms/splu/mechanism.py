"""SPLU-Gen's publishing (Section 3.1): decoy groups and a value drawn from each row's group.

The rows are partitioned, per sensitive attribute, into decoy groups of gamma rows holding gamma
distinct values (deterministically, see `ppdp.mechanisms.grouping`); each row's published value
is drawn uniformly from its group's values, so it keeps its own value with p = 1/gamma and takes
each decoy with q = 1/gamma. Non-sensitive values are published as they are, the rows are
shuffled, and only gamma is published with them: never the decoy groups."""

from __future__ import annotations

from typing import Any

import numpy as np

from ppdp.mechanisms.base import GroupMechanism, require_sensitive
from ppdp.mechanisms.grouping import DistinctValueGroups, distinct_value_groups
from ppdp.mechanisms.parameters import Parameter
from ppdp.mechanisms.shuffle import publish_rows
from ppdp.mechanisms.splu.guarantee import splu_guarantee
from ppdp.mechanisms.splu.release import SpluRelease, check_gamma
from ppdp.plan.resources import Footprint
from ppdp.table.source import SummarySource
from ppdp.table.table import Table

_CHUNK = 1 << 20


class SPLUGen(GroupMechanism):
    """SPLU-Gen (Section 3): decoy-group randomization of the sensitive attributes.

    ``publish`` randomizes a table in memory; ``publish_source`` a source of any size, block by
    block (`ppdp.blocks`): decoy groups are formed inside each block.
    """

    name = "splu"
    summary = "SPLU-Gen: each sensitive value redrawn from a hidden decoy group of gamma values"
    # Measured (`ppdp.plan.resources`): 23.7 bytes a row for 4 and for 9 columns.
    footprint = Footprint(per_row=25, per_column=1)
    parameters = (
        Parameter("gamma", int, "decoy group size gamma (>= 2); p = q = 1/gamma (Section 3.1)"),
    )
    # Defaults as in the paper's Example 2.
    guarantee_parameters = (
        Parameter("epsilon", float, "relative error epsilon", default=0.3),
        Parameter("a", int, "largest protected count a", default=3),
        Parameter("T_E", float, "utility error probability T_E (gives the threshold T_f)",
                  default=None),
    )

    def __init__(self, *, gamma: int) -> None:
        self.gamma = check_gamma(gamma)

    def sensitive_columns(self, data: Table | SummarySource) -> tuple[str, ...]:
        """The sensitive columns (one or more), with declared domains."""
        return require_sensitive(data, "SPLU-Gen")

    def publish_block(self, table: Table, rng: np.random.Generator) -> SpluRelease:
        """Randomize every sensitive column through its decoy groups, then shuffle the rows
        (Section 3.1)."""
        self.sensitive_columns(table)

        def redraw(name: str, values: np.ndarray) -> np.ndarray:
            column = table.schema[name]
            groups = distinct_value_groups(values, self.gamma, domain_size=column.size,
                                           column=name, symbol="gamma", domain=column.domain)
            return draw_within_groups(values, groups, rng)

        schema, codes = publish_rows(table, rng, redraw)
        return SpluRelease(schema, {"gamma": self.gamma}, table.n_rows, codes)

    def guarantee(self, *, epsilon: float = 0.3, a: int = 3, T_E: float | None = None) -> Any:
        """Lemma 1 and Theorem 4 for this gamma (defaults: the paper's Example 2)."""
        return splu_guarantee(gamma=self.gamma, epsilon=epsilon, a=a, T_E=T_E)


def draw_within_groups(values: np.ndarray, groups: DistinctValueGroups,
                       rng: np.random.Generator) -> np.ndarray:
    """Each row's new value drawn uniformly from its group's values (Section 3.1, Step 3).

    Works through the groups in chunks so that temporaries stay small at 10^7 rows.
    """
    members, held, sizes = groups.members, groups.values, groups.sizes
    drawn = np.empty_like(values)
    step = max(1, _CHUNK // members.shape[1])
    for start in range(0, groups.n_groups, step):
        block = slice(start, start + step)
        pick = (rng.random(members[block].shape) * sizes[block, None]).astype(np.int64)
        source = np.take_along_axis(held[block], pick, axis=1)
        filled = members[block] >= 0
        drawn[members[block][filled]] = source[filled]
    return drawn
