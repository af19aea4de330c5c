"""A Spark release once saved: its tables as Spark DataFrames over the files it wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ppdp.engines.spark.session import spark_session
from ppdp.errors import ReleaseError
from ppdp.mechanisms.anatomy.pairs import PAIR_COUNTS
from ppdp.query.row_counts import ROW_COUNTS
from ppdp.release.format import METADATA_FILE


class SavedTables:
    """What every Spark release gives after ``save``: ``tables``, each published table as a
    Spark DataFrame over its Parquet parts (the rows of a group, Mondrian or alpha-beta release
    exist only once their tasks have published and written them)."""

    mechanism: str
    saved: Path | None = None
    """The release directory ``save`` wrote, or None before."""

    def tables(self) -> dict[str, Any]:
        """The release's tables by file stem (``rows``; ``qit`` and ``st``; ``at_1`` ...; the
        generalized values' covers; ``view`` and ``earlier``), as Spark DataFrames of values
        read from the saved files, which are not read on the driver (the files ``release.json``
        lists, as written; `ppdp.load_release` verifies their digests)."""
        if self.saved is None:
            raise ReleaseError(f"the {self.mechanism} release is published by save; save it "
                               f"first, then read its tables")
        files = json.loads((self.saved / METADATA_FILE).read_text())["files"]
        spark = spark_session()
        return {stem: spark.read.parquet(*(str(self.saved / name) for name in (
                    entry if isinstance(entry, list) else [entry])))
                for stem, entry in files.items() if stem not in (ROW_COUNTS, PAIR_COUNTS)}
