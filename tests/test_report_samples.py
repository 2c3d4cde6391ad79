"""`specgen report` of each shipped sample: the same figures as before the report was made to run
in few Spark jobs, and no more jobs than it runs now.

The expected JSON in tests/report_samples/ was written by the report as it was before that
change (main at e4fa53f, a Spark job or several per table), from these very samples decoded as
`decoded` decodes them, with `python tests/test_report_samples.py --write tests/report_samples`
run on that checkout; so it is an oracle the new code did not produce. Each file holds the
`--json` document (tables, values, row order, notes) and, per chart, a SHA-256 of its figure
(the time charts' arrays are long), the source path replaced by the sample's name.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from specgen import report
from specgen.analyses import spec_rules
from specgen.pipeline import spark as spark_jobs
from specgen.pipeline.decode import decode_local

ROOT = Path(__file__).resolve().parents[1]
EXPECTED = Path(__file__).resolve().parent / "report_samples"

# Spark jobs `report.build` runs on each sample decoded as `samples` decodes it (AQE on, as the
# session has it: each shuffle stage of a query is a job of its own). Before the change, at
# e4fa53f: rabbitmq-stream 36, amqp-0-9-1 34, amqp-1-0 65, amqp-0-10 35, amqp-fast-0-8 28;
# after it 19, 20, 30, 27, 18; and the Spec rules section's since (issue 37): one job for the
# rules frames break alone (two where some break one), four for 0-9-1's rule across messages.
JOBS = {
    "rabbitmq-stream": 20,
    "amqp-0-9-1": 25,
    "amqp-1-0": 31,
    "amqp-0-10": 28,
    "amqp-fast-0-8": 20,
}


def figures(built: report.Report, name: str) -> dict[str, Any]:
    """What the oracle holds of a report: its JSON, and a digest of each chart's figure."""
    doc = report.as_json(built)
    doc["source"] = name
    # the rules of the spec a sample breaks came after the oracle was written (issue 37); their
    # figures are held by tests/test_spec_checks.py and tests/test_rules_live.py
    doc["sections"] = [s for s in doc["sections"] if s["title"] != spec_rules.TITLE]
    doc["charts"] = {
        c.id: hashlib.sha256(
            json.dumps(c.figure, sort_keys=True, ensure_ascii=False, allow_nan=False).encode()
        ).hexdigest()
        for c in built.charts
    }
    return doc


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each shipped sample decoded (without Spark: the report is what is under test)."""
    root = tmp_path_factory.mktemp("samples")
    for name in JOBS:
        decode_local(name, ROOT / "samples" / name, root / name, echo=lambda _: None)
    return {name: root / name for name in JOBS}


def _build(spark: SparkSession, out: Path) -> tuple[report.Report, int]:
    before = spark_jobs.jobs(spark)
    rejects = out / "rejects"
    built = report.build(spark, out / "frames", rejects if rejects.exists() else None)
    return built, len(spark_jobs.jobs(spark) - before)


@pytest.mark.parametrize("name", list(JOBS))
def test_a_sample_report_has_the_figures_it_had(
    spark: SparkSession, samples: dict[str, Path], name: str
) -> None:
    built, jobs = _build(spark, samples[name])
    expected = json.loads((EXPECTED / f"{name}.json").read_text(encoding="utf-8"))
    assert figures(built, name) == expected
    assert jobs <= JOBS[name], f"{name}: {jobs} Spark jobs, more than the {JOBS[name]} it ran"


def _write(out_dir: Path) -> None:
    """Decode each sample and write its report's figures: the oracle's files."""
    import tempfile

    session = spark_jobs.session()
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in JOBS:
            decoded = Path(tmp) / name
            decode_local(name, ROOT / "samples" / name, decoded, echo=lambda _: None)
            built, jobs = _build(session, decoded)
            text = json.dumps(figures(built, name), indent=1, ensure_ascii=False, allow_nan=False)
            (out_dir / f"{name}.json").write_text(text + "\n", encoding="utf-8")
            print(f"{name}: {jobs} Spark jobs")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="write the sample reports' expected figures")
    parser.add_argument("--write", type=Path, required=True, metavar="DIR")
    _write(parser.parse_args().write)
    sys.exit(0)
