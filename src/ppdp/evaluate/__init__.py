"""Evaluation: the papers' query pools, error measures, named experiments, the report, the
Adult demo, and the comparison of every mechanism at one privacy target with its parameter
advice.

    from ppdp.evaluate import run_experiment, write_report
    write_report([run_experiment("sdr", quick=True)], "report-dir")
"""

from ppdp.evaluate.advice import Advice, advise, parse_privacy
from ppdp.evaluate.compare import Comparison, compare
from ppdp.evaluate.demo import DemoResult, DemoRow, run_demo
from ppdp.evaluate.experiments import EXPERIMENTS, run_experiment
from ppdp.evaluate.metrics import average_relative_error, by_band, relative_errors
from ppdp.evaluate.report import write_report
from ppdp.evaluate.result import Claim, ExperimentResult
from ppdp.evaluate.workloads import QueryPool, splu_pools

__all__ = [
    "EXPERIMENTS",
    "Advice",
    "Claim",
    "Comparison",
    "DemoResult",
    "DemoRow",
    "ExperimentResult",
    "QueryPool",
    "advise",
    "average_relative_error",
    "by_band",
    "compare",
    "parse_privacy",
    "relative_errors",
    "run_demo",
    "run_experiment",
    "splu_pools",
    "write_report",
]
