"""The import paths of ppdp 0.1 that moved in the package layout of 0.2, kept working for one
release with a DeprecationWarning: each old module is a view of the new modules that hold its
names (`MOVED_MODULES`: one new module; `SPLIT_MODULES`: a name's new module).

Installed by ``import ppdp`` as a finder of the old names only; nothing in ppdp imports them.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

REMOVED_IN = "0.3"

MOVED_MODULES: dict[str, str] = {
    "ppdp.declared_domains": "ppdp.data.domains",
    "ppdp.domain": "ppdp.query.domain_count",
    "ppdp.evaluate.measured_privacy": "ppdp.risk.measured",
    "ppdp.hierarchy": "ppdp.data.hierarchy",
    "ppdp.keyed": "ppdp.plan.keyed",
    "ppdp.mechanisms.ambiguity_groups": "ppdp.mechanisms.ambiguity.groups",
    "ppdp.mechanisms.decoy_transition": "ppdp.mechanisms.splu.decoy_transition",
    "ppdp.mechanisms.frapp": "ppdp.mechanisms.alphabeta.frapp",
    "ppdp.mechanisms.group_product": "ppdp.estimators.group_product",
    "ppdp.query_sql": "ppdp.query.sql",
    "ppdp.reconstruct": "ppdp.estimators.reconstruct",
    "ppdp.resources": "ppdp.plan.resources",
    "ppdp.row_counts": "ppdp.query.row_counts",
    "ppdp.scan": "ppdp.io.scan",
    "ppdp.sorted_search": "ppdp.plan.sorted_search",
    "ppdp.sources": "ppdp.table.source",
    "ppdp.spark": "ppdp.engines.spark",
    **{f"ppdp.spark.{name}": f"ppdp.engines.spark.{name}" for name in (
        "alphabeta", "alphabeta_count", "ambiguity", "anatomy", "blocks", "cube",
        "group_product", "mondrian", "mondrian_count", "rows", "saved", "session", "source")},
    "ppdp.storage": "ppdp.io.storage",
    "ppdp.streaming": "ppdp.engines.streaming.rows",
}
"""Old module: the one module that now holds everything it held."""

SPLIT_MODULES: dict[str, dict[str, Sequence[str]]] = {
    "ppdp.plans": {
        "ppdp.plan.rows": ("Kernel", "Pass", "PublishedRows", "RowPlan", "Taken",
                           "run_passes"),
        "ppdp.plan.order": ("ROWS_PER_PART", "POLARS_ROWS", "in_release_order", "part_count",
                            "part_of", "rank_order", "row_ranks", "split_parts"),
        "ppdp.plan.quotas": ("QuotaAssignment",),
        "ppdp.engines.memory.rows": ("execute_in_memory",),
    },
    "ppdp.blocks": {
        "ppdp.plan.blocks": ("BLOCK_ROWS", "GROUP_COLUMN", "GROUP_COUNT", "Labels",
                             "block_generator", "block_labels", "block_quotas"),
        "ppdp.mechanisms.base": ("GroupMechanism",),
        "ppdp.engines.blocks": ("counts_rows", "publish_one_block", "write_part"),
        "ppdp.engines.streaming.blocks": ("publish_blocks",),
    },
    "ppdp.guarantees": {
        "ppdp.mechanisms.splu.guarantee": (
            "SpluGuarantee", "splu_accuracy_interval", "splu_chebyshev_error_bound",
            "splu_chebyshev_utility_threshold", "splu_error_bound", "splu_guarantee",
            "splu_privacy_probability", "splu_privacy_threshold", "splu_utility_threshold"),
        "ppdp.mechanisms.anatomy.guarantee": ("AnatomyGuarantee", "anatomy_guarantee"),
        "ppdp.mechanisms.ambiguity.guarantee": ("AmbiguityGuarantee", "ambiguity_guarantee"),
        "ppdp.mechanisms.mondrian.guarantee": ("GeneralizationGuarantee", "mondrian_guarantee"),
        "ppdp.mechanisms.laplace.guarantee": ("LaplaceGuarantee", "laplace_guarantee"),
        "ppdp.mechanisms.dbr.guarantee": ("DbrGuarantee", "dbr_guarantee"),
    },
    "ppdp.mechanisms.perturbation": {
        "ppdp.mechanisms.sdr.uniform": ("UniformPerturbation",),
        "ppdp.mechanisms.sdr.release": ("PerturbationRelease", "perturbation_release"),
        "ppdp.mechanisms.sdr.guarantee": ("PerturbationGuarantee", "SubTableSummary"),
        "ppdp.mechanisms.sdr.compound": ("CompoundAttribute", "PerturbWithin",
                                         "compound_frequencies"),
        "ppdp.mechanisms.sdr.plan": ("SUBTABLE_COLUMN", "perturbation_plan",
                                     "published_domains", "subtable_domains"),
        "ppdp.mechanisms.sdr.formulas": ("amplification_gamma", "check_delta", "check_privacy",
                                         "error_bound", "perturbation_matrix",
                                         "protected_values", "uniform_probabilities"),
    },
}
"""Old module: for each new module, the names it now holds."""


def deprecated(old: str, new: str) -> None:
    """Warn that ``old`` moved to ``new``, naming the line that imported it (the first frame
    outside this module and the import machinery)."""
    # warnings.warn skips the import machinery's frames itself: only this module's count.
    frame, level = sys._getframe(1), 2
    while frame.f_back is not None and (frame.f_code.co_filename == __file__
                                        or frame.f_code.co_filename.startswith("<frozen")):
        if frame.f_code.co_filename == __file__:
            level += 1
        frame = frame.f_back
    warnings.warn(f"{old} is deprecated and will be removed in ppdp {REMOVED_IN}: use {new}",
                  DeprecationWarning, stacklevel=level)


class _OldModule(types.ModuleType):
    """An old module: each name read from the module that now holds it."""

    def __init__(self, name: str, homes: Mapping[str, str]) -> None:
        super().__init__(name, f"Deprecated: moved to {', '.join(sorted(set(homes.values())))}.")
        self._homes = dict(homes)

    def __getattr__(self, name: str) -> Any:
        home = self._homes.get(name, self._homes.get("*"))
        if home is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        return getattr(importlib.import_module(home), name)

    def __dir__(self) -> list[str]:
        names = {name for name in self._homes if name != "*"}
        if "*" in self._homes:
            names |= set(dir(importlib.import_module(self._homes["*"])))
        return sorted(names)


class _Loader:
    """Creates an old module (the import system needs only these two methods; the abstract
    base class in importlib.abc would import importlib.resources at every start)."""

    def __init__(self, homes: Mapping[str, str], new: str) -> None:
        self.homes, self.new = homes, new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        deprecated(spec.name, self.new)
        return _OldModule(spec.name, self.homes)

    def exec_module(self, module: types.ModuleType) -> None:
        if "*" in self.homes:
            module.__path__ = []  # its submodules moved too


class _Finder:
    """Finds the old module names, and only those (a meta path finder needs only
    ``find_spec``)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname in MOVED_MODULES:
            new = MOVED_MODULES[fullname]
            loader = _Loader({"*": new}, new)
        elif fullname in SPLIT_MODULES:
            homes = {name: module for module, names in SPLIT_MODULES[fullname].items()
                     for name in names}
            loader = _Loader(homes, " or ".join(SPLIT_MODULES[fullname]))
        else:
            return None
        # The stub of ModuleSpec asks for an importlib.abc.Loader; any object with its two
        # methods serves the import system.
        return importlib.machinery.ModuleSpec(fullname, loader)  # type: ignore[arg-type]


def install() -> None:
    """Let the old module names import (once per process)."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.append(_Finder())
