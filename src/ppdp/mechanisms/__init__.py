"""Mechanisms, one module per paper family; `get_mechanism` finds one by name.

Names are imported from their modules when first used (PEP 562), so that a command imports
only the mechanism it runs."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ppdp.mechanisms.alphabeta.frapp import FRAPP, FrappRelease
    from ppdp.mechanisms.alphabeta.mechanism import AlphaBeta
    from ppdp.mechanisms.alphabeta.release import AlphaBetaRelease
    from ppdp.mechanisms.alphabeta.views import ViewSequence
    from ppdp.mechanisms.ambiguity.mechanism import Ambiguity
    from ppdp.mechanisms.ambiguity.release import AmbiguityRelease
    from ppdp.mechanisms.anatomy.mechanism import Anatomy
    from ppdp.mechanisms.anatomy.release import AnatomyRelease
    from ppdp.mechanisms.base import (
        GroupMechanism,
        Mechanism,
        RowMechanism,
        StepsMechanism,
        all_mechanisms,
        get_mechanism,
    )
    from ppdp.mechanisms.dbr.mechanism import DBR
    from ppdp.mechanisms.dbr.release import DbrRelease
    from ppdp.mechanisms.laplace.mechanism import LaplaceCounts
    from ppdp.mechanisms.laplace.session import LaplaceSession
    from ppdp.mechanisms.mondrian.mechanism import Mondrian
    from ppdp.mechanisms.mondrian.release import MondrianRelease
    from ppdp.mechanisms.parameters import Parameter
    from ppdp.mechanisms.sdr.partitioning import PerturbationPartitioning, SdrRelease
    from ppdp.mechanisms.sdr.release import PerturbationRelease
    from ppdp.mechanisms.sdr.uniform import UniformPerturbation
    from ppdp.mechanisms.splu.mechanism import SPLUGen
    from ppdp.mechanisms.splu.release import SpluRelease

_HOMES = {
    'AlphaBeta': 'alphabeta.mechanism',
    'AlphaBetaRelease': 'alphabeta.release',
    'Ambiguity': 'ambiguity.mechanism',
    'AmbiguityRelease': 'ambiguity.release',
    'Anatomy': 'anatomy.mechanism',
    'AnatomyRelease': 'anatomy.release',
    'DBR': 'dbr.mechanism',
    'DbrRelease': 'dbr.release',
    'FRAPP': 'alphabeta.frapp',
    'FrappRelease': 'alphabeta.frapp',
    'GroupMechanism': 'base',
    'LaplaceCounts': 'laplace.mechanism',
    'LaplaceSession': 'laplace.session',
    'Mechanism': 'base',
    'Mondrian': 'mondrian.mechanism',
    'MondrianRelease': 'mondrian.release',
    'Parameter': 'parameters',
    'PerturbationPartitioning': 'sdr.partitioning',
    'PerturbationRelease': 'sdr.release',
    'RowMechanism': 'base',
    'SPLUGen': 'splu.mechanism',
    'SdrRelease': 'sdr.partitioning',
    'SpluRelease': 'splu.release',
    'StepsMechanism': 'base',
    'UniformPerturbation': 'sdr.uniform',
    'ViewSequence': 'alphabeta.views',
    'all_mechanisms': 'base',
    'get_mechanism': 'base',
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
    "GroupMechanism",
    "LaplaceCounts",
    "LaplaceSession",
    "Mechanism",
    "Mondrian",
    "MondrianRelease",
    "Parameter",
    "PerturbationPartitioning",
    "PerturbationRelease",
    "RowMechanism",
    "SPLUGen",
    "SdrRelease",
    "SpluRelease",
    "StepsMechanism",
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
