"""AMQP's bit packing, shared by the front-ends of the protocols that use it (AMQP/Fast 0.8,
AMQP 0-9-1): consecutive bit fields share octets, least significant bit first, and any other
field ends the run."""

from __future__ import annotations

from collections.abc import Iterable

from specgen.ir import BitField, Bits, Field


def pack_bits(fields: Iterable[tuple[Field, bool]]) -> tuple[Field, ...]:
    """`(field, is_bit)` in wire order -> the fields, each run of bits packed into `Bits` octets
    (`Bits1`, `Bits2`, ... across the whole list; unused high bits are zero)."""
    out: list[Field] = []
    bits: list[Field] = []
    containers = 0

    def flush() -> None:
        nonlocal containers
        while bits:
            chunk, bits[:] = bits[:8], bits[8:]
            containers += 1
            members = list(chunk)
            if len(chunk) < 8:
                members.append(
                    Field(
                        f"Unused{containers}",
                        BitField(8 - len(chunk), value=0),
                        doc="Unused bits, zero.",
                        span=chunk[-1].span,
                    )
                )
            out.append(
                Field(
                    f"Bits{containers}",
                    Bits(width=1, members=tuple(members), order="lsb"),
                    doc=f"{', '.join(f.name for f in chunk)}: consecutive bits packed into "
                    "one octet, least significant bit first.",
                    span=chunk[0].span,
                )
            )

    for field, is_bit in fields:
        if is_bit:
            bits.append(field)
        else:
            flush()
            out.append(field)
    flush()
    return tuple(out)
