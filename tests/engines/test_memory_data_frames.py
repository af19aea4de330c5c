"""``mechanism.publish`` takes pandas and polars DataFrames and Arrow tables directly: the memory
engine reads them as `read_table` does (with its options: roles, domains...) and publishes the
same release as from the Table they hold."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import ppdp
from ppdp.errors import UndeclaredDomainError
from ppdp.plan.engine import engine_for
from ppdp.table.table import Table

COLUMNS = ["age", "sex", "race", "salary-class", "workclass", "education", "occupation"]
FRAMES: dict[str, Callable[[pa.Table], Any]] = {
    "pandas": lambda arrow: arrow.to_pandas(),
    "polars": lambda arrow: pl.from_arrow(arrow),
    "arrow": lambda arrow: arrow,
    "record batch": lambda arrow: arrow.combine_chunks().to_batches()[0],
}
MECHANISMS: dict[str, Callable[[], Any]] = {
    "splu": lambda: ppdp.SPLUGen(gamma=5),  # blocks
    "uniform": lambda: ppdp.UniformPerturbation(rho1=0.1, rho2=0.5),  # rows
    "mondrian": lambda: ppdp.Mondrian(k=10, l=3),  # steps
}


@pytest.fixture(scope="module")
def table() -> Table:
    adult = ppdp.datasets.adult(sensitive="occupation")
    return adult.select(COLUMNS).take(np.arange(2000))


def domains(table: Table) -> dict[str, list[Any]]:
    return {column.name: list(column.domain) for column in table.schema.columns}


def plain(table: Table) -> pa.Table:
    """The table's values as a user's frame holds them: plain columns, not dictionaries."""
    return pa.table({name: table.values(name).tolist() for name in table.schema.names})


@pytest.mark.parametrize("kind", sorted(FRAMES))
@pytest.mark.parametrize("mechanism", sorted(MECHANISMS))
def test_a_frame_publishes_the_release_of_its_table(kind: str, mechanism: str,
                                                     table: Table) -> None:
    data = FRAMES[kind](plain(table))
    assert engine_for(data).name == "memory"
    release = MECHANISMS[mechanism]().publish(data, sensitive="occupation",
                                              domains=domains(table), random_state=7)
    reference = MECHANISMS[mechanism]().publish(table, random_state=7)
    assert release.tables().keys() == reference.tables().keys()
    for stem, published in reference.tables().items():
        assert release.tables()[stem].equals(published), stem


@pytest.mark.parametrize("kind", sorted(FRAMES))
def test_a_laplace_session_over_a_frame_answers_as_over_its_table(kind: str,
                                                                  table: Table) -> None:
    data = FRAMES[kind](plain(table))
    query = "sex = 'Female' AND age > 40"
    session = ppdp.LaplaceCounts(epsilon=1.0).publish(data, random_state=2)
    assert session.count(query) == ppdp.LaplaceCounts(epsilon=1.0).publish(
        table, random_state=2).count(query)


def test_a_frame_without_declared_domains_is_refused_as_a_file_would_be(table: Table) -> None:
    with pytest.raises(UndeclaredDomainError, match="declared public domains for 'occupation'"):
        ppdp.SPLUGen(gamma=5).publish(plain(table).to_pandas(), sensitive="occupation")


def test_something_else_is_one_line_naming_what_publish_takes() -> None:
    with pytest.raises(TypeError, match=r"no engine publishes a pandas\.Series: "
                                        r"publish a ppdp Table .*a pandas or polars DataFrame "
                                        r"or an Arrow table"):
        ppdp.DBR().publish(pd.Series([1, 2, 3]))
