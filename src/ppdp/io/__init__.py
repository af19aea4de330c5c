"""Reading tables and writing files: CSV, Parquet and data frames read whole (`read`) or in
batches (`scan`), typed and checked, and directories committed atomically (`storage`)."""

from ppdp.io.read import read_table, write_table
from ppdp.io.rules import DEFAULT_NA_VALUES
from ppdp.io.scan import ScanSource, scan_table

__all__ = ["DEFAULT_NA_VALUES", "ScanSource", "read_table", "scan_table", "write_table"]
