"""Take the screenshots of docs/how-to/workbench.md: the workbench served on a free port of
127.0.0.1, driven through the journey on the bundled Adult table by Playwright in headless
Chromium, each page saved as a PNG (narrow, 8-bit palette: small files).

    python tools/workbench_screenshots.py [--chromium /usr/bin/chromium] [-o docs/how-to/img]
"""

from __future__ import annotations

import argparse
import io
import socket
import tempfile
import threading
import time
from pathlib import Path

import uvicorn
from PIL import Image
from playwright.sync_api import Page, expect, sync_playwright

from ppdp.workbench import create_workbench_app

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def save(page: Page, path: Path, *, clip_to: str | None = None) -> None:
    """The page (or one element of it) as a palette PNG."""
    shot = page.locator(clip_to).screenshot() if clip_to else page.screenshot()
    image = Image.open(io.BytesIO(shot)).convert("RGB").quantize(colors=64)
    image.save(path, optimize=True)
    print(f"wrote {path} ({path.stat().st_size / 1000:.0f} kB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("-o", "--output", type=Path, default=Path("docs/how-to/img"))
    options = parser.parse_args()
    options.output.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as workspace:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        address = f"http://127.0.0.1:{listener.getsockname()[1]}"
        server = uvicorn.Server(uvicorn.Config(create_workbench_app(Path(workspace)),
                                               log_level="warning"))
        threading.Thread(target=server.run, kwargs={"sockets": [listener]},
                         daemon=True).start()
        while not server.started:
            time.sleep(0.05)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=options.chromium, args=ARGS)
            page = browser.new_page(viewport={"width": 1000, "height": 760})
            page.goto(address)
            save(page, options.output / "workbench-open.png")
            page.get_by_role("button", name="Open Adult").click()
            page.get_by_role("button", name="Use beta=0.25").click()
            save(page, options.output / "workbench-columns.png", clip_to="#columns")
            page.get_by_role("button", name="Compare the mechanisms").click()
            expect(page.locator("#recommendation")).to_be_visible(timeout=120_000)
            page.set_viewport_size({"width": 1000, "height": 1250})
            top = page.locator("#recommendation").bounding_box()
            page.evaluate(f"window.scrollTo(0, {top['y'] if top else 0} - 70)")
            save(page, options.output / "workbench-compare.png")
            page.set_viewport_size({"width": 1000, "height": 760})
            page.get_by_label("Release name").fill("adult-anatomy")
            page.get_by_role("button", name="Publish").click()
            page.get_by_label("Count query").fill(
                "SELECT sex, COUNT(*) FROM t WHERE occupation = 'Sales' AND age >= 40 "
                "GROUP BY sex")
            page.get_by_role("button", name="Count").click()
            page.locator("#answers").scroll_into_view_if_needed()
            save(page, options.output / "workbench-query.png", clip_to="#answers")
            page.get_by_role("button", name="Run the attacks").click()
            save(page, options.output / "workbench-attacks.png", clip_to="#attacks")
            browser.close()
        server.should_exit = True


if __name__ == "__main__":
    main()
