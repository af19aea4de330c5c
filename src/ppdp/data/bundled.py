"""The datasets bundled with ppdp: their names and the folder of their files (the package's
``datasets`` folder: tables, codebook domains, ARX hierarchies and their attribution)."""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable

NAMES: tuple[str, ...] = ("adult",)
"""The bundled datasets, by name."""


def folder() -> Traversable:
    """The folder of the bundled files, read as package resources (``ppdp/datasets``)."""
    return resources.files("ppdp") / "datasets"


def bundled_name(name: str) -> str:
    """``name`` as a bundled dataset's name (case and spaces aside); ValueError otherwise."""
    key = name.strip().lower()
    if key not in NAMES:
        raise ValueError(f"unknown dataset {name!r}; known datasets: {', '.join(NAMES)}")
    return key
