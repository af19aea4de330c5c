"""Mechanisms as plans, and the engines that run them (DESIGN, "Plans and engines").

Every draw is a pure function of (key, row id, stream) (`keyed`), so that engines may cut the
rows into batches of any size and order. A row-local mechanism is a `rows.RowPlan` (summary
passes, then a kernel per batch); passes may assign exact quotas of rows (`quotas`); group
mechanisms are run block by block (`blocks`); published rows are shuffled and cut into parts
by keyed ranks (`order`). `engine` holds the Engine protocol, the registry of engines and the
one place that chooses which engine runs (`engine.publish`); `registry` says where each
mechanism lives; `resources` the memory a publish needs.
"""

from ppdp.plan.engine import (
    ENGINE_MODULES,
    PLAN_SHAPES,
    Engine,
    Published,
    engine_for,
    get_engine,
    publish,
    register_engine,
)
from ppdp.plan.registry import MECHANISM_MODULES, register_mechanism

__all__ = ["ENGINE_MODULES", "MECHANISM_MODULES", "PLAN_SHAPES", "Engine", "Published",
           "engine_for", "get_engine", "publish", "register_engine", "register_mechanism"]
