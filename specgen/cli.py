"""specgen's command line. Exit codes: 0 fine, 1 the check found drift or frames failed,
2 a spec, overlay, input or environment error (one line: `file:line:column: message` for a
spec; a Spark that cannot start or a master that cannot be reached), 130 interrupted (Ctrl-C,
one line)."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import sys
import uuid
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from specgen import __version__, ir, outdir
from specgen.capture import CaptureError
from specgen.emitters.plan import PlanError
from specgen.emitters.render import RenderError
from specgen.emitters.verify import ACCEPTABLE, WIRE_FINDINGS
from specgen.frontends import FRONTENDS
from specgen.frontends.adoc import SpecError
from specgen.frontends.adoc_tree import SpecSyntaxError
from specgen.locations import display, shown
from specgen.overlay import OverlayError
from specgen.pipeline.inputs import DecodeInputError
from specgen.pipeline.interrupt import Interrupted
from specgen.progress import Progress
from specgen.review.render import FORMATS
from specgen.sources import resolve
from specgen.specs import ROOT, SpecVersion, build_ir, find, registry


class FramesInputError(ValueError):
    """A file given to `specgen frames` cannot be read."""


class ExtraMissing(RuntimeError):
    """A command needs an optional extra that is not installed: one line, exit 2."""


PIPELINE_EXTRA = ("pyspark", "pyarrow", "pandas", "numpy", "dpkt", "plotly")
"""What the `[pipeline]` extra installs (pyproject.toml), which `decode` and `report` import."""


def _needs_pipeline(command: str) -> None:
    """Import the pipeline's packages before the command's own modules, so that an install
    without the extra ends in one line naming it, not a traceback from deep inside."""
    for name in PIPELINE_EXTRA:
        try:
            importlib.import_module(name)
        except ImportError as e:
            missing = e.name or name
            raise ExtraMissing(
                f"{command} needs the pipeline extra, which is not installed (no module "
                f"{missing!r}): pip install 'specgen[pipeline]' (a wheel or a checkout: "
                "'PATH[pipeline]')"
            ) from None


INPUT_ERRORS = (
    SpecSyntaxError,
    SpecError,
    OverlayError,
    ir.IRError,
    LookupError,
    CaptureError,
    DecodeInputError,
    FramesInputError,
    PlanError,
    outdir.OutputError,
    ExtraMissing,
)


SPEC_HELP = (
    "rabbitmq-stream/4.0, rabbitmq-stream, a spec file (registered or not), or REV:PATH "
    "(the file as git holds it at a revision)"
)


def _spec_options(parser: argparse.ArgumentParser) -> None:
    # the values are listed here because an unregistered file needs them; registered ones not
    protocols = sorted({s.protocol for s in registry()})
    data = sorted({(name, s.protocol) for s in registry() for name, _ in s.data})
    shipped = ", ".join(f"{name} ({protocol})" for name, protocol in data)
    parser.add_argument(
        "--protocol",
        metavar="PROTOCOL",
        help="the protocol of an unregistered file, one of: "
        f"{', '.join(protocols)} (default: the one whose format and title its content has); "
        "implies the format when the protocol's documents all have one",
    )
    parser.add_argument(
        "--spec-format",
        dest="spec_format",
        choices=sorted(FRONTENDS),
        metavar="FORMAT",
        help=f"the format of an unregistered file, one of: {', '.join(sorted(FRONTENDS))} "
        "(default: from --protocol, the file's suffix, or its content: XML by its root element)",
    )
    parser.add_argument(
        "--overlay", type=Path, metavar="FILE", help="an overlay file of errata to apply"
    )
    parser.add_argument(
        "--data",
        action="append",
        default=[],
        metavar="NAME=FILE",
        type=_data_file,
        help="a file the protocol ships for what its documents do not say, replaced by yours "
        f"(repeatable); the names: {shipped or 'none'} (default: a file of the shipped one's "
        "name beside the spec, else the protocol's own)",
    )


def _data_file(value: str) -> tuple[str, Path]:
    name, sep, file = value.partition("=")
    if not sep or not name or not file:
        raise argparse.ArgumentTypeError(f"{value!r} is not NAME=FILE (field-types=FILE)")
    return name, Path(file)


def _resolve(args: argparse.Namespace, name: str) -> SpecVersion:
    return resolve(
        name,
        protocol=args.protocol,
        format=args.spec_format,
        overlay=args.overlay,
        data=dict(args.data),
    )


def parser() -> argparse.ArgumentParser:
    """The command line; every argument documented, metavars in capitals."""
    top = argparse.ArgumentParser(prog="specgen", description=__doc__)
    top.add_argument("--version", action="version", version=f"specgen {__version__}")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p_gen = sub.add_parser(
        "generate",
        help="regenerate generated/ from every spec (all or nothing), or one spec into --out",
        description="Without arguments, rewrite generated/ from every registered spec, all or "
        "nothing. With SPEC (or --out alone, every spec), write into DIR instead. " + OUT_RULE,
    )
    p_gen.add_argument("spec", nargs="?", metavar="SPEC", help=SPEC_HELP + "; needs --out")
    _out_options(p_gen, "the package tree")
    _spec_options(p_gen)
    _accept_option(p_gen)
    _speed_options(p_gen)

    p_check = sub.add_parser(
        "check",
        help="fail with a unified diff when generated/ (or --out) is stale",
        description="Render what `specgen generate` would write, with the same arguments, and "
        "compare it with what the folder holds: exit 1 and a unified diff when they differ.",
    )
    p_check.add_argument("spec", nargs="?", metavar="SPEC", help=SPEC_HELP + "; needs --out")
    p_check.add_argument(
        "--out", type=Path, metavar="DIR", help="the folder to check (default: generated/)"
    )
    _spec_options(p_check)
    _accept_option(p_check)
    _speed_options(p_check)

    sub.add_parser(
        "list",
        help="the generated protocols and versions, with the names commands take and whether "
        "`frames` and `decode` read them",
    )

    p_ir = sub.add_parser(
        "ir",
        help="print a spec's IR as canonical JSON, or (--rules) count the rules it states",
        description="Print the IR of SPEC as canonical JSON. With --rules, count instead the "
        "rules the spec states about values and senders (its asserts, choices, mandatory "
        "fields, who sends what), per kind: checkable by a program, or in prose only; without "
        "SPEC, for every registered spec version.",
    )
    p_ir.add_argument(
        "spec", nargs="?", metavar="SPEC", help=SPEC_HELP + "; needed without --rules"
    )
    p_ir.add_argument("--no-overlay", action="store_true", help="the IR as the text says it")
    p_ir.add_argument(
        "--rules",
        action="store_true",
        help="count the spec's rules per kind, checkable and prose only, instead of the JSON",
    )
    _spec_options(p_ir)

    p_lint = sub.add_parser(
        "lint", help="report the spec's contradictions and how they were settled"
    )
    p_lint.add_argument("spec", metavar="SPEC", help=SPEC_HELP)
    _spec_options(p_lint)

    p_diff = sub.add_parser(
        "diff",
        help="what changed on the wire between two specs, and whom it breaks",
        description="Compare two versions of a spec and print a reviewer's changelog: every "
        "change with the rule that classified it as breaking or compatible for an old client "
        "against a new server and the other way round. Exit 1 with --fail-on-breaking when "
        "anything breaks.",
    )
    p_diff.add_argument("old", metavar="OLD", help="the spec before: " + SPEC_HELP)
    p_diff.add_argument("new", metavar="NEW", help="the spec after, as OLD")
    p_diff.add_argument(
        "--format",
        dest="output",
        choices=FORMATS,
        default="text",
        help="text for a terminal, markdown for a pull-request comment, json for tools "
        "(default: text)",
    )
    p_diff.add_argument(
        "--fail-on-breaking", action="store_true", help="exit 1 when a change breaks on the wire"
    )
    p_diff.add_argument(
        "--code", action="store_true", help="add the unified diff of the generated modules"
    )
    p_diff.add_argument(
        "--html", type=Path, metavar="FILE", help="also write a self-contained review page here"
    )
    p_diff.add_argument(
        "--no-overlay", action="store_true", help="compare the texts as written, without errata"
    )
    _spec_options(p_diff)
    _accept_option(p_diff)

    protocols = _protocol_help()
    p_frames = sub.add_parser("frames", help="decode files of raw frames, one JSON line per frame")
    p_frames.add_argument("protocol", metavar="PROTOCOL", help=protocols)
    p_frames.add_argument(
        "files",
        nargs="+",
        type=Path,
        metavar="FILE",
        help="files of frames back to back, as a capture's .c2s.bin and .s2c.bin hold them",
    )
    p_frames.add_argument(
        "--roundtrip", action="store_true", help="re-encode and compare each frame"
    )
    p_frames.add_argument(
        "--sender",
        choices=("client", "server"),
        help="who sent the bytes (default: from a .c2s/.s2c file name, else unknown)",
    )
    p_frames.add_argument(
        "--rules",
        action="store_true",
        help="add the rules of the spec each frame breaks (`violations`, with the spec's lines)",
    )

    p_capture = sub.add_parser(
        "capture",
        help="a recording TCP proxy: both directions' bytes and an index per connection",
        description="Accept on --listen, connect each client to --target, forward both ways and "
        "record every byte. " + OUT_RULE,
    )
    p_capture.add_argument(
        "--target", required=True, metavar="HOST:PORT", help="the server to forward to"
    )
    p_capture.add_argument(
        "--listen",
        default="127.0.0.1:0",
        metavar="HOST:PORT",
        help="where clients connect (default: 127.0.0.1, a free port, printed)",
    )
    p_capture.add_argument(
        "--out", required=True, type=Path, metavar="DIR", help="the capture's folder"
    )
    p_capture.add_argument(
        "--overwrite",
        action="store_true",
        help="write into a folder that holds files, replacing a capture's files there",
    )
    p_capture.add_argument(
        "--duration", type=float, metavar="SECONDS", help="stop after this many seconds"
    )
    p_capture.add_argument(
        "--connections",
        type=int,
        metavar="N",
        help="stop when N connections have finished (failed connects do not count)",
    )

    p_report = sub.add_parser(
        "report", help="tables and an offline HTML page of charts from a decoded capture, via Spark"
    )
    p_report.add_argument(
        "out_dir", type=Path, metavar="OUT_DIR", help="the folder `specgen decode` wrote"
    )
    p_report.add_argument(
        "--html",
        type=Path,
        metavar="FILE",
        help="where the page goes (default: OUT_DIR/report.html, replaced)",
    )
    p_report.add_argument(
        "--master", metavar="URL", help="Spark master URL (default: local[*], every core)"
    )
    p_report.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="FILE",
        help="the tables as JSON: to FILE beside the text, or alone on stdout (FILE - or none)",
    )

    p_decode = sub.add_parser(
        "decode",
        help="decode capture folders into Parquet tables of frames and rejects, via Spark",
        description="Decode captures with the generated codec on Spark into OUT_DIR/frames and "
        "OUT_DIR/rejects (and OUT_DIR/streams for pcap input). " + OUT_RULE,
    )
    p_decode.add_argument("protocol", metavar="PROTOCOL", help=protocols)
    p_decode.add_argument(
        "input_dir",
        type=Path,
        metavar="INPUT",
        help="a capture folder or a folder of them, or pcap/pcapng files (a file, or a folder of "
        "them, gzipped or not)",
    )
    p_decode.add_argument(
        "--port",
        type=int,
        action="append",
        default=[],
        metavar="PORT",
        help="pcap input: a TCP port the protocol's servers listen on (repeatable; default: "
        "the protocol's own, from its protocol.toml)",
    )
    p_decode.add_argument(
        "--out",
        required=True,
        type=Path,
        metavar="OUT_DIR",
        help="the folder for frames/ and rejects/",
    )
    p_decode.add_argument(
        "--master",
        metavar="URL",
        help="Spark master URL (default: local[*], every core; without it, input of at most one "
        "range's bytes decodes in this process, no Spark)",
    )
    p_decode.add_argument(
        "--overwrite",
        action="store_true",
        help="write into a folder that holds files, replacing what decode wrote there "
        "(frames/, rejects/, streams/ and the report page made from them)",
    )
    p_decode.add_argument(
        "--range-size",
        type=int,
        default=32 * 1024 * 1024,
        metavar="BYTES",
        help="bytes of a capture file per Spark task (default: 32 MiB)",
    )
    p_decode.add_argument(
        "--no-verify-checksums",
        dest="verify_checksums",
        action="store_false",
        help="decode frames whose checksums do not match (default: they are rejects)",
    )
    p_decode.add_argument(
        "--max-rejects",
        type=int,
        metavar="N",
        help="fail (exit 1) when the rejects table has more than N rows; the tables stay written",
    )
    return top


OUT_RULE = (
    "An output folder must be new or empty; one that holds anything is refused unless "
    "--overwrite is given, which removes what this command writes there and keeps other files."
)


def _out_options(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--out", type=Path, metavar="DIR", help=f"write {what} here instead of generated/"
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="write into a --out that holds files, replacing what generate wrote there",
    )


def _accept_option(parser: argparse.ArgumentParser) -> None:
    codes = ", ".join(f"{code} ({what})" for code, what in sorted(ACCEPTABLE.items()))
    parser.add_argument(
        "--accept",
        action="append",
        default=[],
        metavar="CODE",
        choices=sorted(ACCEPTABLE),
        help="go on with the front-end's reading of what decides bytes on the wire by a guess, "
        f"which generate otherwise refuses (repeatable): {codes}",
    )


def _speed_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--jobs",
        type=_jobs,
        metavar="N",
        help="render up to N protocol packages at once in worker processes "
        "(default: one per core; 1 renders them one after the other)",
    )
    parser.add_argument(
        "--no-cache",
        dest="cached",
        action="store_false",
        help="run black on every module instead of taking its output from generated/'s "
        "format manifest or the user's format cache (the output is the same)",
    )


def _jobs(value: str) -> int:
    try:
        jobs = int(value)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of jobs (1 or more)")
    return jobs


def _protocol_help() -> str:
    """The names `frames` and `decode` take, from the registry (what `specgen list` prints)."""
    names = [s.qualified for s in registry()]
    names += sorted({s.protocol for s in registry() if s.latest})
    return "one of " + ", ".join(names) + " (a protocol alone: its latest version)"


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(_COMMANDS[args.command](args))
    except INPUT_ERRORS as e:
        print(f"specgen: {display(str(e))}", file=sys.stderr)  # a span names the real file
        return 2
    except RenderError as e:
        print(f"specgen: internal error: {e}", file=sys.stderr)
        return 3
    except BrokenPipeError:
        return 0
    except OSError as e:  # a file or folder the system refused: an environment error, one line
        where = f"{e.filename}: " if e.filename else ""
        print(f"specgen: {where}{e.strerror or e}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Interrupted):
        return _interrupted(args.command)


def _interrupted(command: str) -> int:
    """Ctrl-C: one line and exit 130 (128 + SIGINT), as a shell reports it."""
    sys.stdout.flush()
    print(f"specgen: {command}: interrupted", file=sys.stderr, flush=True)
    return 130


def _capture(args: argparse.Namespace) -> int:
    from specgen import capture

    if args.duration is None and args.connections is None:
        raise capture.CaptureError("give --duration or --connections: a capture stops on its own")
    if args.connections is not None and args.connections < 1:
        raise capture.CaptureError("--connections: give 1 or more")
    if args.duration is not None and not args.duration > 0:
        raise capture.CaptureError("--duration: give a number of seconds above 0")
    try:
        cap = capture.run(
            args.out,
            capture.parse_address(args.target),
            capture.parse_address(args.listen),
            args.duration,
            args.connections,
            args.overwrite,
        )
    except capture.SummaryError as e:
        # the capture ran and its files are complete; only the summary is missing
        print(f"specgen: {e}", file=sys.stderr)
        return 1
    stopped = len(cap.recording_stopped)
    print(
        f"capture: {cap.connections} connections, {cap.failed_connects} failed connects, "
        f"{cap.bytes['c2s']} bytes client->server, {cap.bytes['s2c']} bytes server->client "
        f"in {args.out}"
        + (f"; recording stopped early in {stopped} connections (capture.json)" if stopped else "")
    )
    return 0


def _report(args: argparse.Namespace) -> int:
    # imported here: PySpark is an optional extra and slow to import
    _needs_pipeline("report")
    from specgen import report

    try:
        return report.command(args.out_dir, args.html, args.master, args.json)
    except report.ReportError as e:
        print(f"specgen: {e}", file=sys.stderr)
        return 2


def _decode(args: argparse.Namespace) -> int:
    # imported here: PySpark is an optional extra and slow to import
    _needs_pipeline("decode")
    from specgen.pipeline import decode_command

    return decode_command.main(
        args.protocol,
        args.input_dir,
        args.out,
        args.master,
        args.overwrite,
        args.range_size,
        args.verify_checksums,
        args.max_rejects,
        frozenset(args.port),
    )


def _generate(args: argparse.Namespace) -> int:
    from specgen.generate import generate, render_all, write_tree

    progress = Progress("generate")
    speed = {"jobs": args.jobs, "cached": args.cached}
    if args.spec is None and args.out is None:
        # refused (exit 2) when installed: no checkout
        files = generate(progress=progress, **speed)
        print(f"generated {len(files)} files into generated/ from {len(registry())} spec versions")
        return 0
    specs = _specs(args)
    outdir.check(args.out, "generate", args.overwrite, beside=True)  # before the rendering
    files = render_all(specs, progress=progress, **speed)
    write_tree(files, args.out, fresh_only=True, overwrite=args.overwrite)
    print(f"generated {len(files)} files into {args.out} from {len(specs)} spec versions")
    return 0


def _specs(args: argparse.Namespace) -> list[SpecVersion]:
    """What `generate` and `check` render: one spec (into --out) or every registered one."""
    if args.spec is not None and args.out is None:
        raise outdir.OutputError(
            f"specgen {args.command} SPEC needs --out DIR (generated/ holds every spec)"
        )
    specs = [_resolve(args, args.spec)] if args.spec else registry()
    return [_accepting(args, s) for s in specs]


def _accepting(args: argparse.Namespace, spec: SpecVersion) -> SpecVersion:
    """The spec with the readings `--accept` takes (generate, check, and diff --code, which
    renders as generate does)."""
    accept = tuple(dict.fromkeys(args.accept))
    return dataclasses.replace(spec, accept=accept) if accept else spec


def _diff(args: argparse.Namespace) -> int:
    from specgen.review.changes import compare
    from specgen.review.render import render

    old_spec = _accepting(args, _resolve(args, args.old))
    new_spec = _accepting(args, _resolve(args, args.new))
    old, _ = build_ir(old_spec, with_overlay=not args.no_overlay)
    new, _ = build_ir(new_spec, with_overlay=not args.no_overlay)
    if old.name != new.name:
        raise LookupError(f"{args.old} is {old.name}, {args.new} is {new.name}: not one protocol")
    review = compare(old, new, old_spec.label or args.old, new_spec.label or args.new)
    if args.code:
        from specgen.review.code import code_diff

        code = code_diff(old_spec, new_spec, Progress("diff"))
        review = dataclasses.replace(review, code=code)
    sys.stdout.write(render(review, args.output))
    if args.html:
        from specgen.review import html

        args.html.write_text(html.render(review), encoding="utf-8")
        print(f"review page: {args.html}", file=sys.stderr)
    return 1 if args.fail_on_breaking and review.breaking else 0


def _check(args: argparse.Namespace) -> int:
    from specgen.generate import stale

    specs = _specs(args)
    # refused when installed without --out
    diffs = stale(args.out, Progress("check"), specs, jobs=args.jobs, cached=args.cached)
    name = f"{args.out}" if args.out is not None else "generated/"
    if not diffs:
        print(f"{name} is up to date")
        return 0
    for d in diffs:
        sys.stdout.write(d)
    again = "specgen generate" + (f" {args.spec}" if args.spec else "")
    again += f" --out {args.out} --overwrite" if args.out is not None else ""
    print(f"\n{name} is stale ({len(diffs)} files differ): run `{again}` and commit the result")
    return 1


def _list(args: argparse.Namespace) -> int:
    for spec in registry():
        latest = "  (latest)" if spec.latest else ""
        readers = _readers(spec)
        # where the document is: a user can open it, copy it, give it to `generate`
        where = shown(spec.document)
        print(f"{spec.qualified}\t{spec.import_name}\t{where}\t{readers}{latest}")
    return 0


def _ir(args: argparse.Namespace) -> int:
    if args.rules:
        specs = [_resolve(args, args.spec)] if args.spec else registry()
        for i, spec in enumerate(specs):
            protocol, _ = build_ir(spec, with_overlay=not args.no_overlay)
            sys.stdout.write(("\n" if i else "") + rules_summary(spec.qualified, protocol))
        return 0
    if args.spec is None:
        raise LookupError("specgen ir needs SPEC (or --rules, which counts every spec's rules)")
    protocol, _ = build_ir(_resolve(args, args.spec), with_overlay=not args.no_overlay)
    sys.stdout.write(ir.dump(protocol))
    return 0


def rules_summary(name: str, protocol: ir.Protocol) -> str:
    """A table of a spec version's rules: per kind, how many a program can check and how
    many the spec states in prose only; then the totals, and the overlay entries that added
    or corrected rules."""
    counts = ir.rule_counts(protocol.rules)
    width = max((len(k) for k in counts), default=5)
    lines = [f"{name} ({protocol.source}): {len(protocol.rules)} rules"]
    lines.append(f"  {'kind':<{width}}  checkable  prose only")
    for kind, (checkable, prose) in counts.items():
        lines.append(f"  {kind:<{width}}  {checkable:>9}  {prose:>10}")
    checkable = sum(c for c, _ in counts.values())
    prose = sum(p for _, p in counts.values())
    lines.append(f"  {'total':<{width}}  {checkable:>9}  {prose:>10}")
    by = sorted({r.overlay for r in protocol.rules if r.overlay})
    if by:
        lines.append(f"  overlay entries: {', '.join(by)}")
    return "\n".join(lines) + "\n"


def _lint(args: argparse.Namespace) -> int:
    spec = _resolve(args, args.spec)
    protocol, log = build_ir(spec)
    for finding in sorted(log.items, key=lambda f: (f.span.line, f.span.column)):
        # spans name files the user can open, installed too
        if finding.code in WIRE_FINDINGS:
            by = log.accepted.get(finding.code)
            note = (
                f"accepted by overlay {by}"
                if by
                else f"generate refuses it: --accept {finding.code}"
            )
            print(display(f"{finding} [decides bytes; {note}]"))
        else:
            print(display(str(finding)))
    if spec.overlay is not None:
        from specgen import overlay

        # the entries this version took
        for entry in overlay.load(spec.overlay, ROOT, spec.overlay_label):
            if entry.id in protocol.overlays:
                line = f"{entry.span}: overlay {entry.id}: {entry.target}: {entry.reason}"
                print(display(line))
    print(f"{len(log.items)} findings, {len(protocol.overlays)} overlay entries applied")
    return 0


def _preambles(spec: SpecVersion) -> dict[str, bytes]:
    """What each sender's bytes start with, from the protocol's framing module: FramesInputError
    when it has none (`specgen frames` cannot walk its frames)."""
    try:
        framing = importlib.import_module(spec.framing_name)
    except ModuleNotFoundError:
        raise FramesInputError(
            f"specgen frames does not read {spec.protocol} yet: its package has no framing module"
        ) from None
    preambles: dict[str, bytes] = framing.PREAMBLES
    return preambles


def _readers(spec: SpecVersion) -> str:
    """Which of `specgen frames` and `specgen decode` read this version, asked the way each
    command asks before it reads anything."""
    names = []
    try:
        _preambles(spec)
        names.append("frames")
    except FramesInputError:
        pass
    try:
        from specgen.pipeline import decode
    except ImportError:  # without the pipeline extra nothing decodes
        pass
    else:
        if decode.decodes(spec.import_name):
            names.append("decode")
    return ", ".join(names) or "-"


def _frames(args: argparse.Namespace) -> int:
    spec = find(args.protocol)
    codec = importlib.import_module(spec.import_name)
    # the version's generated rules: a second look at each decoded frame, never a failure
    rules = importlib.import_module(f"{spec.import_name}.rules") if args.rules else None
    preambles = _preambles(spec)
    total = failed = fragments = 0
    contents: list[bytes] = []
    for path in args.files:  # all read first: a missing file is an input error (exit 2)
        try:
            contents.append(path.read_bytes())
        except OSError as e:
            raise FramesInputError(f"{path}: {e.strerror or e}") from None
    for path, data in zip(args.files, contents, strict=True):
        sender = args.sender or _sender_from_name(path)
        # a capture's file starts with it ("both": each peer sends the same)
        preamble = preambles.get(sender or "", preambles.get("both", b""))
        # a segment layer's frames join into messages, reported on the frame completing each
        messages = codec.Assemblies() if hasattr(codec, "Assemblies") else None
        # a protocol with no preamble (AMQP 1.0: its protocol headers are messages) takes none
        skip = {"preamble": data.startswith(preamble)} if preamble else {}
        reader = codec.FrameReader(sender, **skip)
        reader.feed(data)
        following = getattr(codec, "following", None)  # octets after some frames (RFC 006)
        continued = getattr(codec, "continued", None)
        head = getattr(codec, "FRAGMENT_HEAD", None)  # what a message's first octets start with
        after: Any = None  # the message whose fragment is the reader's next item
        going_on = False  # the last message octets followed goes on after the next
        while True:
            offset = reader.offset
            try:
                frames = reader.frames()
                got = next(frames, None)
            except codec.DecodeError as e:
                print(json.dumps({"file": str(path), "offset": offset, "error": str(e)}))
                failed += 1
                break
            if got is None:
                break
            offset, raw = got
            total += 1
            line: dict[str, Any] = {"file": str(path), "offset": offset}
            if after is not None:
                # raw octets outside any framing, as many as the frame before said: a line of
                # their own, naming that frame's message; they are written as they were read
                line.update(command="fragment", kind="fragment", size=len(raw))
                line["follows"] = type(after).__name__
                line["first"] = first = not going_on
                going_on = bool(continued(after)) if continued is not None else False
                after = None
                total, fragments = total - 1, fragments + 1
                if first and head is not None:
                    # a message's first octets start with its head: it decodes and re-encodes
                    try:
                        value, end = head.decode(raw)
                    except codec.DecodeError as e:
                        line.update(error=str(e), field=e.field, field_offset=offset + e.offset)
                        failed += 1
                    else:
                        line["head"] = _jsonable(value)
                        if args.roundtrip:
                            line["roundtrip"] = value.encode() == raw[:end]
                            failed += not line["roundtrip"]
                print(json.dumps(line, ensure_ascii=False))
                continue
            try:
                msg = codec.decode(raw, sender)
            except codec.DecodeError as e:
                line["error"] = str(e)
                line["field"] = e.field
                line["field_offset"] = offset + e.offset
                failed += 1
                print(json.dumps(line))
                continue
            if messages is not None:
                failed += _segment_line(codec, messages, msg, raw, line, args.roundtrip)
                print(json.dumps(line, ensure_ascii=False))
                continue
            ident = msg.IDENT  # one key, or a tuple such as (frame type, class id, method id)
            line.update(
                command=msg.COMMAND,
                kind=msg.KIND,
                **({"key": f"{ident[0]:#06x}"} if len(ident) == 1 else {"ident": list(ident)}),
            )
            if hasattr(msg, "VERSION"):  # a command's version; AMQP 1.0's frames have none
                line["version"] = msg.VERSION
            if following is not None and following(msg):
                after = msg
            line["fields"] = _jsonable(msg)
            if rules is not None:
                found = rules.violations(msg, sender)
                if found:
                    line["violations"] = [
                        {
                            "rule": v.rule,
                            "field": f"{v.message}.{v.field}" if v.field else v.message,
                            "value": _jsonable(v.value),
                            "text": v.text,
                            "spec": v.spec,
                        }
                        for v in found
                    ]
            if args.roundtrip:
                try:
                    again = codec.encode(msg)
                except codec.EncodeError as e:  # decoded, yet refused: one failing line
                    line["roundtrip"] = False
                    line["encode_error"] = str(e)
                    failed += 1
                else:
                    line["roundtrip"] = again == raw
                    if again != raw:
                        failed += 1
                        line["reencoded"] = again.hex()
            print(json.dumps(line, ensure_ascii=False))
        if reader.pending:
            print(
                json.dumps(
                    {
                        "file": str(path),
                        "offset": reader.offset,
                        "error": f"file ends {reader.pending} bytes into a frame",
                    }
                )
            )
            failed += 1
    verdict = "ok" if failed == 0 else "FAILED"
    extra = ", re-encoded identically" if args.roundtrip and failed == 0 else ""
    counted = f"{total} frames" + (f" and {fragments} fragments" if fragments else "")
    print(f"{verdict}: {counted} in {len(args.files)} files, {failed} failed{extra}")
    return 1 if failed else 0


def _segment_line(
    codec: Any, messages: Any, frame: Any, raw: bytes, line: dict[str, Any], roundtrip: bool
) -> int:
    """Fill `line` for one frame of a segment layer: the frame's place (type, track, channel,
    its four flags) and, on the frame that completes a message, the control or command with its
    header and body; with `roundtrip`, whether the frame and the message's segments re-encode
    to their bytes. 1 when something failed, else 0."""
    line["frame"] = {
        "type": int(frame.type),
        "track": int(frame.track),
        "channel": frame.channel,
        "first_segment": frame.first_segment,
        "last_segment": frame.last_segment,
        "first_frame": frame.first_frame,
        "last_frame": frame.last_frame,
        "payload": len(frame.payload),
    }
    failed = 0
    if roundtrip:
        again = codec.encode(frame)
        line["roundtrip"] = again == raw
        if again != raw:
            line["reencoded"] = again.hex()
            failed = 1
    try:
        message = messages.add(frame)
    except codec.DecodeError as e:
        messages.reset()
        line.update(error=str(e), field=e.field)
        return 1
    if message is None:
        return failed
    method = message.method
    line.update(
        command=method.NAME,
        kind=method.KIND,
        ident=list(method.IDENT),
        frames=message.frames,
        fields=_jsonable(method),
    )
    if message.header:
        line["header"] = {type(h).__name__: _jsonable(h) for h in message.header}
    if getattr(method, "BODY", False):
        line["body_size"] = len(message.body)
    if roundtrip:
        try:
            same = codec.encode_method(method) == message.segments[0].payload
            if message.header:
                header = codec.encode_header(message.header)
                same = same and header == message.segments[1].payload
        except codec.EncodeError as e:  # decoded, yet refused: one failing line
            line["encode_error"] = str(e)
            same = False
        line["roundtrip"] = line["roundtrip"] and same
        if not same:
            failed = 1
    return failed


def _sender_from_name(path: Path) -> str | None:
    name = path.name
    if ".c2s." in name or name.endswith(".c2s"):
        return "client"
    if ".s2c." in name or name.endswith(".s2c"):
        return "server"
    return None


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # fields() leaves out the ClassVars (KEY, VERSION, ...) that __dataclass_fields__ lists
        # private fields are the codec's (AMQP 1.0's remembered encodings), not the message's
        return {
            f.name: _jsonable(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if not f.name.startswith("_")
        }
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):  # a field table
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, Decimal):
        return str(value)  # exact, where a float would round
    if isinstance(value, bytes):
        return (
            {"hex": value.hex()}
            if len(value) <= 64
            else {"hex": value[:64].hex(), "length": len(value)}
        )
    return value


_COMMANDS = {
    "capture": _capture,
    "generate": _generate,
    "diff": _diff,
    "check": _check,
    "list": _list,
    "ir": _ir,
    "lint": _lint,
    "frames": _frames,
    "decode": _decode,
    "report": _report,
}


if __name__ == "__main__":
    sys.exit(main())
