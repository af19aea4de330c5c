"""SPLU-Gen (Fu et al. 2014): the walk-through of Fig. 3, estimator statistics, errors."""

import json

import numpy as np
import pyarrow as pa
import pytest

import ppdp
from ppdp.errors import InfeasibleError, SchemaError
from ppdp.mechanisms.grouping import distinct_value_groups
from ppdp.mechanisms.splu.mechanism import SPLUGen
from ppdp.mechanisms.splu.release import observed_states
from ppdp.table.table import table_from_arrow

# A table shaped like Fig. 3(a): nine patients, Age and Zip-Code non-sensitive, Disease
# sensitive, gamma = 3 (the figure's values are not in the text; these are stand-ins).
FIG3 = pa.table({
    "age": [23, 27, 35, 41, 45, 52, 58, 61, 67],
    "zip": [12000, 13000, 15000, 12000, 17000, 14000, 16000, 13000, 15000],
    "disease": ["hiv", "flu", "fever", "flu", "fever", "hiv", "cold", "flu", "fever"],
})


def fig3_table():
    # The figure's stand-in diseases are its intended (public) sensitive domain.
    return table_from_arrow(FIG3).declare_observed_domains(warn=False).with_roles(
        sensitive="disease")


def test_fig3_walk_through_invariants():
    table = fig3_table()
    disease = table.codes["disease"]
    size = table.schema["disease"].size
    groups = distinct_value_groups(disease, 3, domain_size=size, column="disease",
                                   symbol="gamma")
    # Step 2: r = N/gamma groups of gamma tuples with distinct diseases, each tuple in one.
    assert groups.n_groups == 3 and list(groups.sizes) == [3, 3, 3]
    for g in range(3):
        assert len(set(disease[groups.members[g]].tolist())) == 3
    # Step 1: the partition depends on (id, S) only, not on the non-sensitive values.
    moved = table_from_arrow(FIG3.set_column(0, "age", pa.array([99] * 9))).with_roles(
        sensitive="disease")
    again = distinct_value_groups(moved.codes["disease"], 3, domain_size=size,
                                  column="disease", symbol="gamma")
    assert np.array_equal(groups.members, again.members)
    # Step 3: every published value is one of the tuple's decoys, each chosen with p = q =
    # 1/3. Over 3000 publications a decoy's frequency has sd sqrt(1/3 * 2/3 / 3000) = 0.0086.
    group = groups.group_of_rows()
    decoys = [set(disease[groups.members[group[i]]].tolist()) for i in range(9)]
    picks = np.zeros((9, size))
    runs = 3000
    rng = np.random.default_rng(11)
    from ppdp.mechanisms.splu.mechanism import draw_within_groups

    for _ in range(runs):
        drawn = draw_within_groups(disease, groups, rng)
        picks[np.arange(9), drawn] += 1
    for i in range(9):
        chosen = set(np.flatnonzero(picks[i]).tolist())
        assert chosen == decoys[i]
        assert np.all(np.abs(picks[i, list(decoys[i])] / runs - 1 / 3) < 5 * 0.0086)
    # Step 4: the release joins the new values with the untouched non-sensitive values,
    # shuffled, with nothing else: no id, no group.
    release = SPLUGen(gamma=3).publish(table, random_state=5)
    assert release.schema.names == ("age", "zip", "disease")
    assert sorted(release.codes["age"].tolist()) == sorted(table.codes["age"].tolist())
    published_pairs = {(int(a), int(z)) for a, z in zip(release.codes["age"],
                                                      release.codes["zip"], strict=True)}
    original_pairs = {(int(a), int(z)) for a, z in zip(table.codes["age"], table.codes["zip"],
                                                     strict=True)}
    assert published_pairs == original_pairs
    assert release.parameters == {"gamma": 3}


def test_published_value_is_one_of_the_decoys_for_every_row():
    table = fig3_table()
    disease = table.codes["disease"]
    groups = distinct_value_groups(disease, 3, domain_size=4, column="disease", symbol="gamma")
    group = groups.group_of_rows()
    release = SPLUGen(gamma=3).publish(table, random_state=1)
    # The release is shuffled; match rows back through the (age, zip) pairs, unique here.
    position = {(int(a), int(z)): i for i, (a, z) in enumerate(
        zip(table.codes["age"], table.codes["zip"], strict=True))}
    for a, z, d in zip(release.codes["age"], release.codes["zip"], release.codes["disease"],
                       strict=True):
        i = position[(int(a), int(z))]
        assert d in disease[groups.members[group[i]]]


def test_release_files_hold_no_groups_ids_or_seeds(tmp_path):
    table = fig3_table()
    release = SPLUGen(gamma=3).publish(table, random_state=123)
    path = release.save(tmp_path / "r")
    meta = json.loads((path / "release.json").read_text())
    # The digests are hexadecimal hashes, in which any short number may occur.
    described = {key: value for key, value in meta.items()
                 if key not in ("digests", "metadata_digest")}
    text = json.dumps({**described, "digests": sorted(meta["digests"])}).lower()
    for word in ("seed", "decoy", "group", "123"):
        assert word not in text
    import pyarrow.parquet as pq

    assert pq.read_table(path / meta["files"]["rows"]).column_names == ["age", "zip", "disease"]
    # Each distinct published row and its count: nothing the rows do not show.
    assert pq.read_table(path / meta["files"]["row_counts"]).column_names == [
        "age", "zip", "disease", "__count"]


def test_single_value_estimate_is_unbiased_with_binomial_stderr():
    """Theorem 2: the published count is unbiased, Binomial(gamma f, 1/gamma)."""
    table = ppdp.datasets.adult(sensitive="occupation")
    gamma, runs = 5, 60
    query = "occupation = 'Tech-support'"
    truth = table.count(query).value
    estimates = [SPLUGen(gamma=gamma).publish(table, random_state=s).count(query)
                 for s in range(runs)]
    values = np.array([e.value for e in estimates])
    variance = truth * (1 - 1 / gamma)
    # Mean of 60 draws: sd sqrt(variance / 60); allow 5 of them.
    assert abs(values.mean() - truth) < 5 * np.sqrt(variance / runs)
    # The reported standard error is the binomial one at the estimate.
    for e in estimates[:5]:
        assert e.stderr == pytest.approx(np.sqrt(e.value * (1 - 1 / gamma)), rel=1e-6)
    # Sample variance of 60 draws: relative sd about sqrt(2/59) = 0.18; allow 5 of them.
    assert abs(values.var(ddof=1) / variance - 1) < 5 * np.sqrt(2 / (runs - 1))


def independent_table(n_rows, seed):
    """Quasi-identifiers independent of the sensitive value: Section 5.1's model is exact."""
    rng = np.random.default_rng(seed)
    data = pa.table({
        "a": rng.integers(0, 4, n_rows),
        "b": rng.integers(0, 3, n_rows),
        "s": rng.choice(6, n_rows, p=[0.22, 0.2, 0.2, 0.16, 0.12, 0.1]),
    })
    return table_from_arrow(data, domains={"s": list(range(6))}).with_roles(sensitive="s")


def test_reconstruction_converges_to_the_truth_as_n_grows():
    query = "a = 1 AND b <= 1 AND s = 2"
    relative_stderr = []
    for n_rows in (20_000, 200_000, 2_000_000):
        table = independent_table(n_rows, seed=n_rows)
        truth = table.count(query).value
        estimate = SPLUGen(gamma=4).publish(table, random_state=3).count(query)
        assert abs(estimate.value - truth) < 5 * estimate.stderr
        relative_stderr.append(estimate.stderr / truth)
    # The standard error grows like sqrt(N) while the count grows like N.
    ratios = np.array(relative_stderr[:-1]) / np.array(relative_stderr[1:])
    assert np.all(np.abs(ratios - np.sqrt(10)) < 0.5)


def test_reconstruction_on_adult_is_calibrated():
    """Across publications the estimates of joint conditions scatter around the truth by
    about their reported standard error (the delta-method variance of Eq. 13's fixed point)."""
    table = ppdp.datasets.adult(sensitive="occupation")
    queries = ["sex = 'Female' AND occupation = 'Adm-clerical'",
               "age >= 40 AND occupation = 'Exec-managerial'",
               "education = 'Bachelors' AND occupation = 'Prof-specialty'"]
    truth = np.array([table.count(q).value for q in queries])
    runs = 30
    values, stderr = zip(*(SPLUGen(gamma=5).publish(table, random_state=100 + s)
                           .count_all(queries) for s in range(runs)), strict=True)
    values, stderr = np.array(values), np.array(stderr)
    mean_stderr = stderr.mean(axis=0)
    # Mean of 30 estimates within 5 standard errors of the mean.
    assert np.all(np.abs(values.mean(axis=0) - truth) < 5 * mean_stderr / np.sqrt(runs))
    # The spread matches the reported standard error within the sampling error of a standard
    # deviation from 30 draws (relative sd ~ 0.13; allow 4 of them).
    assert np.all(np.abs(values.std(axis=0, ddof=1) / mean_stderr - 1) < 4 * 0.13)


def test_two_sensitive_attributes():
    """Section 5.2: each sensitive attribute randomized independently; 2^3 states."""
    table = ppdp.datasets.adult(sensitive=["occupation", "education"])
    # (A value held by nearly every decoy group, such as HS-grad at gamma = 3, is barely
    # identifiable in joint conditions; its reported standard error says so.)
    query = "sex = 'Male' AND occupation = 'Exec-managerial' AND education = 'Bachelors'"
    truth = table.count(query).value
    estimates = [SPLUGen(gamma=3).publish(table, random_state=s).count(query)
                 for s in range(20)]
    values = np.array([e.value for e in estimates])
    mean_stderr = np.mean([e.stderr for e in estimates])
    assert abs(values.mean() - truth) < 5 * mean_stderr / np.sqrt(len(values))
    # Both sensitive columns were randomized: the marginal counts are published counts.
    release = SPLUGen(gamma=3).publish(table, random_state=1)
    assert release.count("education = 'HS-grad'").stderr > 0
    barely = release.count("sex = 'Male' AND occupation = 'Craft-repair' AND education = "
                           "'HS-grad'")
    assert barely.stderr is None or barely.stderr > barely.value


def test_group_by_and_in_lists_sum_the_single_value_terms():
    table = ppdp.datasets.adult(sensitive="occupation")
    release = SPLUGen(gamma=5).publish(table, random_state=2)
    grouped = release.count("SELECT COUNT(*) FROM t WHERE sex = 'Female' GROUP BY occupation")
    single = release.count("sex = 'Female' AND occupation = 'Sales'")
    assert grouped["Sales"].value == pytest.approx(single.value)
    assert grouped["Sales"].stderr == pytest.approx(single.stderr)
    both = release.count("sex = 'Female' AND occupation IN ('Sales', 'Craft-repair')")
    assert both.value == pytest.approx(grouped["Sales"].value + grouped["Craft-repair"].value)
    # The two terms share rows (a row publishing one value does not publish the other): the
    # sum's standard error comes from their covariance, not from adding the variances.
    apart = np.hypot(grouped["Sales"].stderr, grouped["Craft-repair"].stderr)
    assert both.stderr is not None and 0 < both.stderr != pytest.approx(apart, rel=1e-3)
    # A value alone: the published counts; their variances add to at most the union's
    # binomial bound (Section 4), which is reported.
    alone = release.count("occupation IN ('Sales', 'Craft-repair')")
    assert alone.stderr == pytest.approx(np.sqrt(alone.value * 0.8))
    # Conditions on non-sensitive columns only are exact.
    assert release.count("sex = 'Female'").value == table.count("sex = 'Female'").value


def test_observed_states_match_brute_force():
    rng = np.random.default_rng(0)
    rows = 500
    inside = rng.random(rows) < 0.3
    u1, u2 = rng.integers(0, 3, rows), rng.integers(0, 4, rows)
    counts = np.zeros((3, 4))
    np.add.at(counts, (u1[inside], u2[inside]), 1)
    totals = np.zeros((3, 4))
    np.add.at(totals, (u1, u2), 1)
    states = observed_states(counts, totals, 0)
    for v1 in range(3):
        for v2 in range(4):
            for p in (0, 1):
                for b1 in (0, 1):
                    for b2 in (0, 1):
                        expected = np.sum((inside == p) & ((u1 == v1) == b1)
                                          & ((u2 == v2) == b2))
                        assert states[v1, v2, p * 4 + b1 * 2 + b2] == expected


def test_errors():
    table = ppdp.datasets.adult(sensitive="occupation")
    with pytest.raises(InfeasibleError, match="largest feasible gamma is 7"):
        SPLUGen(gamma=8).publish(table)
    with pytest.raises(SchemaError, match="needs a sensitive column"):
        SPLUGen(gamma=3).publish(ppdp.datasets.adult())
    for bad in (1, 0, 2.5, "5", True):
        with pytest.raises(ValueError, match="gamma must be an integer >= 2"):
            SPLUGen(gamma=bad)


def test_no_rows_dropped_when_n_is_not_a_multiple_of_gamma():
    table = fig3_table()  # N = 9, gamma = 2: four groups, one of three rows
    release = SPLUGen(gamma=2).publish(table, random_state=0)
    assert release.n_rows == 9 and len(release.codes["disease"]) == 9
    assert sorted(release.codes["age"].tolist()) == sorted(table.codes["age"].tolist())


def test_publish_does_not_mutate_the_input():
    table = fig3_table()
    before = {k: v.copy() for k, v in table.codes.items()}
    SPLUGen(gamma=3).publish(table, random_state=0)
    assert all(np.array_equal(before[k], table.codes[k]) for k in before)


def test_count_all_unmixes_conjunctions_together_as_count_does_one_by_one():
    table = ppdp.datasets.adult(sensitive=["occupation", "education"])
    release = SPLUGen(gamma=3).publish(table, random_state=4)
    queries = ["sex = 'Female' AND occupation = 'Sales'",
               "age >= 50 AND occupation IN ('Sales', 'Craft-repair')",
               "occupation = 'Sales'",                                   # a value alone
               "sex = 'Male' AND occupation = 'Sales' AND education = 'Bachelors'",
               "race = 'White' AND education = 'Masters'",
               "sex = 'Female' AND occupation = 'Sales' OR age < 20 AND occupation = 'Sales'"]
    together = release.count_all(queries)
    for query, value, stderr in zip(queries, *together, strict=True):
        alone = release.count(query)
        assert value == pytest.approx(alone.value, rel=1e-9, abs=1e-6)
        assert stderr == pytest.approx(alone.stderr, rel=1e-9, abs=1e-6)
