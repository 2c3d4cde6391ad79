"""Spark for the tests: one local session per test run, built the way `specgen decode` builds it.

Starting a session costs 10-20 s, so every test that needs Spark shares this one; it starts on
first use, so runs without Spark tests never start a JVM.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from specgen.pipeline.spark import session

    spark = session()  # local[*]: what `specgen decode` uses without --master
    try:
        yield spark
    finally:
        spark.stop()
