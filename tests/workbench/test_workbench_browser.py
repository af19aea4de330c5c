"""The workbench in a real browser: headless Chromium (Debian's package) driven by Playwright,
against the workbench served by uvicorn on a free port of 127.0.0.1. A custodian's whole
journey on Adult and on a small CSV uploaded by the test, keyboard use, and an accessibility
scan with axe-core on every page (no serious or critical violation).

Skipped with the reason when Chromium or Playwright is absent, unless PPDP_REQUIRE_BROWSER=1
(CI), which makes their absence a failure. On a failure, a screenshot of the page is saved in
the test's temporary folder and its path printed."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import threading
import time
import zipfile
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("PPDP_CHROMIUM", "/usr/bin/chromium")
REQUIRED = os.environ.get("PPDP_REQUIRE_BROWSER") == "1"
_MISSING = [name for name in ("fastapi", "uvicorn", "jinja2", "multipart", "playwright",
                              "axe_playwright_python") if find_spec(name) is None]
if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
    _MISSING.append(f"Chromium ({CHROMIUM})")
if _MISSING:
    if REQUIRED:
        raise RuntimeError(f"PPDP_REQUIRE_BROWSER=1 but missing: {', '.join(_MISSING)}")
    pytest.skip(f"browser tests need {', '.join(_MISSING)}", allow_module_level=True)

import uvicorn  # noqa: E402  (after the skip)
from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402
from workbench_helpers import visits_csv  # noqa: E402

from ppdp.workbench import create_workbench_app  # noqa: E402

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
AXE = Path(__import__("axe_playwright_python").__file__).parent / "axe.min.js"
COMPARE_S = 60_000
"""Milliseconds a comparison may take (on a 2,000-row sample it takes a few seconds)."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The workbench served by uvicorn in a thread on a free port of 127.0.0.1."""
    workspace = tmp_path_factory.mktemp("workspace")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    config = uvicorn.Config(create_workbench_app(workspace), log_level="warning")
    serving = uvicorn.Server(config)
    thread = threading.Thread(target=serving.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not serving.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", workspace
    serving.should_exit = True
    thread.join(10)
    listener.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A page of its own; on a failure its screenshot is saved and the path printed."""
    context = browser.new_context(accept_downloads=True, viewport={"width": 1200,
                                                                    "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    yield opened
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        shot = tmp_path / f"{request.node.name}.png"
        with contextlib.suppress(Exception):
            opened.screenshot(path=str(shot), full_page=True)
            print(f"\nscreenshot of the failed page: {shot}")
    context.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


def accessible(page: Page) -> None:
    """axe-core run in the page: no serious or critical violation."""
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    bad = [f"{v['id']} ({v['impact']}): {v['help']} at "
           f"{[n['target'] for n in v['nodes']][:3]}"
           for v in result["violations"] if v["impact"] in ("serious", "critical")]
    assert bad == [], f"{page.url}: {bad}"


def compare_and_publish(page: Page, name: str) -> str:
    """From a table's page as set: compare, wait for the recommendation, publish as
    ``name``; the mechanism published."""
    page.get_by_role("button", name="Compare the mechanisms").click()
    expect(page.locator("#recommendation")).to_be_visible(timeout=COMPARE_S)
    accessible(page)
    mechanism = page.locator("#mechanism").input_value()
    page.get_by_label("Release name").fill(name)
    page.get_by_role("button", name="Publish").click()
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Release {name}")
    return mechanism


def query_attack_download(page: Page, name: str, query: str, tmp_path: Path) -> int:
    """On a release's page: a query answered beside the true count, the attacks, the zip;
    the number of answers (groups) of the query."""
    page.get_by_label("Count query").fill(query)
    page.get_by_role("button", name="Count").click()
    answers = page.locator("#answers")
    expect(answers).to_be_visible()
    rows = answers.locator("tbody tr").count()
    assert rows >= 1 and "True count" in answers.inner_text()
    accessible(page)
    page.get_by_role("button", name="Run the attacks").click()
    expect(page.locator("#attacks")).to_be_visible(timeout=30_000)
    assert "Baseline" in page.locator("#attacks").inner_text()
    with page.expect_download() as download:
        page.locator("#download-release").click()
    archive = tmp_path / "release.zip"
    download.value.save_as(archive)
    with zipfile.ZipFile(archive) as opened:
        assert json.loads(opened.read(f"{name}/release.json"))["n_rows"] > 0
    expect(page.locator("#command")).to_contain_text("ppdp publish")
    accessible(page)
    return rows


def test_a_custodian_publishes_adult(server: tuple[str, Path], page: Page,
                                     tmp_path: Path) -> None:
    address, workspace = server
    page.goto(address)
    accessible(page)
    page.get_by_role("button", name="Open Adult").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("adult")
    accessible(page)
    # The codebook's domains are suggested; occupation is the sensitive column.
    expect(page.get_by_label("Public domain of age")).to_have_value("17..90")
    expect(page.get_by_label("Role of occupation")).to_have_value("sensitive")
    page.get_by_label("Role of native-country").select_option("ignored")
    page.get_by_role("button", name="Use beta=0.25").click()
    expect(page.get_by_label("The privacy to meet")).to_have_value("beta=0.25")
    expect(page.get_by_label("Try on a random sample")).to_be_checked()
    mechanism = compare_and_publish(page, "adult-workbench")
    query_attack_download(page, "adult-workbench",
                          "age >= 40 AND sex = 'Female' AND occupation = 'Sales'", tmp_path)
    command = page.locator("#command").inner_text()
    assert f"-m {mechanism}" in command and "--qi" in command
    assert (workspace / "releases" / "adult-workbench" / "release.json").is_file()


def test_a_custodian_uploads_a_csv(server: tuple[str, Path], page: Page,
                                   tmp_path: Path) -> None:
    address, _ = server
    data = visits_csv(tmp_path / "visits.csv")
    page.goto(address)
    page.get_by_label("CSV or Parquet file").set_input_files(str(data))
    page.get_by_role("button", name="Open the file").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("visits.csv")
    page.get_by_label("Role of record").select_option("ignored")
    page.get_by_label("Role of disease").select_option("sensitive")
    page.get_by_label("Public domain of sex").fill("F,M")
    page.get_by_label("Public domain of age").fill("0..120")
    expect(page.locator("#observed-warning")).to_contain_text("reveals")
    compare_and_publish(page, "visits-workbench")
    groups = query_attack_download(
        page, "visits-workbench", "SELECT sex, COUNT(*) FROM t WHERE disease = 'flu' GROUP BY sex",
        tmp_path)
    assert groups == 2


def test_a_bad_goal_is_shown_in_the_page(server: tuple[str, Path], page: Page) -> None:
    address, _ = server
    page.goto(address)
    page.get_by_role("button", name="Open Adult").click()
    page.get_by_label("The privacy to meet").fill("beta=2")
    page.get_by_role("button", name="Compare the mechanisms").click()
    expect(page.locator("#error")).to_contain_text("beta")
    accessible(page)


def test_the_keyboard_reaches_the_controls_with_a_visible_focus(server: tuple[str, Path],
                                                                page: Page) -> None:
    address, _ = server
    page.goto(address)
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.textContent")
    assert focused == "Skip to the content"
    for _ in range(4):
        page.keyboard.press("Tab")
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline not in ("none", "")
    # Enter on the focused button opens Adult, as a click does.
    page.get_by_role("button", name="Open Adult").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", level=1)).to_contain_text("adult")
