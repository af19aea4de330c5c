"""Anatomy's publishing: groups of l distinct sensitive values, published as two tables.

The rows are partitioned into groups of l distinct sensitive values (the same construction as
SPLU-Gen's decoy groups, see `ppdp.mechanisms.grouping`) and published as the quasi-identifier
table QIT (quasi-identifiers, GroupID), rows shuffled, and the sensitive table ST (GroupID,
sensitive value, count). Group ids are assigned at random."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ppdp.mechanisms.anatomy.guarantee import anatomy_guarantee
from ppdp.mechanisms.anatomy.release import AnatomyRelease, check_l
from ppdp.mechanisms.base import GroupMechanism, require_sensitive
from ppdp.mechanisms.grouping import DistinctValueGroups, distinct_value_groups
from ppdp.mechanisms.parameters import Parameter
from ppdp.mechanisms.shuffle import shuffled_positions
from ppdp.plan.resources import Footprint
from ppdp.table.source import SummarySource
from ppdp.table.table import Table

_SHUFFLE_CHUNK = 1 << 16
"""Rows unpacked at a time by ``_shuffled_columns``."""


class Anatomy(GroupMechanism):
    """Anatomy: l-diverse groups published as a QIT and an ST (in memory with ``publish``,
    block by block from a source with ``publish_source``, see `ppdp.blocks`)."""

    name = "anatomy"
    summary = "Anatomy: groups of l distinct sensitive values, published as QIT + ST tables"
    # Measured (`ppdp.plan.resources`): 33.4 and 38.4 bytes a row for 4 and 9 columns (its shuffled
    # quasi-identifier columns are gathered while the groups form).
    footprint = Footprint(per_row=30, per_column=1)
    parameters = (
        Parameter("l", int, "diversity l (>= 2): distinct sensitive values per group"),
    )

    def __init__(self, *, l: int) -> None:  # noqa: E741 - the paper's symbol
        self.l = check_l(l)

    def sensitive_columns(self, data: Table | SummarySource) -> tuple[str, ...]:
        """The one sensitive column, with a declared domain."""
        return require_sensitive(data, "Anatomy", exactly_one=True)

    def publish_block(self, table: Table, rng: np.random.Generator) -> AnatomyRelease:
        """Partition the rows into groups of l distinct sensitive values, then publish the
        QIT (rows shuffled) and the ST (Xiao and Tao 2006, Section 3)."""
        (sensitive,) = self.sensitive_columns(table)
        column = table.schema[sensitive]
        values = table.codes[sensitive]
        n_groups = table.n_rows // self.l
        relabel = rng.permutation(n_groups).astype(np.int32)
        quasi = table.schema.quasi_identifiers
        with ThreadPoolExecutor(max_workers=1) as worker:
            # The QIT's shuffled columns do not depend on the groups: they are gathered on a
            # second core while the groups are formed (numpy releases the GIL in both).
            shuffled = worker.submit(_shuffled_columns, table, quasi, rng)
            groups = distinct_value_groups(values, self.l, domain_size=column.size,
                                           column=sensitive, symbol="l", domain=column.domain)
            st = _sensitive_table(groups, relabel, values.dtype)
            group_ids = groups.group_of_rows(relabel)
            # Intermediates are dropped as soon as they are used, to keep the peak down.
            del groups
            shuffle, qit = shuffled.result()
        qit_groups = np.take(group_ids, shuffle)
        del group_ids, shuffle
        schema = table.schema.select([*quasi, sensitive])
        return AnatomyRelease(schema, {"l": self.l, "n_groups": n_groups}, table.n_rows,
                              qit, qit_groups, st)

    def guarantee(self) -> Any:
        return anatomy_guarantee(l=self.l)


def _shuffled_columns(table: Table, names: Sequence[str], rng: np.random.Generator
                      ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """A random order of the rows, and the named columns in that order.

    The columns' bytes are first packed side by side, so that the shuffle fetches each row from
    memory once instead of once per column (three times faster for Adult's eight one-byte
    quasi-identifiers); the shuffled rows are unpacked chunk by chunk.
    """
    shuffle = shuffled_positions(table.n_rows, rng)
    columns = {name: np.ascontiguousarray(table.codes[name]) for name in names}
    if not columns:
        return shuffle, {}
    ends = np.cumsum([column.itemsize for column in columns.values()])
    packed = np.empty((table.n_rows, int(ends[-1])), dtype=np.uint8)
    for column, end in zip(columns.values(), ends, strict=True):
        packed[:, end - column.itemsize:end] = column.view(np.uint8).reshape(-1, column.itemsize)
    rows = packed.view(np.dtype((np.void, packed.shape[1]))).reshape(-1)
    shuffled = {name: np.empty_like(column) for name, column in columns.items()}
    for start in range(0, table.n_rows, _SHUFFLE_CHUNK):
        chunk = rows[shuffle[start:start + _SHUFFLE_CHUNK]].view(np.uint8).reshape(
            -1, packed.shape[1])
        for (name, column), end in zip(columns.items(), ends, strict=True):
            shuffled[name][start:start + len(chunk)] = (
                chunk[:, end - column.itemsize:end].view(column.dtype)[:, 0])
    return shuffle, shuffled


def _sensitive_table(groups: DistinctValueGroups, relabel: np.ndarray, dtype: np.dtype
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ST straight from the partition, in group-id order (group g is labelled
    ``relabel[g]``): a group's values are distinct, so each (group, value) line has count 1
    (the format and estimator take any counts)."""
    n_groups = groups.n_groups
    # The inverse permutation: by_label[i] is the group labelled i.
    by_label = np.empty_like(relabel)
    by_label[relabel] = np.arange(n_groups, dtype=relabel.dtype)
    sizes = groups.sizes[by_label]
    filled = np.arange(groups.values.shape[1]) < sizes[:, None]
    return (np.repeat(np.arange(n_groups, dtype=np.int32), sizes),
            groups.values[by_label][filled].astype(dtype),
            np.ones(groups.n_rows, dtype=np.uint8))
