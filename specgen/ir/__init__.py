"""The intermediate representation every front-end produces and every emitter reads.

It says what the bytes mean and nothing about how a spec spelled them (Kaitai's idea) and carries
versions as data (Kafka's). Every node is frozen, validates itself on construction, keeps a
`SourceSpan` into the spec it came from, and round-trips through canonical JSON (`dump`/`load`).

Types are an open algebra over a protocol's own primitives, shaped by the four front-ends
(AsciiDoc, AMQP 0-9-1 XML, AMQP 1.0 XML, ABNF):
    Prim        a primitive by name: a built-in integer (`uint16`) or one of `Protocol.types`,
                whose `kind` says what it is (int, float, decimal, timestamp, bool, string,
                bytes, void) and, for strings and binaries, the width of the length prefix
    Ref         a named type of `Protocol.named`, so types are shared and may be recursive
                (a field table holds field tables)
    Array       repeated item; count from a prefix or an earlier field, or items filling a
                byte-size prefix
    Map         key/value pairs filling a byte-size prefix (AMQP field tables)
    Struct      named inline structure (Kafka's inline struct)
    Switch      layout chosen by an earlier field or by the top bits of the next byte
    Choice      encoding chosen by a constructor read from the wire (a field-table value's
                type octet, an AMQP 1.0 format code); decoders remember which one they saw
    Blob        raw bytes whose length an earlier field gives (or the rest of the frame),
                optionally holding `Records`
    Bits        an integer container split into BitFields, most or least significant first
    Presence    flag words saying which of the fields after them are on the wire, continued
                while a continuation bit is set (AMQP content-header property flags)
    Alternatives  what a spec says when it lists layouts without saying how to choose
                  (`uint64 (for offset) | int64 (for timestamp)`); never reaches an emitter

Framing is data too (`FrameLayout`): the preamble each direction starts with, the header
fields, which one is the length and what it counts, a trailer, and which header fields (and
leading body fields) identify a message. A message is identified by a tuple (`Message.ident`),
and lists the messages that may answer it (`Message.replies`).

The package: `nodes` (every node above, each checking itself), `protocol` (a whole version and
its dialogue grammars), `rules` (what the spec says values and senders must be), `canonical`
(the JSON), `findings` (what lint reports), `algorithms`
(shapes and meanings, version merging, number spellings), `errors`; source spans are
`specgen.spans`'. Import from here.
"""

from __future__ import annotations

from specgen.ir.algorithms import meaning as meaning
from specgen.ir.algorithms import merge_versions as merge_versions
from specgen.ir.algorithms import same as same
from specgen.ir.algorithms import settle_alternatives as settle_alternatives
from specgen.ir.algorithms import shape as shape
from specgen.ir.algorithms import spelled_number as spelled_number
from specgen.ir.algorithms import spelled_value as spelled_value
from specgen.ir.canonical import IR_FORMAT as IR_FORMAT
from specgen.ir.canonical import attribute_from_data as attribute_from_data
from specgen.ir.canonical import dump as dump
from specgen.ir.canonical import field_from_data as field_from_data
from specgen.ir.canonical import from_data as from_data
from specgen.ir.canonical import load as load
from specgen.ir.canonical import to_data as to_data
from specgen.ir.canonical import type_from_data as type_from_data
from specgen.ir.errors import IRError as IRError
from specgen.ir.findings import Finding as Finding
from specgen.ir.findings import FindingLog as FindingLog
from specgen.ir.nodes import ALL_VERSIONS as ALL_VERSIONS
from specgen.ir.nodes import BUILTIN as BUILTIN
from specgen.ir.nodes import COMPRESSIONS as COMPRESSIONS
from specgen.ir.nodes import INT_WIDTHS as INT_WIDTHS
from specgen.ir.nodes import Alternatives as Alternatives
from specgen.ir.nodes import Array as Array
from specgen.ir.nodes import BitField as BitField
from specgen.ir.nodes import Bits as Bits
from specgen.ir.nodes import Blob as Blob
from specgen.ir.nodes import BodyKey as BodyKey
from specgen.ir.nodes import Case as Case
from specgen.ir.nodes import Checksum as Checksum
from specgen.ir.nodes import Choice as Choice
from specgen.ir.nodes import Command as Command
from specgen.ir.nodes import CompositeField as CompositeField
from specgen.ir.nodes import Constant as Constant
from specgen.ir.nodes import Descriptor as Descriptor
from specgen.ir.nodes import Direction as Direction
from specgen.ir.nodes import Encoding as Encoding
from specgen.ir.nodes import EncodingCategory as EncodingCategory
from specgen.ir.nodes import Enum as Enum
from specgen.ir.nodes import EnumValue as EnumValue
from specgen.ir.nodes import Field as Field
from specgen.ir.nodes import Follows as Follows
from specgen.ir.nodes import FrameLayout as FrameLayout
from specgen.ir.nodes import IntName as IntName
from specgen.ir.nodes import LengthEscape as LengthEscape
from specgen.ir.nodes import Map as Map
from specgen.ir.nodes import Message as Message
from specgen.ir.nodes import MessageKind as MessageKind
from specgen.ir.nodes import NamedType as NamedType
from specgen.ir.nodes import Preamble as Preamble
from specgen.ir.nodes import Presence as Presence
from specgen.ir.nodes import Prim as Prim
from specgen.ir.nodes import PrimitiveType as PrimitiveType
from specgen.ir.nodes import PrimKind as PrimKind
from specgen.ir.nodes import Records as Records
from specgen.ir.nodes import Ref as Ref
from specgen.ir.nodes import Role as Role
from specgen.ir.nodes import Segments as Segments
from specgen.ir.nodes import Struct as Struct
from specgen.ir.nodes import Switch as Switch
from specgen.ir.nodes import TypeChoice as TypeChoice
from specgen.ir.nodes import TypeClass as TypeClass
from specgen.ir.nodes import Typed as Typed
from specgen.ir.nodes import TypeDef as TypeDef
from specgen.ir.nodes import TypeRef as TypeRef
from specgen.ir.nodes import Versions as Versions
from specgen.ir.nodes import field_name as field_name
from specgen.ir.nodes import primitive_of as primitive_of
from specgen.ir.nodes import walk_fields as walk_fields
from specgen.ir.nodes import walk_type as walk_type
from specgen.ir.protocol import Dialogue as Dialogue
from specgen.ir.protocol import Protocol as Protocol
from specgen.ir.rules import COMPARISONS as COMPARISONS
from specgen.ir.rules import RULE_KINDS as RULE_KINDS
from specgen.ir.rules import RuleKind as RuleKind
from specgen.ir.rules import SpecRule as SpecRule
from specgen.ir.rules import rule_counts as rule_counts
from specgen.spans import SourceSpan as SourceSpan
