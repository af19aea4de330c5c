"""Fixtures of the engine tests: the engines every conformance test runs on, and one local
Spark session for every Spark test (two cores, no UI, few shuffle partitions, and a result size
limit small enough that collecting rows to the driver fails).

Without pyspark or a Java runtime 17+ (``$JAVA_HOME/bin/java``, else ``java`` on the PATH) the
tests that need Spark are skipped, with the reason; with ``PPDP_REQUIRE_SPARK=1`` (CI, which
installs Java) they fail instead, so that a missing runtime cannot pass unnoticed."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

ENGINES = ("memory", "streaming", "spark")
"""The engines of `ppdp.plan.engine` that every conformance test runs on: a new engine passes
by joining this list (the memory engine, first, is the reference)."""


FAST_START_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""Java options of the tests' Spark driver: the JIT compiler's first tier only and the serial
collector start the JVM and run the tests' many small jobs sooner (the tests' jobs are short;
what they compute does not depend on the JVM's compiler or collector)."""


REQUIRE_SPARK = "PPDP_REQUIRE_SPARK"
"""Set to 1, a missing pyspark or Java fails the Spark tests instead of skipping them."""


@pytest.fixture(scope="session")
def spark_runtime() -> None:
    """Skip the test (fail it under ``PPDP_REQUIRE_SPARK=1``) when pyspark or a Java runtime
    of 17 or later is missing: Spark could not start."""
    from ppdp.engines.spark import SparkUnavailableError, require_java, require_pyspark

    try:
        require_pyspark()
        require_java()
    except SparkUnavailableError as exc:
        if os.environ.get(REQUIRE_SPARK) == "1":
            pytest.fail(f"{REQUIRE_SPARK}=1, but {exc}")
        pytest.skip(f"Spark cannot start here: {exc}")


@pytest.fixture(scope="session")
def spark(spark_runtime: None) -> Iterator[Any]:
    """A ``local[2]`` Spark session (its workers run this interpreter), its JVM started with
    `FAST_START_JVM`."""
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (SparkSession.builder.master("local[2]").appName("ppdp-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.driver.memory", "512m")
               .config("spark.driver.maxResultSize", "1m")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.extraJavaOptions", FAST_START_JVM)
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
