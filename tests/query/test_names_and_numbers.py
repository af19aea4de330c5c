"""Which column a query's name means (case and Unicode normalisation), and numbers in queries
read exactly or refused."""

from __future__ import annotations

import numpy as np
import pytest

from ppdp.data.schema import Column, Role, Schema
from ppdp.errors import QueryError
from ppdp.query.numbers import exact_number
from ppdp.table.table import Table


def table_of(columns: dict[str, list[object]]) -> Table:
    schema, codes = [], {}
    for name, values in columns.items():
        column = Column(name, Role.QUASI_IDENTIFIER, tuple(sorted(set(values))))
        schema.append(column)
        codes[name] = np.array([column.position(v) for v in values])
    return Table(Schema(tuple(schema)), codes)


@pytest.fixture
def cased() -> Table:
    return table_of({"sex": ["M", "F", "M"], "Sex": ["F", "F", "M"], "age": [30, 31, 32]})


def test_a_name_spelled_as_a_column_is_that_column(cased: Table) -> None:
    assert cased.count("sex = 'M'").value == 2
    assert cased.count("Sex = 'M'").value == 1
    assert cased.count('"Sex" = \'M\'').value == 1
    assert cased.count("AGE = 30").value == 1


@pytest.mark.parametrize("query", ["SEX = 'M'", "sEx = 'M'", "\"SEX\" IN ('M')",
                                   "SELECT COUNT(*) GROUP BY SEX", "SEX - 1 > 0"])
def test_a_name_matching_several_columns_but_for_case_is_ambiguous(cased: Table,
                                                                   query: str) -> None:
    with pytest.raises(QueryError, match=r"^column (SEX|sEx) is ambiguous: the columns 'sex', "
                                         r"'Sex' differ from it only in case; write the one"):
        cased.count(query)


def test_hyphenated_names_differing_in_case_are_ambiguous() -> None:
    table = table_of({"marital-status": ["a", "b"], "Marital-Status": ["a", "a"],
                      "marital": [1, 2], "status": [1, 2]})
    assert table.count("marital-status = 'a'").value == 1
    with pytest.raises(QueryError, match="MARITAL-STATUS is ambiguous"):
        table.count("MARITAL-STATUS = 'a'")


def test_a_name_in_another_unicode_form_finds_its_column() -> None:
    table = table_of({"cafe\u0301": [1, 2, 2], "age": [30, 31, 32]})
    assert table.count("caf\u00e9 = 2").value == 2
    assert table.count('"caf\u00e9" = 1').value == 1
    assert table.count("CAF\u00c9 = 1").value == 1


# -- numbers --------------------------------------------------------------------------------

def test_integers_are_read_exactly() -> None:
    assert exact_number("9007199254740993") == 9007199254740993
    assert exact_number("+007") == 7
    assert exact_number("9223372036854775808") == 2 ** 63  # negated, the int64 minimum
    assert exact_number("40.5") == 40.5
    assert exact_number("0.1") == 0.1
    assert exact_number("1e3") == 1000.0
    assert exact_number("40.000") == 40.0


@pytest.mark.parametrize("digits", ["40.0000000000000001", "39.99999999999999999",
                                    "9007199254740993.0", "4.00000000000000001e1"])
def test_numbers_float64_rounds_onto_a_whole_number_are_refused(digits: str) -> None:
    with pytest.raises(QueryError, match=rf"the number {digits} is not exactly a 64-bit "
                                         r"float: it would be read as \d+, which it is not"):
        exact_number(digits)


@pytest.mark.parametrize("digits", ["9223372036854775809", "-9223372036854775809",
                                    "1" + "0" * 5000])
def test_integers_beyond_int64_are_refused(digits: str) -> None:
    with pytest.raises(QueryError, match=r"is too large for a 64-bit integer "
                                         r"\(-9223372036854775808 to 9223372036854775807\)"):
        exact_number(digits)


@pytest.fixture
def big() -> Table:
    return table_of({"id": [2 ** 63 - 1, 2 ** 63 - 2, 2 ** 53 + 1, 2 ** 53, -2 ** 63],
                     "age": [39, 40, 40, 41, 42]})


def test_literals_compare_exactly_with_integer_columns(big: Table) -> None:
    assert big.count("id = 9223372036854775807").value == 1
    assert big.count("id = 9007199254740993").value == 1
    assert big.count("id > 9007199254740992").value == 3
    assert big.count("id = -9223372036854775808").value == 1
    assert big.count("id = '9007199254740993'").value == 1
    assert big.count("age > 40.5").value == 2


@pytest.mark.parametrize("query", ["age = 40.0000000000000001", "age < 40.0000000000000001",
                                   "age = '40.0000000000000001'",
                                   "age IN (39, 40.0000000000000001)"])
def test_an_inexact_literal_is_refused_in_one_line(big: Table, query: str) -> None:
    with pytest.raises(QueryError, match=r"40\.0000000000000001 is not exactly a 64-bit float"):
        big.count(query)


@pytest.mark.parametrize("query", ["id = 9223372036854775808", "id > 9223372036854775809",
                                   "id = '9223372036854775808'", "age = 99999999999999999999"])
def test_an_integer_literal_beyond_int64_is_refused(big: Table, query: str) -> None:
    with pytest.raises(QueryError, match="too large for a 64-bit integer"):
        big.count(query)
