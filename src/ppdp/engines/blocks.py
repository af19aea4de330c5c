"""What the streaming and Spark engines share to publish a group mechanism block by block
(`ppdp.plan.blocks`): one block published in memory, its tables written as its parts of the
release."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ppdp.errors import InfeasibleError
from ppdp.mechanisms.base import GroupMechanism
from ppdp.plan.blocks import offset_groups
from ppdp.query.row_counts import RowCounter
from ppdp.release.base import Release
from ppdp.release.write import write_parquet
from ppdp.table.table import Table

if TYPE_CHECKING:
    pass


def publish_one_block(mechanism: GroupMechanism, table: Table, rng: np.random.Generator,
                      block: int, n_blocks: int) -> Release:
    """Publish block ``block`` (of ``n_blocks``) in memory with its generator; an infeasible
    block is named, with its size."""
    try:
        return mechanism.publish_block(table, rng)
    except InfeasibleError as exc:
        raise InfeasibleError(f"block {block + 1} of {n_blocks} ({table.n_rows} rows, each "
                              f"value in the table's proportion): {exc}") from exc


def counts_rows(release: Release, stem: str) -> bool:
    """Whether the distinct rows of a published table are counted (`ppdp.row_counts`): those
    of the rows that a loaded release counts from."""
    return stem == "rows" and stem in release.scanned


def write_part(path: Path, table: pa.Table, offset: int, counted: bool) -> tuple[str, Any]:
    """Write a block's published table as its part of the release, its group ids (if any)
    moved past the ``offset`` groups of the blocks before it: the part's digest and, when
    ``counted``, the counts of its distinct rows (`RowCounter.count_part`), else None."""
    table = offset_groups(table, offset)
    digest = write_parquet(path, table)
    return digest, RowCounter().count_part(table) if counted else None
