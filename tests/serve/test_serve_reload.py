"""A release saved over a served one is answered new and whole: between requests, and under
load from 32 clients of a real server on 127.0.0.1 (never an answer of neither release)."""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

import ppdp
from ppdp.jsonable import json_ready
from ppdp.release.load import load_release
from ppdp.serve import ServeConfig, create_app
from ppdp.table.table import Table

QUERIES = ["sex = 'Female'", "age >= 40", "occupation = 'Sales' AND sex = 'Male'",
           "race = 'White' OR age < 25", "salary-class = '>50K'", "education = 'Bachelors'",
           "SELECT COUNT(*) FROM t GROUP BY sex", "marital-status = 'Never-married'"]
CLIENTS = 32
REQUESTS = 2_000


def answers(path: Path) -> list[dict[str, Any]]:
    release = load_release(path)
    return [json_ready(release.count(q).to_dict()) for q in QUERIES]


@pytest.fixture(scope="module")
def versions(tmp_path_factory: pytest.TempPathFactory, sample: Table) -> dict[str, Any]:
    """Two Anatomy releases of the sample (different l), saved apart, with their answers."""
    folder = tmp_path_factory.mktemp("versions")
    old = ppdp.Anatomy(l=3).publish(sample, random_state=1)
    new = ppdp.Anatomy(l=4).publish(sample, random_state=2)
    old.save(folder / "old")
    new.save(folder / "new")
    return {"old": old, "new": new, "old_answers": answers(folder / "old"),
            "new_answers": answers(folder / "new")}


def test_a_release_replaced_between_requests_is_served_new(tmp_path, versions, make_client):
    (tmp_path / "served").mkdir()
    versions["old"].save(tmp_path / "served" / "adult")
    with make_client(tmp_path / "served") as api:
        count = api.post("/releases/adult/counts", json={"queries": QUERIES}).json()
        assert count["answers"] == versions["old_answers"]
        versions["new"].save(tmp_path / "served" / "adult", overwrite=True)
        assert api.get("/releases/adult").json()["parameters"]["l"] == 4
        count = api.post("/releases/adult/counts", json={"queries": QUERIES}).json()
        assert count["answers"] == versions["new_answers"]
        assert count["answers"] != versions["old_answers"]


@pytest.fixture
def server(tmp_path: Path, versions: dict[str, Any]) -> Iterator[tuple[int, Path]]:
    """A server on 127.0.0.1 (a free port) over a directory holding the old release."""
    directory = tmp_path / "served"
    directory.mkdir()
    versions["old"].save(directory / "adult")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    config = ServeConfig(directory, host="127.0.0.1", port=port)
    running = uvicorn.Server(uvicorn.Config(create_app(config), log_level="warning"))
    thread = threading.Thread(target=running.run, kwargs={"sockets": [listener]})
    thread.start()
    try:
        while not running.started and thread.is_alive():
            threading.Event().wait(0.01)
        yield port, directory
    finally:
        running.should_exit = True
        thread.join(timeout=10)
        listener.close()


def test_32_clients_see_the_old_or_the_new_release_whole(server, versions):
    port, directory = server
    old, new = versions["old_answers"], versions["new_answers"]
    errors: list[str] = []
    seen = {"old": 0, "new": 0}
    done = threading.Semaphore(0)
    lock = threading.Lock()

    def client(number: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            for request in range(number, REQUESTS, CLIENTS):
                if request % 50 == 0:  # a batch: all of it from one release
                    path, body = "/releases/adult/counts", {"queries": QUERIES}
                else:
                    index = request % len(QUERIES)
                    path, body = "/releases/adult/count", {"query": QUERIES[index]}
                connection.request("POST", path, json.dumps(body),
                                   {"Content-Type": "application/json"})
                response = connection.getresponse()
                answer = json.loads(response.read())
                done.release()
                if response.status != 200:
                    errors.append(f"{response.status}: {answer}")
                    continue
                if "answers" in answer:
                    which = ["old"] if answer["answers"] == old else \
                        ["new"] if answer["answers"] == new else []
                else:
                    which = [name for name, expected in (("old", old), ("new", new))
                             if answer == expected[index]]
                if not which:
                    errors.append(f"{path} answered neither release: {answer}")
                with lock:
                    for name in which:
                        seen[name] += 1
        except Exception as exc:  # counted as an error, not lost in the thread
            errors.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for _ in range(REQUESTS // 3):  # a third of the way through, the release is replaced
        done.acquire()
    versions["new"].save(directory / "adult", overwrite=True)
    for thread in threads:
        thread.join()
    assert errors == []
    assert seen["old"] >= REQUESTS // 3 - CLIENTS
    assert seen["new"] > 0
