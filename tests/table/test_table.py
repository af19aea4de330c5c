"""Tests of Column, Schema, Table and the dictionary encoding in ppdp.table."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from ppdp.data.schema import Column, Role, Schema, code_dtype, encode_column
from ppdp.errors import SchemaError
from ppdp.table.table import Table, table_from_arrow


def small_table() -> Table:
    data = pa.table({
        "age": [30, 40, 30, 50, 40, 30],
        "sex": ["M", "F", "F", "M", "M", "F"],
        "disease": ["flu", "cold", "flu", "hiv", "cold", "flu"],
    })
    return table_from_arrow(data)


def test_column_domain_is_sorted_and_typed() -> None:
    column = Column("c", Role.QUASI_IDENTIFIER, ("b", "c", "a"))
    assert column.domain == ("a", "b", "c")
    assert column.kind == "string"
    assert column.size == 3
    assert list(column.values) == ["a", "b", "c"]
    numbers = Column("n", "sensitive", (np.int64(3), 1, 2))
    assert numbers.domain == (1, 2, 3)
    assert numbers.kind == "int"
    assert numbers.role is Role.SENSITIVE
    assert Column("f", Role.IGNORED, (1.5, 0.5)).kind == "float"


def test_column_rejects_bad_domains() -> None:
    with pytest.raises(SchemaError, match="empty domain"):
        Column("c", Role.QUASI_IDENTIFIER, ())
    with pytest.raises(SchemaError, match="repeats a value"):
        Column("c", Role.QUASI_IDENTIFIER, ("a", "a"))
    with pytest.raises(SchemaError, match="mixes value types"):
        Column("c", Role.QUASI_IDENTIFIER, ("a", 1))


def test_column_json_round_trip() -> None:
    column = Column("age", Role.SENSITIVE, (3, 1, 2))
    assert Column.from_json(column.to_json()) == column


def test_schema_duplicate_names() -> None:
    a = Column("a", Role.QUASI_IDENTIFIER, ("x",))
    with pytest.raises(SchemaError, match="duplicate column names"):
        Schema((a, a))


def test_schema_with_roles() -> None:
    schema = small_table().schema
    assert schema.quasi_identifiers == ("age", "sex", "disease")
    roles = schema.with_roles(sensitive="disease")
    assert roles.sensitive == ("disease",)
    assert roles.quasi_identifiers == ("age", "sex")
    roles = schema.with_roles(sensitive=["disease"], quasi_identifiers="age")
    assert roles["sex"].role is Role.IGNORED
    assert roles.names_with_role(Role.IGNORED) == ("sex",)
    with pytest.raises(SchemaError, match="both sensitive and quasi-identifier"):
        schema.with_roles(sensitive="disease", quasi_identifiers="age, disease")
    assert Schema.from_json(roles.to_json()) == roles


def test_unknown_column_suggests_close_names() -> None:
    schema = small_table().schema
    with pytest.raises(SchemaError, match=r"unknown column 'desease'; did you mean 'disease'"):
        schema["desease"]
    with pytest.raises(SchemaError, match="unknown column 'ages'"):
        schema.with_roles(sensitive="ages")
    with pytest.raises(SchemaError, match=r"columns: age, sex, disease"):
        schema.with_roles(quasi_identifiers=["zzz"])


@pytest.mark.parametrize(("size", "dtype"), [
    (1, np.uint8), (256, np.uint8), (257, np.uint16), (65_536, np.uint16), (65_537, np.uint32),
])
def test_code_dtype(size: int, dtype: type) -> None:
    assert code_dtype(size) == np.dtype(dtype)


@pytest.mark.parametrize(("size", "dtype"), [(200, np.uint8), (300, np.uint16),
                                             (70_000, np.uint32)])
def test_table_code_dtypes_follow_domain_size(size: int, dtype: type) -> None:
    table = table_from_arrow(pa.table({"v": np.arange(size)}))
    assert table.codes["v"].dtype == np.dtype(dtype)
    assert table.schema["v"].size == size
    np.testing.assert_array_equal(table.values("v"), np.arange(size))


def test_values_round_trip_and_read_only_codes() -> None:
    table = small_table()
    assert len(table) == 6
    assert table.values("sex").tolist() == ["M", "F", "F", "M", "M", "F"]
    assert table.values("age").tolist() == [30, 40, 30, 50, 40, 30]
    assert table.codes["age"].tolist() == [0, 1, 0, 2, 1, 0]
    with pytest.raises(ValueError):
        table.codes["age"][0] = 1
    assert table.nbytes == 18
    assert "6 rows" in repr(table)


def test_table_rejects_inconsistent_codes() -> None:
    schema = small_table().schema
    with pytest.raises(SchemaError, match="differ in length"):
        Table(schema, {"age": [0, 1], "sex": [0], "disease": [0]})
    with pytest.raises((SchemaError, KeyError)):
        Table(schema, {"age": [0], "sex": [0]})


def test_take_and_select() -> None:
    table = small_table()
    taken = table.take(np.array([5, 0, 0]))
    assert len(taken) == 3
    assert taken.values("disease").tolist() == ["flu", "flu", "flu"]
    assert taken.schema == table.schema
    selected = table.select(["disease", "age"])
    assert selected.schema.names == ("disease", "age")
    assert len(selected) == 6


def test_resample_shape_and_seeding() -> None:
    table = small_table()
    a = table.resample(100, random_state=7)
    b = table.resample(100, random_state=7)
    c = table.resample(100, random_state=8)
    assert len(a) == 100
    assert a.schema == table.schema
    for name in table.schema.names:
        np.testing.assert_array_equal(a.codes[name], b.codes[name])
    assert any(not np.array_equal(a.codes[n], c.codes[n]) for n in table.schema.names)


def test_with_roles_keeps_dropped_rows() -> None:
    table = Table(small_table().schema, small_table().codes, dropped_rows=4)
    assert table.with_roles(sensitive="disease").dropped_rows == 4


def test_to_arrow_round_trip() -> None:
    table = small_table().with_roles(sensitive="disease")
    arrow = table.to_arrow()
    assert arrow.column_names == ["age", "sex", "disease"]
    assert pa.types.is_dictionary(arrow.schema.field("sex").type)
    assert arrow.column("age").to_pylist() == [30, 40, 30, 50, 40, 30]
    again = table_from_arrow(arrow, roles={"disease": Role.SENSITIVE})
    assert again.schema == table.schema
    for name in table.schema.names:
        np.testing.assert_array_equal(again.codes[name], table.codes[name])


def test_encode_column_with_wider_domain() -> None:
    column, codes = encode_column("grade", pa.array(["b", "a", "b"]), Role.SENSITIVE,
                                  domain=["d", "c", "b", "a"])
    assert column.domain == ("a", "b", "c", "d")
    assert codes.tolist() == [1, 0, 1]
    assert codes.dtype == np.uint8
    ages, age_codes = encode_column("age", pa.array([20, 22], pa.int32()),
                                    Role.QUASI_IDENTIFIER, domain=range(18, 100))
    assert ages.size == 82
    assert age_codes.tolist() == [2, 4]


def test_encode_column_value_outside_domain() -> None:
    with pytest.raises(SchemaError, match=r"outside its domain: \['z'\]"):
        encode_column("grade", pa.array(["a", "z"]), Role.SENSITIVE, domain=["a", "b"])
    with pytest.raises(SchemaError, match="does not match its domain"):
        encode_column("grade", pa.array(["a", "b"]), Role.SENSITIVE, domain=[1, 2])


def test_encode_column_rejects_missing_values() -> None:
    with pytest.raises(SchemaError, match="1 missing values"):
        encode_column("c", pa.array(["a", None]), Role.SENSITIVE)


def test_table_from_arrow_unknown_role_column() -> None:
    with pytest.raises(SchemaError, match="unknown column 'sexx'"):
        table_from_arrow(pa.table({"sex": ["M"]}), roles={"sexx": Role.SENSITIVE})
