"""The JSON Schemas the reference documents (docs/reference/schemas/) describe the files ppdp
writes and reads: every mechanism's release.json (whole tables and tables in parts) and the
bundled domains file validate, and files that ppdp refuses do not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from jsonschema import Draft202012Validator

import ppdp
from ppdp.data.domains import read_domains_file
from ppdp.errors import SchemaError
from ppdp.plan import order
from tests.engines.test_conformance import MECHANISMS

SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "reference" / "schemas"
DOMAINS_FILE = Path(ppdp.datasets.__file__).parent / "adult.domains.json"
COLUMNS = ["age", "sex", "race", "salary-class", "workclass", "education", "occupation"]


def validator(name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / name).read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> ppdp.Table:
    """3,000 rows of the bundled Adult over seven columns, one of them ordered, domains declared."""
    adult = ppdp.datasets.adult(sensitive="occupation").select(COLUMNS)
    path = tmp_path_factory.mktemp("schemas") / "adult.parquet"
    pq.write_table(adult.to_arrow().slice(0, 3_000), path)
    declared: dict[str, Any] = {c.name: list(c.domain) for c in adult.schema.columns}
    declared["education"] = ppdp.Ordered(sorted(declared["education"]))
    return ppdp.read_table(path, sensitive="occupation", domains=declared)


@pytest.mark.parametrize("mechanism", sorted(MECHANISMS))
def test_every_release_json_validates(mechanism: str, table: ppdp.Table, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(order, "ROWS_PER_PART", 1_000)  # tables in parts: lists of files
    release = MECHANISMS[mechanism]().publish(table, random_state=1)
    saved = release.save(tmp_path / mechanism)
    metadata = json.loads((saved / "release.json").read_text())
    errors = [error.message for error in validator("release.schema.json").iter_errors(metadata)]
    assert not errors, errors


def test_a_damaged_release_json_does_not_validate(table: ppdp.Table, tmp_path: Path) -> None:
    saved = ppdp.DBR().publish(table, random_state=1).save(tmp_path / "dbr")
    metadata = json.loads((saved / "release.json").read_text())
    check = validator("release.schema.json")
    for damaged in ({**metadata, "format_version": 1},
                    {**metadata, "metadata_digest": "not a digest"},
                    {**metadata, "schema": [{**metadata["schema"][0], "role": "secret"}]},
                    {k: v for k, v in metadata.items() if k != "digests"}):
        assert not check.is_valid(damaged)


def test_the_bundled_domains_file_validates() -> None:
    errors = [error.message for error in
              validator("domains.schema.json").iter_errors(json.loads(DOMAINS_FILE.read_text()))]
    assert not errors, errors


@pytest.mark.parametrize("document", [
    {"domains": {"age": {"min": 0, "max": 120}, "sex": ["F", "M"], "smoker": [True, False],
                 "edu": {"ordered": ["primary", "secondary", "tertiary"]}}},
])
def test_a_domains_file_that_validates_is_read(document: dict[str, Any], tmp_path: Path) -> None:
    assert validator("domains.schema.json").is_valid(document)
    path = tmp_path / "domains.json"
    path.write_text(json.dumps(document))
    assert set(read_domains_file(path)) == set(document["domains"])


@pytest.mark.parametrize("document", [
    {"age": {"min": 0, "max": 120}},
    {"domains": {"age": {"min": 0}}},
    {"domains": {"age": []}},
    {"domains": {"age": {"min": 0, "max": 120, "step": 5}}},
    {"domains": {"edu": {"ordered": []}}},
])
def test_a_domains_file_that_does_not_validate_is_refused(document: dict[str, Any],
                                                          tmp_path: Path) -> None:
    assert not validator("domains.schema.json").is_valid(document)
    path = tmp_path / "domains.json"
    path.write_text(json.dumps(document))
    with pytest.raises(SchemaError):
        read_domains_file(path)
