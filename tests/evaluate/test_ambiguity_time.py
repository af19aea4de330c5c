"""The ambiguity Figure 6 experiment (run time against alpha and beta): a quick run covers the
whole grid with its structure and claim (no timing is asserted: times vary from run to run)."""

from __future__ import annotations

import numpy as np
import pytest

from ppdp.evaluate import EXPERIMENTS, run_experiment
from ppdp.evaluate.experiments.ambiguity_time import ALPHAS, BETAS, QUICK_ROWS


def test_quick_run_covers_the_alpha_beta_grid() -> None:
    """Every (alpha, beta) of Figure 6's grid published on the quick sample, smaller beta
    giving larger groups; one figure; the claim compares the spreads of time and group size
    and draws no verdict from times under a second."""
    assert "ambiguity_time" in EXPERIMENTS
    result = run_experiment("ambiguity_time", quick=True, random_state=3)
    assert [(r["alpha"], r["beta"]) for r in result.rows] == [
        (a, b) for b in BETAS for a in ALPHAS]
    for row in result.rows:
        assert row["rows"] == QUICK_ROWS and row["publications"] == 1
        assert np.isfinite(row["publish_s"]) and row["publish_s"] > 0
        # Groups of at least ceil(1/beta) rows partition the sample.
        assert row["group_size_mean"] >= round(1 / row["beta"])
        assert row["groups"] * row["group_size_mean"] == pytest.approx(QUICK_ROWS)
    for alpha in ALPHAS:
        sizes = [r["group_size_mean"] for r in result.rows if r["alpha"] == alpha]
        assert sizes == sorted(sizes)
    assert [name for name, _ in result.figures] == ["ambiguity_time"]
    (claim,) = result.claims
    assert "Figure 6" in claim.paper and "mean group size" in claim.measured
    assert (claim.holds is None) == ("too short to compare" in claim.measured)
    assert any("not distributed" in note for note in result.notes)
