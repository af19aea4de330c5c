"""Where publishing's CPU goes: each stage of sdr and splu on the memory engine, timed apart.

    python benchmarks/profile_stages.py adult-1e7.parquet [--mechanism sdr|splu] [--workers 1]

The stages are the memory engine's, called one by one through the same functions it calls:
reading the file (`ppdp.io.read_table`: each column decoded once into its codes where
`ppdp.io.parquet_codes` can, as for this file, else a domain pass and an encoding pass), then

- sdr: the plan (the partition of Section 5, from the sensitive histogram), the summary passes
  (the quota assignment of rows to sub-tables), the kernel (each row's sub-table and perturbed
  value: keyed draws and table lookups), the keyed ranks, their order, the gather of every
  column into release order;
- splu: the publish (the blocks' quota passes and exchange, and each block's decoy groups,
  draws and shuffle);

then, for both, the Arrow table of the published rows, the Parquet files (encoding and
compression of every part), and the counts of the distinct rows (``row_counts.parquet``). These
last three are timed on the whole table at once; a release's ``save`` makes, writes and counts
one part at a time on the workers (`ppdp.release.write.write_counted_parts`), so that a part
reuses the memory of the one before.

Each stage prints its CPU seconds (user + system of the whole process, so the threads of Arrow
and Polars count), its wall seconds and the page faults it took (new memory the kernel had to
clear), scaled to 10^7 rows. Start-up (imports) is printed apart:
it is paid once, whatever the rows. ``--workers`` is the engine's (default 1: the CPU of one
core's work; Polars and Arrow still start threads of their own). The allocator is set up as a
command sets it up.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

STARTED = time.process_time(), time.perf_counter()


def kernel(plan: Any, codes: dict[str, Any]) -> dict[str, Any]:
    """The kernel on the rows as the memory engine runs it: in chunks on the workers where
    the engine has workers (`ppdp.workers`), else on the whole table."""
    import numpy as np

    try:
        from ppdp.workers import in_chunks
    except ImportError:  # before the engines had workers
        return dict(plan.kernel(codes, 0))
    chunks = in_chunks(lambda start, rows: plan.kernel(rows, start), 0, codes)
    return {name: np.concatenate([chunk[name] for chunk in chunks]) for name in chunks[0]}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", help="a Parquet file of Adult-shaped rows")
    parser.add_argument("--mechanism", choices=["sdr", "splu"], default="sdr")
    parser.add_argument("--workers", default="1")
    args = parser.parse_args(argv)
    os.environ["PPDP_WORKERS"] = args.workers
    os.environ.setdefault("POLARS_MAX_THREADS", args.workers)
    try:  # the allocator's setting of a command (`ppdp.cli._memory`), where the code has it
        from ppdp.cli._memory import reuse_freed_memory
    except ImportError:
        pass
    else:
        reuse_freed_memory()

    from importlib import resources

    from pyarrow.parquet import ParquetFile

    import ppdp.datasets
    from ppdp.data.domains import read_domains_file
    from ppdp.io.read import read_table
    from ppdp.mechanisms import get_mechanism
    from ppdp.plan.keyed import make_key
    from ppdp.plan.order import in_release_order, rank_order, row_ranks
    from ppdp.plan.rows import run_passes
    from ppdp.query.row_counts import count_rows
    from ppdp.release.arrow import rows_to_arrow
    from ppdp.release.write import write_parts
    from ppdp.table.source import TableSource

    cpu0, wall0 = STARTED
    print(f"{'start-up (imports)':<34} CPU {time.process_time() - cpu0:6.2f} s   "
          f"wall {time.perf_counter() - wall0:6.2f} s   (once)")
    totals = [0.0, 0.0]
    rows = [1]

    def stage(label: str, work: Callable[..., Any], *arguments: Any) -> Any:
        cpu, wall = time.process_time(), time.perf_counter()
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        result = work(*arguments)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
        totals[0] += cpu
        totals[1] += wall
        scale = 1e7 / rows[0]
        print(f"{label:<34} CPU {cpu * scale:6.2f} s   wall {wall * scale:6.2f} s   "
              f"page faults {faults * scale:9,.0f}   per 10^7 rows", flush=True)
        return result

    with resources.as_file(resources.files(ppdp.datasets) / "adult.domains.json") as path:
        domains = read_domains_file(path)
    rows[0] = ParquetFile(args.input).metadata.num_rows
    table = stage("read (domain and encoding passes)", lambda: read_table(
        args.input, sensitive=["occupation"], domains=domains))
    key = make_key(1)
    if args.mechanism == "sdr":
        mechanism = get_mechanism("sdr").from_params({"rho1": 0.077, "rho2": 0.2})
        source = TableSource(table)
        plan = stage("plan (the partition)", mechanism.row_plan, source, key)
        stage("summary passes (quotas)", run_passes, plan.passes, source, table.n_rows)
        codes = {name: table.codes[name] for name in plan.input_columns}
        published = stage("kernel (sub-tables, perturbation)", kernel, plan, codes)
        ranks = stage("keyed ranks", row_ranks, key, 0, table.n_rows)
        order = stage("release order (sort)", rank_order, ranks)
        ordered = stage("gather into release order", in_release_order, published, ranks,
                        None, order)
        extra = {name: ordered[name] for name in plan.extra}
        arrow = stage("Arrow table of the rows", rows_to_arrow, plan.schema,
                      {name: ordered[name] for name in plan.schema.names}, extra or None)
    else:
        mechanism = get_mechanism("splu").from_params({"gamma": 5})
        release = stage("publish (blocks, groups, draws)",
                        lambda: mechanism.publish(table, random_state=1))
        arrow = stage("Arrow table of the rows", lambda: release._tables()["rows"])
    staging = Path(tempfile.mkdtemp(prefix="ppdp-stages-"))
    try:
        stage("Parquet files (encode, compress)", write_parts, staging, "rows", arrow, {})
    finally:
        shutil.rmtree(staging)
    stage("distinct rows counted", count_rows, arrow)
    scale = 1e7 / rows[0]
    print(f"{'all stages':<34} CPU {totals[0] * scale:6.2f} s   wall {totals[1] * scale:6.2f} s"
          f"   per 10^7 rows ({rows[0]:,} rows)")


if __name__ == "__main__":
    main()
