"""GroupedEstimate.to_frame: a GROUP BY answer as one data frame in pandas, polars or Arrow."""

from __future__ import annotations

import math

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import ppdp
from ppdp.estimate import FRAME_COLUMNS, Estimate, GroupedEstimate

GROUPED = GroupedEstimate(("sex", "age"), (
    ({"sex": "F", "age": 30}, Estimate.with_stderr(4.0, 1.0)),
    ({"sex": "M", "age": 40}, Estimate(2.0)),  # no standard error, no interval
))


def test_pandas_by_default() -> None:
    frame = GROUPED.to_frame()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == ["sex", "age", *FRAME_COLUMNS]
    assert frame["sex"].tolist() == ["F", "M"] and frame["age"].tolist() == [30, 40]
    assert frame["estimate"].tolist() == [4.0, 2.0]
    interval = GROUPED.groups[0][1].ci95
    assert interval is not None
    low, high = interval
    assert frame.loc[0, "stderr"] == 1.0
    assert (frame.loc[0, "ci95_low"], frame.loc[0, "ci95_high"]) == (low, high)
    assert all(math.isnan(frame.loc[1, c]) for c in ("stderr", "ci95_low", "ci95_high"))


def test_polars_and_arrow_hold_the_same() -> None:
    polars = GROUPED.to_frame(library="polars")
    arrow = GROUPED.to_frame(library="arrow")
    assert isinstance(polars, pl.DataFrame) and isinstance(arrow, pa.Table)
    assert polars.to_dicts() == arrow.to_pylist()
    assert arrow.column("stderr").to_pylist() == [1.0, None]
    assert arrow.schema.field("estimate").type == pa.float64()


def test_an_answer_with_no_groups_is_an_empty_frame() -> None:
    frame = GroupedEstimate(("sex",), ()).to_frame("arrow")
    assert frame.num_rows == 0 and frame.column_names == ["sex", *FRAME_COLUMNS]


def test_an_unknown_library_is_one_line_naming_the_libraries() -> None:
    with pytest.raises(ValueError, match="library must be one of 'pandas', 'polars', 'arrow', "
                                         "not 'excel'"):
        GROUPED.to_frame("excel")


def test_a_count_of_a_release_and_of_a_table() -> None:
    table = ppdp.datasets.adult(sensitive="occupation")
    query = "SELECT COUNT(*) FROM t WHERE age > 60 GROUP BY sex, salary-class"
    truth = table.count(query)
    assert isinstance(truth, GroupedEstimate)
    frame = truth.to_frame("polars")
    assert frame.height == len(truth)
    for row in frame.iter_rows(named=True):
        assert row["estimate"] == truth[(row["sex"], row["salary-class"])].value
    release = ppdp.SPLUGen(gamma=5).publish(table, random_state=1)
    answer = release.count("SELECT COUNT(*) FROM t GROUP BY occupation")
    assert isinstance(answer, GroupedEstimate)
    frame = answer.to_frame()
    assert frame["estimate"].sum() == pytest.approx(sum(e.value for _, e in answer.groups))
    assert frame["occupation"].tolist() == [key["occupation"] for key, _ in answer.groups]
