"""The one-line refusals when pyspark or a Java runtime is missing."""

from __future__ import annotations

import sys

import pytest

from ppdp.engines.spark import SparkUnavailableError, java_version, require_java, require_pyspark


def test_missing_pyspark_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspark", None)  # import pyspark then fails
    with pytest.raises(SparkUnavailableError, match=r"pip install 'ppdp\[spark\]'"):
        require_pyspark()


def test_missing_java_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))  # no bin/java there
    assert java_version() is None
    with pytest.raises(SparkUnavailableError, match="Java runtime 17 or later; none found"):
        require_java()


def test_old_java_is_refused(monkeypatch, tmp_path):
    java = tmp_path / "bin" / "java"
    java.parent.mkdir()
    # Java 8 names itself 1.8 (on stderr, as every Java does).
    java.write_text('#!/bin/sh\necho \'openjdk version "1.8.0_402"\' >&2\n')
    java.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert java_version() == 8
    with pytest.raises(SparkUnavailableError, match="Java 17 or later; the Java found is 8"):
        require_java()


def test_installed_java_is_found(spark_runtime):
    version = java_version()
    assert version is not None and version >= 17
