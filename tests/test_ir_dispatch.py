"""Dispatch over the IR's kinds is exhaustive.

mypy proves each `match` on a `TypeRef` or an ABNF `Expr` names every kind (each ends in
`assert_never`); these tests hold what mypy cannot see: that the tables keyed by kind (the
canonical JSON's tags) list every kind of the unions, and that the walkers and planners, run on
one value of each kind, take an arm for it rather than reaching `assert_never` at run time (a
planner may refuse a kind, with its own PlanError).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import get_args

import pytest

from specgen import abnf_ast
from specgen.abnf import steps
from specgen.dialogue import _receives, _refs
from specgen.emitters import plan_packed
from specgen.emitters.plan import PlanError, Planner, Step, _min_size, _structs
from specgen.frontends.rfc006_flow import render
from specgen.frontends.rfc006_lifetime import _nullable, _unfinished
from specgen.ir import (
    Alternatives,
    Array,
    BitField,
    Bits,
    Blob,
    Case,
    Choice,
    Field,
    FrameLayout,
    Map,
    NamedType,
    Presence,
    Prim,
    Protocol,
    Ref,
    Struct,
    Switch,
    Typed,
    TypeRef,
    walk_type,
)
from specgen.ir.canonical import _TYPE_TAGS, _abnf_exprs
from specgen.ir.nodes import _project_type, _types_in
from specgen.review.changes import _type_name
from specgen.review.html import _inner_fields, type_label
from specgen.specs import build_ir, registry

U8 = Prim("uint8")
ONE_OF_EACH_TYPE: tuple[TypeRef, ...] = (
    U8,
    Ref("Table"),
    Array(U8),
    Map(U8, U8),
    Struct("Pair", (Field("Left", U8), Field("Right", U8))),
    Switch((Case((1,), U8), Case((2,))), on="Left"),
    Choice("uint8", (Case((1,), U8),)),
    Blob(None),
    Bits(1, (Field("Flag", BitField(1, boolean=True)), Field("Rest", BitField(7, value=0)))),
    BitField(1, boolean=True),
    Presence(2),
    Alternatives((("uint8", "a"), ("int8", "b"))),
    Typed("uint"),
)

STEP = abnf_ast.Step("C", "OPEN")
ONE_OF_EACH_EXPR: tuple[abnf_ast.Expr, ...] = (
    abnf_ast.RuleRef("open"),
    abnf_ast.CharVal("x"),
    abnf_ast.NumVal("x", (0x0D,)),
    abnf_ast.NumRange("x", 0x30, 0x39),
    abnf_ast.ProseVal("anything"),
    STEP,
    abnf_ast.Seq((STEP, abnf_ast.Step("S", "OPEN-OK"))),
    abnf_ast.Alt((STEP, abnf_ast.RuleRef("close"))),
    abnf_ast.Repeat(STEP, 0, 1),
)


def test_the_samples_hold_every_kind() -> None:
    assert {type(t) for t in ONE_OF_EACH_TYPE} == set(get_args(TypeRef))
    assert {type(e) for e in ONE_OF_EACH_EXPR} == set(get_args(abnf_ast.Expr))


def test_canonical_json_tags_every_kind() -> None:
    """A kind without a tag would dump as a plain object and load as nothing."""
    assert set(_TYPE_TAGS.values()) == set(get_args(TypeRef))
    assert set(_abnf_exprs().values()) == set(get_args(abnf_ast.Expr))


@pytest.mark.parametrize("t", ONE_OF_EACH_TYPE, ids=lambda t: type(t).__name__)
def test_type_walkers_take_an_arm_for_every_kind(t: TypeRef) -> None:
    list(walk_type(t, "X"))
    assert next(iter(_types_in(t))) == t
    assert _project_type(t, 1) == t  # every field of the samples is in every version
    assert type_label(t)
    assert _type_name(t)
    _inner_fields(t)


TOY = Protocol(
    "toy",
    "1",
    "toy.adoc",
    (),
    FrameLayout(
        header=(Field("Size", Prim("uint32")), Field("Key", U8)),
        length="Size",
        length_counts="after",
        dispatch=("Key",),
    ),
    (),
    (),
    (),
    named=(NamedType("Table", Map(U8, U8, "uint8")),),
)
"""A protocol for the planners to look the samples' `uint8` and `Table` up in."""


@pytest.mark.parametrize("t", ONE_OF_EACH_TYPE, ids=lambda t: type(t).__name__)
def test_planners_take_an_arm_for_every_kind(t: TypeRef) -> None:
    planner = Planner(TOY)
    _structs((Field("X", t),))
    assert _min_size(TOY, t) >= 0
    assert planner._annotation(t, False)
    assert planner._fits(t)
    calls = (
        lambda: planner._field(Field("X", t), "X", "x", [], planner._run("end"), {}, [], [], "end"),
        lambda: planner._named(NamedType("Named", t)),
        lambda: plan_packed._field(plan_packed._Context(TOY, {}, {}, set()), Field("X", t), 0),
    )
    for call in calls:
        try:
            call()
        except PlanError:
            pass  # refused, by the planner's own rule for that kind


def _step_lists(steps: list[object]) -> Iterator[list[object]]:
    """`steps` and every step list inside its steps: bodies, cases' bodies, runs' post and
    prepare steps."""
    yield steps
    for s in steps:
        for attr in ("body", "post", "prepare"):
            inner = getattr(s, attr, None)
            if isinstance(inner, list):
                yield from _step_lists(inner)
        for case in getattr(s, "cases", []):
            yield from _step_lists(case.body)


def test_plans_hold_steps_and_every_step_kind_is_planned() -> None:
    """plan.py reads its `list[object]` step lists as `list[Step]` (`_steps`) to match on their
    kinds: every item of every list of every fused plan is one of Step's kinds, and each kind
    is planned somewhere, so the union names no kind the planner has stopped making."""
    seen: set[type] = set()
    for spec in registry():
        plan = Planner(build_ir(spec)[0]).plan()
        tops = [m.steps for m in plan.messages]
        for n in plan.named:
            tops += [n.steps, n.key_steps, n.item_steps, *(c.body for c in n.cases)]
        for top in tops:
            for found in _step_lists(top):
                seen.update(type(s) for s in found)
    assert seen == set(get_args(Step))


@pytest.mark.parametrize("e", ONE_OF_EACH_EXPR, ids=lambda e: type(e).__name__)
def test_expression_walkers_take_an_arm_for_every_kind(e: abnf_ast.Expr) -> None:
    list(_refs(e))
    list(steps(e))
    _receives(e)
    _nullable(e)
    _unfinished(e)
    if isinstance(e, abnf_ast.CharVal | abnf_ast.NumVal | abnf_ast.NumRange | abnf_ast.ProseVal):
        with pytest.raises(TypeError):
            render(e)  # no dialogue element: refused, as before
    else:
        assert render(e)
