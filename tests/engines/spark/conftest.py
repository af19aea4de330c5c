"""Fixtures of the Spark tests: Adult's declared domains and values, inputs cut into Parquet
files, and the rows a job brings to the driver (the session: `tests/engines/conftest.py`)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

SETUP_MODULE = "test_spark_setup"
"""The tests of the refusals themselves, which run without Spark."""


@pytest.fixture(autouse=True)
def _needs_spark(request: pytest.FixtureRequest) -> None:
    """Every Spark test but the refusals' needs pyspark and Java 17+ (`spark_runtime`)."""
    if request.module.__name__.rpartition(".")[2] != SETUP_MODULE:
        request.getfixturevalue("spark_runtime")


@pytest.fixture(scope="session")
def adult_domains() -> dict[str, Any]:
    """The declared domains of every Adult column (the bundled codebook)."""
    from importlib import resources

    import ppdp.datasets
    from ppdp.datasets import read_domains_file

    with resources.as_file(resources.files(ppdp.datasets) / "adult.domains.json") as path:
        return read_domains_file(path)


@pytest.fixture(scope="session")
def adult_values() -> Any:
    """Adult's bundled rows over the named columns, as values (an Arrow table), the first
    ``rows`` of them when given."""
    from importlib import resources

    import pyarrow.parquet as pq

    import ppdp.datasets

    def read(columns: list[str], rows: int | None = None) -> Any:
        with resources.as_file(resources.files(ppdp.datasets) / "adult.parquet") as path:
            table = pq.read_table(path, columns=columns)
        return table if rows is None else table.slice(0, rows)

    return read


@pytest.fixture(scope="session")
def parquet_parts() -> Any:
    """Writes rows into a folder as consecutive Parquet files ``part-0.parquet``, ... (rows in
    name order), cut before each of ``cuts``, in row groups of ``row_group_size`` rows."""
    import pyarrow.parquet as pq

    def write(rows: Any, folder: Any, cuts: list[int], row_group_size: int | None = None
              ) -> Any:
        bounds = [0, *cuts, rows.num_rows]
        for index, (start, end) in enumerate(itertools.pairwise(bounds)):
            pq.write_table(rows.slice(start, end - start), folder / f"part-{index}.parquet",
                           row_group_size=row_group_size)
        return folder

    return write


@pytest.fixture
def collected(spark: Any, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of rows of every result brought to the driver by ``toArrow`` or ``collect``
    (which ``first`` and ``take`` call)."""
    frames = type(spark.range(1))
    sizes: list[int] = []

    def counting(method: Any) -> Any:
        def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
            result = method(self, *args, **kwargs)
            sizes.append(len(result))
            return result

        return counted

    for name in ("toArrow", "collect"):
        monkeypatch.setattr(frames, name, counting(getattr(frames, name)))
    return sizes
