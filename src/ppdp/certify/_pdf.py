"""A certificate's page printed to PDF by a headless Chromium, where one is installed.

The browser is ``$PPDP_BROWSER`` when set, else the first of chromium, chromium-browser and
google-chrome on the PATH. It runs without network, sync or updates, in a fresh profile
directory that is removed afterwards, and prints the local page only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["BROWSER_FLAGS", "BROWSER_NAMES", "find_browser", "print_pdf"]

BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome")
BROWSER_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync")
"""Flags for every run of the browser: no window, no sandbox (containers lack the namespaces
it needs; the page is our own), no GPU, and nothing fetched or synced."""
TIMEOUT_SECONDS = 120


def find_browser() -> str | None:
    """The browser to print with: ``$PPDP_BROWSER`` (refused if it is not an executable), else
    the first of `BROWSER_NAMES` on the PATH; None when there is none."""
    named = os.environ.get("PPDP_BROWSER")
    if named:
        found = shutil.which(named)
        if found is None:
            raise ValueError(f"PPDP_BROWSER names {named!r}, which is not an executable "
                             f"browser; unset it or name chromium's path")
        return found
    for name in BROWSER_NAMES:
        found = shutil.which(name)
        if found is not None:
            return found
    return None


def print_pdf(page: Path, pdf: Path, *, browser: str) -> None:
    """Print the HTML file ``page`` to ``pdf`` with ``browser`` (headless, fresh profile)."""
    with tempfile.TemporaryDirectory(prefix="ppdp-browser-") as profile:
        command = [browser, *BROWSER_FLAGS, f"--user-data-dir={profile}",
                   "--no-pdf-header-footer", f"--print-to-pdf={pdf}", page.resolve().as_uri()]
        try:
            finished = subprocess.run(command, capture_output=True, timeout=TIMEOUT_SECONDS,
                                      check=False)
        except subprocess.TimeoutExpired:
            raise OSError(f"{browser} did not print the certificate within "
                          f"{TIMEOUT_SECONDS} s") from None
    if finished.returncode != 0 or not pdf.is_file() or pdf.stat().st_size == 0:
        lines = finished.stderr.decode("utf-8", "replace").strip().splitlines()
        raise OSError(f"{browser} could not print the certificate to PDF (exit "
                      f"{finished.returncode}){': ' + lines[-1] if lines else ''}")
