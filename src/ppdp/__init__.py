"""ppdp: privacy-preserving publishing of microdata, with estimators for count queries.

    import ppdp
    table = ppdp.datasets.adult(sensitive="occupation")
    release = ppdp.SPLUGen(gamma=5).publish(table)
    release.count("age >= 40 AND sex = 'Female' AND occupation = 'Sales'")

The names below are imported on first use (PEP 562), so that ``import ppdp`` and the command
line start without loading numpy, pyarrow and every mechanism; ``__version__`` is the installed
distribution's (`importlib.metadata`), read on first use too.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ppdp import _compat

__version__: str  # set on first use by __getattr__ (an annotation alone binds no name)

_compat.install()

_HOMES = {
    "attack": "ppdp.attack",
    "datasets": "ppdp.datasets",
    "compare": "ppdp.evaluate.compare",
    "InfeasibleError": "ppdp.errors",
    "MissingValuesError": "ppdp.errors",
    "PpdpError": "ppdp.errors",
    "QueryError": "ppdp.errors",
    "ReleaseError": "ppdp.errors",
    "CertificateError": "ppdp.errors",
    "SchemaError": "ppdp.errors",
    "read_table": "ppdp.io.read",
    "DBR": "ppdp.mechanisms.dbr.mechanism",
    "FRAPP": "ppdp.mechanisms.alphabeta.frapp",
    "AlphaBeta": "ppdp.mechanisms.alphabeta.mechanism",
    "Ambiguity": "ppdp.mechanisms.ambiguity.mechanism",
    "Anatomy": "ppdp.mechanisms.anatomy.mechanism",
    "LaplaceCounts": "ppdp.mechanisms.laplace.mechanism",
    "Mechanism": "ppdp.mechanisms.base",
    "Mondrian": "ppdp.mechanisms.mondrian.mechanism",
    "PerturbationPartitioning": "ppdp.mechanisms.sdr.partitioning",
    "SPLUGen": "ppdp.mechanisms.splu.mechanism",
    "UniformPerturbation": "ppdp.mechanisms.sdr.uniform",
    "get_mechanism": "ppdp.mechanisms.base",
    "Query": "ppdp.query.syntax",
    "parse_query": "ppdp.query.parse",
    "Estimate": "ppdp.estimate",
    "GroupedEstimate": "ppdp.estimate",
    "Release": "ppdp.release.base",
    "load_release": "ppdp.release.load",
    "verify": "ppdp.certify.verify",
    "Column": "ppdp.data.schema",
    "Ordered": "ppdp.data.schema",
    "Role": "ppdp.data.schema",
    "Schema": "ppdp.data.schema",
    "Table": "ppdp.table.table",
    "using_workers": "ppdp.workers",
}

__all__ = [
    "DBR",
    "FRAPP",
    "AlphaBeta",
    "Ambiguity",
    "Anatomy",
    "CertificateError",
    "Column",
    "Estimate",
    "GroupedEstimate",
    "InfeasibleError",
    "LaplaceCounts",
    "Mechanism",
    "MissingValuesError",
    "Mondrian",
    "Ordered",
    "PerturbationPartitioning",
    "PpdpError",
    "Query",
    "QueryError",
    "Release",
    "ReleaseError",
    "Role",
    "SPLUGen",
    "Schema",
    "SchemaError",
    "Table",
    "UniformPerturbation",
    "__version__",
    "attack",
    "compare",
    "datasets",
    "get_mechanism",
    "load_release",
    "parse_query",
    "read_table",
    "using_workers",
    "verify",
]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        globals()[name] = _installed_version()
        return globals()[name]
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'ppdp' has no attribute {name!r}")
    module = importlib.import_module(home)
    value = module if home == f"ppdp.{name}" else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


def _installed_version() -> str:
    """The version of the installed distribution (pyproject.toml holds the one number), or
    ``0+unknown`` for a source tree that was never installed."""
    # Read on first use, like the names above: importlib.metadata takes longer to import than
    # the rest of ``import ppdp``.
    metadata = importlib.import_module("importlib.metadata")
    try:
        version: str = metadata.version("ppdp")
    except metadata.PackageNotFoundError:
        return "0+unknown"
    return version


if TYPE_CHECKING:
    from ppdp.certify.verify import verify
    from ppdp.data.schema import Column, Ordered, Role, Schema
    from ppdp.errors import (
        CertificateError,
        InfeasibleError,
        MissingValuesError,
        PpdpError,
        QueryError,
        ReleaseError,
        SchemaError,
    )
    from ppdp.estimate import Estimate, GroupedEstimate
    from ppdp.evaluate.compare import compare
    from ppdp.io.read import read_table
    from ppdp.mechanisms import (
        DBR,
        FRAPP,
        AlphaBeta,
        Ambiguity,
        Anatomy,
        LaplaceCounts,
        Mechanism,
        Mondrian,
        PerturbationPartitioning,
        SPLUGen,
        UniformPerturbation,
        get_mechanism,
    )
    from ppdp.query.parse import parse_query
    from ppdp.query.syntax import Query
    from ppdp.release.base import Release
    from ppdp.release.load import load_release
    from ppdp.table.table import Table
    from ppdp.workers import using_workers
