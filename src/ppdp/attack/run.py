"""Running the attacks that apply to a release against the table it was published from."""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType

# The attack modules by their full names: ``from ppdp.attack import ...`` would import the
# package, whose ``__init__`` imports this module.
import ppdp.attack.definetti as definetti
import ppdp.attack.inference as inference
import ppdp.attack.linkage as linkage
import ppdp.attack.posterior as posterior
import ppdp.attack.presence as presence
import ppdp.attack.small_counts as small_counts
from ppdp.attack.report import AttackReport
from ppdp.attack.targets import build_targets
from ppdp.randomness import RandomState
from ppdp.release.base import Release
from ppdp.table.table import Table

__all__ = ["ATTACKS", "attack_list", "run_attacks"]

ATTACKS: dict[str, ModuleType] = {module.NAME: module for module in (
    inference, definetti, small_counts, posterior, presence, linkage)}
"""Attack name -> its module (``applies(targets)``, ``run(targets)``); `presence` also
reports ``repeated`` and `linkage` also ``singling_out`` (each module's ``ALSO``)."""


def attack_list() -> list[tuple[str, str, tuple[str, ...]]]:
    """Each attack's name, what it is (the first paragraph of its module's doc) and the other
    results it reports, for the help of ``ppdp attack``."""
    return [(name, " ".join((module.__doc__ or "").split("\n\n")[0].split()),
             tuple(getattr(module, "ALSO", ()))) for name, module in ATTACKS.items()]


def run_attacks(release: Release, table: Table, *, attacks: Iterable[str] | None = None,
                sensitive: str | None = None, random_state: RandomState = None
                ) -> AttackReport:
    """Run every attack of ``attacks`` (default: all) that applies to ``release`` against
    ``table``, the source it was published from.

    ``sensitive`` names the attribute to infer where the release has no single sensitive
    column (alpha-beta and FRAPP publish every column alike). ``random_state`` splits the
    rows into targets and population and draws the rows of group releases; None draws from
    OS entropy. The report's per-individual risks are for the custodian only.
    """
    chosen = list(ATTACKS) if attacks is None else list(dict.fromkeys(attacks))
    unknown = [name for name in chosen if name not in ATTACKS]
    if unknown:
        raise ValueError(f"unknown attack {unknown[0]!r}; attacks: {', '.join(ATTACKS)}")
    targets = build_targets(release, table, sensitive=sensitive, random_state=random_state)
    report = AttackReport(release.mechanism, dict(release.parameters), table)
    for name in chosen:
        module = ATTACKS[name]
        reason = module.applies(targets)
        if reason is not None:
            report.not_applicable[name] = reason
            continue
        report.results.extend(module.run(targets))
    return report
