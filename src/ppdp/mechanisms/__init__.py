"""Mechanisms, one module per paper family; ``Mechanism.registry`` maps names to classes."""

from ppdp.mechanisms.alphabeta import AlphaBeta, AlphaBetaRelease, ViewSequence
from ppdp.mechanisms.ambiguity import Ambiguity, AmbiguityRelease
from ppdp.mechanisms.anatomy import Anatomy, AnatomyRelease
from ppdp.mechanisms.base import Mechanism, Parameter, get_mechanism
from ppdp.mechanisms.dbr import DBR, DbrRelease
from ppdp.mechanisms.frapp import FRAPP, FrappRelease
from ppdp.mechanisms.laplace import LaplaceCounts, LaplaceSession
from ppdp.mechanisms.mondrian import Mondrian, MondrianRelease
from ppdp.mechanisms.perturbation import PerturbationRelease, UniformPerturbation
from ppdp.mechanisms.sdr import PerturbationPartitioning, SdrRelease
from ppdp.mechanisms.splu import SPLUGen, SpluRelease

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
    "get_mechanism",
]
