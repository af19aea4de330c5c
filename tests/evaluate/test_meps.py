"""Tests of the MEPS 2005 loader (``ppdp.evaluate.experiments.read_meps``), the third real
table of the ambiguity comparison, with a categorical sensitive attribute."""

from __future__ import annotations

from pathlib import Path

import pytest

from ppdp.errors import PpdpError
from ppdp.evaluate.experiments import MEPS_FILE, read_meps
from ppdp.evaluate.experiments.tables import load_table
from ppdp.table.table import Table


@pytest.fixture(scope="module")
def meps(shared_datasets: Path) -> Table:
    return read_meps(shared_datasets / MEPS_FILE)


def test_icd9_codes_are_text_with_their_leading_zeros(meps: Table) -> None:
    column = meps.schema["ICD9CODX"]
    assert meps.schema.sensitive == ("ICD9CODX",)
    assert column.kind == "string" and column.size == 555
    assert {"008", "005", "V22", "-9"} <= set(column.domain)
    assert "8" not in column.domain
    assert meps.count("ICD9CODX = '008'").value == 953
    assert meps.n_rows == 26_756


def test_quasi_identifiers_are_meps_integer_codes(meps: Table) -> None:
    assert meps.schema.quasi_identifiers == ("DOBYY", "SEX", "RACEX", "EDUCYEAR", "marry",
                                             "income")
    assert all(meps.schema[q].kind == "int" for q in meps.schema.quasi_identifiers)
    assert meps.schema["income"].size == 8736
    # The papers' setting: the values present are the declared domains.
    assert all(c.declared for c in meps.schema.columns)


def test_experiments_load_meps_by_name(shared_datasets: Path, meps: Table) -> None:
    table = load_table(shared_datasets, "meps", "ICD9CODX")
    assert table.schema == meps.schema and table.n_rows == meps.n_rows


def test_missing_file_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(PpdpError, match="MEPS is not at"):
        read_meps(tmp_path / "nope.csv")
