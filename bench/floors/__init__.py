"""The benchmarks' floors: hand-written codecs of exactly the frames each benchmark times.

A floor is what a careful programmer would write for those frames with precompiled
`struct.Struct`s and nothing else: its own `__slots__` classes (one per message or structure
the benchmark measures, the generated class's name and fields, a plain `__init__`), its own
value types where the protocol needs them (AMQP 1.0's `UInt` and `Symbol`, 0-9-1's `Table`,
0-10's `Typed` and enums), its own errors, and the checks the generated decoder makes (sizes,
every length and count against the bytes before slicing, reserved bits, trailing bytes, the
CRC, utf-8 where text is decoded, each AMQP 1.0 field's constructor). Its encoder writes the
same bytes from its own objects.

No module here imports specgen or specgen_codecs, or a bench script that does
(tests/test_bench_floors.py reads their imports), so a cost in the generated classes or helpers
is never in the floor that measures them. The benchmarks and that test check each floor against
the generated codec field by field (`compare.differences`) and byte for byte before anything
is timed.

  * streams.py  RabbitMQ Streams 4.0 (bench/codec.py)
  * amqp091.py  AMQP 0-9-1 (bench/amqp091.py)
  * amqp10.py   AMQP 1.0 (bench/amqp10.py)
  * amqp010.py  AMQP 0-10 (bench/amqp010.py)
"""
