"""Evaluation: the papers' query pools, error measures, named experiments, the report, and the
Adult demo.

    from ppdp.evaluate import run_experiment, write_report
    write_report([run_experiment("sdr", quick=True)], "report-dir")
"""

from ppdp.evaluate.demo import DemoResult, DemoRow, run_demo
from ppdp.evaluate.experiments import EXPERIMENTS, Claim, ExperimentResult, run_experiment
from ppdp.evaluate.metrics import average_relative_error, by_band, relative_errors
from ppdp.evaluate.report import write_report
from ppdp.evaluate.workloads import QueryPool, splu_pools

__all__ = [
    "EXPERIMENTS",
    "Claim",
    "DemoResult",
    "DemoRow",
    "ExperimentResult",
    "QueryPool",
    "average_relative_error",
    "by_band",
    "relative_errors",
    "run_demo",
    "run_experiment",
    "splu_pools",
    "write_report",
]
