"""Mechanisms, one module per paper family; ``Mechanism.registry`` maps names to classes."""

from ppdp.mechanisms.anatomy import Anatomy, AnatomyRelease
from ppdp.mechanisms.base import Mechanism, Parameter, get_mechanism
from ppdp.mechanisms.dbr import DBR, DbrRelease
from ppdp.mechanisms.laplace import LaplaceCounts, LaplaceSession
from ppdp.mechanisms.splu import SPLUGen, SpluRelease

__all__ = [
    "DBR",
    "Anatomy",
    "AnatomyRelease",
    "DbrRelease",
    "LaplaceCounts",
    "LaplaceSession",
    "Mechanism",
    "Parameter",
    "SPLUGen",
    "SpluRelease",
    "get_mechanism",
]
