"""The documentation's Python examples run as written (every ```python block of docs/*.md, in
order, each page in a namespace of its own, from a temporary working directory; ```py blocks
are excerpts of code shown elsewhere in full)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ppdp.plan.registry import MECHANISM_MODULES

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda page: page.name)
def test_the_python_examples_run(page: Path, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = BLOCK.findall(page.read_text())
    assert blocks, f"{page.name} has no python example"
    monkeypatch.chdir(tmp_path)
    # A page may register a mechanism: the registry is restored after it.
    registered = dict(MECHANISM_MODULES)
    names: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    try:
        for number, block in enumerate(blocks):
            exec(compile(block, f"{page.name}, python block {number}", "exec"), names)
    finally:
        MECHANISM_MODULES.clear()
        MECHANISM_MODULES.update(registered)
