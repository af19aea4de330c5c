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
    # ppdp serve (the serve extra) takes requests from the network.
    ("starlette", "0.47.2", "CVE-2025-54121: a large multipart upload blocks the event loop"),
    ("starlette", "0.49.1", "CVE-2025-62727: a crafted Range header takes quadratic time"),
    ("h11", "0.16.0", "CVE-2025-43859: lenient chunked-encoding parsing allows request "
                      "smuggling (uvicorn's HTTP parser)"),
]


def declared() -> dict[str, Requirement]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    texts = [*project["dependencies"], *project["optional-dependencies"]["serve"]]
    return {Requirement(text).name: Requirement(text) for text in texts}


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


ROOT = PYPROJECT.parent


def test_audit_includes_pip_and_setuptools() -> None:
    # A plain `pip freeze` leaves pip and setuptools out of the audited set, and both have
    # had advisories (pip 23.2.1 and setuptools 65.5.0 were audited as clean that way).
    freeze = [line for line in (ROOT / "tools" / "audit_dependencies").read_text().splitlines()
              if "pip freeze" in line and not line.lstrip().startswith("#")]
    assert freeze and all("--all" in line.split() for line in freeze)


@pytest.mark.parametrize("path", [".ci/run", "README.md"])
def test_environments_upgrade_pip_and_setuptools(path: str) -> None:
    # Every virtual environment made by CI or the quick start upgrades pip and setuptools
    # before installing ppdp: the ones a fresh venv gets may be old releases with advisories.
    made = [line for line in (ROOT / path).read_text().splitlines()
            if "python3 -m venv .venv " in line]
    assert made
    for line in made:
        steps = [step.strip() for step in line.split("&&")]
        upgrade = ".venv/bin/pip install -q --upgrade pip setuptools"
        assert upgrade in steps, line
        install = next(i for i, step in enumerate(steps) if " -e " in step)
        assert steps.index(upgrade) < install, line
