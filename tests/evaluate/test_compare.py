"""ppdp.compare on Adult and on a sample of FARS: every mechanism compared meets the stated
privacy on releases of its own, the recommendation is the lowest measured error among those
that meet it (recomputed from results.json), and the report parses with figures that render."""

from __future__ import annotations

import base64
import io
import json
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

import ppdp
from ppdp.evaluate.compare import compare, read_queries
from ppdp.evaluate.workloads import splu_pools
from ppdp.jsonable import json_ready
from ppdp.mechanisms import get_mechanism
from ppdp.mechanisms.sdr.formulas import amplification_gamma

RHO = "rho1=1/13,rho2=0.2"


@pytest.fixture(scope="module")
def adult() -> ppdp.Table:
    return ppdp.datasets.adult(sensitive="occupation")


@pytest.fixture(scope="module")
def adult_report(adult, tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("compare-adult")
    compare(adult, privacy=RHO, quick=True, runs=2, random_state=7).write(directory)
    return directory


@pytest.fixture(scope="module")
def fars_sample(fars) -> ppdp.Table:
    """20,000 FARS rows (seeded), sensitive age: the comparison's second real table."""
    rows = np.random.default_rng(3).choice(fars.n_rows, 20_000, replace=False)
    return fars.take(np.sort(rows)).with_roles(sensitive="iage")


@pytest.fixture(scope="module")
def fars_report(fars_sample, tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("compare-fars")
    compare(fars_sample, privacy="beta=0.1", quick=True, runs=2, random_state=11
            ).write(directory)
    return directory


def results(directory: Path) -> dict:
    return json.loads((directory / "results.json").read_text())


def largest_association(release) -> float:
    """The largest share c/|G| of one sensitive value in a group, from the release's own
    group tables."""
    if hasattr(release, "st"):
        groups, _, counts = (np.asarray(a) for a in release.st)
        sizes = np.bincount(groups, weights=counts)
        return float((counts / sizes[groups]).max())
    return float(release.association().max())


def largest_posterior(mechanism, table: ppdp.Table) -> float:
    """The largest posterior f gamma / (f gamma + 1 - f) of a value rarer than rho1 (its
    frequency f in its sub-table; Small Domain Randomization Eq. 6 and 10)."""
    column = table.schema.sensitive[0]
    frequencies = np.bincount(table.codes[column], minlength=table.schema[column].size)
    if hasattr(mechanism, "partition"):
        partition = mechanism.partition(table)
        counts, gammas = partition.counts, np.asarray(partition.gammas, dtype=float)
    else:
        counts = frequencies[None, :]
        gammas = np.array([float(amplification_gamma(mechanism.rho1, mechanism.rho2))])
    protected = frequencies / table.n_rows <= mechanism.rho1
    shares = counts / counts.sum(axis=1, keepdims=True)
    posterior = shares * gammas[:, None] / (shares * gammas[:, None] + 1 - shares)
    return float(posterior[:, protected].max())


def check_meets_on_fresh_releases(data: dict, table: ppdp.Table) -> None:
    """Each compared mechanism, rebuilt from the reported parameters and published anew,
    meets the stated bounds; so does what the comparison measured."""
    bounds = data["privacy"]["bounds"]
    compared = [m for m in data["mechanisms"] if m["status"] == "compared"]
    assert compared
    for entry in compared:
        mechanism = get_mechanism(entry["mechanism"])(**entry["parameters"])
        release = mechanism.publish(table, random_state=5)
        if "posterior" in bounds and entry["mechanism"] in ("uniform", "sdr"):
            assert largest_posterior(mechanism, table) <= bounds["posterior"] + 1e-12
        else:
            assert largest_association(release) <= bounds["association"] + 1e-12
            if "presence" in bounds:
                assert float(release.presence().max()) <= bounds["presence"] + 1e-12
        for measure in entry["privacy"]:
            if measure["target_bound"] is not None:
                assert measure["largest"] <= measure["target_bound"] + measure["margin"] + 1e-12
        assert entry["meets"]


def check_recommendation(data: dict) -> None:
    """The recommendation is the lowest error among the mechanisms whose measured privacy
    meets the target, recomputed from the file's measures and the target's bounds."""
    bounds = data["privacy"]["bounds"]

    def meets(entry: dict) -> bool:
        held = [m for m in entry["privacy"] if m["measure"] in bounds]
        return bool(held) and all(m["largest"] <= bounds[m["measure"]] + m["margin"] + 1e-12
                                  for m in held)

    meeting = [m for m in data["mechanisms"] if m["status"] == "compared" and meets(m)]
    best = min(meeting, key=lambda m: m["error"])
    assert data["recommendation"]["mechanism"] == best["mechanism"]
    assert data["recommendation"]["parameters"] == best["parameters"]


def test_adult_every_compared_mechanism_meets_the_stated_privacy(adult, adult_report):
    data = results(adult_report)
    assert {m["mechanism"] for m in data["mechanisms"] if m["status"] == "compared"} == {
        "anatomy", "uniform", "sdr", "ambiguity", "mondrian"}
    check_meets_on_fresh_releases(data, adult)


def test_adult_recommendation_is_the_lowest_error_that_meets_the_target(adult_report):
    data = results(adult_report)
    check_recommendation(data)
    assert data["recommendation_reason"].startswith("lowest mean relative error on the "
                                                    "large-count pool")
    assert "among the 5 mechanisms whose measured privacy meets rho1=1/13,rho2=0.2" in \
        data["recommendation_reason"]


def test_adult_results_hold_errors_by_count_time_size_and_predicted_error(adult_report):
    data = results(adult_report)
    for entry in (m for m in data["mechanisms"] if m["status"] == "compared"):
        assert entry["runs"] == 2 and entry["error"] > 0
        # The generated pools: 200 counts of 1-10, 200 of selectivity 0.5-5 % (151-1,508).
        assert entry["bands"][0] == {**entry["bands"][0], "band": "1-10", "queries": 200}
        assert sum(b["queries"] for b in entry["bands"]) == 400
        assert entry["release_bytes"] > 0
        if entry["mechanism"] in ("uniform", "sdr"):
            predicted = entry["predicted"]
            assert predicted["scope"] == "values" and predicted["counts"] == 14
            assert 0 <= predicted["share_within"] <= 1
            assert predicted["largest_error_over_bound"] > 0
    reasons = {m["mechanism"]: m["reason"] for m in data["mechanisms"]
               if m["status"] == "not eligible"}
    assert set(reasons) == {"splu", "dbr", "laplace", "alphabeta", "frapp"}
    assert "small-sum privacy" in reasons["splu"]


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.images: list[str] = []
        self.headings = 0

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.images.append(dict(attrs)["src"])
        elif tag not in ("meta", "br"):
            self.open.append(tag)
        self.headings += tag in ("h1", "h2")

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, (self.open[-3:], tag)
        self.open.pop()


@pytest.mark.parametrize("report", ["adult_report", "fars_report"])
def test_report_parses_and_its_figures_render(report, request):
    import matplotlib.image

    directory = request.getfixturevalue(report)
    page = _Page()
    page.feed((directory / "report.html").read_text())
    page.close()
    assert page.open == [] and page.headings >= 4
    assert len(page.images) == 3
    for source in page.images:
        prefix = "data:image/png;base64,"
        assert source.startswith(prefix)
        pixels = matplotlib.image.imread(io.BytesIO(base64.b64decode(source[len(prefix):])),
                                         format="png")
        assert pixels.shape[0] > 100 and pixels.shape[1] > 100


def test_fars_every_compared_mechanism_meets_the_stated_privacy(fars_sample, fars_report):
    data = results(fars_report)
    assert {m["mechanism"] for m in data["mechanisms"] if m["status"] == "compared"} == {
        "anatomy", "ambiguity", "mondrian"}
    check_meets_on_fresh_releases(data, fars_sample)
    check_recommendation(data)


def test_fars_skewed_column_is_refused_with_its_reason(fars_sample):
    """FARS's injury severity is 42 % of one value: no group of 6 distinct values holds
    every row, so only the perturbations meet (1/30, 1/6)-privacy (Section 6.3)."""
    result = compare(fars_sample.with_roles(sensitive="iinjury"), privacy="rho1=1/30,rho2=1/6",
                     quick=True, runs=2, random_state=2)
    status = {m.name: m for m in result.mechanisms}
    for name in ("anatomy", "ambiguity", "mondrian"):
        assert status[name].status == "not eligible"
        assert "more than 1/6 of the rows" in status[name].advice.reason
    assert {n for n, m in status.items() if m.status == "compared"} == {"uniform", "sdr"}
    assert all(status[n].meets for n in ("uniform", "sdr"))
    check_recommendation(json_ready(result.to_dict()))


def test_small_count_privacy_is_measured_on_small_counts(adult):
    """SPLU-Gen at the advised gamma recovers counts 1..a within eps no more often than
    1 - T_P (Theorem 4), within three standard errors, on a fresh publication too."""
    result = compare(adult, privacy="small-count:a=3,eps=0.3,tp=0.6", quick=True, runs=2,
                     random_state=4)
    (splu,) = [m for m in result.mechanisms if m.status == "compared"]
    assert splu.name == "splu" and splu.advice.parameters == {"gamma": 7} and splu.meets
    (measured,) = splu.privacy
    assert measured["measure"] == "small_count_recovered" and measured["target_bound"] == 0.4
    small, _ = splu_pools(adult, size=400, random_state=9)
    keep = small.truth <= 3
    estimates, _ = ppdp.SPLUGen(gamma=7).publish(adult, random_state=9).count_all(
        [q for q, k in zip(small.queries, keep, strict=True) if k])
    truth = small.truth[keep]
    recovered = np.mean(np.abs(estimates - truth) <= 0.3 * truth)
    assert recovered <= 0.4 + 3 * np.sqrt(0.4 * 0.6 / keep.sum())
    assert result.recommendation.mechanism == "splu"


def test_given_queries_are_answered_and_zero_counts_left_out(adult, tmp_path):
    path = tmp_path / "queries.sql"
    path.write_text("-- two counts and one that is empty\n"
                    "sex = 'Female' AND occupation = 'Sales';\n"
                    "SELECT COUNT(*) FROM t WHERE age >= 40\n  AND occupation = 'Craft-repair';\n"
                    "age < 17 AND occupation = 'Exec-managerial';\n")
    queries = read_queries(path)
    assert len(queries) == 3 and queries[1].startswith("SELECT COUNT(*)")
    result = compare(adult, privacy="beta=0.25", queries=queries, runs=2, random_state=1)
    assert "1 with true count 0" in result.queries
    assert result.error_scope == "the given queries with a true count above 0"
    for entry in (m for m in result.mechanisms if m.status == "compared"):
        assert sum(b["queries"] for b in entry.bands) == 2
    lines = tmp_path / "lines.sql"
    lines.write_text("sex = 'Male'\n\nrace = 'Other'\n")
    assert read_queries(lines) == ["sex = 'Male'", "race = 'Other'"]


@pytest.mark.parametrize(("queries", "match"), [
    (["sex = 'Male'", "SELECT COUNT(*) FROM t GROUP BY sex"], "query 2 .*GROUP BY"),
    (["nosuchcolumn = 1"], "query 1 .*unknown column 'nosuchcolumn'"),
])
def test_bad_queries_are_one_clear_error(adult, queries, match):
    with pytest.raises(ValueError, match=match):
        compare(adult, queries=queries, runs=1)
