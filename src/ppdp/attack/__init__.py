"""Measured privacy: the known attacks on each kind of release, run against the table it was
published from.

    import ppdp
    table = ppdp.datasets.adult(sensitive="occupation")
    release = ppdp.Anatomy(l=5).publish(table)
    report = ppdp.attack(release, table, random_state=1)
    report.to_dict()                      # success, baseline, bound, adversary, source, cost
    report.write("attack-output")         # attacks.csv, individuals.csv, attack-risk.png

Attacks (one module each): ``inference`` (a classifier learnt from the release), ``definetti``
(Kifer 2009 on Anatomy and ambiguity), ``small_counts`` (SPLU-Gen's small counts),
``posterior`` (uniform and sdr: (rho1, rho2)-privacy), ``presence`` and ``repeated``
(alpha-beta and FRAPP: (d, gamma)-privacy), ``linkage`` and ``singling_out`` (Mondrian and
ambiguity). Each result states its adversary, its source and its cost in seconds.

``ppdp.attack`` is both this package and its entry point: calling it runs `run_attacks`.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

from ppdp.attack.report import AttackReport, AttackResult
from ppdp.attack.run import ATTACKS, run_attacks

__all__ = ["ATTACKS", "AttackReport", "AttackResult", "run_attacks"]


class _CallableModule(ModuleType):
    """Lets ``ppdp.attack(release, table, ...)`` call `run_attacks`: a function of that name
    in ``ppdp`` would be replaced by this package whenever one of its modules is imported."""

    def __call__(self, release: Any, table: Any, **options: Any) -> AttackReport:
        return run_attacks(release, table, **options)


sys.modules[__name__].__class__ = _CallableModule
