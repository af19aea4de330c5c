"""The named experiments of ``ppdp evaluate``, and `run_experiment`, which runs one by name
with a seed."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from ppdp.evaluate.experiments.alphabeta import alphabeta
from ppdp.evaluate.experiments.ambiguity import ambiguity, density
from ppdp.evaluate.experiments.ambiguity_time import ambiguity_time
from ppdp.evaluate.experiments.attack import attack
from ppdp.evaluate.experiments.config import Config, Experiment
from ppdp.evaluate.experiments.sdr import sdr, sdr_axes
from ppdp.evaluate.experiments.size import size
from ppdp.evaluate.experiments.splu import splu, splu_gamma, splu_two
from ppdp.evaluate.experiments.splu_axes import splu_age, splu_size
from ppdp.evaluate.experiments.splu_bounds import splu_bounds
from ppdp.evaluate.experiments.tables import default_data
from ppdp.evaluate.result import ExperimentResult
from ppdp.randomness import RandomState, make_rng

__all__ = ["EXPERIMENTS", "run_experiment"]

EXPERIMENTS: dict[str, tuple[str, Experiment]] = {
    "splu": ("SPLU-Gen Section 6: small- and large-count errors of every mechanism", splu),
    "splu_gamma": ("SPLU-Gen Figure 7: small-count error against gamma", splu_gamma),
    "splu_two": ("SPLU-Gen Figure 12: two sensitive attributes", splu_two),
    "splu_age": ("SPLU-Gen Section 6.2.1: queries of 5-8 % selectivity, age in intervals of "
                 "about 8 %", splu_age),
    "splu_size": ("SPLU-Gen Figure 9: large-count error by band against N for SPLU-Gen, "
                  "Anatomy and DBR", splu_size),
    "splu_bounds": ("SPLU-Gen Figures 4-5: T_E against T_f (Lemma 1) and the small-sum "
                    "sawtooth (Lemma 2), computed and measured", splu_bounds),
    "sdr": ("Small domain randomization Section 6: PP against UP", sdr),
    "sdr_axes": ("Small domain randomization Figures 2-5, Tables 2 and 3: error against L "
                 "and |T| on balanced and skewed data, estimates against truth, retention, "
                 "sub-tables, runtime", sdr_axes),
    "size": ("Error and publishing time against the number of rows (Adult, FARS resamples)",
             size),
    "alphabeta": ("alpha-beta Section 5: alpha-beta against FRAPP", alphabeta),
    "ambiguity": ("ambiguity Section 8.3: ambiguity against Mondrian", ambiguity),
    "density": ("ambiguity Figure 10: ambiguity against Mondrian by density of the sensitive "
                "values", density),
    "ambiguity_time": ("ambiguity Figure 6: ambiguity's run time against alpha and beta "
                       "(Adult resampled to 1.5M rows)", ambiguity_time),
    "attack": ("Attack success against each mechanism's privacy parameter on Adult "
               "(ppdp attack)", attack),
}
"""Experiment name -> (what it reproduces, how it runs)."""


def run_experiment(name: str, *, quick: bool = False, random_state: RandomState = None,
                   progress: Callable[[str], None] | None = None,
                   data: str | Path | None = None) -> ExperimentResult:
    """Run one experiment by name (see ``EXPERIMENTS``). ``data``: the folder holding the
    ``fars`` dataset and its hierarchies and MEPS (``MEPS_FILE``) (default: `default_data`,
    ``../shared/datasets`` where it exists); experiments that need it say so when it is
    missing. Adult and its hierarchies are the bundled ones (`ppdp.datasets`)."""
    try:
        experiment = EXPERIMENTS[name][1]
    except KeyError:
        raise ValueError(f"unknown experiment {name!r}; known: {', '.join(EXPERIMENTS)}") \
            from None
    config = Config(quick, make_rng(random_state), progress or (lambda _: None),
                    Path(data) if data is not None else default_data())
    start = time.perf_counter()
    result = experiment(config)
    result.seconds = time.perf_counter() - start
    return result
