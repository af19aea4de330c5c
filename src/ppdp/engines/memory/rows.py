"""The memory engine's executor of row plans: the whole table as one batch (the reference
every other engine's files are checked against)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ppdp.plan.order import in_release_order, part_count, part_of, rank_order, row_ranks
from ppdp.plan.rows import PublishedRows, RowPlan, run_passes
from ppdp.table.source import Source
from ppdp.workers import in_chunks


def execute_in_memory(plan: RowPlan, source: Source, key: int) -> PublishedRows:
    """Run a row plan on a source held in memory, as one batch (the reference executor)."""
    n_rows = source.n_rows
    whole = max(n_rows, 1)
    run_passes(plan.passes, source, whole)
    _, codes = next(iter(source.batches(whole, plan.input_columns)), (0, {}))
    ranks = row_ranks(key, 0, n_rows)
    # The release order, found while the kernel runs.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ppdp-order") as pool:
        order = pool.submit(rank_order, ranks)
        chunks = in_chunks(lambda start, rows: plan.kernel(rows, start), 0, codes)
        published = chunks[0] if len(chunks) == 1 else {
            name: np.concatenate([chunk[name] for chunk in chunks]) for name in chunks[0]}
        parts = part_count(n_rows)
        part_rows = np.bincount(part_of(ranks, parts), minlength=parts)
        return PublishedRows(in_release_order(published, ranks, order=order.result()),
                             tuple(int(r) for r in part_rows))
