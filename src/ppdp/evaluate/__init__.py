"""Evaluation as in SPLU-Gen Section 6: query pools, relative errors, and the Adult demo."""

from ppdp.evaluate.demo import DemoResult, DemoRow, run_demo
from ppdp.evaluate.metrics import average_relative_error, by_band, relative_errors
from ppdp.evaluate.workloads import QueryPool, splu_pools

__all__ = [
    "DemoResult",
    "DemoRow",
    "QueryPool",
    "average_relative_error",
    "by_band",
    "relative_errors",
    "run_demo",
    "splu_pools",
]
