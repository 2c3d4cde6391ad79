"""The pipeline's refusals that need no Spark (issue 39): each one line and exit 2, before any
work. The faults that need Spark (a killed worker, a lost executor) are test_decode_faults.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from specgen import cli
from specgen.pipeline import decode, inputs, pcap_job, unfinished
from specgen.pipeline.decode import first_line
from specgen.pipeline.spark import TASK_ATTEMPTS, with_retries
from specgen.specs import ROOT


@pytest.mark.parametrize("command", ["decode", "report"])
def test_without_the_pipeline_extra_a_command_says_so_in_one_line(
    command: str, tmp_path: Path
) -> None:
    # a pyarrow that is not there, as in an install without [pipeline]
    fake = tmp_path / "site" / "pyarrow"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'pyarrow'\", name='pyarrow')\n"
    )
    args = {"decode": ["rabbitmq-stream", str(tmp_path), "--out", str(tmp_path / "o")]}
    proc = subprocess.run(
        [sys.executable, "-m", "specgen", command, *args.get(command, [str(tmp_path)])],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(fake.parent), str(ROOT)])},
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        f"specgen: {command} needs the pipeline extra, which is not installed (no module "
        "'pyarrow'): pip install 'specgen[pipeline]' (a wheel or a checkout: 'PATH[pipeline]')"
    ]


def test_an_unknown_protocol_is_refused_before_the_input_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def walked(*_: object) -> None:
        raise AssertionError("the input was walked before the protocol was checked")

    monkeypatch.setattr(pcap_job, "find", walked)
    monkeypatch.setattr(inputs, "scan", walked)
    monkeypatch.setattr(decode, "scan", walked)
    assert cli.main(["decode", "nosuchproto", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("specgen: unknown spec 'nosuchproto'; known: ")
    assert not (tmp_path / "o").exists()


def test_report_refuses_an_unfinished_decode_in_one_line_before_spark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    (out / "frames").mkdir(parents=True)
    unfinished.mark(out, "decode")
    # unmarked tests cannot start Spark (conftest): reaching it would fail otherwise
    assert cli.main(["report", str(out)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"specgen: {out}: not a finished decode: specgen decode began ")
    assert line.endswith("Run it again with --overwrite.")
    unfinished.finish(out)
    assert unfinished.why(out) is None


def test_local_masters_retry_a_failed_task_and_clusters_keep_their_url() -> None:
    assert TASK_ATTEMPTS == 4
    assert with_retries("local[*]") == "local[*,4]"
    assert with_retries("local[2]") == "local[2,4]"
    assert with_retries("local") == "local[1,4]"
    assert with_retries("local[2,7]") == "local[2,7]"  # a count the user named stays
    assert with_retries("spark://127.0.0.1:7077") == "spark://127.0.0.1:7077"


def test_a_job_that_failed_every_attempt_is_one_line_naming_the_task_and_its_last_failure() -> None:
    said = (
        "An error occurred while calling z:org.apache.spark.api.python.PythonRDD.collectAndServe.\n"
        ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 2 in stage 4.0 "
        "failed 4 times, most recent failure: Lost task 2.3 in stage 4.0 (TID 143) (localhost "
        "executor driver): org.apache.spark.SparkException: Python worker exited unexpectedly "
        "(crashed): \n\tat org.apache.spark.api.python.BasePythonRunner.read(PythonRunner.scala:1)\n"
        "Caused by: java.io.EOFException\n\tat java.base/java.io.DataInputStream.readInt(X.java:1)"
    )
    assert first_line(RuntimeError(said)) == (
        "Task 2 in stage 4.0 failed 4 times, the last time: org.apache.spark.SparkException: "
        "Python worker exited unexpectedly (crashed)"
    )
    # a Python worker's own exception is still the line that says it
    worker = said + "\npyspark.errors.PythonException: \n  File x\nValueError: bad range 7"
    assert first_line(RuntimeError(worker)) == "ValueError: bad range 7"
