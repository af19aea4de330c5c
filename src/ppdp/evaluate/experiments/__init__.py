"""The papers' experiments as named, seeded runs, each giving raw rows, figures, and claims set
against what was measured.

An experiment publishes real data several times (``publications``), answers the paper's query
pools and reports every point as a mean with its standard deviation over the publications. Each
``Claim`` puts a paper's statement (with its section) next to the measured numbers and says
whether the direction is the same; a claim that does not hold on our data says so.

``quick=True`` shrinks pools and publications so that every experiment runs in seconds (for CI
and for a first look); the full run follows the papers' sizes where the data allow.

One module per paper: `splu` (SPLU-Gen Section 6) and `splu_bounds` (its Figures 4-5, the
guarantees of Section 4), `sdr` (Small Domain Randomization Section 6), `alphabeta` (alpha-beta
Section 5), `ambiguity` (ambiguity Sections 6 and 8) and `ambiguity_time` (its Figure 6),
`attack` (the attack sweep), and `size` (error and time against the number of rows, across
papers); `registry` names them all.
"""

from ppdp.evaluate.demo import splu_result
from ppdp.evaluate.experiments.attack import ATTACK_QUICK_ROWS
from ppdp.evaluate.experiments.config import Config, Experiment
from ppdp.evaluate.experiments.registry import EXPERIMENTS, run_experiment
from ppdp.evaluate.experiments.splu import SPLU_BANDS
from ppdp.evaluate.experiments.tables import MEPS_FILE, default_data, read_meps
from ppdp.evaluate.result import Claim, ExperimentResult

__all__ = ["ATTACK_QUICK_ROWS", "EXPERIMENTS", "MEPS_FILE", "SPLU_BANDS", "Claim", "Config",
           "Experiment", "ExperimentResult", "default_data", "read_meps", "run_experiment",
           "splu_result"]
