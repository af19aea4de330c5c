"""Tests of the bundled datasets in ppdp.datasets."""

from __future__ import annotations

import math
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest

import ppdp.datasets
from ppdp.io import read_table
from ppdp.table import Role

ADULT_CSV = (Path(__file__).resolve().parents[2] / "shared" / "datasets" / "adult"
             / "adult-arx-9attr.csv")
ADULT_SIZES = {"sex": 2, "age": 72, "race": 5, "marital-status": 7, "education": 16,
               "native-country": 41, "workclass": 7, "occupation": 14, "salary-class": 2}


def test_adult_shape_and_domains() -> None:
    table = ppdp.datasets.adult()
    assert len(table) == 30_162
    assert table.dropped_rows == 0
    assert table.schema.names == tuple(ADULT_SIZES)
    assert table.schema.sizes() == ADULT_SIZES
    assert math.prod(ADULT_SIZES.values()) == 648_023_040
    assert table.schema["age"].kind == "int"
    assert table.schema["age"].domain[0] == 17
    assert table.schema["sex"].domain == ("Female", "Male")
    assert table.schema["salary-class"].domain == ("<=50K", ">50K")
    assert all(c.role is Role.QUASI_IDENTIFIER for c in table.schema.columns)


def test_adult_matches_shared_csv() -> None:
    if not ADULT_CSV.is_file():
        pytest.skip(f"shared dataset not found at {ADULT_CSV}")
    bundled = ppdp.datasets.adult()
    source = read_table(ADULT_CSV)
    assert source.schema == bundled.schema
    for name in bundled.schema.names:
        assert Counter(bundled.values(name).tolist()) == Counter(source.values(name).tolist())
        assert (bundled.codes[name] == source.codes[name]).all()


def test_adult_roles() -> None:
    table = ppdp.datasets.adult(sensitive="occupation", quasi_identifiers=["sex", "age"])
    assert table.schema.sensitive == ("occupation",)
    assert table.schema.quasi_identifiers == ("sex", "age")
    assert table.schema["race"].role is Role.IGNORED
    default_qi = ppdp.datasets.adult(sensitive=["salary-class"])
    assert default_qi.schema.quasi_identifiers == tuple(ADULT_SIZES)[:-1]


def test_load() -> None:
    assert ppdp.datasets.NAMES == ("adult",)
    table = ppdp.datasets.load("adult", sensitive="salary-class")
    assert len(table) == 30_162
    assert table.schema.sensitive == ("salary-class",)
    with pytest.raises(ValueError, match=r"unknown dataset 'nope'; known datasets: adult"):
        ppdp.datasets.load("nope")


def test_bundled_files() -> None:
    folder = resources.files("ppdp.datasets")
    parquet = folder / "adult.parquet"
    with resources.as_file(parquet) as path:
        assert path.stat().st_size < 300 * 1024
    attribution = (folder / "ADULT.md").read_text(encoding="utf-8")
    assert "10.24432/C5XW20" in attribution
    assert "CC BY 4.0" in attribution
    assert "30,162" in attribution
