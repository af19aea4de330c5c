"""A release's tables as Arrow, pandas and polars (``tables``, ``to_arrow``, ``to_pandas``,
``to_polars``), published and loaded, and ``count_all`` as a data frame."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import ppdp
from ppdp.errors import ReleaseError
from ppdp.estimate import FRAME_COLUMNS, Estimate
from ppdp.release.base import Release
from ppdp.release.load import load_release
from ppdp.table.table import Table
from tests.engines.test_conformance import MECHANISMS

MAIN = {"anatomy": None, "ambiguity": None, "alphabeta": "view"}
QUERIES = ["sex = 'Male' AND occupation = 'Sales'", "age >= 40", "race = 'White'"]


def same_rows(table: pa.Table, expected: pa.Table) -> bool:
    """Whether two tables hold the same columns and values, in order, whatever their encoding
    (dictionaries decoded, string types cast): vectorised, where rows as Python objects took
    seconds for alpha-beta's view."""
    if table.column_names != expected.column_names or table.num_rows != expected.num_rows:
        return False
    for column, wanted in zip(table.columns, expected.columns, strict=True):
        column, wanted = plain(column), plain(wanted)
        if not column.cast(wanted.type).equals(wanted):
            return False
    return True


def plain(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A column with its dictionary, if any, decoded."""
    return column.cast(column.type.value_type) if pa.types.is_dictionary(column.type) else column


@pytest.fixture(scope="module")
def table() -> Table:
    adult = ppdp.datasets.adult(sensitive="occupation")
    columns = ["age", "sex", "race", "salary-class", "workclass", "education", "occupation"]
    return adult.select(columns).take(np.arange(3000))


@pytest.mark.parametrize("mechanism", sorted(MECHANISMS))
def test_the_tables_are_what_save_writes_published_and_loaded(mechanism: str, table: Table,
                                                               tmp_path: Path) -> None:
    release = MECHANISMS[mechanism]().publish(table, random_state=5)
    tables = release.tables()
    release.save(tmp_path / "r")
    listed = json.loads((tmp_path / "r" / "release.json").read_text())["files"]
    assert set(tables) == set(listed) - {"row_counts", "pair_counts"}
    loaded = load_release(tmp_path / "r")
    assert set(loaded.tables()) == set(tables)
    for stem, arrow in tables.items():
        assert isinstance(arrow, pa.Table)
        assert same_rows(loaded.tables()[stem], arrow), stem
    main = MAIN.get(mechanism, "rows")
    for each in (release, loaded):
        assert each.main_table == main
        if main is None:
            with pytest.raises(ReleaseError, match="tables; name one: "):
                each.to_arrow()
        else:
            assert same_rows(each.to_arrow(), tables[main])
    name = main or next(iter(tables))
    frame = loaded.to_pandas(name)
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == tables[name].column_names
    assert same_rows(pa.Table.from_pandas(frame, preserve_index=False), tables[name])
    polars = loaded.to_polars(name)
    assert isinstance(polars, pl.DataFrame)
    assert same_rows(polars.to_arrow(), tables[name])


def test_the_rows_of_a_row_release_are_its_published_rows(table: Table) -> None:
    release = ppdp.SPLUGen(gamma=5).publish(table, random_state=2)
    rows = release.to_pandas()
    assert len(rows) == release.n_rows and list(rows.columns) == list(table.schema.names)
    assert rows["sex"].dtype == "category"
    assert set(rows["occupation"].cat.categories) == set(table.schema["occupation"].domain)


def test_an_unknown_table_names_the_release_tables(table: Table) -> None:
    release = ppdp.Anatomy(l=3).publish(table, random_state=1)
    with pytest.raises(ReleaseError, match=r"no table 'rows'; its tables: 'qit', 'st'"):
        release.to_polars("rows")


def test_a_laplace_session_has_no_tables(table: Table) -> None:
    session = ppdp.LaplaceCounts(epsilon=1.0).publish(table, random_state=1)
    with pytest.raises(ReleaseError, match="no data release to write"):
        session.to_pandas()


def answered(release: Release, library: str) -> list[dict[str, Any]]:
    frame = release.count_all(QUERIES, frame=library)
    if library == "pandas":
        return [{k: None if isinstance(v, float) and math.isnan(v) else v
                 for k, v in row.items()} for row in frame.to_dict("records")]
    return frame.to_dicts() if library == "polars" else frame.to_pylist()


@pytest.mark.parametrize("library", ["pandas", "polars", "arrow"])
@pytest.mark.parametrize("mechanism", ["splu", "anatomy", "mondrian", "laplace"])
def test_count_all_as_a_frame_holds_count_all_and_the_intervals_of_count(
        mechanism: str, library: str, table: Table) -> None:
    make = MECHANISMS.get(mechanism, lambda: ppdp.LaplaceCounts(epsilon=1.0))
    release = make().publish(table, random_state=3)
    rows = answered(release, library)
    if mechanism == "laplace":  # each answer spends budget and draws new noise
        release = make().publish(table, random_state=3)
    values, stderr = release.count_all(QUERIES)
    assert [row["query"] for row in rows] == QUERIES
    assert [row["estimate"] for row in rows] == values.tolist()
    assert [row["stderr"] for row in rows] == [None if math.isnan(s) else s for s in stderr]
    assert list(rows[0]) == ["query", *FRAME_COLUMNS]
    for row, value, error in zip(rows, values, stderr, strict=True):
        interval = Estimate.with_stderr(value, None if math.isnan(error) else error).ci95 \
            if mechanism != "laplace" else release._interval(value, error).ci95
        assert (row["ci95_low"], row["ci95_high"]) == (interval or (None, None))


def test_count_all_refuses_an_unknown_library_before_counting(table: Table) -> None:
    session = ppdp.LaplaceCounts(epsilon=1.0).publish(table, random_state=3)
    with pytest.raises(ValueError, match="library must be one of"):
        session.count_all(QUERIES, frame="excel")
    assert session.spent_epsilon == 0
