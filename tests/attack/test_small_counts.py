"""Small-count reconstruction on SPLU-Gen (ppdp.attack.small_counts; Theorem 4)."""

from __future__ import annotations

import numpy as np
import pandas as pd

import ppdp
from ppdp.attack import small_counts
from ppdp.attack.targets import build_targets
from ppdp.mechanisms.splu.guarantee import splu_guarantee
from ppdp.mechanisms.splu.release import SpluRelease
from tests.attack.conftest import difference_margin


def test_theorem_4_adversary_stays_within_its_bound() -> None:
    """Theorem 4's own adversary: a value's count estimated by its published count. 3,000
    people each with a value of their own (3,000 values) and gamma = 10: 300 decoy groups of
    10 distinct values, each value's published count Binomial(10, 1/10), so a count of 1 is
    estimated within 30 % (published exactly 1) with probability 10 (0.1)(0.9)^9 = 0.3874 =
    1 - T_P (a = 1), the bound's equality case.

    Sampling error: the counts of one group are multinomial(10, 1/10 each); the number N1 of
    its values published once has variance 10 P1 (1 - P1) + 90 (P11 - P1^2) = 2.454 with
    P1 = 0.38742 and P11 = 10 * 9 * 0.1^2 * 0.8^8 = 0.15099 (two given values once each),
    so the share of a group has standard deviation sqrt(2.454) / 10 = 0.1566 and the share
    over 300 independent groups 0.1566 / sqrt(300) = 0.00904. The measured share lies within
    three of them of 1 - T_P, and so at most 0.027 above the bound."""
    n = 3000
    frame = pd.DataFrame({"zone": np.arange(n) % 7, "value": [f"v{i}" for i in range(n)]})
    table = ppdp.read_table(frame, sensitive="value").declare_observed_domains(warn=False)
    release = ppdp.SPLUGen(gamma=10).publish(table, random_state=1)
    targets = build_targets(release, table, random_state=1)
    (result,) = small_counts.run(targets, epsilon=0.3, a=1, columns=())
    bound = 1 - splu_guarantee(gamma=10, epsilon=0.3, a=1).T_P
    assert abs(bound - 0.38742) < 1e-5 and result.bound == bound
    assert result.details["small_cells"] == n and result.details["estimator"] == "published"
    assert abs(result.success - bound) <= 3 * 0.1566 / np.sqrt(300)


def test_far_above_the_baseline_at_gamma_2(adult: ppdp.Table) -> None:
    """gamma = 2 keeps each value with probability 1/2: many cells of one person are read
    exactly from the release, far (ten standard errors of the difference) above the estimate
    from the population's shares, and within the bound 1 - T_P."""
    release = ppdp.SPLUGen(gamma=2).publish(adult, random_state=1)
    result = ppdp.attack(release, adult, attacks=["small_counts"],
                         random_state=1)["small_counts"]
    assert result.success > result.baseline + difference_margin(result.details["small_cells"])
    assert result.success <= result.bound + 3 * result.details["stderr"]


def test_identity_release_is_perfect(adult: ppdp.Table) -> None:
    """The table's own values published as SPLU-Gen's: every small count is read exactly."""
    sample = adult.take(np.arange(5000))
    release = SpluRelease(sample.schema, {"gamma": 2}, sample.n_rows, dict(sample.codes))
    result = ppdp.attack(release, sample, attacks=["small_counts"],
                         random_state=1)["small_counts"]
    assert result.success == 1.0 and result.details["estimator"] == "published"
