"""Declared public domains (ppdp.declared_domains, Table.with_domains): a release lists what
the user declared, never the values that happen to be present."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from typer.testing import CliRunner

import ppdp
from ppdp.cli import app
from ppdp.data.domains import parse_domain, read_domains_file, resolve_domains
from ppdp.data.schema import Role
from ppdp.errors import SchemaError, UndeclaredDomainError
from ppdp.mechanisms.alphabeta.privacy import public_row_count
from ppdp.table.table import table_from_arrow

runner = CliRunner()


def visits(rare: bool = True) -> pa.Table:
    """40 rows; the disease 'rare' occurs once (or not at all)."""
    diseases = ["flu", "cold", "hiv", "ulcer"] * 10
    if rare:
        diseases[0] = "rare"
    return pa.table({"age": [20 + i % 9 for i in range(40)],
                     "sex": ["F", "M"] * 20, "disease": diseases})


DISEASES = ["cold", "flu", "hiv", "rare", "ulcer"]


# -- declaring ---------------------------------------------------------------------------------


def test_parse_domain_specs() -> None:
    assert parse_domain("17..20", "age") == range(17, 21)
    assert parse_domain(" a, b ,c", "x") == ["a", "b", "c"]
    assert parse_domain("1,2.5,x", "x") == [1, 2.5, "x"]
    for bad in ("", "a,,b", "1..x", "5..1"):
        with pytest.raises(SchemaError):
            parse_domain(bad, "col")


def test_domains_file_and_bounds(tmp_path: Path) -> None:
    path = tmp_path / "domains.json"
    path.write_text(json.dumps({"domains": {"age": {"min": 0, "max": 120}, "disease": DISEASES}}))
    assert read_domains_file(path) == {"age": range(0, 121), "disease": DISEASES}
    source = tmp_path / "visits.parquet"
    import pyarrow.parquet as pq

    pq.write_table(visits(), source)
    table = ppdp.read_table(source, sensitive="disease", domains=path)
    assert table.schema["age"].domain == tuple(range(121)) and table.schema["age"].declared
    assert table.schema["disease"].declared and not table.schema["sex"].declared
    for content in ({"age": [1]}, {"domains": {"age": {"min": 1.5, "max": 3}}},
                    {"domains": {"age": {"low": 1}}}, {"domains": {"age": []}}):
        path.write_text(json.dumps(content))
        with pytest.raises(SchemaError):
            read_domains_file(path)
    path.write_text("[" * 50_000)
    with pytest.raises(SchemaError, match="cannot read the domains file"):
        read_domains_file(path)
    with pytest.raises(TypeError):
        resolve_domains(42)  # type: ignore[arg-type]


def test_with_domains_remaps_codes_and_refuses_a_narrower_domain() -> None:
    table = table_from_arrow(visits(), roles={"disease": Role.SENSITIVE})
    wider = table.with_domains({"disease": ["asthma", *DISEASES]})
    assert wider.schema["disease"].declared and wider.schema["disease"].size == 6
    np.testing.assert_array_equal(wider.values("disease"), table.values("disease"))
    assert wider.count("disease = 'asthma'").value == 0
    with pytest.raises(SchemaError, match="lacks values present"):
        table.with_domains({"disease": ["flu", "cold"]})


# -- defect: presence and absence revealed by release.json -----------------------------------


@pytest.mark.parametrize("mechanism", [
    ppdp.SPLUGen(gamma=3), ppdp.Anatomy(l=3), ppdp.DBR(),
    ppdp.UniformPerturbation(rho1=0.3, rho2=0.6),
    ppdp.PerturbationPartitioning(rho1=0.3, rho2=0.6),
    ppdp.Ambiguity(alpha=1.0, beta=1 / 3), ppdp.Mondrian(k=3),
], ids=lambda m: m.name)
def test_sensitive_domain_must_be_declared(mechanism: ppdp.Mechanism, tmp_path: Path) -> None:
    table = table_from_arrow(visits(), roles={"disease": Role.SENSITIVE})
    with pytest.raises(UndeclaredDomainError, match=r"'disease'.*--domain"):
        mechanism.publish(table, random_state=1)
    # Declared (with a value absent from the data): the release lists the declaration, the
    # same whether or not the rare value occurs.
    listed = []
    # Mondrian lists its quasi-identifiers' domains too (see the next test).
    quasi = {"age": range(0, 100), "sex": ["F", "M"]} if mechanism.name == "mondrian" else {}
    for rare in (True, False):
        declared = table_from_arrow(visits(rare), roles={"disease": Role.SENSITIVE},
                                    domains={"disease": DISEASES, **quasi})
        release = mechanism.publish(declared, random_state=1)
        target = release.save(tmp_path / f"{mechanism.name}-{rare}")
        schema = json.loads((target / "release.json").read_text())["schema"]
        listed.append(next(c["domain"] for c in schema if c["name"] == "disease"))
    assert listed[0] == listed[1] == DISEASES


def test_mondrian_needs_its_quasi_identifier_domains_declared(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Mondrian hides values in ranges, and its release lists each quasi-identifier's domain:
    taken from the values present, it would list the values the ranges hide."""
    table = table_from_arrow(visits(), roles={"disease": Role.SENSITIVE},
                             domains={"disease": DISEASES})
    with pytest.raises(UndeclaredDomainError, match=r"'age', 'sex'.*hide in ranges"):
        ppdp.Mondrian(k=3).publish(table, random_state=1)
    # Declared as the values present, with the warning --observed-domains gives.
    with caplog.at_level("WARNING"):
        observed = table.declare_observed_domains()
    assert "age, sex" in caplog.text and "revealing which values occur" in caplog.text
    release = ppdp.Mondrian(k=3).publish(observed, random_state=1)
    schema = json.loads((release.save(tmp_path / "observed") / "release.json").read_text())
    assert next(c["domain"] for c in schema["schema"] if c["name"] == "age") == list(
        range(20, 29))
    # Declared: the declaration is listed, not the ages present.
    declared = table.with_domains({"age": range(0, 100), "sex": ["F", "M"]})
    release = ppdp.Mondrian(k=3).publish(declared, random_state=1)
    schema = json.loads((release.save(tmp_path / "declared") / "release.json").read_text())
    assert next(c["domain"] for c in schema["schema"] if c["name"] == "age") == list(
        range(100))


def test_mondrian_cli_refuses_or_warns_for_undeclared_quasi_identifiers(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "visits.csv"
    columns = [column.to_pylist() for column in visits().columns]
    path.write_text("age,sex,disease\n" + "".join(
        f"{a},{s},{d}\n" for a, s, d in zip(*columns, strict=True)))
    args = ["publish", str(path), "-m", "mondrian", "-s", "disease", "-p", "k=3",
            "--domain", "disease=" + ",".join(DISEASES)]
    result = runner.invoke(app, [*args, "-o", str(tmp_path / "refused")])
    assert result.exit_code == 3 and "'age', 'sex'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "refused").exists()
    with caplog.at_level("WARNING"):
        result = runner.invoke(app, [*args, "--observed-domains", "-o",
                                     str(tmp_path / "observed")])
    assert result.exit_code == 0, result.output
    assert "age, sex" in caplog.text and "revealing which values occur" in caplog.text


@pytest.mark.parametrize("mechanism", [ppdp.AlphaBeta(k=1, gamma=0.5), ppdp.FRAPP(k=1,
                                                                                     gamma=0.5)],
                         ids=lambda m: m.name)
def test_tuple_mechanisms_need_every_domain_declared(mechanism: ppdp.Mechanism) -> None:
    table = table_from_arrow(visits(), domains={"disease": DISEASES})
    with pytest.raises(UndeclaredDomainError, match=r"'age', 'sex'.*presence of tuples"):
        mechanism.publish(table, random_state=1)
    declared = table.with_domains({"age": range(0, 100), "sex": ["F", "M"]})
    assert mechanism.publish(declared, random_state=1).n_rows > 0


def test_bundled_adult_lists_the_codebook_not_the_values_present(tmp_path: Path) -> None:
    adult = ppdp.datasets.adult()
    holand = adult.count("\"native-country\" = 'Holand-Netherlands'").value
    assert holand == 1
    without = adult.take(np.flatnonzero(
        adult.values("native-country") != "Holand-Netherlands"))
    domains = []
    for table in (adult, without):
        release = ppdp.AlphaBeta(k=10, gamma=0.2).publish(table, random_state=1)
        metadata = json.loads((release.save(tmp_path / f"v{len(domains)}") /
                               "release.json").read_text())
        domains.append({c["name"]: c["domain"] for c in metadata["schema"]})
    assert domains[0] == domains[1]
    assert "Holand-Netherlands" in domains[0]["native-country"]
    assert domains[0]["age"] == list(range(17, 91))  # 87 and 89 are absent from the rows
    assert "Never-worked" in domains[0]["workclass"]


# -- defect: d and beta revealed the row count ------------------------------------------------


def test_public_row_count_hides_n_within_the_views_own_precision() -> None:
    for n in (12, 1_000, 30_162, 10**6, 5 * 10**7):
        for k, gamma in ((10, 0.2), (1, 0.5), (100, 0.05)):
            rounded = public_row_count(n, k=k, gamma=gamma)
            spread = 2 * math.sqrt(k * n / gamma)
            step = rounded & -rounded  # the power of two it is a multiple of
            assert rounded >= n and rounded - n < step
            assert step >= 2 * spread
    # Many row counts share one published value: n is hidden inside the step.
    counts = np.arange(30_000, 31_000)
    assert len({public_row_count(int(n), k=10, gamma=0.2) for n in counts}) == 1


def test_alphabeta_release_does_not_reveal_the_row_count(tmp_path: Path) -> None:
    adult = ppdp.datasets.adult(observed_domains=True)
    release = ppdp.AlphaBeta(k=10, gamma=0.2).publish(adult, random_state=3)
    metadata = json.loads((release.save(tmp_path / "view") / "release.json").read_text())
    parameters = metadata["parameters"]
    assert "d" not in parameters
    m = 648_023_040
    implied = parameters["beta"] * parameters["gamma"] * m / parameters["k"]
    assert round(implied) != adult.n_rows
    assert abs(implied - adult.n_rows) < 2 * 4 * math.sqrt(10 * adult.n_rows / 0.2)
    # What the view's size reveals: n to about +- 2 sqrt(k n/gamma) = 2,456 rows here.
    assert 4 * math.sqrt(10 * adult.n_rows / 0.2) > implied - adult.n_rows > 0


# -- the command line --------------------------------------------------------------------------


def run(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def test_cli_refuses_undeclared_then_accepts_each_way_of_declaring(tmp_path: Path) -> None:
    source = tmp_path / "visits.csv"
    import pyarrow.csv as pacsv

    pacsv.write_csv(visits(), source)
    base = ["publish", source, "-m", "splu", "-s", "disease", "-p", "gamma=3"]
    refused = run(*base, "-o", tmp_path / "r0")
    assert refused.exit_code == 3 and "--observed-domains" in refused.stderr
    assert "Traceback" not in refused.output and not (tmp_path / "r0").exists()
    domains_file = tmp_path / "domains.json"
    domains_file.write_text(json.dumps({"domains": {"disease": DISEASES}}))
    for index, extra in enumerate((["--domain", "disease=" + ",".join(DISEASES)],
                                   ["--domains", domains_file], ["--observed-domains"])):
        result = run(*base, *extra, "-o", tmp_path / f"r{index + 1}", "--seed", 1)
        assert result.exit_code == 0, result.output
        schema = json.loads((tmp_path / f"r{index + 1}" / "release.json").read_text())["schema"]
        disease = next(c["domain"] for c in schema if c["name"] == "disease")
        assert disease == (DISEASES if index < 2 else sorted(set(visits()["disease"]
                                                                  .to_pylist())))


def test_cli_hierarchies_declare_domains(tmp_path: Path) -> None:
    source = tmp_path / "visits.csv"
    import pyarrow.csv as pacsv

    pacsv.write_csv(visits(), source)
    folder = tmp_path / "hierarchies"
    folder.mkdir()
    (folder / "visits_hierarchy_disease.csv").write_text(
        "\n".join(f"{d};*" for d in [*DISEASES, "asthma"]) + "\n")
    result = run("publish", source, "-m", "dbr", "-s", "disease", "--hierarchies", folder,
                 "-o", tmp_path / "rel", "--seed", 1)
    assert result.exit_code == 0, result.output
    schema = json.loads((tmp_path / "rel" / "release.json").read_text())["schema"]
    assert next(c["domain"] for c in schema if c["name"] == "disease") == sorted(
        [*DISEASES, "asthma"])
