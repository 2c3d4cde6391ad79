"""`python -m specgen.pipeline.warm_jvm`: write the driver JVM's class-data archive, once per
machine and set-up (`jvm_archive.build`, with a session of `spark`'s and `jobs` of the kinds
specgen runs; `.ci/setup` runs it). Every later Spark session maps it: see `jvm_archive`."""

from __future__ import annotations

import tempfile
from typing import Any

from pyspark.sql import SparkSession, Window
from pyspark.sql import functions as F

from specgen.pipeline import jvm_archive, spark


def jobs(session: SparkSession) -> None:
    """Arrow tasks, Parquet written and read, and queries shaped as the report's (aggregates,
    a left join, a window, percentiles, an order) both compiled and `spark.interpreted`, as
    a small table's report runs them: their classes go into the archive."""

    def rows(batches: Any) -> Any:
        yield from batches

    with tempfile.TemporaryDirectory(prefix="specgen-jvm-") as tmp:
        session.range(0, 1000, 1, 2).mapInArrow(rows, "id BIGINT").write.parquet(f"{tmp}/t")
        table = session.read.parquet(f"{tmp}/t")
        _report_shapes(table)
        with spark.interpreted(session):
            _report_shapes(table)


def _report_shapes(table: Any) -> None:
    keyed = table.withColumn("k", table.id % 7)
    keyed.groupBy("k").agg(F.count("*"), F.sum("id"), F.min("id"), F.max("id")).collect()
    firsts = keyed.groupBy("k").agg(F.min("id").alias("first"))
    keyed.join(firsts, "k", "left").where(F.col("id") > F.col("first")).count()
    window = Window.partitionBy("k").orderBy("id")
    keyed.withColumn("n", F.row_number().over(window)).where(F.col("n") < 3).collect()
    keyed.groupBy("k").agg(F.percentile_approx("id", [0.5, 0.9, 0.99], 1000)).collect()
    keyed.orderBy(F.desc("id")).limit(5).collect()


def main() -> None:
    print(jvm_archive.build(spark.session, jobs))


if __name__ == "__main__":
    main()
