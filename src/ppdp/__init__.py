"""ppdp: privacy-preserving publishing of microdata, with estimators for count queries.

    import ppdp
    table = ppdp.datasets.adult(sensitive="occupation")
    release = ppdp.SPLUGen(gamma=5).publish(table)
    release.count("age >= 40 AND sex = 'Female' AND occupation = 'Sales'")

The names below are imported on first use (PEP 562), so that ``import ppdp`` and the command
line start without loading numpy, pyarrow and every mechanism.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_HOMES = {
    "attack": "ppdp.attack",
    "datasets": "ppdp.datasets",
    "compare": "ppdp.evaluate.compare",
    "InfeasibleError": "ppdp.errors",
    "MissingValuesError": "ppdp.errors",
    "PpdpError": "ppdp.errors",
    "QueryError": "ppdp.errors",
    "ReleaseError": "ppdp.errors",
    "SchemaError": "ppdp.errors",
    "read_table": "ppdp.io",
    "DBR": "ppdp.mechanisms.dbr",
    "FRAPP": "ppdp.mechanisms.frapp",
    "AlphaBeta": "ppdp.mechanisms.alphabeta",
    "Ambiguity": "ppdp.mechanisms.ambiguity",
    "Anatomy": "ppdp.mechanisms.anatomy",
    "LaplaceCounts": "ppdp.mechanisms.laplace",
    "Mechanism": "ppdp.mechanisms.base",
    "Mondrian": "ppdp.mechanisms.mondrian",
    "PerturbationPartitioning": "ppdp.mechanisms.sdr",
    "SPLUGen": "ppdp.mechanisms.splu",
    "UniformPerturbation": "ppdp.mechanisms.perturbation",
    "get_mechanism": "ppdp.mechanisms.base",
    "Query": "ppdp.query",
    "parse_query": "ppdp.query",
    "Estimate": "ppdp.release",
    "GroupedEstimate": "ppdp.release",
    "Release": "ppdp.release",
    "load_release": "ppdp.release",
    "Column": "ppdp.table",
    "Ordered": "ppdp.table",
    "Role": "ppdp.table",
    "Schema": "ppdp.table",
    "Table": "ppdp.table",
}

__all__ = [
    "DBR",
    "FRAPP",
    "AlphaBeta",
    "Ambiguity",
    "Anatomy",
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
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'ppdp' has no attribute {name!r}")
    module = importlib.import_module(home)
    value = module if home == f"ppdp.{name}" else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from ppdp import attack, datasets
    from ppdp.errors import (
        InfeasibleError,
        MissingValuesError,
        PpdpError,
        QueryError,
        ReleaseError,
        SchemaError,
    )
    from ppdp.evaluate.compare import compare
    from ppdp.io import read_table
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
    from ppdp.query import Query, parse_query
    from ppdp.release import Estimate, GroupedEstimate, Release, load_release
    from ppdp.table import Column, Ordered, Role, Schema, Table
