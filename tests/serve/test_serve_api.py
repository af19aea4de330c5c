"""The query server's endpoints: the answers are `Release.count`'s, in the JSON of ``ppdp
count --json``, and every bad request is a 4xx of one line of JSON."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import ppdp
from ppdp.cli import app
from ppdp.errors import ReleaseError
from ppdp.jsonable import json_ready
from ppdp.release.base import Release
from ppdp.release.load import load_release
from ppdp.serve.catalog import Catalog

QUERIES = ["sex = 'Female'", "age >= 40 AND occupation = 'Sales'",
           "SELECT COUNT(*) FROM t WHERE age < 30 GROUP BY sex", "occupation IN ('Sales', "
           "'Tech-support') OR race = 'Other'"]


@functools.cache
def loaded(path: Path) -> Release:
    """The release at ``path``, loaded once (the releases of these tests never change)."""
    return load_release(path)


def expected(path: Path, query: str) -> dict[str, Any]:
    """What `Release.count` answers, as JSON."""
    return json_ready(loaded(path).count(query).to_dict())


def refused(response: Any, status: int) -> str:
    """The one-line reason of a refusal with ``status``."""
    assert response.status_code == status, response.text
    assert "\n" not in response.text and "Traceback" not in response.text
    body = response.json()
    assert list(body) == ["error"] and body["error"]
    message: str = body["error"]
    return message


def test_the_list_names_each_release_with_its_parameters_and_guarantee(api, releases):
    listed = {item["name"]: item for item in api.get("/releases").json()["releases"]}
    assert sorted(listed) == ["anatomy", "splu"]
    assert listed["anatomy"]["mechanism"] == "anatomy"
    assert listed["anatomy"]["parameters"]["l"] == 3
    assert listed["anatomy"]["guarantee"]["max_inference_probability"] == pytest.approx(1 / 3)
    assert listed["splu"]["parameters"] == {"gamma": 5}
    assert listed["splu"]["n_rows"] == 2_000
    assert listed["splu"]["guarantee"]["gamma"] == 5
    sensitive = [c for c in listed["splu"]["columns"] if c["role"] == "sensitive"]
    assert [c["name"] for c in sensitive] == ["occupation"]
    assert api.get("/releases/splu").json() == listed["splu"]


@pytest.mark.parametrize("name", ["anatomy", "splu"])
@pytest.mark.parametrize("query", QUERIES)
def test_a_count_is_the_releases(api, releases, name, query):
    answer = api.post(f"/releases/{name}/count", json={"query": query})
    assert answer.status_code == 200, answer.text
    assert answer.json() == expected(releases / name, query)


@pytest.mark.parametrize("name", ["anatomy", "splu"])
def test_a_count_is_the_commands(api, releases, name):
    query = QUERIES[2]
    command = CliRunner().invoke(app, ["count", str(releases / name), query, "--json"])
    assert command.exit_code == 0, command.output
    answer = api.post(f"/releases/{name}/count", json={"query": query})
    assert json.loads(command.output) == answer.json()


def test_a_batch_answers_each_query_in_order(api, releases):
    answer = api.post("/releases/anatomy/counts", json={"queries": QUERIES})
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"answers": [expected(releases / "anatomy", q) for q in QUERIES]}


CONDITIONS = st.one_of(
    st.builds("age >= {}".format, st.integers(17, 90)),
    st.sampled_from(["sex = 'Male'", "race = 'White'", "occupation = 'Prof-specialty'",
                     "education = 'Bachelors'", "salary-class = '>50K'"]))


@settings(max_examples=8, deadline=None)
@given(st.lists(CONDITIONS, min_size=1, max_size=3), st.sampled_from(["AND", "OR"]),
       st.sampled_from(["anatomy", "splu"]))
def test_generated_conditions_are_answered_as_release_count(api, releases, terms, joint,
                                                           name):
    query = f" {joint} ".join(terms)
    answer = api.post(f"/releases/{name}/count", json={"query": query})
    assert answer.json() == expected(releases / name, query)


def test_the_openapi_document_lists_the_endpoints_and_no_page_loads_a_cdn(api):
    document = api.get("/openapi.json").json()
    assert set(document["paths"]) == {"/releases", "/releases/{name}",
                                      "/releases/{name}/count", "/releases/{name}/counts"}
    assert document["components"]["schemas"]["CountRequest"]["properties"]["query"][
        "maxLength"] == 1_000_000
    for page in ("/docs", "/redoc"):
        refused(api.get(page), 404)


@pytest.mark.parametrize(("body", "status", "reason"), [
    ({"query": ""}, 422, "at least 1 character"),
    ({"query": "   "}, 400, ""),
    ({"query": 7}, 422, "valid string"),
    ({}, 422, "query: Field required"),
    ({"query": "a", "extra": 1}, 422, "extra"),
    ({"query": "bogus = 1"}, 400, "unknown column 'bogus'"),
    ({"query": "age >="}, 400, ""),
    ({"query": "SELECT name FROM t"}, 400, ""),
    ({"query": "x" * 1_000_001}, 422, "at most 1000000 characters"),
])
def test_a_bad_query_is_a_client_error_of_one_line(api, body, status, reason):
    assert reason in refused(api.post("/releases/splu/count", json=body), status)


def test_a_query_of_a_million_characters_is_refused_in_one_short_line(api):
    message = refused(api.post("/releases/splu/count", json={"query": "a" * 1_000_000}), 400)
    assert len(message) <= 1_000


def test_bad_json_is_refused(api):
    answer = api.post("/releases/splu/count", content=b'{"query": ',
                      headers={"content-type": "application/json"})
    assert "not valid JSON" in refused(answer, 400)


def test_a_batch_names_its_bad_query_and_has_a_limit(api):
    assert refused(api.post("/releases/splu/counts",
                            json={"queries": ["age > 30", "bogus = 1"]}), 400) \
        .startswith("queries[1]: unknown column")
    assert "at most 1000 items" in refused(
        api.post("/releases/splu/counts", json={"queries": ["age > 30"] * 1_001}), 422)
    refused(api.post("/releases/splu/counts", json={"queries": []}), 422)


@pytest.mark.parametrize("path", ["/releases/nope", "/releases/nope/count",
                                  "/releases/..%2Fsplu/count", "/releases/%2E%2E/count",
                                  "/releases/.hidden/count", "/releases/%2Fetc/count",
                                  "/nothing"])
def test_unknown_releases_and_paths_out_of_the_directory_are_not_found(api, path):
    answer = api.get(path) if not path.endswith("count") else \
        api.post(path, json={"query": "age > 30"})
    message = refused(answer, 404)
    assert message.startswith(("no release named", "no such endpoint:")), message


def test_a_method_an_endpoint_does_not_take_is_refused(api):
    assert refused(api.get("/releases/splu/count"), 405) == \
        "method not allowed: GET /releases/splu/count"


def test_a_damaged_release_is_listed_with_its_reason_and_not_answered(tmp_path, sample,
                                                                   publish, make_client):
    directory = publish(tmp_path / "releases", sample)
    data = next(p for p in (directory / "splu").iterdir() if p.suffix == ".parquet")
    data.write_bytes(data.read_bytes() + b"tampered")
    with make_client(directory) as api:
        listed = {item["name"]: item for item in api.get("/releases").json()["releases"]}
        assert listed["anatomy"]["mechanism"] == "anatomy"
        assert "digest" in listed["splu"]["error"]
        message = refused(api.post("/releases/splu/count", json={"query": "age > 30"}), 500)
        assert message.startswith("release 'splu' cannot be served:")
        assert str(tmp_path) not in message
        assert api.post("/releases/anatomy/count", json={"query": "age > 30"}).status_code \
            == 200


def test_a_release_that_failed_its_checks_is_not_read_again_until_replaced(tmp_path, sample,
                                                                           publish):
    """A damaged release is refused from what its first load found, without reading and
    hashing its files at every request; replaced, it is loaded again."""
    directory = publish(tmp_path / "releases", sample)
    data = next(p for p in (directory / "splu").iterdir() if p.suffix == ".parquet")
    data.write_bytes(data.read_bytes() + b"tampered")
    loads: list[Path] = []

    def loader(path: Path) -> Any:
        loads.append(path)
        return ppdp.load_release(path)

    catalog = Catalog(directory, loader=loader)
    for _ in range(3):
        with pytest.raises(ReleaseError, match="cannot be served"):
            catalog.get("splu")
    assert len(loads) == 1
    ppdp.SPLUGen(gamma=5).publish(sample, random_state=2).save(directory / "splu",
                                                                overwrite=True)
    assert catalog.get("splu").release.n_rows == sample.n_rows
    assert len(loads) == 2
