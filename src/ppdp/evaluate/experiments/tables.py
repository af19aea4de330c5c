"""The real tables the experiments read: Adult (bundled), FARS and MEPS (from a data folder),
and their generalization hierarchies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ppdp import datasets
from ppdp.data.hierarchy import read_hierarchies
from ppdp.errors import PpdpError
from ppdp.evaluate.result import ExperimentResult
from ppdp.io.read import read_table
from ppdp.table.table import Table

__all__ = ["MEPS_FILE", "default_data", "load_hierarchies", "load_table", "read_meps"]

SHARED_DATASETS = Path("shared") / "datasets"
"""Where the datasets too large to bundle are kept beside a checkout of the repository."""

FARS_FILE = Path("fars") / "fars_int.csv"
"""FARS (``load_table``), relative to the datasets folder."""

MEPS_FILE = Path("more") / "meps2005_conditions.csv"
"""MEPS 2005 (``read_meps``), relative to the datasets folder."""


def default_data() -> Path | None:
    """The data folder when none is given: ``../shared/datasets`` of the current directory
    (run from a checkout's root), else the one beside the checkout this module runs from;
    None when neither exists (an installed package has no such folder: FARS and MEPS then
    need ``data=DIR``, ``--data DIR``)."""
    # parents[4] of src/ppdp/evaluate/experiments/tables.py is the checkout; in an installed
    # package it is a folder of the environment, where no shared/datasets is.
    for folder in (Path.cwd().parent / SHARED_DATASETS,
                   Path(__file__).resolve().parents[4].parent / SHARED_DATASETS):
        if folder.is_dir():
            return folder
    return None


def _data_file(data: Path | None, name: str, file: Path) -> Path:
    """``file`` in the data folder, or one line saying where to find it."""
    if data is None:
        raise PpdpError(f"{name} is not bundled and no data folder was found "
                        f"(../{SHARED_DATASETS.as_posix()} of the current directory): pass "
                        f"data=DIR (CLI: --data DIR), a folder holding {file.as_posix()}")
    path = data / file
    if not path.is_file():
        raise PpdpError(f"{name} is not at {path}; pass data=DIR (CLI: --data DIR), a folder "
                        f"holding {file.as_posix()}")
    return path


def read_meps(path: str | Path, *, sensitive: str = "ICD9CODX") -> Table:
    """MEPS 2005 (26,756 people: DOBYY, SEX, RACEX, EDUCYEAR, marry, income and the ICD-9 code
    of each one's first listed condition), a real table with a categorical sensitive attribute
    of 555 values; the third table of the ambiguity comparison (Section 8.1's workloads).

    The codes are labels, read as text: ``V22`` and ``-9`` stand among mostly numeric codes,
    and reading the column as numbers would turn ``008`` into 8. The other columns are MEPS's
    integer codes (EDUCYEAR's -9..-1 are its codes for unknown answers, kept as values).
    Domains are the values present, as for FARS.
    """
    path = Path(path)
    if not path.is_file():
        raise PpdpError(f"MEPS is not at {path}; pass data=DIR (CLI: --data DIR) with the "
                        f"{MEPS_FILE} file")
    return read_table(path, sensitive=sensitive, non_numeric="text"
                      ).declare_observed_domains(warn=False)


def load_table(data: Path | None, dataset: str, sensitive: str) -> Table:
    """One of the papers' tables by name (``adult``, ``fars`` or ``meps``) with its sensitive
    column; FARS and MEPS from the folder ``data`` (None: no folder was given or found)."""
    if dataset == "adult":
        return datasets.adult(observed_domains=True, sensitive=sensitive)
    if dataset == "meps":
        return read_meps(_data_file(data, "MEPS", MEPS_FILE), sensitive=sensitive)
    path = _data_file(data, "FARS", FARS_FILE)
    # The papers' setting: the domains are the values present (FARS has no codebook).
    return read_table(path, sensitive=sensitive).declare_observed_domains(warn=False)


def load_hierarchies(data: Path | None, dataset: str, table: Table, result: ExperimentResult
                     ) -> dict[str, Any] | None:
    """The dataset's ARX hierarchies for the table's quasi-identifiers: Adult's bundled ones,
    another dataset's from the folder ``data`` if present (else None, with a note in
    ``result``)."""
    if dataset in datasets.NAMES:
        hierarchies = datasets.hierarchies(dataset)
    else:
        folder = (data or Path.cwd()) / dataset / "hierarchies"
        if data is None or not folder.is_dir():
            result.notes.append(f"{dataset}: no hierarchies at {folder}; Mondrian generalizes "
                                f"numbers to ranges and text to value sets")
            return None
        hierarchies = read_hierarchies(folder)
    return {k: v for k, v in hierarchies.items() if k in table.schema.quasi_identifiers}
