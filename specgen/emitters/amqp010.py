"""AMQP 0-10: the front-end's `Model` -> a codec package (primitives, structs with packing
flags, enums, controls and commands, segments and frames) and its conformance tests.

What the bytes mean comes from the XML: every type's code and width, every struct's size and
pack widths, codes and fields, the domains' choices, the classes' and methods' codes. What is
ours is how 0-10's types meet Python's, one table (`PRIMS`): which builtin each primitive's
values are and which of the codec's readers implements it (checked against the XML's widths).
The frame header (12 octets) and the protocol header are AMQP 0-10's transport section, which
the XML does not contain: they live in the frames template, with the section they come from.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from specgen.emitters import dialogue
from specgen.emitters.plan import PlanError
from specgen.emitters.render import Renderer
from specgen.frontends import amqp010_xml as fe
from specgen.ir import Protocol
from specgen.registry import SpecVersion, relative

# type name -> (implementation, parameter, Python annotation). Implementations: int and
# float (a struct format), bool, bin (fixed octets), char (an encoding), uuid, dec (the
# mantissa's format), void, vbin, str (an encoding), ranges (a pair's format), map, list,
# array, struct32.
PRIMS: dict[str, tuple[str, str, str]] = {
    "bin8": ("bin", "", "bytes"),
    "int8": ("int", "b", "int"),
    "uint8": ("int", "B", "int"),
    "char": ("char", "iso-8859-15", "str"),
    "boolean": ("bool", "", "bool"),
    "bin16": ("bin", "", "bytes"),
    "int16": ("int", "h", "int"),
    "uint16": ("int", "H", "int"),
    "bin32": ("bin", "", "bytes"),
    "int32": ("int", "i", "int"),
    "uint32": ("int", "I", "int"),
    "float": ("float", "f", "float"),
    "char-utf32": ("char", "utf-32-be", "str"),
    "sequence-no": ("int", "I", "int"),
    "bin64": ("bin", "", "bytes"),
    "int64": ("int", "q", "int"),
    "uint64": ("int", "Q", "int"),
    "double": ("float", "d", "float"),
    "datetime": ("int", "q", "int"),  # POSIX time_t: seconds, signed
    "bin128": ("bin", "", "bytes"),
    "uuid": ("uuid", "", "uuid.UUID"),
    "bin256": ("bin", "", "bytes"),
    "bin512": ("bin", "", "bytes"),
    "bin1024": ("bin", "", "bytes"),
    "vbin8": ("vbin", "", "bytes"),
    "str8-latin": ("str", "iso-8859-15", "str"),
    "str8": ("str", "utf-8", "str"),
    "str8-utf16": ("str", "utf-16-be", "str"),
    "vbin16": ("vbin", "", "bytes"),
    "str16-latin": ("str", "iso-8859-15", "str"),
    "str16": ("str", "utf-8", "str"),
    "str16-utf16": ("str", "utf-16-be", "str"),
    "byte-ranges": ("ranges", "Q", "list[tuple[int, int]]"),
    "sequence-set": ("ranges", "I", "list[tuple[int, int]]"),
    "vbin32": ("vbin", "", "bytes"),
    "map": ("map", "", "dict[str, Typed]"),
    "list": ("list", "", "list[Typed]"),
    "array": ("array", "", "Array"),
    "struct32": ("struct32", "", "Any"),
    "bin40": ("bin", "", "bytes"),
    "dec32": ("dec", "i", "decimal.Decimal"),
    "bin72": ("bin", "", "bytes"),
    "dec64": ("dec", "q", "decimal.Decimal"),
    "void": ("void", "", "None"),
    "bit": ("void", "", "None"),
}
_FMT_WIDTH = {"b": 1, "B": 1, "h": 2, "H": 2, "i": 4, "I": 4, "q": 8, "Q": 8, "f": 4, "d": 8}


@dataclass
class PrimPlan:
    name: str
    py: str  # `str8_latin`: the reader is `_r_str8_latin`
    impl: str
    param: str
    annotation: str
    code: int | None
    fixed: int | None
    variable: int | None
    label: str
    doc: str
    sample: str  # a Python literal of a value to round-trip

    @property
    def code_hex(self) -> str:
        return "None" if self.code is None else f"0x{self.code:02x}"


@dataclass
class FieldPlan:
    attr: str
    name: str  # as the XML writes it
    kind: str  # "bit", "prim" or "struct"
    prim: str  # the primitive's py name, or the struct's reader suffix
    cls: str  # the struct's class name ("" for primitives)
    enum: str  # the enum class its values come from ("" for none)
    annotation: str  # without "| None"
    required: bool
    flag: int  # its packing flag's bit index
    doc: str
    sample: str

    @property
    def mask(self) -> str:
        """Its packing flag in the flags read as a little-endian integer."""
        return f"0x{1 << self.flag:x}"


@dataclass
class StructPlan:
    name: str  # qualified XML name
    cls: str  # Python class
    py: str  # reader/writer suffix
    size: int
    pack: int
    class_code: int | None
    code: int | None
    fields: list[FieldPlan]
    doc: str
    kind: str = "struct"  # "struct", "control" or "command"
    result: str = ""  # a command's result struct class
    header: list[str] = field(default_factory=list)  # its header segment's struct classes
    body: bool = False
    span: str = ""  # where the spec defines it

    @property
    def all_flags(self) -> int:
        return (1 << len(self.fields)) - 1 if self.pack else 0

    @property
    def flags_at(self) -> int:
        """Where its packing flags start in its encoding (a method's: in its payload)."""
        if self.kind == "command":
            return 4  # class code, code, the session header's size and flags
        if self.kind == "control":
            return 2
        return self.size + (2 if self.code is not None else 0)

    @property
    def absent(self) -> str:
        """Hex of its encoding with every field absent, from its XML attributes alone."""
        flags = bytes(self.pack)
        if self.kind == "command":
            return (bytes((self.class_code or 0, self.code or 0, 1, 0)) + flags).hex()
        if self.kind == "control":
            return (bytes((self.class_code or 0, self.code or 0)) + flags).hex()
        codes = bytes((self.class_code or 0, self.code or 0)) if self.code is not None else b""
        size = (len(codes) + self.pack).to_bytes(self.size, "big") if self.size else b""
        return (size + codes + flags).hex()

    @property
    def sample(self) -> str:
        """A literal of it with every field present."""
        return f"{self.cls}({', '.join(f'{f.attr}={f.sample}' for f in self.fields)})"


@dataclass
class EnumPlan:
    cls: str
    name: str
    members: list[tuple[str, int, str]]
    doc: str


@dataclass
class Amqp010Plan:
    model: fe.Model
    prims: list[PrimPlan]
    enums: list[EnumPlan]
    structs: list[StructPlan]
    methods: list[StructPlan]
    classes: list[tuple[str, int, str]]  # (CONST_NAME, code, doc)
    constants: list[tuple[str, int, str]]
    domains: list[tuple[str, str, str]] = field(default_factory=list)  # (name, base, label)

    @property
    def coded(self) -> list[StructPlan]:
        return [s for s in self.structs if s.code is not None]

    @property
    def sample_names(self) -> list[str]:
        """The codec classes the conformance tests' sample values name."""
        enums = {f.enum for s in self.structs + self.methods for f in s.fields if f.enum}
        names = {s.cls for s in self.structs + self.methods} | enums | {"Array", "Typed"}
        return sorted(names, key=str.lower)

    @property
    def controls(self) -> list[StructPlan]:
        return [m for m in self.methods if m.kind == "control"]

    @property
    def commands(self) -> list[StructPlan]:
        return [m for m in self.methods if m.kind == "command"]


def py(name: str) -> str:
    return name.replace("-", "_").replace(".", "_").lower()


def plan(model: fe.Model) -> Amqp010Plan:
    prims = [_prim(t) for t in model.types]
    by_prim = {p.name: p for p in prims}
    coded = [s for s in model.structs if s.code is not None]
    if "struct32" in by_prim:
        if not coded:
            raise PlanError(f"{model.source}: struct32 is defined but no struct has a code")
        by_prim["struct32"].sample = f"{fe.class_name(coded[0].name)}()"
    enums = [
        EnumPlan(
            fe.class_name(d.name),
            d.name,
            [(fe.const_name(c.name), c.value, c.doc) for c in d.choices],
            d.doc,
        )
        for d in model.domains
        if d.choices
    ]
    structs: list[StructPlan] = []
    samples: dict[str, str] = {}  # struct name -> a literal with every field present
    # structs used as fields come first so their samples exist for the structs holding them
    pending = list(model.structs)
    for _ in range(len(pending) + 1):
        later = []
        for s in pending:
            nested = [fe.base_type(model, f.type, s.cls, f.span) for f in s.fields]
            if any(k == "struct" and t not in samples for k, t, _ in nested):
                later.append(s)
                continue
            sp = _struct(model, s.name, s.cls, s.fields, by_prim, samples)
            sp.size, sp.pack, sp.class_code, sp.code, sp.doc = (
                s.size,
                s.pack,
                s.class_code,
                s.code,
                s.doc,
            )
            sp.span = str(s.span)
            if sp.code is not None and sp.size != 4:
                raise PlanError(f"{s.span}: coded struct {s.name} has a {s.size}-octet size")
            samples[s.name] = sp.sample
            structs.append(sp)
        pending = later
    if pending:
        raise PlanError(f"{pending[0].span}: struct {pending[0].name} contains itself")
    order = {s.name: i for i, s in enumerate(model.structs)}
    structs.sort(key=lambda s: order[s.name])
    if model.struct("session.header") is None:
        raise PlanError(f"{model.source}: no session.header struct for the commands")
    methods: list[StructPlan] = []
    for m in model.methods:
        mp = _struct(model, m.name, m.cls, m.fields, by_prim, samples)
        if any(f.attr == "session_header" for f in mp.fields):
            raise PlanError(f"{m.span}: {m.name} has a field named like the session header")
        mp.kind, mp.size, mp.pack = m.kind, 0, 2
        mp.class_code, mp.code, mp.doc = m.class_code, m.code, m.doc
        mp.span = str(m.span)
        mp.body = m.body
        if m.result:
            mp.result = fe.class_name(fe.resolve(model, m.result, m.cls, m.span)[1])
        mp.header = [fe.class_name(fe.resolve(model, h, m.cls, m.span)[1]) for h in m.header]
        methods.append(mp)
    return Amqp010Plan(
        model=model,
        prims=prims,
        enums=enums,
        structs=structs,
        methods=methods,
        classes=[(fe.const_name(c.name), c.code, c.doc) for c in model.classes],
        constants=[(fe.const_name(c.name), c.value, c.doc) for c in model.constants],
        domains=[
            (d.name, fe.base_type(model, d.name, "", d.span)[1], d.label) for d in model.domains
        ],
    )


def _prim(t: fe.Type) -> PrimPlan:
    if t.name not in PRIMS:
        raise PlanError(f"{t.span}: type {t.name!r} has no Python implementation here")
    impl, param, annotation = PRIMS[t.name]
    width = {
        "int": _FMT_WIDTH.get(param),
        "float": _FMT_WIDTH.get(param),
        "bool": 1,
        "char": 4 if param == "utf-32-be" else 1,
        "uuid": 16,
        "dec": 1 + _FMT_WIDTH.get(param, 0),
        "void": 0,
        "bin": t.fixed,
    }.get(impl)
    if t.fixed is not None and width != t.fixed:
        raise PlanError(f"{t.span}: {t.name} is {t.fixed} octets wide; {impl} makes {width}")
    if t.variable is not None and impl in ("int", "float", "bool", "char", "uuid", "dec", "void"):
        raise PlanError(f"{t.span}: {t.name} has a size prefix; {impl} has none")
    return PrimPlan(
        name=t.name,
        py=py(t.name),
        impl=impl,
        param=param,
        annotation=annotation,
        code=t.code,
        fixed=t.fixed,
        variable=t.variable,
        label=t.label,
        doc=t.doc,
        sample=_sample(t, impl, param),
    )


def _sample(t: fe.Type, impl: str, param: str) -> str:
    """A value exercising the encoding: the extreme integers, non-ASCII text, two ranges."""
    if impl == "int":
        bits = 8 * _FMT_WIDTH[param]
        return str(-(1 << (bits - 1)) if param.islower() else (1 << bits) - 1)
    samples = {
        "float": "1.5" if param == "f" else "-2.25",
        "bool": "True",
        "char": '"\\u20ac"' if param == "iso-8859-15" else '"\\U0001f600"',
        "uuid": 'uuid.UUID("0123abcd-4567-89ef-0123-456789abcdef")',
        "dec": 'decimal.Decimal("-1.25")' if param == "i" else 'decimal.Decimal("123456789.000")',
        "void": "None",
        "bin": f"bytes(range({t.fixed}))",
        "vbin": 'b"\\x00\\xff"',
        "str": '"\\u20acuro"' if param == "iso-8859-15" else '"h\\u00e9llo \\u03c0"',
        "ranges": "[(0, 2), (5, 6)]",
        "map": '{"a": Typed("str16", "x"), "n": Typed("int64", -1), "v": Typed("void", None)}',
        "list": '[Typed("uint8", 1), Typed("str8", "b"), Typed("map", {})]',
        "array": 'Array("str16", ["a", "b"])',
        "struct32": "",  # set by the template: one of the document's coded structs
    }
    return samples[impl]


def _struct(
    model: fe.Model,
    name: str,
    cls: str,
    fields: tuple[fe.StructField, ...],
    by_prim: dict[str, PrimPlan],
    samples: dict[str, str],
) -> StructPlan:
    plans: list[FieldPlan] = []
    for i, f in enumerate(fields):
        kind, target, enum_domain = fe.base_type(model, f.type, cls, f.span)
        enum = fe.class_name(enum_domain) if enum_domain else ""
        if kind == "struct":
            sclass = fe.class_name(target)
            struct = model.struct(target)
            assert struct is not None
            plans.append(
                FieldPlan(
                    fe.attr_name(f.name),
                    f.name,
                    "struct",
                    py(target),
                    sclass,
                    "",
                    sclass,
                    f.required,
                    i,
                    f.doc,
                    samples[target],
                )
            )
            continue
        p = by_prim[target]
        if target == "bit":
            plans.append(
                FieldPlan(
                    fe.attr_name(f.name),
                    f.name,
                    "bit",
                    p.py,
                    "",
                    "",
                    "bool",
                    f.required,
                    i,
                    f.doc,
                    "True",
                )
            )
            continue
        if p.impl == "void":
            raise PlanError(f"{f.span}: field {f.name} is void: a packing flag would say nothing")
        annotation = f"{enum} | int" if enum else p.annotation
        sample = p.sample
        if enum:
            domain = model.domain(enum_domain)
            assert domain is not None
            sample = f"{enum}.{fe.const_name(domain.choices[-1].name)}"
        plans.append(
            FieldPlan(
                fe.attr_name(f.name),
                f.name,
                "prim",
                p.py,
                "",
                enum,
                annotation,
                f.required,
                i,
                f.doc,
                sample,
            )
        )
    names = [f.attr for f in plans]
    if len(set(names)) != len(names):
        raise PlanError(f"{name}: two fields share a Python name")
    return StructPlan(
        name=name,
        cls=fe.class_name(name),
        py=py(name),
        size=0,
        pack=0,
        class_code=None,
        code=None,
        fields=plans,
        doc="",
    )


def emit(spec: SpecVersion, protocol: Protocol, renderer: Renderer) -> dict[str, str]:
    """The protocol package's files, by path inside it: errors and the version package."""
    model = fe.load(spec.document, spec.label or relative(spec.document))
    p = plan(model)
    # these templates are written for trimmed blocks; the shared renderer otherwise
    trimmed = copy.copy(renderer)
    trimmed.env = renderer.env.overlay(trim_blocks=True, lstrip_blocks=True)
    ctx = {"plan": p, "version": spec, "ir": protocol, "model": model}
    files = {
        "__init__.py": f'"""Generated codecs for {spec.title}."""\n',
        "errors.py": trimmed.render("python/errors.py.j2", spec, protocol),
    }
    for name in ("__init__", "codec", "frames", "test_conformance"):
        files[f"{spec.module}/{name}.py"] = trimmed.render(
            f"python/amqp010/{name}.py.j2", spec, protocol, **ctx
        )
    # the classes' dialogue grammars: the shared checker, its steps the model's controls and
    # commands by codec class name ("ConnectionStartOk" -> "connection.start-ok")
    classes = {d.name for d in protocol.dialogues}
    steps = {fe.class_name(m.name): m.name for m in model.methods if m.cls in classes}
    for name, text in dialogue.emit(spec, protocol, renderer, steps).items():
        files[f"{spec.module}/{name}"] = text
    return files
