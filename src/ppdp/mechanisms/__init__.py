"""Mechanisms, one module per paper family; `get_mechanism` finds one by name.

Names are imported from their modules when first used (PEP 562), so that a command imports
only the mechanism it runs."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ppdp.mechanisms.alphabeta import AlphaBeta, AlphaBetaRelease, ViewSequence
    from ppdp.mechanisms.ambiguity import Ambiguity, AmbiguityRelease
    from ppdp.mechanisms.anatomy import Anatomy, AnatomyRelease
    from ppdp.mechanisms.base import Mechanism, Parameter, all_mechanisms, get_mechanism
    from ppdp.mechanisms.dbr import DBR, DbrRelease
    from ppdp.mechanisms.frapp import FRAPP, FrappRelease
    from ppdp.mechanisms.laplace import LaplaceCounts, LaplaceSession
    from ppdp.mechanisms.mondrian import Mondrian, MondrianRelease
    from ppdp.mechanisms.perturbation import PerturbationRelease, UniformPerturbation
    from ppdp.mechanisms.sdr import PerturbationPartitioning, SdrRelease
    from ppdp.mechanisms.splu import SPLUGen, SpluRelease

_HOMES = {
    "AlphaBeta": "alphabeta", "AlphaBetaRelease": "alphabeta", "ViewSequence": "alphabeta",
    "Ambiguity": "ambiguity", "AmbiguityRelease": "ambiguity",
    "Anatomy": "anatomy", "AnatomyRelease": "anatomy",
    "Mechanism": "base", "Parameter": "base", "all_mechanisms": "base",
    "get_mechanism": "base",
    "DBR": "dbr", "DbrRelease": "dbr",
    "FRAPP": "frapp", "FrappRelease": "frapp",
    "LaplaceCounts": "laplace", "LaplaceSession": "laplace",
    "Mondrian": "mondrian", "MondrianRelease": "mondrian",
    "PerturbationRelease": "perturbation", "UniformPerturbation": "perturbation",
    "PerturbationPartitioning": "sdr", "SdrRelease": "sdr",
    "SPLUGen": "splu", "SpluRelease": "splu",
}

__all__ = [
    "DBR",
    "FRAPP",
    "AlphaBeta",
    "AlphaBetaRelease",
    "Ambiguity",
    "AmbiguityRelease",
    "Anatomy",
    "AnatomyRelease",
    "DbrRelease",
    "FrappRelease",
    "LaplaceCounts",
    "LaplaceSession",
    "Mechanism",
    "Mondrian",
    "MondrianRelease",
    "Parameter",
    "PerturbationPartitioning",
    "PerturbationRelease",
    "SPLUGen",
    "SdrRelease",
    "SpluRelease",
    "UniformPerturbation",
    "ViewSequence",
    "all_mechanisms",
    "get_mechanism",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'ppdp.mechanisms' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"ppdp.mechanisms.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
