"""Where ``ppdp evaluate`` finds FARS and MEPS when --data is not given: ../shared/datasets of
the current directory, or beside the checkout it runs from, never a folder inside an installed
package; without one, the experiments that need it say to pass --data."""

from __future__ import annotations

from pathlib import Path

import pytest

from ppdp.errors import PpdpError
from ppdp.evaluate.experiments import default_data, tables
from ppdp.evaluate.result import ExperimentResult


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This module as a wheel installs it, run from a folder with no ../shared/datasets."""
    module = tmp_path / "venv" / "lib" / "python3.12" / "site-packages" / "ppdp" / "evaluate"
    monkeypatch.setattr(tables, "__file__", str(module / "experiments" / "tables.py"))
    work = tmp_path / "home" / "work"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    return tmp_path


def test_an_installed_package_has_no_default_data_folder(installed: Path) -> None:
    assert default_data() is None
    with pytest.raises(PpdpError, match=r"FARS is not bundled and no data folder was found "
                                        r"\(\.\./shared/datasets of the current directory\): "
                                        r"pass data=DIR \(CLI: --data DIR\)"):
        tables.load_table(None, "fars", "iinjury")
    with pytest.raises(PpdpError, match="MEPS is not bundled"):
        tables.load_table(None, "meps", "ICD9CODX")
    # Adult is bundled, and hierarchies only missing make a note.
    adult = tables.load_table(None, "adult", "occupation")
    result = ExperimentResult("x", "x", {})
    assert tables.load_hierarchies(None, "fars", adult, result) is None and result.notes


def test_the_shared_datasets_of_the_current_directory(installed: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    shared = installed / "home" / "shared" / "datasets"
    shared.mkdir(parents=True)
    assert default_data() == Path.cwd().parent / "shared" / "datasets"
    with pytest.raises(PpdpError, match=r"FARS is not at .*fars_int\.csv; pass data=DIR"):
        tables.load_table(default_data(), "fars", "iinjury")
