"""Fixtures of the engine tests: the engines every conformance test runs on, and one local
Spark session for every Spark test (two cores, no UI, few shuffle partitions, and a result size
limit small enough that collecting rows to the driver fails)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

ENGINES = ("memory", "streaming", "spark")
"""The engines of `ppdp.plan.engine` that every conformance test runs on: a new engine passes
by joining this list (the memory engine, first, is the reference)."""


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A ``local[2]`` Spark session (its workers run this interpreter)."""
    from pyspark.sql import SparkSession

    from ppdp.engines.spark import require_java

    require_java()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (SparkSession.builder.master("local[2]").appName("ppdp-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.driver.memory", "512m")
               .config("spark.driver.maxResultSize", "1m")
               .config("spark.sql.session.timeZone", "UTC")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def engine_session(request: pytest.FixtureRequest) -> Any:
    """What an engine needs running before it is used: the Spark session for ``spark``
    (the test's ``engine`` parameter), nothing for the others."""
    engine = request.getfixturevalue("engine")
    return request.getfixturevalue("spark") if engine == "spark" else None
