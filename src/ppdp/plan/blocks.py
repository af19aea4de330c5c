"""Group mechanisms (SPLU-Gen, Anatomy, ambiguity) published block by block.

Their guarantees hold per group of rows (gamma or l distinct sensitive values in a group,
presence <= alpha, association <= beta), so the rows may be cut into blocks, each published in
memory by the mechanism's own code: every group of every block meets them exactly (DESIGN,
"Plans and engines", step 3). The plan:

1. aggregate: the number of rows N and the histogram of the sensitive values (of their
   combinations when there are several sensitive columns);
2. decide: ``B = ceil(N / BLOCK_ROWS)`` blocks (`block_count`) and exact proportional quotas,
   block b taking ``n_v // B`` rows of value v or one more (`block_quotas`); which rows go to
   which block is keyed randomness (`ppdp.plan.quotas.QuotaAssignment` on stream ``"block"``),
   the same for any batching;
3. exchange: each engine moves each row to its block, and publishes each block with the
   mechanism's ``publish_block`` and the generator ``KeyedStream(key, name).generator(b)``
   (`block_generator`), as part b of every published table;
4. write: ``release.json`` last; the directory is committed atomically.

Why proportional quotas. A mechanism feasible for the table is then feasible for every block
(up to a row of rounding), and SPLU-Gen's estimator, which models the decoy layout from the
release-wide published frequencies and gamma, meets in every block the shares f_v / (N / gamma)
it assumes (its transition depends on those shares only, ``decoy_transition``). The remainders
``n_v mod B`` are dealt round-robin across the values, so block sizes differ by at most one row
and say nothing but N; block b's counts are a function of the table's histogram.

Merging. Group ids of block b are offset by the groups of the blocks before it (column
``GroupID``, `offset_groups`) and the number of groups (``n_groups``) is their sum
(`merge_parameters`); every other parameter is the mechanism's own, the same in each block. The
estimators (Anatomy's and ambiguity's sums over groups, SPLU-Gen's per-row transition) answer
from the concatenated parts as from one release.

Every engine cuts the same blocks and publishes them on its workers (the memory engine too,
`ppdp.engines.memory.blocks`): the same key gives the same files on every engine and for every
worker count. One block (N <= BLOCK_ROWS) is the whole table published by ``publish_block``."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ppdp.plan.keyed import KeyedStream
from ppdp.plan.quotas import QuotaAssignment
from ppdp.plan.rows import Pass
from ppdp.table.source import SummarySource

if TYPE_CHECKING:
    pass


BLOCK_ROWS = 1 << 20
"""Rows per block (at most): each block is published in memory on its own, a block a worker
(`ppdp.workers`). About 10^6 rows: 10^8 rows make 96 blocks, enough for every core of a large
server, and a block is still large enough that proportional quotas keep every value's share
to within a row. The count of blocks depends on the rows alone, never on the workers, so that
every worker count publishes the same release."""


def block_count(n_rows: int) -> int:
    """How many blocks ``n_rows`` rows are published in: ``ceil(N / BLOCK_ROWS)``."""
    return max(1, math.ceil(n_rows / BLOCK_ROWS))


GROUP_COLUMN = "GroupID"
"""The column of a published table that numbers its groups."""


GROUP_COUNT = "n_groups"
"""The release parameter that counts the groups."""


Labels = Callable[[int, Mapping[str, np.ndarray]], np.ndarray]
"""The block of each row of a batch, given the batch's first row id and codes."""


def block_generator(key: int, mechanism: str, block: int) -> np.random.Generator:
    """The generator of one block's publish: its own stream per mechanism, indexed by block."""
    return KeyedStream(key, mechanism).generator(block)


def block_quotas(counts: np.ndarray, n_blocks: int) -> np.ndarray:
    """``quotas[b, v]``: rows of value v in block b, ``counts[v] // n_blocks`` or one more.

    Value v's ``counts[v] % n_blocks`` extra rows go to consecutive blocks starting where the
    previous value's stopped, so that block sizes differ by at most one row.
    """
    counts = np.asarray(counts, dtype=np.int64)
    base, extra = np.divmod(counts, n_blocks)
    first = (np.cumsum(extra) - extra) % n_blocks
    after_first = (np.arange(n_blocks)[:, None] - first[None, :]) % n_blocks
    return base[None, :] + (after_first < extra[None, :])


def batch_length(codes: Mapping[str, np.ndarray]) -> int:
    return len(next(iter(codes.values())))


def block_labels(source: SummarySource, sensitive: Sequence[str], key: int, n_blocks: int,
                 run: Callable[[Sequence[Pass]], None]) -> Labels:
    """The function giving each row of a batch its block: after ``run`` has run the quota
    assignment's passes, or block 0 for every row when there is one block (no pass needed)."""
    if n_blocks == 1:
        return _first_block
    shape = tuple(source.schema[c].size for c in sensitive)

    def combination(codes: Mapping[str, np.ndarray]) -> np.ndarray:
        return np.ravel_multi_index(tuple(codes[c] for c in sensitive), shape)

    quotas = block_quotas(np.asarray(source.histogram(sensitive)).reshape(-1), n_blocks)
    assignment = QuotaAssignment(KeyedStream(key, "block"), quotas, combination, sensitive)
    run(assignment.passes)
    return assignment.labels


def _first_block(start: int, codes: Mapping[str, np.ndarray]) -> np.ndarray:
    return np.zeros(batch_length(codes), dtype=np.uint8)


def offset_groups(table: pa.Table, offset: int) -> pa.Table:
    """A published table with its group ids (if any) moved past the earlier blocks' groups."""
    if GROUP_COLUMN not in table.column_names or offset == 0:
        return table
    index = table.column_names.index(GROUP_COLUMN)
    column = table.column(index)
    # Checked: ids that no longer fit their type are an error, never a silent wrap.
    moved = pc.add_checked(column, pa.scalar(offset, type=column.type))
    return table.set_column(index, GROUP_COLUMN, moved)


def merge_parameters(merged: dict[str, Any], block: Mapping[str, Any]) -> int:
    """Fold one block's parameters into the release's; the block's number of groups.

    Group counts add up; every other parameter is the mechanism's, the same in each block.
    """
    for name, value in block.items():
        if name == GROUP_COUNT:
            merged[name] = merged.get(name, 0) + value
        else:
            assert merged.setdefault(name, value) == value, f"blocks disagree on {name}"
    return int(block.get(GROUP_COUNT, 0))
