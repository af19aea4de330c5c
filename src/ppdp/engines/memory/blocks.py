"""Group mechanisms on the memory engine: a table of more than `ppdp.plan.blocks.BLOCK_ROWS`
rows cut into the same blocks as every other engine, the blocks published on the workers.

The rows are dealt to their blocks by the keyed quotas of `ppdp.plan.blocks.block_labels`
(two passes over the codes in memory), each block's rows taken in row order, as the streaming
engine reads them back from its spill files; each block is published by the mechanism's
``publish_block`` with its own generator, and the blocks' releases are merged into one whose
tables are saved in one part per block, the files the streaming engine writes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ppdp.data.schema import Role
from ppdp.engines.blocks import publish_one_block
from ppdp.mechanisms.base import GroupMechanism
from ppdp.plan.blocks import block_generator, block_labels, merge_parameters
from ppdp.plan.rows import run_passes
from ppdp.release.base import Release
from ppdp.table.source import TableSource
from ppdp.table.table import Table
from ppdp.workers import in_chunks, run_all


def publish_in_blocks(mechanism: GroupMechanism, table: Table, key: int,
                      n_blocks: int) -> Release:
    """Publish a table in ``n_blocks`` blocks on the workers, merged into one release."""
    source = TableSource(table)
    sensitive = mechanism.sensitive_columns(table)
    label = block_labels(source, sensitive, key, n_blocks,
                         lambda passes: run_passes(passes, source, max(table.n_rows, 1)))
    labels = np.concatenate(in_chunks(label, 0, {c: table.codes[c] for c in sensitive}))
    # Each block's rows in row order: a stable sort of the labels (a radix sort of small
    # integers).
    order = np.argsort(labels, kind="stable")
    ends = np.cumsum(np.bincount(labels, minlength=n_blocks))
    names = [c.name for c in table.schema.columns if c.role != Role.IGNORED]
    schema = table.schema.select(names)

    def publish(block: int) -> Release:
        rows = order[(ends[block - 1] if block else 0):ends[block]]
        part = Table(schema, {name: table.codes[name][rows] for name in names}, name=table.name)
        return publish_one_block(mechanism, part, block_generator(key, mechanism.name, block),
                                 block, n_blocks)

    return merge_blocks(run_all(publish, list(range(n_blocks))))


def merge_blocks(releases: Sequence[Release]) -> Release:
    """The blocks' releases as one (`Release._joined`), their parameters merged
    (`ppdp.plan.blocks.merge_parameters`): the release a loader builds from the streaming
    engine's files, saved in the same parts."""
    parameters: dict[str, object] = {}
    for release in releases:
        merge_parameters(parameters, release.parameters)
    return type(releases[0])._joined(releases, parameters)
