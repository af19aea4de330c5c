"""Multiple alpha-beta views of one table (Algorithm 4 of the alpha-beta paper, Section 4.3): their
rates, the estimator on later views, the private view state, the release files and the
command line.

Statistical checks run over fixed seeds. A mean is accepted within 5 standard errors of its
expectation and an empirical sd within 5 relative sds (1/sqrt(2(R - 1)) for R draws) of the
reported stderr: a correct implementation fails such a check with probability below 1e-6 per
quantity, while biases of a fraction of a standard error times sqrt(R) are caught.
"""

from __future__ import annotations

import json
import math
from importlib import resources

import numpy as np
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import ppdp
from ppdp import AlphaBeta, InfeasibleError, ReleaseError
from ppdp.cli import app
from ppdp.io.read import write_table
from ppdp.mechanisms.alphabeta.draws import view_rates
from ppdp.mechanisms.alphabeta.release import AlphaBetaRelease
from ppdp.mechanisms.alphabeta.views import ViewSequence, fingerprint
from ppdp.table.table import Table
from tests.mechanisms.alphabeta.alphabeta_helpers import (
    ADULT_M,
    ADULT_PUBLIC_N,
    ADULT_QUERIES,
    NUMERIC_QUERIES,
    SMALL_SIZES,
    assert_calibrated,
    assert_unbiased,
    example_codes,
    example_schema,
    int_table,
    view_keys,
)

# -- multiple views (Algorithm 4) --------------------------------------------------------------


def test_view_rates():
    alpha, beta, v = 0.3, 0.05, 4
    first = view_rates(alpha, beta, v, 1)
    # View 1 is Algorithm 1: tuples of I (not yet seen) kept at alpha + beta, the rest of D
    # inserted at beta; the estimator divides by alpha.
    assert first.unseen == pytest.approx(alpha) and first.other == pytest.approx(beta)
    for view in (1, 2, 3, 4):
        rates = view_rates(alpha, beta, v, view)
        assert rates.earlier == pytest.approx((alpha + beta) * math.exp(-1 / v))
        assert rates.seen + rates.earlier == pytest.approx(alpha + beta)
        assert rates.other == pytest.approx((1 - alpha - beta) ** (view - 1) * beta)
        assert rates.unseen + rates.other == pytest.approx(alpha + beta)


def test_a_sequence_publishes_v_views_and_no_more(small_table):
    sequence = AlphaBeta(alpha=0.3, beta=0.2, v=3).views(small_table)
    union = np.empty(0, dtype=np.int64)
    for view in (1, 2, 3):
        release = sequence.publish(random_state=view)
        assert release.parameters["view"] == view and release.parameters["v"] == 3
        earlier = release.domain.keys(release.earlier) if view > 1 else np.empty(0)
        assert set(earlier.tolist()) == set(union.tolist())  # V' is published with view i
        union = np.union1d(union, view_keys(release))
        assert sequence.published == view
        assert np.array_equal(sequence.earlier, union)
    with pytest.raises(InfeasibleError, match="v = 3"):
        sequence.publish(random_state=4)
    assert sequence.published == 3


@pytest.fixture(scope="module")
def distinct_table() -> Table:
    """600 distinct tuples of the Example 4.1 domain (m = 1200), one row each."""
    keys = np.random.default_rng(5).choice(1200, size=600, replace=False)
    age, nationality, score = np.unravel_index(keys, (20, 3, 20))
    return Table(example_schema(), {"age": age, "nationality": nationality, "score": score})


def run_sequences(table: Table, runs: int = 400, v: int = 3):
    """R fresh sequences of v views, alpha = 0.4, beta = 0.1: estimates and stderrs per view,
    seed and query, and view sizes."""
    mechanism = AlphaBeta(alpha=0.4, beta=0.1, v=v)
    values = np.empty((v, runs, len(NUMERIC_QUERIES)))
    errors = np.empty_like(values)
    sizes = np.empty((v, runs))
    for seed in range(runs):
        sequence = mechanism.views(table)
        for view in range(v):
            release = sequence.publish(random_state=seed * 10 + view)
            values[view, seed], errors[view, seed] = release.count_all(NUMERIC_QUERIES)
            sizes[view, seed] = release.n_rows
    return values, errors, sizes


@pytest.fixture(scope="module")
def distinct_sequences(distinct_table):
    return run_sequences(distinct_table)


@pytest.fixture(scope="module")
def repeated_sequences(example_table):
    return run_sequences(example_table)


@pytest.mark.parametrize("view", [2, 3])
def test_later_views_are_unbiased(distinct_table, distinct_sequences, example_table,
                                  repeated_sequences, view):
    """Views 2 and 3 estimate the tuples seen in V' and the others apart (their rates differ).
    Over 400 fresh sequences each query's mean is within 5 standard errors of the truth, on a
    table of distinct tuples and on one whose tuples repeat; on distinct tuples the empirical
    sd is within 5 relative sds (0.18) of the reported stderr (with repeated tuples the stderr
    is too small, see test_stderr_with_repeated_tuples)."""
    for table, (values, errors, _) in ((distinct_table, distinct_sequences),
                                       (example_table, repeated_sequences)):
        for j, query in enumerate(NUMERIC_QUERIES):
            truth = table.count(query).value
            label = f"view {view}: {query} ({table.n_rows} rows)"
            assert_unbiased(values[view - 1, :, j], truth, label)
            if table is distinct_table:
                assert_calibrated(values[view - 1, :, j], errors[view - 1, :, j], label)


def test_later_views_stay_bounded(distinct_sequences, repeated_sequences):
    """Section 4.4.1: no view is larger than |V_1|/(alpha + beta). Mean sizes over 400
    sequences, compared with 5 standard errors of slack."""
    for _, _, sizes in (distinct_sequences, repeated_sequences):
        first = sizes[0].mean()
        for view in (1, 2):
            slack = 5 * math.hypot(sizes[view].std(ddof=1), sizes[0].std(ddof=1) / 0.5) / \
                math.sqrt(sizes.shape[1])
            assert sizes[view].mean() <= first / 0.5 + slack


@pytest.mark.parametrize("view", [1, 2])
def test_stderr_with_repeated_tuples(view):
    """One tuple held by 8 rows, the query selecting exactly it (n_D = 1), alpha = 0.4,
    beta = 0.1, R = 400 sequences. View 1: the copies in V are Binomial(8, 0.4125), so the
    estimate's sd is sqrt(8 * 0.4125 * 0.5875)/0.4 = 3.48. The reported stderr must count the
    8 rows' variances, not cap them at the one distinct tuple the condition selects (which
    gave at most sqrt(0.25)/0.4 = 1.25). The estimate itself is unbiased (checked first)."""
    rows = [(25, "Indian", 90)] * 8
    schema = example_schema()
    table = Table(schema, example_codes(schema, rows))
    query = "age = 25 AND nationality = 'Indian' AND score = 90"
    mechanism = AlphaBeta(alpha=0.4, beta=0.1, v=2)
    runs = 400
    values, errors = np.empty(runs), np.empty(runs)
    for seed in range(runs):
        sequence = mechanism.views(table)
        for index in range(view):
            release = sequence.publish(random_state=seed * 10 + index)
        answer = release.count(query)
        values[seed], errors[seed] = answer.value, answer.stderr
    assert_unbiased(values, 8, query)
    assert_calibrated(values, errors, query)


def test_later_views_are_unbiased_on_adult(adult):
    """Adult at (2 n/m, 0.5), v = 3, R = 30 fresh sequences (0.26 s each): the means of views 2
    and 3 within 5 standard errors of the truth."""
    runs, queries = 30, ADULT_QUERIES[:4]
    truths = [adult.count(q).value for q in queries]
    values = np.empty((3, runs, len(queries)))
    sizes = np.empty((3, runs))
    for seed in range(runs):
        sequence = AlphaBeta(k=2, gamma=0.5, v=3).views(adult)
        for view in range(3):
            release = sequence.publish(random_state=1000 + 3 * seed + view)
            values[view, seed], _ = release.count_all(queries)
            sizes[view, seed] = release.n_rows
    for view in (1, 2):
        for j, query in enumerate(queries):
            assert_unbiased(values[view, :, j], truths[j], f"view {view + 1}: {query}")
        assert sizes[view].mean() <= sizes[0].mean() / 0.5


def test_state_round_trip_continues_the_sequence(small_table, tmp_path):
    mechanism = AlphaBeta(alpha=0.3, beta=0.2, v=3)
    sequence = mechanism.views(small_table)
    sequence.publish(random_state=1)
    state = sequence.save_state(tmp_path / "state")
    assert (state / "state.json").is_file()
    loaded = ViewSequence.load_state(state, AlphaBeta(alpha=0.3, beta=0.2, v=3), small_table)
    assert loaded.published == 1
    assert np.array_equal(loaded.earlier, sequence.earlier)
    # The same draws give the same second view from the loaded and the original sequence.
    second = sequence.publish(random_state=2)
    again = loaded.publish(random_state=2)
    assert again.parameters["view"] == 2
    assert np.array_equal(view_keys(second), view_keys(again))
    loaded.save_state(state)
    last = ViewSequence.load_state(state, mechanism, small_table)
    assert last.published == 2 and np.array_equal(last.earlier, sequence.earlier)
    last.publish(random_state=3)
    last.save_state(state)
    with pytest.raises(InfeasibleError):
        ViewSequence.load_state(state, mechanism, small_table).publish(random_state=4)


def test_state_of_another_table_or_other_parameters_is_refused(small_table, tmp_path):
    mechanism = AlphaBeta(alpha=0.3, beta=0.2, v=3)
    sequence = mechanism.views(small_table)
    sequence.publish(random_state=1)
    state = sequence.save_state(tmp_path / "state")
    rows = np.stack([small_table.codes[c] for c in SMALL_SIZES], axis=1)
    rows[0, 0] = (rows[0, 0] + 1) % 5
    with pytest.raises(ReleaseError, match="another table"):
        ViewSequence.load_state(state, mechanism, int_table(SMALL_SIZES, rows))
    for other in (AlphaBeta(alpha=0.3, beta=0.1, v=3), AlphaBeta(alpha=0.3, beta=0.2, v=4)):
        with pytest.raises(ReleaseError, match="same parameters"):
            ViewSequence.load_state(state, other, small_table)
    with pytest.raises(ReleaseError):
        ViewSequence.load_state(tmp_path / "missing", mechanism, small_table)


def test_release_files_hold_no_state(small_table, tmp_path):
    """Views 1 and 2 saved: release.json, view.parquet (and earlier.parquet, V', for view 2);
    no seed, fingerprint or count of published views anywhere in them."""
    sequence = AlphaBeta(alpha=0.3, beta=0.2, v=2).views(small_table)
    secret = fingerprint(small_table)
    for view in (1, 2):
        target = tmp_path / f"view{view}"
        sequence.publish(random_state=987654).save(target)
        expected = {"release.json", "view.parquet"} | ({"earlier.parquet"} if view > 1 else set())
        assert {p.name for p in target.iterdir()} == expected
        text = (target / "release.json").read_text()
        metadata = json.loads(text)
        assert set(metadata["parameters"]) <= {"alpha", "beta", "k", "gamma", "d", "v", "view",
                                               "noise"}
        for word in ("seed", "state", "fingerprint", "published", "987654", secret[:16]):
            assert word not in text
        for name in expected - {"release.json"}:
            data = (target / name).read_bytes()
            assert b"987654" not in data and secret[:16].encode() not in data
    # The state (V' and the count of views) is written only where save_state is told.
    state = sequence.save_state(tmp_path / "private" / "state")
    assert {p.name for p in state.iterdir()} == {"state.json", "earlier.parquet"}
    assert json.loads((state / "state.json").read_text())["published"] == 2


def test_release_save_load_round_trip(example_table, tmp_path):
    sequence = AlphaBeta(alpha=0.4, beta=0.1, v=2).views(example_table)
    queries = [*NUMERIC_QUERIES, "nationality = 'Indian'"]
    for view in (1, 2):
        release = sequence.publish(random_state=view)
        loaded = ppdp.load_release(release.save(tmp_path / f"view{view}"))
        assert isinstance(loaded, AlphaBetaRelease)
        assert loaded.parameters == release.parameters
        for query in queries:
            assert loaded.count(query) == release.count(query)
        group = "SELECT COUNT(*) WHERE age > 30 GROUP BY nationality"
        assert loaded.count(group) == release.count(group)


# -- command line ------------------------------------------------------------------------------

runner = CliRunner()


def run(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def refused(*args: object, match: str, code: int) -> str:
    result = run(*args)
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert match in lines[0], lines[0]
    return lines[0]


def test_cli_views_of_the_paper_table(private_state_dir, tmp_path):
    """Two views of the paper's table (adult-arx-9attr.csv: the bundled Adult's rows, written
    as a CSV file) at (10 n/m, 0.2) with v = 2, no --sensitive, over the values present (the
    paper's setting); a third view and a view with other parameters are refused."""
    source = write_table(ppdp.datasets.adult().to_arrow(), tmp_path / "adult-arx-9attr.csv")
    params = ["-m", "alphabeta", "-p", "k=10", "-p", "gamma=0.2", "-p", "v=2",
              "--observed-domains"]
    first = run("publish", source, *params, "-o", tmp_path / "view1", "--seed", 1)
    assert first.exit_code == 0, first.output
    meta = json.loads((tmp_path / "view1" / "release.json").read_text())
    assert meta["mechanism"] == "alphabeta" and meta["parameters"]["view"] == 1
    # beta = k n'/(gamma m) with n' the public row count, not n.
    assert meta["parameters"]["beta"] == pytest.approx(10 * ADULT_PUBLIC_N / ADULT_M / 0.2)
    # The private state is kept in the state folder ($PPDP_STATE_DIR), not beside the release.
    states = list(private_state_dir.glob("*/state.json"))
    assert len(states) == 1 and json.loads(states[0].read_text())["published"] == 1
    assert not list(tmp_path.rglob("state.json"))
    second = run("publish", source, *params, "-o", tmp_path / "view2", "--seed", 2)
    assert second.exit_code == 0, second.output
    meta = json.loads((tmp_path / "view2" / "release.json").read_text())
    assert meta["parameters"]["view"] == 2 and "earlier" in meta["files"]
    assert json.loads(states[0].read_text())["published"] == 2
    # A view beyond the bound: 3; the state set up with other parameters: 4.
    refused("publish", source, *params, "-o", tmp_path / "view3", "--seed", 3, match="v = 2",
            code=3)
    assert not (tmp_path / "view3").exists()
    refused("publish", source, "-m", "alphabeta", "-p", "k=10", "-p", "gamma=0.3", "-p", "v=2",
            "--observed-domains", "-o", tmp_path / "other", "--seed", 4,
            match="same parameters", code=4)
    assert not (tmp_path / "other").exists()
    # The release answers queries through `ppdp count`.
    answer = run("count", tmp_path / "view2", "age < 30", "--json")
    assert answer.exit_code == 0, answer.output
    assert set(json.loads(answer.stdout)) == {"estimate", "stderr", "ci95"}


def test_cli_state_dir(private_state_dir, tmp_path):
    """--state-dir puts the state there and nothing beside the release; the bundled adult at
    (n/m, 0.5) keeps the views small."""
    params = ["-m", "alphabeta", "-p", "k=1", "-p", "gamma=0.5", "-p", "v=2"]
    private = tmp_path / "private"
    out = tmp_path / "public"
    result = run("publish", "adult", *params, "-o", out / "v1", "--seed", 1, "--state-dir",
                 private)
    assert result.exit_code == 0, result.output
    assert list(private.glob("*/state.json")) and not (out / ".ppdp-state").exists()
    result = run("publish", "adult", *params, "-o", out / "v2", "--seed", 2, "--state-dir",
                 private)
    assert result.exit_code == 0, result.output
    assert json.loads((out / "v2" / "release.json").read_text())["parameters"]["view"] == 2
    # Without --state-dir the state is kept in the default state folder ($PPDP_STATE_DIR
    # here), which holds none for this table yet: a new sequence starts there ...
    result = run("publish", "adult", *params, "-o", out / "v3", "--seed", 3)
    assert result.exit_code == 0, result.output
    assert json.loads((out / "v3" / "release.json").read_text())["parameters"]["view"] == 1
    assert list(private_state_dir.glob("*/state.json"))
    assert not (out / ".ppdp-state").exists() and not list(tmp_path.rglob(".ppdp-state"))
    # ... and continues whatever the output folder.
    result = run("publish", "adult", *params, "-o", tmp_path / "elsewhere" / "v4", "--seed", 4)
    assert result.exit_code == 0, result.output
    metadata = json.loads((tmp_path / "elsewhere" / "v4" / "release.json").read_text())
    assert metadata["parameters"]["view"] == 2


@pytest.mark.parametrize("variant", ["sensitive", "row order"])
def test_cli_same_rows_continue_the_sequence(tmp_path, variant):
    params = ["-m", "alphabeta", "-p", "k=1", "-p", "gamma=0.5", "-p", "v=2"]
    result = run("publish", "adult", *params, "-o", tmp_path / "v1", "--seed", 1)
    assert result.exit_code == 0, result.output
    if variant == "sensitive":
        again = run("publish", "adult", *params, "-s", "occupation", "-o", tmp_path / "v2",
                    "--seed", 2)
    else:
        # The bundled adult's rows shuffled, with the same (codebook) domains declared.
        adult = ppdp.datasets.adult()
        source = tmp_path / "data" / "shuffled.parquet"
        source.parent.mkdir()
        order = np.random.default_rng(0).permutation(adult.n_rows)
        pq.write_table(adult.take(order).to_arrow(), source)
        with resources.as_file(resources.files("ppdp.datasets") / "adult.domains.json") as path:
            again = run("publish", source, *params, "--domains", path, "-o", tmp_path / "v2",
                        "--seed", 2)
    assert again.exit_code == 0, again.output
    assert json.loads((tmp_path / "v2" / "release.json").read_text())["parameters"]["view"] == 2
