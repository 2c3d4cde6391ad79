"""Real copies of spec documents (tests/real_specs/, listed in its manifest.toml), run through
specgen's command line as a user runs it: the document's project folder copied into a folder of
the user's, specgen started there (`python -m specgen`, this checkout first on the path), the
generated package imported and its own tests run in fresh interpreters.

tests/test_real_specs.py asserts on these runs; tests/real_specs/table.py prints them as a table.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from fresh_python import import_everything, run_own_tests

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "tests" / "real_specs"
MANIFEST = HERE / "manifest.toml"
TRACEBACK = "Traceback (most recent call last)"
TIMEOUT = 900


@dataclass(frozen=True)
class Document:
    """One [[document]] of the manifest."""

    path: str
    project: str
    spec: str
    protocol: str
    format: str
    nearest: str
    declared: int

    @property
    def file(self) -> Path:
        return HERE / self.path


def documents() -> list[Document]:
    with MANIFEST.open("rb") as f:
        return [Document(**entry) for entry in tomllib.load(f)["document"]]


@dataclass(frozen=True)
class Run:
    """One process's outcome."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def traceback(self) -> bool:
        return TRACEBACK in self.stderr or TRACEBACK in self.stdout

    def error_line(self) -> str:
        """The line that says what went wrong: pytest's first FAILED or ERROR line, else the
        last line written to stderr (specgen's one-line error, a traceback's last line), else
        stdout's."""
        for line in self.stdout.splitlines():
            if line.startswith(("FAILED ", "ERROR ")):
                return line.strip()
        for text in (self.stderr, self.stdout):
            lines = [line for line in text.splitlines() if line.strip()]
            if lines:
                return lines[-1].strip()
        return f"exit {self.returncode}, nothing printed"

    def says(self) -> str:
        """What a failed assertion shows: the command, its exit code and its output's tail."""
        return (
            f"{' '.join(self.argv)} -> exit {self.returncode}: {self.error_line()}\n"
            f"--- stdout (tail)\n{self.stdout[-3000:]}\n--- stderr (tail)\n{self.stderr[-3000:]}"
        )


def _run(argv: list[str], cwd: Path, pythonpath: Path) -> Run:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    proc = subprocess.run(
        argv, capture_output=True, text=True, cwd=cwd, env=env, timeout=TIMEOUT, check=False
    )
    return Run(tuple(argv), proc.returncode, proc.stdout, proc.stderr)


def _done(proc: subprocess.CompletedProcess[str]) -> Run:
    return Run(tuple(map(str, proc.args)), proc.returncode, proc.stdout, proc.stderr)


# A generated version's commands, counted in a fresh interpreter from what the package exposes:
# 0-10's packed codec keeps controls and commands apart; the other families' COMMANDS map
# each command to its identity (class and method ids; frame type and descriptor code), beside
# entries that are frame types only (content bodies and headers, heartbeats), which no
# document declares as a command; Streams has one key per command.
_COUNT = """
import importlib, json, sys
name = sys.argv[1]
commands = importlib.import_module(name + ".commands")
enums = importlib.import_module(name + ".enums")
if hasattr(commands, "CONTROLS"):
    count = len(commands.CONTROLS) + len(commands.COMMANDS)
elif hasattr(enums, "COMMANDS"):
    count = sum(1 for ident in enums.COMMANDS.values() if len(ident) == 2)
else:
    count = len(enums.Key)
print(json.dumps(count))
"""


class Workspace:
    """A user's folder holding a copy of the document's project folder; specgen runs there, so
    the document is named by a relative path, as a user names theirs."""

    def __init__(self, doc: Document, base: Path) -> None:
        self.doc = doc
        self.base = base
        project = doc.path.split("/", 1)[0]
        base.mkdir(parents=True, exist_ok=True)
        shutil.copytree(HERE / project, base / project, dirs_exist_ok=True)
        self.out = base / "out"

    def specgen(self, *args: str) -> Run:
        return _run([sys.executable, "-m", "specgen", *args], self.base, ROOT)

    def ir(self) -> Run:
        return self.specgen("ir", self.doc.path)

    def lint(self) -> Run:
        return self.specgen("lint", self.doc.path)

    def generate(self) -> Run:
        return self.specgen("generate", self.doc.path, "--out", "out")

    def diff(self, *options: str) -> Run:
        return self.specgen("diff", self.doc.nearest, self.doc.path, *options)

    def version_module(self) -> str:
        """The generated version's dotted name, under the package out/ is (the one folder with
        commands.py)."""
        found = sorted(p.parent for p in self.out.rglob("commands.py"))
        assert len(found) == 1, f"expected one generated version under {self.out}, found {found}"
        return ".".join((self.out.name, *found[0].relative_to(self.out).parts))

    def import_all(self) -> Run:
        return _done(import_everything(self.out, self.base))

    def count_commands(self) -> tuple[Run, int | None]:
        run = _run(
            [sys.executable, "-c", _COUNT, self.version_module()],
            self.base,
            pythonpath=self.out.parent,
        )
        if run.returncode != 0:
            return run, None
        return run, int(json.loads(run.stdout.strip().splitlines()[-1]))

    def round_trip(self) -> Run:
        return _done(run_own_tests(self.out, self.base))


def lint_findings(run: Run) -> int | None:
    """N of lint's closing line, `N findings, M overlay entries applied`."""
    last = (run.stdout.strip().splitlines() or [""])[-1]
    match = re.fullmatch(r"(\d+) findings, \d+ overlay entries applied", last)
    return int(match.group(1)) if match else None


def passed(run: Run) -> int | None:
    """N of pytest's summary, `N passed`."""
    match = re.search(r"(\d+) passed", run.stdout)
    return int(match.group(1)) if match else None


def changes(run: Run) -> list[dict[str, object]]:
    """The changes `specgen diff --format json` listed (none when it printed no JSON)."""
    try:
        return list(json.loads(run.stdout)["changes"])
    except (ValueError, KeyError, TypeError):
        return []


def reads_the_same(change: dict[str, object]) -> bool:
    """A change whose summary gives both sides (`OLD -> NEW`) alike: nothing it shows changed."""
    sides = str(change.get("summary", "")).split(" -> ")
    return len(sides) == 2 and sides[0] == sides[1]


def breaking(run: Run) -> int | None:
    """The breaking changes `specgen diff --format json` counted."""
    try:
        return int(json.loads(run.stdout)["counts"]["breaking"])
    except (ValueError, KeyError, TypeError):
        return None
