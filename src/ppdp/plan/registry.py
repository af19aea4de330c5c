"""Where each mechanism lives, by name: the one table a new mechanism joins.

`get_mechanism` (`ppdp.mechanisms.base`) and `load_release` (`ppdp.release.load`) import a
mechanism's module by its name when it is first asked for, so that neither imports every
mechanism (scipy's sparse matrices among them took a quarter of a command's start) and the
release format need not sit above the mechanisms. Importing the module registers its Mechanism
and Release classes (`Mechanism.registry`, `Release.registry`).
"""

from __future__ import annotations

import importlib
from types import ModuleType

MECHANISM_MODULES: dict[str, str] = {
    "alphabeta": "ppdp.mechanisms.alphabeta.mechanism",
    "ambiguity": "ppdp.mechanisms.ambiguity.mechanism",
    "anatomy": "ppdp.mechanisms.anatomy.mechanism",
    "dbr": "ppdp.mechanisms.dbr.mechanism",
    "frapp": "ppdp.mechanisms.alphabeta.frapp",
    "laplace": "ppdp.mechanisms.laplace.mechanism",
    "mondrian": "ppdp.mechanisms.mondrian.mechanism",
    "sdr": "ppdp.mechanisms.sdr.partitioning",
    "splu": "ppdp.mechanisms.splu.mechanism",
    "uniform": "ppdp.mechanisms.sdr.uniform",
}
"""The module of each mechanism by name (``ppdp publish -m NAME``, ``release.json``)."""


def register_mechanism(name: str, module: str) -> None:
    """Make the mechanism ``name``, defined in ``module`` (imported when first asked for),
    known to `get_mechanism`, the command line and `load_release`."""
    if not name.isidentifier():
        raise ValueError(f"a mechanism name is an identifier, not {name!r}")
    MECHANISM_MODULES[name] = module


def mechanism_module(name: str) -> ModuleType:
    """The module of the mechanism ``name``, imported (which registers its classes)."""
    try:
        module = MECHANISM_MODULES[name]
    except KeyError:
        raise ValueError(f"unknown mechanism {name!r}; known: "
                         f"{', '.join(sorted(MECHANISM_MODULES))}") from None
    return importlib.import_module(module)
