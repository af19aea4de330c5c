"""The declared dependency floors exclude releases with known vulnerabilities that reach ppdp
(CI's tools/audit_dependencies lists every known vulnerability of the resolved set)."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"

# (package, first fixed release, advisory): vulnerabilities in code paths ppdp uses.
ADVISORIES = [
    ("pyarrow", "14.0.1", "CVE-2023-47248: deserialisation of untrusted Parquet/IPC data "
                          "runs arbitrary code (load_release reads Parquet files)"),
]


def declared() -> dict[str, Requirement]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    return {Requirement(text).name: Requirement(text) for text in project["dependencies"]}


@pytest.mark.parametrize(("package", "fixed", "advisory"), ADVISORIES)
def test_floor_excludes_vulnerable_releases(package: str, fixed: str, advisory: str) -> None:
    requirement = declared()[package]
    fixed_version = Version(fixed)
    # Every release the specifier admits is at least the fixed one: the last vulnerable
    # release, just below it, is refused.
    last_vulnerable = Version(f"{fixed_version.major}.{fixed_version.minor}."
                              f"{fixed_version.micro - 1}") if fixed_version.micro else None
    assert last_vulnerable is None or not requirement.specifier.contains(last_vulnerable), \
        advisory
    assert Version(metadata.version(package)) >= fixed_version, advisory
