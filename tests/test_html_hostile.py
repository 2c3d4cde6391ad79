"""The HTML outputs show hostile text as text, from both sides: from a spec (the review page of
a spec whose prose and labels hold markup and script) and from captured traffic (the report on
a capture whose stream, queue, link and destination names hold markup and script).

A page counts as safe when the elements an HTML parser finds in it are exactly those of the
same page made from plain text, and the hostile text is in it escaped.
"""

from __future__ import annotations

import re
import shutil
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pyarrow.parquet as pq  # type: ignore[import-untyped]
import pytest
from pyspark.sql import SparkSession

from specgen import report
from specgen.pipeline.decode import decode_local
from specgen.review.changes import compare
from specgen.review.html import render
from specgen.sources import resolve
from specgen.specs import build_ir

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = '<script>alert("x")</script><img src=x onerror=alert(1)>'


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: Counter[str] = Counter()
        self.handlers: list[str] = []
        self.text: list[str] = []  # what a reader sees, markup resolved

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        self.handlers += [name for name, _ in attrs if name.startswith("on")]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _tags(page: str) -> tuple[Counter[str], list[str]]:
    parser = _Tags()
    parser.feed(page)
    return parser.tags, parser.handlers


def _text(page: str) -> str:
    parser = _Tags()
    parser.feed(page)
    return "".join(parser.text)


# --------------------------------------------------------------------------------------------
# From the spec: the review page


def _spec_with(tmp_path: Path, prose: str) -> Path:
    source = ROOT / "specs/rabbitmq-stream/PROTOCOL-early.adoc"
    text = re.sub(r"(?m)(?<=// )the name of the stream$", lambda _: prose, source.read_text())
    path = tmp_path / "PROTOCOL-early.adoc"
    path.write_text(text)
    return path


def test_review_page_shows_spec_markup_as_text(tmp_path: Path) -> None:
    old = build_ir(resolve(str(ROOT / "specs/rabbitmq-stream/PROTOCOL-early.adoc")))[0]
    (tmp_path / "plain").mkdir()
    (tmp_path / "hostile").mkdir()
    plain = build_ir(resolve(str(_spec_with(tmp_path / "plain", "the stream's plain name"))))[0]
    hostile = build_ir(resolve(str(_spec_with(tmp_path / "hostile", SCRIPT))))[0]
    plain_review = compare(old, plain, "old", "new plain")
    hostile_review = compare(old, hostile, f"old {SCRIPT}", f"new {SCRIPT}")
    assert {c.rule for c in hostile_review.changes} == {c.rule for c in plain_review.changes}
    assert "PROSE" in {c.rule for c in hostile_review.changes}  # the page has the prose to show
    plain_page, hostile_page = render(plain_review), render(hostile_review)
    assert _tags(hostile_page) == _tags(plain_page)
    assert f"old {SCRIPT}" in _text(hostile_page)  # shown as text, the reader sees it whole
    assert "<script>alert" not in hostile_page and "<img src=x" not in hostile_page


# --------------------------------------------------------------------------------------------
# From traffic: the report

# protocol -> names in its shipped sample, each replaced by markup of the same length (the
# frames' lengths stay right, so every frame still decodes), and whether the report shows them
NAMES: dict[str, tuple[list[bytes], bool]] = {
    # a stream: the Streams report shows no names, so the page must simply not change
    "rabbitmq-stream": ([b"sample-orders"], False),
    # a queue, and the consumer tag the report shows per consumer
    "amqp-0-9-1": ([b"sample-amqp-orders", b"ctag1.85ce1a9e9b934bbf939344a0a0b444c3"], True),
    # the links' names and the sender's target address
    "amqp-1-0": ([b"sample-receiver", b"sample-sender", b"/queue/sample-amqp10-orders"], True),
    # a destination, a queue
    "amqp-0-10": ([b"amq.direct", b"orders.1"], True),
}


def _markup(length: int) -> bytes:
    text = (b"<script>alert(1)</script><img src=x onerror=alert(2)>" * 4)[:length]
    return text


def _hostile_capture(protocol: str, tmp_path: Path) -> Path:
    folder = tmp_path / "capture"
    shutil.copytree(ROOT / "samples" / protocol, folder)
    replaced = 0
    for path in folder.rglob("*.bin"):
        data = path.read_bytes()
        for name in NAMES[protocol][0]:
            replaced += data.count(name)
            data = data.replace(name, _markup(len(name)))
        path.write_bytes(data)
    assert replaced, protocol
    return folder


def _page(spark: SparkSession, protocol: str, capture: Path, out: Path) -> str:
    decode_local(protocol, capture, out, echo=lambda _: None)
    built = report.build(spark, out / "frames", out / "rejects")
    page = out / "report.html"
    report.write_html(built, page)
    return page.read_text()


@pytest.mark.parametrize("protocol", sorted(NAMES))
def test_report_shows_captured_markup_as_text(
    spark: SparkSession, protocol: str, tmp_path: Path
) -> None:
    plain = _page(spark, protocol, ROOT / "samples" / protocol, tmp_path / "plain")
    hostile = _page(spark, protocol, _hostile_capture(protocol, tmp_path), tmp_path / "hostile")
    # names full of markup break the spec's rules on names (0-9-1's queue-name pattern), so the
    # Spec rules section has rows the plain page's has not: only table elements, no others
    rules = re.compile(r"(?s)<section>\s*<h2>Spec rules</h2>.*?</section>")
    (hostile_rules,) = rules.findall(hostile)
    assert set(_tags(hostile_rules)[0]) <= {
        "section",
        "h2",
        "p",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
    }
    assert not _tags(hostile_rules)[1]  # no event handler attributes
    hostile, plain = rules.sub("", hostile), rules.sub("", plain)
    # plotly's figures are JSON inside <script>: the parser sees the same elements either way
    assert _tags(hostile) == _tags(plain)
    outside = re.sub(r"(?s)<script\b.*?</script>", "", hostile)
    assert "<script>alert" not in outside
    names, shown = NAMES[protocol]
    # decoding kept the names as the bytes said, markup and all
    decoded = str(pq.read_table(tmp_path / "hostile" / "frames").to_pylist())
    assert all(_markup(len(n)).decode() in decoded for n in names)
    if shown:
        text = _text(hostile)
        assert any(_markup(len(n)).decode() in text for n in names), protocol
