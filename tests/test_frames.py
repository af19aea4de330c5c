"""ppdp.frames: an Arrow table in the library asked for, and one line naming the extra where
pandas is not installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from ppdp.frames import LIBRARIES, as_frame

SOURCE = Path(__file__).resolve().parents[1] / "src"
TABLE = pa.table({"sex": pa.array(["F", "M", "F"]).dictionary_encode(), "n": [1, 2, 3]})


def test_each_library() -> None:
    assert LIBRARIES == ("pandas", "polars", "arrow")
    assert as_frame(TABLE, "arrow") is TABLE
    frame = as_frame(TABLE, "pandas")
    assert isinstance(frame, pd.DataFrame) and frame["sex"].dtype == "category"
    assert frame.to_dict("list") == {"sex": ["F", "M", "F"], "n": [1, 2, 3]}
    polars = as_frame(TABLE, "polars")
    assert isinstance(polars, pl.DataFrame)
    assert polars.to_dict(as_series=False) == {"sex": ["F", "M", "F"], "n": [1, 2, 3]}


def test_an_unknown_library_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="library must be one of"):
        as_frame(TABLE, "Pandas")


def test_without_pandas_the_error_names_the_extra() -> None:
    """In a fresh interpreter where pandas cannot be imported (as in a base install)."""
    code = ("import sys\n"
            "class NotInstalled:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] == 'pandas':\n"
            "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
            "sys.meta_path.insert(0, NotInstalled())\n"
            "import pyarrow as pa\n"
            "from ppdp.errors import MissingDependencyError\n"
            "from ppdp.frames import as_frame\n"
            "try:\n"
            "    as_frame(pa.table({'a': [1]}), 'pandas')\n"
            "except MissingDependencyError as error:\n"
            "    print(error)\n")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env={"PYTHONPATH": str(SOURCE)}).stdout
    assert shown.count("\n") == 1 and "pip install 'ppdp[dataframes]'" in shown
