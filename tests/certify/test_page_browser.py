"""The certificate's page renders in a real browser: a headless Chromium (the distribution's
package) driven by Playwright shows every section's heading, and its screenshot is not blank.

Skipped, with the reason, where no browser or no Playwright is found, unless
``PPDP_REQUIRE_BROWSER=1`` (then those fail)."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from ppdp.certify._pdf import BROWSER_FLAGS, find_browser
from tests.certify.sources import Certified

SECTIONS = ("Release certificate", "What was published", "Privacy guarantee",
            "Measured on this release", "Attacks on the release", "Accuracy of counts",
            "What this certificate does not cover", "Source data commitment",
            "Signature and validity", "How to verify")
REQUIRED = os.environ.get("PPDP_REQUIRE_BROWSER") == "1"


def _missing(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"{reason} (PPDP_REQUIRE_BROWSER=1)")
    pytest.skip(reason)


def test_the_page_renders_in_chromium(certified: Certified, tmp_path: Path) -> None:
    browser_path = find_browser()
    if browser_path is None:
        _missing("no Chromium found (chromium, chromium-browser, google-chrome or "
                 "$PPDP_BROWSER)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package is not installed")
    from PIL import Image

    screenshot = tmp_path / "certificate.png"
    page_file = certified.release / "certificate" / "certificate.html"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=browser_path,
                                             args=list(BROWSER_FLAGS))
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 1400})
            page.goto(page_file.resolve().as_uri())
            page.screenshot(path=str(screenshot), full_page=True)
            try:
                for name in SECTIONS:
                    heading = page.get_by_role("heading", name=name, exact=True)
                    assert heading.count() == 1, f"heading {name!r}: {heading.count()} found"
                    assert heading.is_visible(), f"heading {name!r} is not visible"
                fingerprint = certified.document["signature"]["key_fingerprint"]
                assert page.get_by_text(fingerprint).first.is_visible()
                image = Image.open(io.BytesIO(screenshot.read_bytes()))
                assert image.format == "PNG" and image.height > 1400
                colours = image.convert("L").getextrema()
                assert colours[1] - colours[0] > 100, f"a blank screenshot: {colours}"
            except AssertionError:
                print(f"screenshot of the failing page: {screenshot}")
                raise
        finally:
            browser.close()
