"""Tests of the bundled datasets in ppdp.datasets."""

from __future__ import annotations

import fnmatch
import math
import tomllib
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest

import ppdp.datasets
from ppdp.data.schema import Role
from ppdp.io.read import read_table

# The sizes of the values present (the alpha-beta paper's domains, m = 648,023,040) and of the
# UCI codebook's domains the bundled table declares (ages 17..90, 87 and 89 absent from the
# rows; 8 workclasses, Never-worked absent).
ADULT_SIZES = {"sex": 2, "age": 72, "race": 5, "marital-status": 7, "education": 16,
               "native-country": 41, "workclass": 7, "occupation": 14, "salary-class": 2}
CODEBOOK_SIZES = {**ADULT_SIZES, "age": 74, "workclass": 8}


@pytest.mark.parametrize(("observed", "sizes", "m"), [(False, CODEBOOK_SIZES, 761_169_920),
                                                      (True, ADULT_SIZES, 648_023_040)])
def test_adult_shape_and_domains(observed: bool, sizes: dict[str, int], m: int) -> None:
    table = ppdp.datasets.adult(observed_domains=observed)
    assert len(table) == 30_162
    assert table.dropped_rows == 0
    assert table.schema.names == tuple(ADULT_SIZES)
    assert table.schema.sizes() == sizes
    assert math.prod(sizes.values()) == m
    assert table.schema["age"].kind == "int"
    assert table.schema["age"].domain[0] == 17
    assert table.schema["sex"].domain == ("Female", "Male")
    assert table.schema["salary-class"].domain == ("<=50K", ">50K")
    assert all(c.role is Role.QUASI_IDENTIFIER for c in table.schema.columns)
    # Either way the domains are declared public: a release may list them.
    assert all(c.declared for c in table.schema.columns)
    present = {name: set(table.values(name).tolist()) for name in table.schema.names}
    absent = {name: set(table.schema[name].domain) - present[name]
              for name in table.schema.names}
    if observed:
        assert not any(absent.values())
    else:
        assert table.schema["age"].domain == tuple(range(17, 91))
        assert {k: v for k, v in absent.items() if v} == {"age": {87, 89},
                                                          "workclass": {"Never-worked"}}


def test_adult_matches_shared_csv(shared_datasets: Path) -> None:
    adult_csv = shared_datasets / "adult" / "adult-arx-9attr.csv"
    bundled = ppdp.datasets.adult(observed_domains=True)
    source = read_table(adult_csv)
    assert source.schema == bundled.schema
    assert not any(c.declared for c in source.schema.columns)
    for name in bundled.schema.names:
        assert Counter(bundled.values(name).tolist()) == Counter(source.values(name).tolist())
        assert (bundled.codes[name] == source.codes[name]).all()
    # With the codebook's domains declared, the CSV gives the bundled table.
    codebook = ppdp.datasets.adult()
    with resources.as_file(resources.files("ppdp.datasets") / "adult.domains.json") as path:
        declared = read_table(adult_csv, domains=path)
    assert declared.schema == codebook.schema
    assert all(c.declared for c in declared.schema.columns)
    for name in codebook.schema.names:
        assert (codebook.codes[name] == declared.codes[name]).all()


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
    # The hierarchies' source, copyright and licence, with the licence's text beside them.
    assert "ARX Data Anonymization Tool" in attribution and "Fabian Prasser" in attribution
    assert "Apache License, Version 2.0" in attribution
    assert "Apache License" in (folder / "LICENSE-Apache-2.0.txt").read_text(encoding="utf-8")
    hierarchies = sorted(entry.name for entry in folder.iterdir()
                         if entry.name.startswith("adult_hierarchy_"))
    assert hierarchies == sorted(f"adult_hierarchy_{name}.csv" for name in ADULT_SIZES)


def test_package_data_lists_every_bundled_file() -> None:
    """pyproject.toml's package-data patterns take every data file of the folder into the
    package (an installed ppdp has the hierarchies, not only a checkout)."""
    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    patterns = project["tool"]["setuptools"]["package-data"]["ppdp"]
    folder = Path(ppdp.datasets.__file__).parent
    data = [path for path in folder.iterdir() if path.is_file() and path.suffix != ".py"]
    assert data
    for path in data:
        assert any(fnmatch.fnmatch(f"datasets/{path.name}", p) for p in patterns), path.name
