"""Tests of ARX-format generalization hierarchies: reading, validation, binding to a column
and the depth-first order in which every subtree's values have contiguous ranks."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ppdp
from ppdp.data.hierarchy import BoundHierarchy, Hierarchy, read_hierarchies, read_hierarchy
from ppdp.data.schema import Column, Role
from ppdp.errors import SchemaError
from ppdp.table.table import table_from_arrow

ADULT_HEIGHTS = {"age": 4, "education": 3, "marital-status": 2, "native-country": 2,
                 "occupation": 2, "race": 1, "salary-class": 1, "sex": 1, "workclass": 2}
FARS_HEIGHTS = {"iage": 5, "ideathday": 3, "ideathmon": 3, "ihispanic": 2, "iinjury": 2,
                "irace": 2, "isex": 1, "istatenum": 3}


@pytest.fixture(scope="module")
def adult_hierarchies() -> dict[str, Hierarchy]:
    return read_hierarchies("adult")


@pytest.fixture(scope="module")
def adult() -> ppdp.Table:
    # The values present, as in adult-arx-9attr.csv (tests/test_datasets.py checks they agree).
    return ppdp.datasets.adult(sensitive="occupation", observed_domains=True)


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def assert_subtrees_contiguous(bound: BoundHierarchy) -> None:
    """Every node's values occupy a contiguous block of ranks."""
    for level in bound.nodes:
        for node in np.unique(level):
            ranks = np.sort(bound.rank[level == node])
            assert ranks[-1] - ranks[0] + 1 == len(ranks)


def test_read_the_adult_hierarchies(adult_hierarchies: dict[str, Hierarchy]) -> None:
    assert {n: h.height for n, h in adult_hierarchies.items()} == ADULT_HEIGHTS
    education = adult_hierarchies["education"]
    assert len(education.leaves) == 16
    row = education.leaves.index("Bachelors")
    assert [level[row] for level in education.levels] == ["Undergraduate", "Higher education",
                                                          "*"]
    age = adult_hierarchies["age"]
    row = age.leaves.index("39")
    assert [level[row] for level in age.levels] == ["35-39", "30-39", "20-39", "*"]
    assert all(len(level) == len(h.leaves) for h in adult_hierarchies.values()
               for level in h.levels)


def test_read_the_fars_hierarchies(shared_datasets: Path) -> None:
    hierarchies = read_hierarchies(shared_datasets / "fars" / "hierarchies")
    assert {n: h.height for n, h in hierarchies.items()} == FARS_HEIGHTS
    injury = hierarchies["iinjury"]
    assert injury.levels[0][injury.leaves.index("2")] == "[2,3]"
    # The iage file repeats the line of 99 exactly; the repeat is dropped.
    assert hierarchies["iage"].leaves.count("99") == 1
    assert len(hierarchies["iage"].leaves) == 99


def test_the_adult_hierarchies_bind_to_every_column(
        adult: ppdp.Table, adult_hierarchies: dict[str, Hierarchy]) -> None:
    assert set(adult_hierarchies) == set(adult.schema.names)
    for name, hierarchy in adult_hierarchies.items():
        column = adult.schema[name]
        bound = hierarchy.bind(column)
        assert sorted(bound.rank.tolist()) == list(range(column.size))
        assert [hierarchy.leaves[i] for i in bound.leaf] == [str(v) for v in column.domain]
        assert_subtrees_contiguous(bound)
        # Every value has a common ancestor with every other: a single top node.
        assert len(bound.labels[-1]) == 1


def test_the_fars_hierarchies_bind(fars: ppdp.Table, shared_datasets: Path) -> None:
    hierarchies = read_hierarchies(shared_datasets / "fars" / "hierarchies")
    for name, hierarchy in hierarchies.items():
        bound = hierarchy.bind(fars.schema[name])
        assert_subtrees_contiguous(bound)


def test_numeric_hierarchies_keep_the_numeric_order(
        adult: ppdp.Table, adult_hierarchies: dict[str, Hierarchy]) -> None:
    # Nodes are ordered by their smallest value, so the ages stay in order.
    bound = adult_hierarchies["age"].bind(adult.schema["age"])
    assert bound.rank.tolist() == list(range(adult.schema["age"].size))


def test_nodes_labels_and_covers() -> None:
    hierarchy = Hierarchy(("a", "b", "c", "d"), (("x", "y", "x", "z"), ("*", "*", "*", "*")))
    column = Column("col", Role.QUASI_IDENTIFIER, ("a", "b", "c", "d"))
    bound = hierarchy.bind(column)
    # x (a, c) comes first, then y (b), then z (d).
    assert bound.rank.tolist() == [0, 2, 1, 3]
    assert bound.labels == (("x", "y", "z"), ("*",))
    assert bound.cover(1, 0).tolist() == [0, 2]
    assert bound.cover(2, 0).tolist() == [0, 1, 2, 3]
    assert bound.cover(0, 3).tolist() == [3]
    assert_subtrees_contiguous(bound)


def test_a_root_is_added_when_the_top_level_has_several_nodes() -> None:
    hierarchy = Hierarchy(("a", "b", "c"), (("x", "x", "y"),))
    bound = hierarchy.bind(Column("col", Role.QUASI_IDENTIFIER, ("a", "b", "c")))
    assert bound.height == 2
    assert bound.labels[-1] == ("*",)
    flat = Hierarchy(("a", "b"), ())
    assert flat.bind(Column("col", Role.QUASI_IDENTIFIER, ("a", "b"))).labels == (("*",),)


def test_leaves_outside_the_domain_are_ignored_and_numbers_match() -> None:
    hierarchy = Hierarchy(("1", "2", "3", "10"), (("low", "low", "low", "high"),))
    ints = hierarchy.bind(Column("n", Role.QUASI_IDENTIFIER, (1, 3, 10)))
    assert [hierarchy.leaves[i] for i in ints.leaf] == ["1", "3", "10"]
    floats = hierarchy.bind(Column("f", Role.QUASI_IDENTIFIER, (1.0, 2.0, 10.0)))
    assert [hierarchy.leaves[i] for i in floats.leaf] == ["1", "2", "10"]


def test_missing_values_name_the_column_and_the_values() -> None:
    hierarchy = Hierarchy(("20", "30"), (("*", "*"),))
    column = Column("age", Role.QUASI_IDENTIFIER, (20, 25, 30, 35, 40))
    with pytest.raises(SchemaError, match=r"hierarchy for 'age' misses 3 values of the column: "
                                          r"\[25, 35, 40\]"):
        hierarchy.bind(column)
    many = Column("age", Role.QUASI_IDENTIFIER, tuple(range(100)))
    with pytest.raises(SchemaError, match=r"misses 98 values of the column: \[0, 1, 2, 3, 4\]"):
        hierarchy.bind(many)


def test_inconsistent_field_counts(tmp_path: Path) -> None:
    path = write(tmp_path, "h_hierarchy_x.csv", "a;g;*\nb;g\n")
    with pytest.raises(SchemaError, match=r"h_hierarchy_x\.csv, line 2: 2 fields, but line 1 "
                                          r"has 3"):
        read_hierarchy(path)


def test_repeated_leaf(tmp_path: Path) -> None:
    path = write(tmp_path, "h_hierarchy_x.csv", "a;g;*\nb;g;*\na;h;*\n")
    with pytest.raises(SchemaError, match=r"line 3: leaf 'a' repeats line 1"):
        read_hierarchy(path)
    # An exact repeat of a line is harmless and dropped.
    same = write(tmp_path, "h_hierarchy_y.csv", "a;g;*\nb;g;*\na;g;*\n")
    assert read_hierarchy(same).leaves == ("a", "b")
    with pytest.raises(SchemaError, match="more than once"):
        Hierarchy(("a", "a"), (("g", "g"),))


def test_a_label_with_two_parents(tmp_path: Path) -> None:
    path = write(tmp_path, "h_hierarchy_x.csv", "a;g;p;*\nb;g;p;*\nc;g;q;*\n")
    with pytest.raises(SchemaError, match=r"line 3: label 'g' at level 1 has parent 'q', but "
                                          r"'p' on line 1"):
        read_hierarchy(path)
    with pytest.raises(SchemaError, match="must be a tree"):
        Hierarchy(("a", "b"), (("g", "g"), ("p", "q")))


def test_empty_fields_and_files(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="line 2: empty field"):
        read_hierarchy(write(tmp_path, "h_hierarchy_x.csv", "a;g\nb;\n"))
    with pytest.raises(SchemaError, match="is empty"):
        read_hierarchy(write(tmp_path, "h_hierarchy_y.csv", "\n\n"))
    with pytest.raises(SchemaError, match="cannot read"):
        read_hierarchy(tmp_path / "absent.csv")


def test_read_a_folder(tmp_path: Path) -> None:
    write(tmp_path, "data_hierarchy_age.csv", "20;young;*\n60;old;*\n")
    write(tmp_path, "data_hierarchy_marital-status.csv", "single;*\nmarried;*\n")
    write(tmp_path, "notes.txt", "not a hierarchy")
    write(tmp_path, "data.csv", "age;marital-status\n20;single\n")
    hierarchies = read_hierarchies(tmp_path)
    assert sorted(hierarchies) == ["age", "marital-status"]
    assert hierarchies["age"].levels == (("young", "old"), ("*", "*"))


def test_an_empty_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="no hierarchy files"):
        read_hierarchies(tmp_path)
    write(tmp_path, "readme.txt", "nothing here")
    with pytest.raises(SchemaError, match="no hierarchy files"):
        read_hierarchies(tmp_path)
    with pytest.raises(SchemaError, match="not a folder"):
        read_hierarchies(tmp_path / "absent")


def test_the_bundled_adult_hierarchies_by_name(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    bundled = read_hierarchies("adult")
    assert bundled == read_hierarchies(" Adult ") == ppdp.datasets.hierarchies("adult")
    # They cover the codebook's declared domains too (ages 17..90, 8 work classes, ...).
    codebook = ppdp.datasets.adult()
    for name, hierarchy in bundled.items():
        assert_subtrees_contiguous(hierarchy.bind(codebook.schema[name]))
    with pytest.raises(SchemaError, match="not a folder; bundled hierarchies: adult"):
        read_hierarchies("census")
    with pytest.raises(ValueError, match="known datasets: adult"):
        ppdp.datasets.hierarchies("census")
    # A folder of that name in the working directory is read instead, as for data files.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "adult").mkdir()
    write(tmp_path / "adult", "adult_hierarchy_sex.csv", "Female;*\nMale;*\n")
    assert sorted(read_hierarchies("adult")) == ["sex"]


def test_the_documented_hierarchy_example_holds(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The design notes' Python block that reads the bundled hierarchies, run from the page
    itself: it promises an association of at most 0.2 and no class above beta."""
    page = Path(__file__).resolve().parents[2] / "docs" / "architecture" / "design-notes.md"
    blocks = re.findall(r"^```python\n(.*?)^```", page.read_text(), re.S | re.M)
    session = [block for block in blocks if 'read_hierarchies("adult")' in block]
    assert len(session) == 1
    monkeypatch.chdir(tmp_path)
    names: dict[str, object] = {}
    exec(compile(session[0], "design-notes.md, the hierarchies block", "exec"), names)
    risk = names["release"].risk(beta=0.2)  # type: ignore[attr-defined]
    assert risk["association_max"] <= 0.2 and risk["association_over_beta_share"] == 0


def test_the_bundled_hierarchies_are_the_arx_files(shared_datasets: Path) -> None:
    """The bundled files are the shared copies of the ARX project's, byte for byte."""
    folder = shared_datasets / "adult" / "hierarchies"
    shared = sorted(folder.glob("adult_hierarchy_*.csv"))
    assert len(shared) == 9
    bundled = resources.files("ppdp.datasets")
    for path in shared:
        assert (bundled / path.name).read_bytes() == path.read_bytes(), path.name
    assert read_hierarchies("adult") == read_hierarchies(folder)


@st.composite
def trees(draw: st.DrawFn) -> tuple[Hierarchy, Column]:
    """A random tree over 1..30 leaves: each level groups the nodes of the level below."""
    n_leaves = draw(st.integers(1, 30))
    groups = list(range(n_leaves))
    levels = []
    for depth in range(draw(st.integers(0, 4))):
        n_nodes = max(groups) + 1
        parent = draw(st.lists(st.integers(0, max(n_nodes // 2, 0)), min_size=n_nodes,
                               max_size=n_nodes))
        groups = [parent[g] for g in groups]
        levels.append(tuple(f"n{depth}_{g}" for g in groups))
    leaves = tuple(f"v{i:02d}" for i in range(n_leaves))
    order = draw(st.permutations(range(n_leaves)))
    hierarchy = Hierarchy(tuple(leaves[i] for i in order),
                          tuple(tuple(level[i] for i in order) for level in levels))
    return hierarchy, Column("c", Role.QUASI_IDENTIFIER, leaves)


@settings(max_examples=60, deadline=None)
@given(trees())
def test_depth_first_ranks_keep_every_subtree_contiguous(
        case: tuple[Hierarchy, Column]) -> None:
    hierarchy, column = case
    bound = hierarchy.bind(column)
    assert sorted(bound.rank.tolist()) == list(range(column.size))
    assert_subtrees_contiguous(bound)
    assert len(bound.labels[-1]) == 1


def test_binding_a_table_read_from_arrow() -> None:
    table = table_from_arrow(pa.table({"zip": ["130", "140", "130"]}))
    hierarchy = Hierarchy(("130", "140", "150"), (("1*", "1*", "1*"),))
    assert hierarchy.bind(table.schema["zip"]).labels[0] == ("1*",)
