"""What the query server refuses: a bind beyond the loopback interface without a token,
requests without the token when there is one, other origins, other Host names, oversized
bodies; and the command's one-line errors."""

from __future__ import annotations

import importlib.util
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import ppdp
import ppdp.serve
import ppdp.serve.catalog
from ppdp.cli import app
from ppdp.serve import Limits, ServeConfig
from ppdp.serve.config import TOKEN_ENV, check_bind, is_loopback, read_token
from ppdp.serve.guard import allowed_hosts

TOKEN = "a-token-of-enough-characters"
runner = CliRunner()


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.1.2.3", True), ("localhost", True), ("::1", True),
    ("0.0.0.0", False), ("::", False), ("192.168.1.4", False), ("example.org", False)])
def test_a_bind_beyond_the_loopback_interface_needs_a_token(host, loopback, releases):
    assert is_loopback(host) is loopback
    if loopback:
        check_bind(host, None)
        return
    with pytest.raises(ValueError, match="give a token"):
        ServeConfig(releases, host=host)
    assert ServeConfig(releases, host=host, token=TOKEN).token == TOKEN


def test_a_short_token_or_a_missing_directory_is_refused(releases, tmp_path):
    with pytest.raises(ValueError, match="at least 16"):
        ServeConfig(releases, token="short")
    with pytest.raises(ValueError, match="not a directory"):
        ServeConfig(tmp_path / "none")
    with pytest.raises(ValueError, match="max_batch must be at least 1"):
        Limits(max_batch=0)


def test_the_token_comes_from_its_file_or_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    assert read_token(None) is None
    monkeypatch.setenv(TOKEN_ENV, "from-the-environment")
    assert read_token(None) == "from-the-environment"
    (tmp_path / "token").write_text(f"{TOKEN}\n")
    assert read_token(tmp_path / "token") == TOKEN
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(ValueError, match="is empty"):
        read_token(tmp_path / "empty")


def test_the_token_is_required_when_set(releases, make_client):
    with make_client(releases, token=TOKEN) as api:
        for headers in ({}, {"Authorization": "Bearer wrong-token-of-enough-chars"},
                        {"Authorization": TOKEN}, {"Authorization": f"Basic {TOKEN}"}):
            answer = api.get("/releases", headers=headers)
            assert answer.status_code == 401
            assert answer.headers["www-authenticate"] == "Bearer"
            assert "token is required" in answer.json()["error"]
        assert api.get("/openapi.json").status_code == 401
        answer = api.post("/releases/splu/count", json={"query": "age > 30"},
                          headers={"Authorization": f"Bearer {TOKEN}"})
        assert answer.status_code == 200


@pytest.mark.parametrize("headers", [
    {"Origin": "http://evil.example"}, {"Origin": "http://127.0.0.1:8001"},
    {"Origin": "https://127.0.0.1:8000"}, {"Origin": "null"},
    {"Sec-Fetch-Site": "cross-site"}])
def test_cross_origin_requests_are_refused_without_cors_headers(api, headers):
    answer = api.post("/releases/splu/count", json={"query": "age > 30"}, headers=headers)
    assert answer.status_code == 403
    assert answer.json() == {"error": "cross-origin requests are refused"}
    assert not [h for h in answer.headers if h.lower().startswith("access-control-")]


def test_the_servers_own_origin_is_answered(api):
    answer = api.get("/releases/splu", headers={"Origin": "http://127.0.0.1:8000",
                                                "Sec-Fetch-Site": "same-origin"})
    assert answer.status_code == 200


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1:9999"])
def test_another_host_name_is_refused(api, host):
    answer = api.get("/releases", headers={"Host": host})
    assert answer.status_code == 400
    assert answer.json() == {"error": "the Host header does not name this server"}


def test_localhost_names_the_loopback_server(api):
    assert api.get("/releases", headers={"Host": "localhost:8000"}).status_code == 200


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST", "127.0.0.2", "::1"])
def test_every_loopback_bind_answers_the_loopback_names(host):
    hosts = allowed_hosts(host, 8000)
    assert hosts is not None
    assert {"127.0.0.1:8000", "localhost:8000", "[::1]:8000"} <= hosts
    assert "example.org:8000" not in hosts


def test_an_oversized_body_is_refused_before_it_is_read(releases, make_client):
    with make_client(releases, limits=Limits(max_body_bytes=1_000)) as api:
        answer = api.post("/releases/splu/count", json={"query": "x" * 2_000})
        assert answer.status_code == 413
        assert answer.json() == {"error": "the request body is larger than 1,000 bytes"}

        def chunks() -> Any:  # sent without a Content-Length
            yield b'{"query": "'
            yield b"x" * 2_000
            yield b'"}'

        answer = api.post("/releases/splu/count", content=chunks(),
                          headers={"content-type": "application/json"})
        assert answer.status_code == 413


def test_the_command_refuses_a_non_local_bind_without_a_token(releases, monkeypatch):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    started: list[ServeConfig] = []
    monkeypatch.setattr(ppdp.serve, "run", started.append)
    result = runner.invoke(app, ["serve", str(releases), "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "give a token" in result.output
    assert not started


def test_the_command_starts_with_a_token_file(releases, monkeypatch, tmp_path):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    started: list[ServeConfig] = []
    monkeypatch.setattr(ppdp.serve, "run", started.append)
    (tmp_path / "token").write_text(TOKEN)
    result = runner.invoke(app, ["serve", str(releases), "--host", "0.0.0.0", "--port", "8123",
                                 "--token-file", str(tmp_path / "token"), "--max-batch", "7"])
    assert result.exit_code == 0, result.output
    [config] = started
    assert (config.host, config.port, config.token, config.limits.max_batch) == \
        ("0.0.0.0", 8123, TOKEN, 7)


def test_the_command_without_the_extra_says_which_to_install(releases, monkeypatch):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "fastapi" else find_spec(name, *a))
    result = runner.invoke(app, ["serve", str(releases)])
    assert result.exit_code != 0
    assert "needs the serve extra" in result.output
    assert "pip install 'ppdp[serve]'" in " ".join(result.output.split())


def test_with_a_public_key_only_certified_releases_are_served(tmp_path, sample, make_client):
    """A release whose certificate verifies is served; one whose certificate was changed
    after signing, or that has none, is refused in one line."""
    from ppdp.certify import certify, write_certificate
    from ppdp.release.keys import create_keys, load_commitment_key, load_private_key

    directory = tmp_path / "releases"
    directory.mkdir()
    source = tmp_path / "sample.parquet"
    pq.write_table(sample.to_arrow(), source)
    create_keys(tmp_path / "keys")
    for name in ("signed", "changed", "unsigned"):
        release = ppdp.Anatomy(l=3).publish(sample, random_state=1).save(directory / name)
        if name == "unsigned":
            continue
        document = certify(release, sample, source=str(source), attacks=False,
                           private_key=load_private_key(tmp_path / "keys" / "signing.key"),
                           commitment_key=load_commitment_key(tmp_path / "keys" /
                                                              "commitment.key"))
        write_certificate(document, release / "certificate")
    changed = directory / "changed" / "certificate" / "certificate.json"
    changed.write_bytes(changed.read_bytes().replace(b'"l":3', b'"l":4'))
    query = {"query": "sex = 'Female' AND occupation = 'Sales'"}
    with make_client(directory, public_key=tmp_path / "keys" / "signing.pub") as api:
        answer = api.post("/releases/signed/count", json=query)
        assert answer.status_code == 200
        expected = ppdp.load_release(directory / "signed").count(query["query"])
        assert answer.json()["estimate"] == expected.value
        for name, reason in (("changed", "changed after signing"),
                             ("unsigned", "certificate")):
            refused = api.post(f"/releases/{name}/count", json=query)
            assert refused.status_code >= 400
            assert reason in refused.json()["error"]
            assert "\n" not in refused.json()["error"]


def test_a_websocket_is_refused(api):
    from starlette.websockets import WebSocketDisconnect

    with pytest.raises(WebSocketDisconnect) as closed, api.websocket_connect("/releases"):
        pass
    assert closed.value.code == 1008


def test_a_content_length_that_is_not_a_number_is_refused(api):
    answer = api.post("/releases/splu/count", content=b'{"query": "age > 30"}',
                      headers={"content-type": "application/json", "content-length": "x1"})
    assert answer.status_code == 400
    assert answer.json() == {"error": "the Content-Length header is not a number"}


def test_a_public_key_that_is_not_one_stops_the_command_before_it_serves(releases, tmp_path,
                                                                         monkeypatch):
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: pytest.fail("the server started"))
    key = tmp_path / "signing.pub"
    key.write_text("not a key\n")
    result = runner.invoke(app, ["serve", str(releases), "--public-key", str(key)])
    assert result.exit_code == 2
    assert "is not a public key" in result.output
