"""SPLU-Gen's Section 5 reconstruction (``estimator = "paper"``) where its model holds, and what
it says when it does not converge.

Section 5.1 models every row without the sensitive value s as publishing s at one common rate.
That holds on average when the other attributes are independent of the sensitive values (and,
with two sensitive attributes, the two of each other): a condition P then picks rows whose
sensitive values are distributed as the whole table's. On such tables the reconstruction must
be unbiased and its reported standard error must match the spread of its estimates. Each
publication is of a fresh seeded table, so that the decoy partition varies as well as the draws
(on one fixed table the partition's share of the error stays put, see
``test_splu_fixed_table.py``).
"""

import json
import warnings

import numpy as np
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from ppdp.cli import app
from ppdp.errors import ConvergenceWarning
from ppdp.estimate import Estimate, GroupedEstimate
from ppdp.mechanisms.splu.mechanism import SPLUGen
from ppdp.mechanisms.splu.release import SpluRelease
from ppdp.table.table import Table, table_from_arrow

RUNS = 30


def one_sensitive(n_rows: int, seed: int) -> Table:
    """Quasi-identifiers a, b independent of the sensitive s (six values)."""
    rng = np.random.default_rng(seed)
    data = pa.table({"a": rng.integers(0, 4, n_rows), "b": rng.integers(0, 3, n_rows),
                     "s": rng.choice(6, n_rows, p=[0.22, 0.2, 0.2, 0.16, 0.12, 0.1])})
    return table_from_arrow(data, domains={"s": list(range(6))}).with_roles(sensitive="s")


def two_sensitive(n_rows: int, seed: int) -> Table:
    """a independent of the sensitive s (four values) and t (three), and s of t."""
    rng = np.random.default_rng(seed)
    data = pa.table({"a": rng.integers(0, 3, n_rows),
                     "s": rng.choice(4, n_rows, p=[0.3, 0.3, 0.2, 0.2]),
                     "t": rng.choice(3, n_rows, p=[0.4, 0.3, 0.3])})
    return table_from_arrow(data, domains={"s": list(range(4)), "t": list(range(3))}
                            ).with_roles(sensitive=["s", "t"])


def paper_errors(make, pool: list[str], gamma: int, n_rows: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Errors (estimate - truth) and reported standard errors of the pool over RUNS fresh
    tables, and the truths of the last."""
    errors, stderrs = [], []
    for run in range(RUNS):
        table = make(n_rows, 900 + run)
        truth = np.array([table.count(q).value for q in pool])
        release = SPLUGen(gamma=gamma).publish(table, random_state=run)
        release.estimator = "paper"
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            values, stderr = release.count_all(pool)
        errors.append(values - truth)
        stderrs.append(stderr)
    return np.array(errors), np.array(stderrs), truth


def check_unbiased_and_calibrated(errors: np.ndarray, stderrs: np.ndarray,
                                  truth: np.ndarray) -> None:
    assert np.all(np.isfinite(stderrs)) and np.all(stderrs > 0)
    # Counts whose relative standard errors stay below 0.8, where the delta method's first
    # order holds well enough.
    assert np.all(np.sqrt((stderrs ** 2).mean(axis=0)) < 0.8 * truth)
    # The model's variance, averaged over the publications.
    model_sd = np.sqrt((stderrs ** 2).mean(axis=0))
    # Unbiased: each mean error within 4 standard errors of the mean (a pool of 4 unbiased
    # queries exceeds that with probability 2.5e-4).
    z = errors.mean(axis=0) / (model_sd / np.sqrt(RUNS))
    assert np.all(np.abs(z) < 4), z
    # Calibrated: the spread of 30 estimates matches the model's standard error within 4
    # times the sampling error of a standard deviation from 30 draws (1 / sqrt(2 * 29)).
    ratio = errors.std(axis=0, ddof=1) / model_sd
    assert np.all(np.abs(ratio - 1) < 4 / np.sqrt(2 * (RUNS - 1))), ratio


def test_paper_estimator_unbiased_with_one_sensitive_attribute():
    """Section 5.1 (Eq. 6-13), a condition on other attributes with one sensitive value."""
    pool = ["a <= 1 AND s = 0", "a = 1 AND s = 2", "b = 0 AND s = 5",
            "a >= 2 AND b <= 1 AND s = 3"]
    # Counts of 300-1,100 rows.
    check_unbiased_and_calibrated(*paper_errors(one_sensitive, pool, gamma=4, n_rows=10_000))


def test_paper_estimator_unbiased_with_two_sensitive_attributes():
    """Section 5.2: 2^3 states, M = M_0 (x) M_1 (x) M_2, each attribute randomized alone."""
    pool = ["a >= 1 AND s = 0 AND t = 0", "a = 0 AND s = 1 AND t = 1", "s = 2 AND t = 2",
            "a <= 1 AND s = 3 AND t = 0"]
    check_unbiased_and_calibrated(*paper_errors(two_sensitive, pool, gamma=2, n_rows=10_000))


def stopped_release():
    """A release whose reconstruction is cut off after its first accelerated step."""
    release = SPLUGen(gamma=4).publish(one_sensitive(5_000, 1), random_state=1)
    release.estimator = "paper"
    release.max_iterations = 1
    release.tolerance = 1e-12
    return release


def test_unconverged_reconstruction_warns_and_flags_the_answer():
    release = stopped_release()
    with pytest.warns(ConvergenceWarning, match="did not converge within max_iterations = 1 "
                                                "for 1 of 1 queries") as caught:
        answer = release.count("a = 1 AND s = 2")
    # The warning points at the line that asked, not inside ppdp.
    assert caught[0].filename == __file__
    assert isinstance(answer, Estimate) and answer.converged is False
    assert answer.to_dict()["converged"] is False
    assert "converged=False" in repr(answer)
    with pytest.warns(ConvergenceWarning):
        grouped = release.count("SELECT COUNT(*) FROM t WHERE a = 1 GROUP BY s")
    assert isinstance(grouped, GroupedEstimate) and grouped.converged is False
    assert all(not estimate.converged for _, estimate in grouped.groups)
    with pytest.warns(ConvergenceWarning, match="for 1 of 2 queries") as caught:
        values, _ = release.count_all(["a = 1 AND s = 2", "a = 2"])
    assert caught[0].filename == __file__
    assert np.isfinite(values).all()


def test_converged_answers_are_not_flagged_and_read_as_before():
    release = stopped_release()
    # A condition on quasi-identifiers only needs no reconstruction.
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        exact = release.count("a = 1")
        release.max_iterations = 10_000
        release.tolerance = 1e-6
        answer = release.count("a = 1 AND s = 2")
    assert exact.converged and answer.converged
    assert "converged" not in answer.to_dict() and "converged" not in repr(answer)
    release.estimator = "layout"
    assert release.count("a = 1 AND s = 2").converged


def test_command_line_says_when_the_reconstruction_stopped(tmp_path, monkeypatch):
    """``ppdp count --estimator paper`` prints the flag and writes it in --json."""
    path = SPLUGen(gamma=4).publish(one_sensitive(5_000, 1), random_state=1).save(
        tmp_path / "release")
    monkeypatch.setattr(SpluRelease, "max_iterations", 1)
    monkeypatch.setattr(SpluRelease, "tolerance", 1e-12)
    runner = CliRunner()
    query = "a = 1 AND s = 2"
    with pytest.warns(ConvergenceWarning):
        answer = runner.invoke(app, ["count", str(path), query, "--json", "--estimator",
                                     "paper"])
    assert answer.exit_code == 0, answer.output
    assert json.loads(answer.stdout)["converged"] is False
    with pytest.warns(ConvergenceWarning):
        text = runner.invoke(app, ["count", str(path), query, "--estimator", "paper"])
    assert "converged     no" in text.stdout
    with pytest.warns(ConvergenceWarning):
        text = runner.invoke(app, ["count", str(path), f"SELECT COUNT(*) FROM t WHERE {query} "
                                                       "GROUP BY a", "--estimator", "paper"])
    assert "stopped at its iteration limit" in text.stdout
    layout = runner.invoke(app, ["count", str(path), query, "--json"])
    assert "converged" not in json.loads(layout.stdout)
