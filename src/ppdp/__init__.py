"""ppdp: privacy-preserving publishing of microdata, with estimators for count queries.

    import ppdp
    table = ppdp.datasets.adult(sensitive="occupation")
    release = ppdp.SPLUGen(gamma=5).publish(table)
    release.count("age >= 40 AND sex = 'Female' AND occupation = 'Sales'")
"""

from ppdp import datasets
from ppdp.errors import (
    InfeasibleError,
    MissingValuesError,
    PpdpError,
    QueryError,
    ReleaseError,
    SchemaError,
)
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

__version__ = "0.1.0"

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
    "datasets",
    "get_mechanism",
    "load_release",
    "parse_query",
    "read_table",
]
