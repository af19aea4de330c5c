"""The import paths of ppdp 0.1 that moved keep working for one release, each with a
DeprecationWarning naming where its names are now."""

from __future__ import annotations

import importlib
import sys

import pytest

from ppdp._compat import MOVED_MODULES, SPLIT_MODULES


def fresh_import(name: str) -> object:
    """Import ``name`` as a first import would (its old module forgotten)."""
    sys.modules.pop(name, None)
    return importlib.import_module(name)


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_a_moved_module_imports_with_a_warning(old: str) -> None:
    if old.startswith("ppdp.spark."):
        with pytest.warns(DeprecationWarning, match="ppdp.spark is deprecated"):
            fresh_import("ppdp.spark")
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated.*{MOVED_MODULES[old]}"):
        module = fresh_import(old)
    new = importlib.import_module(MOVED_MODULES[old])
    names = [name for name in dir(new) if not name.startswith("_")]
    assert names and all(getattr(module, name) is getattr(new, name) for name in names)


@pytest.mark.parametrize("old", sorted(SPLIT_MODULES))
def test_a_split_module_gives_each_name_from_its_new_home(old: str) -> None:
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated"):
        module = fresh_import(old)
    for home, names in SPLIT_MODULES[old].items():
        for name in names:
            assert getattr(module, name) is getattr(importlib.import_module(home), name)
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        module.nothing_here  # noqa: B018


def test_the_old_names_of_the_table_and_release_modules_warn() -> None:
    import ppdp.release
    import ppdp.table
    from ppdp.data.schema import Schema
    from ppdp.estimate import Estimate

    with pytest.warns(DeprecationWarning, match="ppdp.data.schema.Schema"):
        assert ppdp.table.Schema is Schema
    with pytest.warns(DeprecationWarning, match="ppdp.Estimate"):
        assert ppdp.release.Estimate is Estimate


def test_an_old_import_line_is_named_by_the_warning() -> None:
    sys.modules.pop("ppdp.keyed", None)
    with pytest.warns(DeprecationWarning) as warned:
        import ppdp.keyed  # noqa: F401
    assert warned[0].filename == __file__
