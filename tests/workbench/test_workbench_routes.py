"""Every route of the workbench and every error path, with FastAPI's TestClient: the journey
on a small CSV (open, roles, domains, goal, compare, publish, query, attack, download) and
each bad request answered with its 4xx status and one line."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from workbench_helpers import error_line, form_of

import ppdp
from ppdp.certify.verify import verify
from ppdp.cli import app as cli_app
from ppdp.release.keys import (
    COMMITMENT_KEY_FILE,
    KEY_FILE,
    PUBLIC_KEY_FILE,
    create_keys,
    load_commitment_key,
)
from ppdp.workbench import create_workbench_app
from ppdp.workbench._release_routes import MAX_QUERY_CHARS, certify_command
from ppdp.workbench._state import Published
from ppdp.workbench._views import parameters_text


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    root = tmp_path_factory.mktemp("workspace")
    return TestClient(create_workbench_app(root, max_upload_bytes=100_000),
                      base_url="http://127.0.0.1")


def open_csv(client: TestClient, path: Path, **extra: str) -> Any:
    with path.open("rb") as handle:
        return client.post("/open/upload", files={"file": (path.name, handle, "text/csv")},
                           data=extra, follow_redirects=False)


def finished(client: TestClient, location: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = client.get(f"{location}/progress").json()
        if state["finished"]:
            return state
        time.sleep(0.1)
    raise AssertionError("the comparison did not finish in 60 s")


@pytest.fixture(scope="module")
def journey(client: TestClient, visits: Path) -> dict[str, Any]:
    """The small CSV opened, configured (record not published, disease sensitive, sex's
    domain declared, the others from the values present), compared and published."""
    opened = open_csv(client, visits)
    assert opened.status_code == 303
    table = opened.headers["location"]
    fields = form_of(client.get(table).text)
    names = ["record", "age", "sex", "zip", "disease"]
    roles = {"record": "ignored", "disease": "sensitive"}
    for index, name in enumerate(names):
        fields[f"role-{index}"] = roles.get(name, "quasi-identifier")
    fields["domain-2"] = "F,M"
    fields["privacy"] = "beta=0.25"
    started = client.post(f"{table}/compare", data=fields, follow_redirects=False)
    assert started.status_code == 303, error_line(started.text)
    comparison = started.headers["location"]
    state = finished(client, comparison)
    assert state["error"] is None
    result = client.get(comparison).text
    chosen = re.search(r'<option value="([^"]+)" selected>', result).group(1)
    published = client.post(f"{comparison}/publish",
                            data={"mechanism": chosen, "name": "visits-release"},
                            follow_redirects=False)
    assert published.status_code == 303, error_line(published.text)
    return {"table": table, "comparison": comparison, "result": result, "chosen": chosen,
            "release": published.headers["location"], "fields": fields}


def test_home_lists_the_ways_to_open_data(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert '<html lang="en">' in page.text
    assert 'action="/open/upload"' in page.text and 'action="/open/bundled"' in page.text


def test_static_files_are_served_locally(client: TestClient) -> None:
    assert client.get("/static/workbench.css").status_code == 200
    assert "fetch(" in client.get("/static/workbench.js").text
    assert "http" not in client.get("/").text.replace('href="/', "")


def test_adult_opens_with_its_codebook_domains(client: TestClient) -> None:
    opened = client.post("/open/bundled", data={"name": "adult"}, follow_redirects=False)
    assert opened.status_code == 303
    page = client.get(opened.headers["location"]).text
    fields = form_of(page)
    # The codebook's domains are suggested, occupation is the sensitive column by default.
    assert fields["domain-0"] == "Female,Male" and fields["domain-1"] == "17..90"
    assert fields["role-7"] == "sensitive"
    assert "from the codebook" in page and fields.get("sample") == "on"


@pytest.mark.parametrize(("name", "content", "status", "words"), [
    ("visits.xlsx", b"PK\x03\x04", 415, "is not a CSV or Parquet file"),
    ("empty.csv", b"", 400, "is empty"),
    ("big.csv", b"a,b\n" + b"1,2\n" * 30_000, 413, "larger than the limit"),
    ("missing.csv", b"age,disease\n30,flu\n,asthma\n", 422, "missing"),
])
def test_a_bad_upload_is_refused_with_one_line(client: TestClient, tmp_path: Path, name: str,
                                               content: bytes, status: int,
                                               words: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    answer = open_csv(client, path)
    assert answer.status_code == status
    line = error_line(answer.text)
    assert words in line and "\n" not in line and "Traceback" not in answer.text


def test_missing_values_may_be_dropped_instead(client: TestClient, tmp_path: Path) -> None:
    path = tmp_path / "missing.csv"
    path.write_text("age,disease\n30,flu\n,asthma\n40,flu\n")
    opened = open_csv(client, path, drop_missing="on")
    assert opened.status_code == 303
    assert "2 rows" in client.get(opened.headers["location"]).text


def test_an_upload_without_a_file_or_an_unknown_dataset_is_refused(client: TestClient) -> None:
    assert client.post("/open/upload", data={"x": "1"}).status_code == 400
    answer = client.post("/open/bundled", data={"name": "census"})
    assert answer.status_code == 400 and "no bundled dataset 'census'" in error_line(answer.text)


@pytest.mark.parametrize(("change", "words"), [
    ({"privacy": "beta=lots"}, "privacy"),
    ({"privacy": "k=10"}, "names none of the forms"),
    ({"role-4": "quasi-identifier"}, "exactly one sensitive column"),
    ({"role-1": "sensitive"}, "exactly one sensitive column"),
    ({"role-1": "boss"}, "quasi-identifier, sensitive or ignored"),
    ({"domain-1": "20..x"}, "MIN..MAX takes integers"),
    ({"domain-2": "F"}, "outside its domain"),
])
def test_a_bad_choice_of_roles_domains_or_goal_is_one_line(client: TestClient,
                                                          journey: dict[str, Any],
                                                          change: dict[str, str],
                                                          words: str) -> None:
    answer = client.post(f"{journey['table']}/compare", data={**journey["fields"], **change})
    assert answer.status_code == 400
    assert words in error_line(answer.text)
    # The page keeps what was chosen, to be corrected.
    assert form_of(answer.text)["privacy"] == {**journey["fields"], **change}["privacy"]


def test_unknown_tables_comparisons_and_releases_are_404(client: TestClient) -> None:
    for path in ("/tables/nope", "/comparisons/nope", "/comparisons/nope/progress",
                 "/releases/nope", "/releases/..%2F..%2Fetc/download.zip",
                 "/releases/.hidden", "/releases/nope/reproduce.py", "/no/such/page"):
        answer = client.get(path)
        assert answer.status_code == 404, path
        assert "Traceback" not in answer.text


def test_the_comparison_shows_every_mechanism_and_the_warning(client: TestClient,
                                                              journey: dict[str, Any]) -> None:
    page = journey["result"]
    # The parameters as the command line takes them back, not as Python prints a float.
    assert parameters_text({"rho1": 1 / 13, "k": 5, "beta": 0.25}) == \
        "rho1 = 1/13, k = 5, beta = 0.25"
    meta = json.loads((_workspace(client) / "recipes" / "visits-release.json").read_text())
    shown = parameters_text(meta["parameters"])
    assert f"<td>{shown or '-'}</td>" in page
    assert 'id="recommendation"' in page and "<svg class='chart'" in page
    for mechanism in ppdp.evaluate.advice.MECHANISMS:
        assert f"<th scope=\"row\">{mechanism}" in page
    # age and zip were left to the values present: the presence leak is explained.
    assert "Domains from the values present." in page


def test_figures_are_served_and_a_wrong_one_is_404(client: TestClient,
                                                   journey: dict[str, Any]) -> None:
    figure = client.get(f"{journey['comparison']}/figures/0.png")
    assert figure.status_code == 200 and figure.content.startswith(b"\x89PNG")
    assert client.get(f"{journey['comparison']}/figures/99.png").status_code == 404
    assert client.get(f"{journey['comparison']}/figures/x.png").status_code == 422


@pytest.mark.parametrize(("form", "status", "words"), [
    ({"mechanism": "splu", "name": "other"}, 400, "was not compared"),
    ({"mechanism": "anatomy", "name": "../escape"}, 400, "a release name is"),
    ({"mechanism": "anatomy", "name": "visits-release"}, 409, "exists"),
])
def test_a_bad_publish_is_refused(client: TestClient, journey: dict[str, Any],
                                  form: dict[str, str], status: int, words: str) -> None:
    if form["mechanism"] == "anatomy":
        form = {**form, "mechanism": journey["chosen"]}
    answer = client.post(f"{journey['comparison']}/publish", data=form)
    assert answer.status_code == status and words in error_line(answer.text)


def source_table(visits: Path) -> ppdp.Table:
    return ppdp.read_table(visits, sensitive="disease", quasi_identifiers=["age", "sex", "zip"],
                           domains={"sex": ["F", "M"]}, observed_domains=True)


def test_queries_answer_as_the_release_beside_the_true_counts(client: TestClient,
                                                              journey: dict[str, Any],
                                                              visits: Path,
                                                              tmp_path: Path) -> None:
    release = ppdp.load_release(_workspace(client) / "releases" / "visits-release")
    query = "SELECT sex, COUNT(*) FROM t WHERE disease = 'flu' GROUP BY sex"
    answer = client.post(f"{journey['release']}/query", data={"query": query})
    assert answer.status_code == 200
    estimate, truth = release.count(query), source_table(visits).count(query)
    rows = re.findall(r'<th scope="row">sex = (\w)</th><td>([\d,.]+)</td>.*?<td>([\d,]+)</td>\s*'
                      r'<td><svg', answer.text, re.S)
    shown = {sex: (float(value.replace(",", "")), float(true.replace(",", "")))
             for sex, value, true in rows}
    expected = {key["sex"]: (round(e.value, 1), t.value)
                for (key, e), (_, t) in zip(estimate.groups, truth.groups, strict=True)}
    assert shown == expected


def _workspace(client: TestClient) -> Path:
    return Path(client.app.state.workspace_root)


@pytest.mark.parametrize(("query", "words"), [
    ("", "type a count query"),
    ("age >>= 3", ""),
    ("nosuchcolumn = 1", "nosuchcolumn"),
    ("x" * (MAX_QUERY_CHARS + 1), "the limit is"),
])
def test_a_bad_query_is_one_line(client: TestClient, journey: dict[str, Any], query: str,
                                 words: str) -> None:
    answer = client.post(f"{journey['release']}/query", data={"query": query})
    assert answer.status_code == 400
    line = error_line(answer.text)
    assert line and words in line and "Traceback" not in answer.text


def test_the_attacks_show_baseline_and_bound(client: TestClient,
                                            journey: dict[str, Any]) -> None:
    pytest.importorskip("sklearn", reason="the attacks need the attack extra")
    answer = client.post(f"{journey['release']}/attack")
    assert answer.status_code == 200, error_line(answer.text)
    table = answer.text.split('id="attacks"')[1].split("</table>")[0]
    assert "<th scope=\"row\">inference</th>" in table
    assert "Baseline" in table and "Bound" in table


def test_the_release_downloads_as_a_zip_of_its_files(client: TestClient,
                                                     journey: dict[str, Any]) -> None:
    answer = client.get(f"{journey['release']}/download.zip")
    assert answer.status_code == 200
    archive = zipfile.ZipFile(io.BytesIO(answer.content))
    metadata = json.loads(archive.read("visits-release/release.json"))
    assert metadata["mechanism"] == journey["chosen"]
    root = _workspace(client) / "releases" / "visits-release"
    assert sorted(archive.namelist()) == sorted(
        f"visits-release/{p.relative_to(root).as_posix()}" for p in root.rglob("*")
        if p.is_file() and p.relative_to(root).parts[0] != "certificate")


def test_the_certificate_is_offered_as_this_ppdp_can(client: TestClient,
                                                     journey: dict[str, Any],
                                                     tmp_path: Path) -> None:
    page = client.get(journey["release"]).text
    assert client.get(f"{journey['release']}/certificate.zip").status_code == 404
    assert 'action="/releases/visits-release/certify"' in page
    answer = client.post(f"{journey['release']}/certify", data={"key": "no-such.key"})
    assert answer.status_code == 400 and "no key file" in error_line(answer.text)
    key = next(p for p in create_keys(tmp_path / "keys") if p.name == KEY_FILE)
    signed = client.post(f"{journey['release']}/certify", data={"key": str(key)})
    assert signed.status_code == 200, error_line(signed.text)
    download = client.get(f"{journey['release']}/certificate.zip")
    names = zipfile.ZipFile(io.BytesIO(download.content)).namelist()
    assert "visits-release-certificate/certificate.json" in names
    # ppdp verify --source checks the commitment against the upload the release came from,
    # which the command line shown for ppdp certify names.
    release = _workspace(client) / "releases" / "visits-release"
    meta = json.loads((_workspace(client) / "recipes" / "visits-release.json").read_text())
    upload = meta["path"]
    assert Path(upload).is_file()
    assert certify_command(Published("visits-release", release, meta)) == shlex.join(
        ["ppdp", "certify", str(release), "--source", upload, "--key", "keys/signing.key"])
    checked = verify(release, public_key=key.parent / PUBLIC_KEY_FILE, source=upload,
                     commitment_key=load_commitment_key(key.parent / COMMITMENT_KEY_FILE))
    assert checked.ok, checked.failed()
    assert "source commitment" in [check.name for check in checked.checks]


def test_the_command_line_shown_makes_the_same_release(client: TestClient,
                                                       journey: dict[str, Any], visits: Path,
                                                       tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    command = client.get(f"{journey['release']}/reproduce.sh").text.split()
    assert command[:3] == ["ppdp", "publish", "visits.csv"]
    assert "--seed" not in command and "--observed-domains" in command
    (tmp_path / "visits.csv").write_bytes(visits.read_bytes())
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli_app, command[1:])
    assert result.exit_code == 0, result.output
    made = ppdp.load_release(tmp_path / "visits-release")
    saved = ppdp.load_release(_workspace(client) / "releases" / "visits-release")
    assert (made.mechanism, made.parameters, made.schema) == \
        (saved.mechanism, saved.parameters, saved.schema)


def test_the_python_code_shown_makes_the_same_release(client: TestClient,
                                                      journey: dict[str, Any], visits: Path,
                                                      tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    code = client.get(f"{journey['release']}/reproduce.py").text
    (tmp_path / "visits.csv").write_bytes(visits.read_bytes())
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "reproduce.py", "exec"), {})  # the code the custodian copies
    made = ppdp.load_release(tmp_path / "visits-release")
    saved = ppdp.load_release(_workspace(client) / "releases" / "visits-release")
    assert (made.mechanism, made.parameters, made.schema) == \
        (saved.mechanism, saved.parameters, saved.schema)


def test_a_saved_release_opens_after_a_restart(client: TestClient, journey: dict[str, Any],
                                               visits: Path) -> None:
    fresh = TestClient(create_workbench_app(_workspace(client)), base_url="http://127.0.0.1")
    assert "visits-release" in fresh.get("/").text
    query = "disease = 'flu'"
    answer = fresh.post("/releases/visits-release/query", data={"query": query})
    assert answer.status_code == 200
    truth = source_table(visits).count(query).value
    assert f"<td>{truth:,.0f}</td>" in answer.text


def test_the_serve_extra_missing_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    import ppdp.cli.serve as serve

    monkeypatch.setattr(serve, "SERVE_PACKAGES", ("fastapi", "no_such_module_for_ppdp"))
    result = CliRunner().invoke(cli_app, ["ui", "--no-browser"])
    assert result.exit_code == 3
    assert "ppdp ui needs the serve extra (no_such_module_for_ppdp missing): pip install " \
        "'ppdp[serve]'" in " ".join(result.output.split())


def test_the_workspace_is_not_written_outside(client: TestClient,
                                              journey: dict[str, Any]) -> None:
    root = _workspace(client)
    assert sorted(p.name for p in root.iterdir()) == ["recipes", "releases", "uploads"]
    assert os.listdir(root / "recipes") == ["visits-release.json"]


def test_a_form_from_another_site_is_refused(client: TestClient,
                                             journey: dict[str, Any]) -> None:
    answer = client.post(f"{journey['release']}/query", data={"query": "sex = 'F'"},
                         headers={"Origin": "https://elsewhere.example"})
    assert answer.status_code == 403
    assert error_line(answer.text) == "a request from another site's page is refused"
    same = client.post(f"{journey['release']}/query", data={"query": "sex = 'F'"},
                       headers={"Origin": "http://127.0.0.1"})
    assert same.status_code == 200


def test_another_host_name_is_refused(client: TestClient) -> None:
    assert client.get("/", headers={"Host": "attacker.example"}).status_code == 400


def test_ppdp_ui_serves_on_127_0_0_1(tmp_path: Path) -> None:
    import subprocess
    import sys
    import urllib.request

    env = {**os.environ, "PYTHONPATH": str(Path(ppdp.__file__).parents[1])}
    process = subprocess.Popen(
        [sys.executable, "-c", "from ppdp.cli import main; main()", "ui", "--port", "0",
         "--no-browser", "--workspace", str(tmp_path / "ws")],
        stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        address = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert address, line
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(address.group(0), timeout=5) as answer:
                    assert answer.status == 200 and b'lang="en"' in answer.read()
                break
            except OSError:
                assert time.monotonic() < deadline, "the workbench did not answer"
                time.sleep(0.1)
        assert (tmp_path / "ws").is_dir()
        # The same server answers count queries of the workspace's releases (none yet).
        with urllib.request.urlopen(f"{address.group(0)}api/releases", timeout=5) as answer:
            assert answer.status == 200 and json.loads(answer.read())["releases"] == []
    finally:
        process.terminate()
        process.wait(10)


def test_the_python_code_of_adult_declares_a_changed_domain() -> None:
    from ppdp.workbench._recipe import Recipe

    recipe = Recipe("adult", None, "occupation", ("age", "sex"), {"age": "10..99"}, False,
                    all_quasi_identifiers=False)
    code = recipe.python("anatomy", {"l": 4}, "unused")
    namespace: dict[str, Any] = {}
    exec(compile(code.split("mechanism =")[0], "reproduce.py", "exec"), namespace)
    read = recipe.read()
    assert namespace["table"].schema == read.schema
    assert read.schema["age"].domain == tuple(range(10, 100))
    assert "--domain age=10..99" in recipe.command("anatomy", {"l": 4}, "out")


def test_the_workbench_mounts_under_a_path_of_another_app(tmp_path: Path) -> None:
    from fastapi import FastAPI

    parent = FastAPI()
    parent.mount("/workbench", create_workbench_app(tmp_path))
    client = TestClient(parent, base_url="http://127.0.0.1")
    home = client.get("/workbench/").text
    assert 'href="/workbench/static/workbench.css"' in home
    assert 'action="/workbench/open/bundled"' in home and 'action="/open' not in home
    opened = client.post("/workbench/open/bundled", data={"name": "adult"},
                         follow_redirects=False)
    assert opened.headers["location"].startswith("/workbench/tables/")
    assert client.get("/workbench/static/workbench.js").status_code == 200
    assert client.get("/workbench/releases/none").status_code == 404


def test_the_workbench_answers_count_queries_of_its_releases(tmp_path: Path) -> None:
    """With the port it listens on, the workbench's server answers ``ppdp serve``'s
    endpoints at /api over the workspace's releases, the answers `Release.count`'s."""
    table = ppdp.datasets.adult(sensitive="occupation").take(list(range(0, 30_000, 30)))
    release = ppdp.Anatomy(l=3).publish(table, random_state=1)
    release.save(tmp_path / "ws" / "releases" / "adult-anatomy")
    app = create_workbench_app(tmp_path / "ws", port=8000)
    with TestClient(app, base_url="http://127.0.0.1:8000") as api:
        listed = api.get("/api/releases").json()["releases"]
        assert [entry["name"] for entry in listed] == ["adult-anatomy"]
        query = "sex = 'Female' AND occupation = 'Sales'"
        answer = api.post("/api/releases/adult-anatomy/count", json={"query": query})
        assert answer.status_code == 200
        assert answer.json()["estimate"] == release.count(query).value
        assert api.get("/").status_code == 200

