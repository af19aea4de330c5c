"""The package's public names, and what starting the command line loads."""

import importlib.metadata
import subprocess
import sys

import ppdp


def test_every_public_name_resolves():
    for name in ppdp.__all__:
        assert getattr(ppdp, name) is not None
    assert set(dir(ppdp)) == set(ppdp.__all__)


def test_an_unknown_name_is_an_attribute_error():
    try:
        ppdp.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("ppdp.NoSuchThing resolved")


def test_the_command_line_starts_without_numpy_pyarrow_or_the_mechanisms():
    """`ppdp --help` should answer at once: the heavy libraries load in the commands that use
    them (measured: 0.21-0.26 s for `ppdp --help` here, against 1.72 s before)."""
    code = ("import sys, ppdp.cli; heavy = [m for m in ('numpy', 'pyarrow', 'sqlglot', "
            "'scipy', 'pandas', 'ppdp.mechanisms', 'ppdp.table') if m in sys.modules]; "
            "print(','.join(heavy))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout.strip()
    assert loaded == ""


def test_the_version_is_the_installed_distributions(monkeypatch):
    monkeypatch.delitem(vars(ppdp), "__version__", raising=False)
    assert ppdp.__version__ == importlib.metadata.version("ppdp")

    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.delitem(vars(ppdp), "__version__")
    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    assert ppdp.__version__ == "0+unknown"
    monkeypatch.delitem(vars(ppdp), "__version__")


def test_import_ppdp_reads_no_package_metadata():
    """``__version__`` is read when asked for: importlib.metadata is slower to import than
    the rest of ``import ppdp``."""
    code = "import sys, ppdp; print('importlib.metadata' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout.strip()
    assert loaded == "False"
