"""The AsciiDoc front-end against every historical RabbitMQ Streams PROTOCOL.adoc.

The corpus (68 main-line versions and 11 release-branch ones) comes with `index.tsv`,
`branches/index.tsv` and `changelog.md`, written from the git history, not from this code. The
facts asserted here are read from those files or from the documents' own text with plain
regexes (an independent reading), or copied from the changelog, so a wrong parse fails them.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import pytest
from corpus import MISSING, index, streams_corpus

from specgen.frontends.adoc import SpecError, build, build_document
from specgen.frontends.adoc_tree import parse
from specgen.ir import Command, FindingLog, Prim, Protocol, Struct, shape

RESPONSE_FLAG = 0x8000  # "the most significant bit" of a uint16 key (changelog seq 27)


CORPUS = streams_corpus()
pytestmark = pytest.mark.skipif(CORPUS is None, reason=MISSING)


@functools.cache
def _rows() -> dict[str, dict[str, str]]:
    """Relative file path -> its index row; main-line rows keep their `seq`."""
    assert CORPUS is not None
    out = {row["file"]: row for row in index(CORPUS / "index.tsv")}
    out.update({f"branches/{row['file']}": row for row in index(CORPUS / "branches" / "index.tsv")})
    return out


def _files() -> list[str]:
    if CORPUS is None:
        return []
    found = sorted(CORPUS.glob("*.adoc")) + sorted((CORPUS / "branches").glob("*.adoc"))
    return [p.relative_to(CORPUS).as_posix() for p in found]


@functools.cache
def _built(rel: str) -> tuple[Protocol, FindingLog]:
    assert CORPUS is not None
    return build(CORPUS / rel, rel, "rabbitmq-stream", Path(rel).stem)


def _seq(n: int) -> str:
    (rel,) = [rel for rel, row in _rows().items() if row.get("seq") == str(n)]
    return rel


def _text(rel: str) -> str:
    assert CORPUS is not None
    return (CORPUS / rel).read_text(encoding="utf-8")


def _command(proto: Protocol, name: str) -> Command:
    (c,) = [c for c in proto.commands if c.name == name]
    return c


def _findings(log: FindingLog, code: str) -> list[str]:
    return [f"{f.message} -> {f.resolution}" for f in log.items if f.code == code]


def _table(rel: str) -> dict[str, int]:
    """Anchor -> key from the commands table, with a plain regex over the text."""
    rows = re.findall(r"^\|<<(\w+)>>[^\n]*\n\|[^\n]*\n\|(\w+)\s*$", _text(rel), re.M)
    return {name: int(key, 0) for name, key in rows}


# ---- every version


def test_the_corpus_has_every_indexed_version() -> None:
    assert CORPUS is not None
    main = index(CORPUS / "index.tsv")
    branches = index(CORPUS / "branches" / "index.tsv")
    assert len(main) + len(branches) == 79
    assert [int(r["seq"]) for r in main] == list(range(1, 69))
    assert sorted(_files()) == sorted(_rows())
    assert len(_files()) == 79


@pytest.mark.parametrize("rel", _files())
def test_every_version_builds_with_its_indexed_counts(rel: str) -> None:
    proto, _ = _built(rel)
    row = _rows()[rel]
    assert len(proto.commands) == int(row["n_commands"])
    # each table row is one command with the table's key (idents are table keys)
    table = _table(rel)
    assert len(table) == int(row["n_commands"])
    assert sorted(c.ident[0] for c in proto.commands) == sorted(table.values())
    codes = int(row["n_response_codes"])
    if codes > 0:
        (enum,) = [e for e in proto.enums if e.name == "ResponseCode"]
        assert len(enum.values) == codes


# ---- facts from the changelog


def test_seq21_renumbers_every_key() -> None:
    proto, _ = _built(_seq(21))
    order = (
        "DeclarePublisher Publish PublishConfirm PublishError QueryPublisherSequence "
        "DeletePublisher Subscribe Deliver Credit CommitOffset QueryOffset Unsubscribe Create "
        "Delete Metadata MetadataUpdate PeerProperties SaslHandshake SaslAuthenticate Tune Open "
        "Close Heartbeat"
    ).split()
    assert {c.name: c.ident[0] for c in proto.commands} == {n: k for k, n in enumerate(order)}


def test_response_codes_start_at_zero_then_at_one() -> None:
    def codes(n: int) -> dict[str, int]:
        proto, _ = _built(_seq(n))
        (enum,) = [e for e in proto.enums if e.name == "ResponseCode"]
        return {v.doc: v.value for v in enum.values}

    assert codes(22)["OK"] == 0 and codes(22)["Publisher does not exist"] == 17
    assert codes(28)["OK"] == 1 and codes(28)["Publisher does not exist"] == 18
    assert codes(45)["No offset"] == 0x13


# ---- table anchors and their sections


def test_seq1_auto_ids_match_their_sections() -> None:
    proto, log = _built(_seq(1))
    assert "|<<_publish>>" in _text(_seq(1))
    assert {c.name: c.ident for c in proto.commands} == {"Publish": (0,), "PublishConfirm": (1,)}
    found = _findings(log, "anchor-mismatch")
    assert any(
        "<<_publish>>" in f and "'Publish'" in f and f.endswith("matched by id") for f in found
    )


def test_seq3_misspelt_unsubcribe_is_unsubscribe() -> None:
    proto, log = _built(_seq(3))
    assert "=== Unsubcribe" in _text(_seq(3))
    (c,) = [c for c in proto.commands if c.ident == (5,)]
    assert c.name == "Unsubcribe"  # the heading's own spelling; the table's key
    (found,) = [f for f in _findings(log, "anchor-mismatch") if "<<unsubscribe>>" in f]
    assert "'Unsubcribe'" in found
    assert found.endswith(("matched by key", "matched by spelling"))
    # fixed in seq 4: no finding any more
    assert not _findings(_built(_seq(4))[1], "anchor-mismatch")


def test_seq18_producer_anchors_find_the_publisher_sections() -> None:
    proto, log = _built(_seq(18))
    assert _command(proto, "DeclarePublisher").ident == (18,)
    assert _command(proto, "DeletePublisher").ident == (19,)
    found = _findings(log, "anchor-mismatch")
    (declare,) = [f for f in found if "<<declareproducer>>" in f]
    assert "'DeclarePublisher'" in declare and declare.endswith("matched by key")
    # DeletePublisher's request says key 18 (sic) too, so its key decides nothing; the spelling does
    (delete,) = [f for f in found if "<<deleteproducer>>" in f]
    assert "'DeletePublisher'" in delete and delete.endswith("matched by spelling")
    # the response key comments say 17 (sic): kept, reported
    assert any(
        f.startswith("DeclarePublisherResponse has key 0x0011") and f.endswith("the rule's key")
        for f in _findings(log, "key-mismatch")
    )
    # seq 19 fixes the section key comments: both anchors match by key
    found19 = _findings(_built(_seq(19))[1], "anchor-mismatch")
    assert len(found19) == 2 and all(f.endswith("matched by key") for f in found19)


def test_seq51_exchange_command_versions_matches_by_id() -> None:
    rel = _seq(51)
    assert "=== Exchange Command Versions" in _text(rel)
    proto, log = _built(rel)
    assert _command(proto, "ExchangeCommandVersions").ident == (0x001B,)
    (found,) = [f for f in _findings(log, "anchor-mismatch") if "exchangecommandversions" in f]
    assert "'Exchange Command Versions'" in found and found.endswith("matched by id")
    # seq 53 writes the heading as one word: nothing to report
    assert not _findings(_built(_seq(53))[1], "anchor-mismatch")


def test_an_anchor_with_no_section_at_all_still_fails() -> None:
    text = _text(_seq(1)).replace("|<<_publishconfirm>>", "|<<heartbeat>>")
    text = text.replace("=== PublishConfirm", "=== Stats").replace("// 1", "// 7")
    with pytest.raises(SpecError, match="command heartbeat has no section"):
        build_document(parse(text, "edited.adoc"), "rabbitmq-stream", "edited")


# ---- status markers


def _experimental(rel: str) -> set[str]:
    proto, _ = _built(rel)
    return {c.name for c in proto.commands if "experimental" in c.doc.lower()}


def test_experimental_markers_are_read() -> None:
    # seq 26: in the table and in the headings
    assert "|<<route>> (experimental)" in _text(_seq(26))
    assert "=== Route (experimental)" in _text(_seq(26))
    assert _experimental(_seq(26)) == {"Route", "Partitions"}
    proto, _ = _built(_seq(26))
    assert _command(proto, "Route").ident == (23,)  # the name without the marker
    # seq 28: Route only has `_Experimental_` in its body; Partitions lost it in its heading
    assert "=== Route (experimental)" not in _text(_seq(28))
    assert _experimental(_seq(28)) == {"Route", "Partitions"}
    # seq 47: "Consumer Update (experimental)"
    assert _experimental(_seq(47)) == {"Route", "Partitions", "ConsumerUpdate"}
    # seq 49 removes every marker
    assert _experimental(_seq(49)) == set()
    # the marker is a status, not a contradiction of table and section
    assert not _findings(_built(_seq(47))[1], "marker-mismatch")


# ---- the response bit


def test_binary_key_examples_give_the_response_flag() -> None:
    assert "0b10000000 00000110 => subscribe response" in _text(_seq(27))
    assert _built(_seq(26))[0].frame.response_flag is None
    for n in (27, 41):
        assert _built(_seq(n))[0].frame.response_flag == RESPONSE_FLAG
    assert "0x8006 => subscribe response" in _text(_seq(42))
    assert _built(_seq(42))[0].frame.response_flag == RESPONSE_FLAG


def _response_comment_key(rel: str, rule: str) -> int:
    """The Key comment of `rule` (a response production), read from the text."""
    m = re.search(rf"^{rule} => Key.*\n\s*Key => u?int16 // (\w+)", _text(rel), re.M)
    assert m, (rel, rule)
    return int(m.group(1), 0)


@pytest.mark.parametrize(("n", "key"), [(27, 6), (35, 7), (41, 7), (42, 7), (68, 7)])
def test_subscribe_response_key_has_the_flag(n: int, key: int) -> None:
    proto, _ = _built(_seq(n))
    subscribe = _command(proto, "Subscribe")
    assert subscribe.ident == (key,)
    response = subscribe.message("response")
    assert response is not None and response.ident == (key | RESPONSE_FLAG,)


@pytest.mark.parametrize("n", [27, 28, 35, 41])
def test_response_keys_written_without_the_flag_get_it(n: int) -> None:
    """seq 27..41: `CreditResponse => ...  Key => int16 // 8` while the frame says responses
    have the MSB set."""
    rel = _seq(n)
    proto, log = _built(rel)
    credit = _command(proto, "Credit")
    written = _response_comment_key(rel, "CreditResponse")
    assert written == credit.ident[0] == (8 if n == 27 else 9)  # keys go up by 1 at seq 28
    response = credit.message("response")
    assert response is not None and response.ident == (written | RESPONSE_FLAG,)
    found = _findings(log, "response-key-without-flag")
    assert any(
        f.startswith(f"CreditResponse has key {written:#06x}")
        and f.endswith("the frame structure's response bit is set")
        for f in found
    )
    assert not any(f.startswith("CreditResponse") for f in _findings(log, "key-mismatch"))


def test_from_seq42_response_keys_carry_the_flag_and_nothing_is_reported() -> None:
    rel = _seq(42)
    proto, log = _built(rel)
    written = _response_comment_key(rel, "CreditResponse")
    assert written == 0x8009
    response = _command(proto, "Credit").message("response")
    assert response is not None and response.ident == (written,)
    assert not _findings(log, "response-key-without-flag")


def test_before_seq27_responses_share_their_request_key() -> None:
    proto, log = _built(_seq(26))
    response = _command(proto, "Credit").message("response")
    assert response is not None and response.ident == (8,)
    assert not _findings(log, "response-key-without-flag")


# ---- keys the text gets wrong stay reported and are not guessed


def test_ambiguous_keys_are_kept_as_written() -> None:
    # seq 26: RouteResponse has key comment 14 (sic), the table 23
    proto, log = _built(_seq(26))
    route = _command(proto, "Route").message("response")
    assert route is not None and route.ident == (14,)
    assert any(f.startswith("RouteResponse has key 0x000e") for f in _findings(log, "key-mismatch"))
    # seq 47: consumerupdate is 0x0020 in the table, 0x001a / 0x801a in its section
    proto, log = _built(_seq(47))
    cu = _command(proto, "ConsumerUpdate")
    assert cu.ident == (0x0020,)
    assert {m.ident for m in cu.messages} == {(0x001A,), (0x801A,)}
    mismatches = _findings(log, "key-mismatch")
    assert any(f.startswith("ConsumerUpdateQuery has key 0x001a") for f in mismatches)
    assert any(f.startswith("ConsumerUpdateResponse has key 0x801a") for f in mismatches)
    # seq 50 corrects the table
    assert _command(_built(_seq(50))[0], "ConsumerUpdate").ident == (0x001A,)


# ---- misspelt type names


def _osiris_chunk(rel: str) -> dict[str, object]:
    deliver = _command(_built(rel)[0], "Deliver").messages[0]
    (chunk,) = [f for f in deliver.fields if f.name == "OsirisChunk"]
    assert isinstance(chunk.type, Struct)
    return {
        f.name: f.type.name if isinstance(f.type, Prim) else type(f.type).__name__
        for f in chunk.type.fields
    }


def test_unit32_and_unit24_are_the_integers_they_misspell() -> None:
    # seq 43: `Reserved => unit32 // unused 4 bytes` (sic)
    rel = _seq(43)
    assert re.search(r"Reserved => unit32", _text(rel))
    chunk = _osiris_chunk(rel)
    assert chunk["Reserved"] == "uint32"
    assert list(chunk)[-3:] == ["TrailerLength", "Reserved", "Messages"]
    assert any(f.startswith("unit32 ") for f in _findings(_built(rel)[1], "type-typo"))
    # seq 64: `Reserved => unit24`, then BloomFilterData, a sibling, not a member of Reserved
    rel = _seq(64)
    assert re.search(r"Reserved => unit24", _text(rel))
    chunk = _osiris_chunk(rel)
    assert chunk["Reserved"] == "uint24"
    assert list(chunk)[-4:] == ["BloomSize", "Reserved", "BloomFilterData", "Messages"]
    # seq 66 fixes the typo: the same layout, nothing to report
    assert _osiris_chunk(_seq(66))["Reserved"] == "uint24"
    assert not _findings(_built(_seq(66))[1], "type-typo")


# ---- what the changelog calls prose changes nothing on the wire


def _wire(rel: str) -> str:
    data = shape(_built(rel)[0])
    data.pop("source")
    data.pop("version")
    return json.dumps(data, sort_keys=True)


def _tagged(tag: str) -> list[int]:
    text = _text("changelog.md")
    return [int(n) for n in re.findall(rf"^(\d+)\. \*\*[^*\n]+\*\* \[{tag}\]", text, re.M)]


def test_prose_versions_have_the_wire_format_of_the_one_before() -> None:
    prose = _tagged("prose")
    assert len(prose) > 15 and 27 in prose
    # seq 27 is prose to the changelog, but it is where the frame structure starts saying that
    # a response key has the MSB set: from there on response keys carry it
    for n in [n for n in prose if n != 27]:
        assert _wire(_seq(n)) == _wire(_seq(n - 1)), n
    before, after = _built(_seq(26))[0], _built(_seq(27))[0]
    assert before.frame.response_flag is None and after.frame.response_flag == RESPONSE_FLAG


def test_seq42_writing_keys_in_hex_with_the_bit_changes_nothing_on_the_wire() -> None:
    """seq 41 leaves the response bit out of the section comments, seq 42 writes it: once the
    frame's bit is applied to seq 41 the two are the same protocol."""
    assert 42 in _tagged("names")
    assert _wire(_seq(42)) == _wire(_seq(41))


@pytest.mark.parametrize(
    ("branch", "main_seq"),
    [
        ("2021-09-13_0dd4ce4c18", 39),  # differs only by Markdown-style Resources links
        ("2022-05-17_2c9e0b4870", 46),  # plus the seq 48 StreamMetadata RHS fix ([names])
        ("2023-05-15_b9a1992c71", 58),  # keeps the "still under development" intro
        ("2024-06-22_cfb3f8d73a", 68),  # older Osiris link, Resources section
    ],
)
def test_branch_versions_equal_the_main_line_version_the_changelog_names(
    branch: str, main_seq: int
) -> None:
    assert _wire(f"branches/{branch}.adoc") == _wire(_seq(main_seq))
