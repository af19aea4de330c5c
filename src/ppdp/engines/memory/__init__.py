"""The memory engine, the reference every other engine's files are checked against: a Table
held in memory published as one batch (`rows`: the row plans' executor; `engine`: the
engine)."""

from ppdp.engines.memory.engine import ENGINE, InMemoryViews, MemoryEngine

__all__ = ["ENGINE", "InMemoryViews", "MemoryEngine"]
