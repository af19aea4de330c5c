"""The memory engine, the reference: a Table held in memory published as one batch, and a saved
release read whole into memory to count from."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from ppdp.datasets import NAMES as DATASETS
from ppdp.datasets import load as load_dataset
from ppdp.engines.memory.blocks import publish_in_blocks
from ppdp.engines.memory.rows import execute_in_memory
from ppdp.io.read import is_data_frame, read_table
from ppdp.mechanisms.alphabeta.views import ViewSequence
from ppdp.mechanisms.base import GroupMechanism, RowMechanism, StepsMechanism
from ppdp.plan.blocks import block_count, block_generator
from ppdp.plan.engine import ScannedFiles
from ppdp.plan.keyed import make_key
from ppdp.randomness import RandomState
from ppdp.release.base import Release
from ppdp.table.source import TableSource
from ppdp.table.table import Table


class InMemoryViews(ViewSequence):
    """Alpha-beta views of a table in memory: ``publish_to`` draws the view in memory and
    saves it (the streaming `ViewSequence.publish_to` writes the same files batch by
    batch)."""

    def publish_to(self, directory: str | os.PathLike[str], *,
                   random_state: RandomState = None, batch_rows: int | None = None,
                   overwrite: bool = False, progress: Any = None,
                   before_commit: Callable[[], object] | None = None) -> Path:
        return self.publish(random_state=random_state).save(
            directory, overwrite=overwrite, before_commit=before_commit)


class MemoryEngine:
    """Publishes a Table in memory (each plan as one batch) and counts a saved release from its
    tables read into memory."""

    name = "memory"
    batched = False
    reads_snapshots = True  # every table read whole on loading, from the files opened

    def takes(self, data: object) -> bool:
        """A Table, or a data frame in memory (pandas, polars, Arrow) that `open` reads."""
        return isinstance(data, Table) or is_data_frame(data)

    def read_options(self, source: str | os.PathLike[str], **options: Any) -> dict[str, Any]:
        """A file, or a bundled dataset by name where no file has that name; the table is
        read whole, so ``batch_rows`` does not apply."""
        if not Path(source).exists() and not is_dataset_name(source):
            raise FileNotFoundError(f"{str(source)!r} is neither a file nor a bundled dataset; "
                                    f"bundled datasets: {', '.join(DATASETS)}")
        options.pop("batch_rows", None)
        return options

    def command(self) -> AbstractContextManager[str | None]:
        """Nothing to hold: the work runs in this process."""
        return contextlib.nullcontext()

    def open(self, data: Any, **options: Any) -> Table:
        """A Table: ``data`` itself, a bundled dataset by name where no file has that name
        (`open_dataset`), or a file or data frame read whole with `ppdp.io.read_table` and
        ``options``."""
        if isinstance(data, Table):
            if options:
                raise TypeError(f"options {sorted(options)} apply to data read into a table, "
                                f"not to a Table")
            return data
        if is_dataset_name(data):
            return open_dataset(data, **options)
        return read_table(data, **options)

    def publish_rows(self, mechanism: RowMechanism, data: Any, *,
                     random_state: RandomState = None, **options: Any) -> Release:
        """Run the row plan on the whole table as one batch (`execute_in_memory`)."""
        table = self.open(data, **options)
        mechanism.check_memory(table)
        key = make_key(random_state)
        source = TableSource(table)
        plan = mechanism.row_plan(source, key)
        return mechanism.release_of(plan, execute_in_memory(plan, source, key))

    def publish_blocks(self, mechanism: GroupMechanism, data: Any, *,
                       random_state: RandomState = None, **options: Any) -> Release:
        """Publish the table in blocks (`ppdp.plan.blocks`): as block 0 of the key when it
        has one, else block by block on the workers (`publish_in_blocks`)."""
        table = self.open(data, **options)
        mechanism.check_memory(table)
        key = make_key(random_state)
        n_blocks = block_count(table.n_rows)
        if n_blocks == 1:
            return mechanism.publish_block(table, block_generator(key, mechanism.name, 0))
        return publish_in_blocks(mechanism, table, key, n_blocks)

    def publish_steps(self, mechanism: StepsMechanism, data: Any, *,
                      random_state: RandomState = None, **options: Any) -> Release:
        """The mechanism's own steps on the table in memory (`StepsMechanism.publish_table`)."""
        return mechanism.publish_table(self.open(data, **options), random_state=random_state)

    def views(self, mechanism: Any, data: Any, **options: Any) -> InMemoryViews:
        """A sequence of alpha-beta views of the table, each drawn in memory."""
        return InMemoryViews(mechanism, self.open(data, **options))

    def prepare_load(self, release_class: type[Release], stems: Iterable[str]
                     ) -> frozenset[str]:
        """Every table is read into memory."""
        return frozenset()

    def rebuild(self, release_class: type[Release], schema: Any,
                parameters: Mapping[str, Any], n_rows: int, tables: Mapping[str, Any],
                scans: ScannedFiles) -> Release:
        return release_class._from_tables(schema, parameters, n_rows, tables)

    def cube(self, paths: Sequence[Path], domains: Mapping[str, Any], n_rows: int, *,
             constants: Sequence[str] = (), digests: Mapping[Any, str] | None = None,
             row_counts: Any = None, opened: Sequence[os.PathLike[str]] | None = None) -> Any:
        raise NotImplementedError("the memory engine reads every table of a release")


def is_dataset_name(data: object) -> bool:
    """Whether ``data`` is the name of a bundled dataset (`ppdp.datasets.NAMES`) that names no
    file."""
    return (isinstance(data, str) and data.strip().lower() in DATASETS
            and not Path(data).exists())


def open_dataset(name: str, *, sensitive: Any = None, quasi_identifiers: Any = None,
                 domains: Mapping[str, Any] | None = None, observed_domains: bool = False,
                 **reading: Any) -> Table:
    """A bundled dataset with its roles, ``domains`` declared over its own and, with
    ``observed_domains``, the values present declared public where no domain is; its
    bundled file is read as it is, so the rules for reading a file (``reading``: separator,
    missing values, encoding) do not apply."""
    table = load_dataset(name, sensitive=sensitive, quasi_identifiers=quasi_identifiers)
    if domains:
        table = table.with_domains(domains)
    return table.declare_observed_domains() if observed_domains else table


ENGINE = MemoryEngine()
