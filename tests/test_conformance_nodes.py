"""The conformance template's macros: every node kind the emitter hands them becomes Python that
means what the node says. The shipped fixed-layout specs reach most kinds (their generated tests
are byte-identical to the f-string era's); these tests pin every kind, those too."""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest

from specgen.emitters import conformance_nodes as n
from specgen.emitters.conformance import MAX_ARRAY, MAX_TABLE, TEXT, Obj, _value
from specgen.emitters.render import Renderer, RenderError

MACROS = "python/_conformance_macros.j2"
RENDERER = Renderer()


def _macro(name: str, node: Any) -> str:
    return RENDERER.macro(MACROS, name, node)


STRATEGIES: list[tuple[n.Strategy, str]] = [
    (n.Integers(-128, 127), "st.integers(-128, 127)"),
    (n.Unsigned(64), "st.integers(0, 2**64 - 1)"),
    (n.Floats(32), "st.floats(allow_nan=False, width=32)"),
    (n.Booleans(), "st.booleans()"),
    (n.Nones(), "st.none()"),
    (n.Text(60), "st.text(max_size=60)"),
    (n.Binary(64), "st.binary(max_size=64)"),
    (n.Defined("TABLES"), "TABLES"),
    (n.NoneOr(n.Text(5)), "st.none() | st.text(max_size=5)"),
    (n.Lists(n.Defined("VALUES"), 3), "st.lists(VALUES, max_size=3)"),
    (n.OneOf((n.Booleans(), n.StructDraw("_st_entry"))), "st.one_of(st.booleans(), _st_entry())"),
    (n.Sampled((4,)), "st.sampled_from((4,))"),
    (n.Sampled((0, 1, 2)), "st.sampled_from((0, 1, 2))"),
    (n.StructDraw("_st_entry"), "_st_entry()"),
]


@pytest.mark.parametrize(("node", "source"), STRATEGIES, ids=[s for _, s in STRATEGIES])
def test_each_strategy_kind_renders_as_its_hypothesis_call(node: n.Strategy, source: str) -> None:
    assert _macro("strategy", node) == source


def test_every_strategy_kind_is_covered() -> None:
    kinds = {t.__name__ for t in n.Strategy.__args__}
    assert kinds == {node.kind for node, _ in STRATEGIES}


def test_sizes_compute_what_an_encoder_writes() -> None:
    """A record of a tag byte, a nullable 2-byte-prefixed UTF-8 string, an array of int32 after
    a 4-byte count and one of two entry classes, summed over a list of such records."""
    entry = n.ByClass(
        (
            n.ClassCase("Small", n.Const(1)),
            n.ClassCase("Big", n.Plus((n.Const(2), n.Len(("x", "entry", "data"))))),
        ),
        ("x", "entry"),
    )
    record = n.Plus(
        (
            n.Const(1),
            n.Prefixed(2, n.Len(("x", "name"), encoded=True)),
            n.Plus((n.Const(4), n.SumOf(n.Const(4), "y", ("x", "ids")))),
            entry,
        )
    )
    source = _macro("line", n.SumOf(record, "x", ("records",)))

    class Small:
        pass

    class Big:
        data = b"abc"

    def rec(name: str | None, ids: list[int], entry: object) -> SimpleNamespace:
        return SimpleNamespace(name=name, ids=ids, entry=entry)

    records = [rec("ünï", [1, 2], Small()), rec(None, [], Big()), rec("", [7], None)]
    scope = {"records": records, "Small": Small, "Big": Big}
    expected = (1 + 2 + 5 + 4 + 8 + 1) + (1 + 2 + 0 + 4 + 0 + 5) + (1 + 2 + 0 + 4 + 4 + 0)
    assert eval(source, scope) == expected
    assert eval(_macro("line", n.Len(("records",))), scope) == 3


def test_composite_lines_choose_and_stop_as_the_wire_does() -> None:
    # strategies that are their one value, and a draw that takes it
    fake = SimpleNamespace(sampled_from=lambda values: values[0], integers=lambda lo, hi: lo)
    chosen = n.Chosen(
        "offset_type",
        (n.Branch((0, 1), None), n.Branch((4,), n.Draw(n.Sampled((9,))))),
        n.Draw(n.Integers(5, 5)),
    )
    source = _macro("line", chosen)
    scope: dict[str, Any] = {"st": fake, "draw": lambda value: value}
    assert [eval(source, scope | {"offset_type": v}) for v in (0, 1, 4, 7)] == [None, None, 9, 5]

    then_none = _macro("line", n.ThenNone("before", n.Draw(n.Sampled((3,)))))
    assert eval(then_none, scope | {"before": None}) is None
    assert eval(then_none, scope | {"before": 0}) == 3


@dataclasses.dataclass
class Point:
    x: Any
    y: Any


SAMPLES = [
    0,
    -(1 << 63),
    3.4028234663852886e38,
    True,
    None,
    TEXT,
    b"",
    bytes(range(255)),
    bytes(range(256)) * 2,
    Decimal("-21474836.48"),
    [],
    [7] * 300,
    [1, "a"] * 6,
    [1, 2, 1, 2, 1],
    dict(MAX_TABLE),
    list(MAX_ARRAY),
    Obj("Point", [1, [Obj("Point", [b"\x00", None])] * 4]),
]


@pytest.mark.parametrize("value", SAMPLES, ids=[repr(v)[:20] for v in SAMPLES])
def test_a_sample_value_renders_as_source_that_evaluates_to_it(value: Any) -> None:
    source = _macro("value", _value(value))
    back = eval(source, {"Decimal": Decimal, "Point": Point})

    def plain(v: Any) -> Any:
        if isinstance(v, Obj):
            return Point(*(plain(a) for a in v.args))
        return [plain(x) for x in v] if isinstance(v, list) else v

    assert back == plain(value)
    assert type(back) is type(plain(value))


def test_runs_are_written_once() -> None:
    assert _macro("value", _value([b"\x01"] * 12)) == "[b'\\x01'] * 12"
    assert _macro("value", _value(bytes(range(256)))) == "bytes(range(256)) * 1"


def test_an_unknown_kind_fails_the_render() -> None:
    @dataclasses.dataclass(frozen=True)
    class Mystery(n.Node):
        pass

    for macro in ("strategy", "line", "value"):
        with pytest.raises(RenderError, match="unknown"):
            _macro(macro, Mystery())
