"""Regenerate the bundled datasets in src/ppdp/datasets/ from their source files.

Usage: python tools/vendor_datasets.py [path/to/adult-arx-9attr.csv]

The default source path is ../shared/datasets/adult/adult-arx-9attr.csv, relative to the
repository root.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ppdp.io.read import read_table

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = Path("..") / "shared" / "datasets" / "adult" / "adult-arx-9attr.csv"
TARGET = ROOT / "src" / "ppdp" / "datasets" / "adult.parquet"
ADULT_COLUMNS = ("sex", "age", "race", "marital-status", "education", "native-country",
                 "workclass", "occupation", "salary-class")
ADULT_ROWS = 30_162


def adult_arrow(source: Path) -> pa.Table:
    """The 9-attribute Adult table as plain (not dictionary) Arrow columns, rows in file order."""
    table = read_table(source, sep=";")
    if table.schema.names != ADULT_COLUMNS or len(table) != ADULT_ROWS:
        raise SystemExit(f"{source}: expected {ADULT_ROWS} rows with columns {ADULT_COLUMNS}, "
                         f"found {len(table)} rows with {table.schema.names}")
    arrow = table.to_arrow()
    columns = []
    for column in table.schema.columns:
        values = arrow.column(column.name)
        target = pa.int64() if column.kind == "int" else pa.string()
        columns.append(pc.cast(values, target))
    return pa.table(columns, names=list(ADULT_COLUMNS))


def main() -> None:
    """Write src/ppdp/datasets/adult.parquet from the 9-attribute Adult CSV."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", type=Path, default=None,
                        help=f"the 9-attribute Adult CSV (default: {DEFAULT_SOURCE}, relative "
                             "to the repository root)")
    args = parser.parse_args()
    source = args.source if args.source is not None else ROOT / DEFAULT_SOURCE
    data = adult_arrow(source)
    pq.write_table(data, TARGET, compression="zstd", compression_level=19,
                   use_dictionary=True, write_statistics=False)
    print(f"wrote {TARGET.relative_to(ROOT)}: {data.num_rows} rows, "
          f"{TARGET.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
