"""Record the shipped AMQP 1.0 sample capture: a qpid-proton session with RabbitMQ, through
`specgen capture`.

    .venv/bin/python samples/record_amqp_1_0.py [OUT]     (default samples/amqp-1-0)
    .venv/bin/python samples/record_amqp_1_0.py --check [OUT]

Starts a private RabbitMQ node on loopback (the test suite's, with its rabbitmq_amqp1_0
plugin), runs `specgen capture` in front of its AMQP port, and drives one python-qpid-proton
BlockingConnection through the proxy: SASL PLAIN, a max-frame-size of 16 KiB, a sender link
to `/queue/<name>` (which declares the queue) sending 200 messages with varied properties,
application properties, message annotations and bodies (data, string and map amqp-values, a
few data bodies larger than a frame: several transfer frames), each settled by the server's
accepted disposition; then a receiver link from `/amq/queue/<name>` taking them with credit,
accepting all but one it rejects and one it releases (which comes back and is accepted), then
detach (RabbitMQ's answer does not close the link: see proton_session) and close. Then it
stops the capture with SIGTERM and the node by pid.

Afterwards (and alone with --check) it reads each recorded byte file back with the generated
FrameReader and checks that every frame re-encodes to its exact bytes: the sample must be one
the codec reads losslessly. The tests decode the result without a server.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

from proton import Message, symbol, ubyte, uint, ulong
from proton.utils import BlockingConnection

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from recording import record  # noqa: E402

from specgen_codecs.amqp_1_0.v1_0 import FrameReader  # noqa: E402
from specgen_codecs.amqp_1_0.v1_0.commands import Frame, encode  # noqa: E402

QUEUE = "sample-amqp10-orders"
PUBLISHED = 200
MAX_FRAME_SIZE = 16384
BIG = {23: 40_000, 120: 70_000, 177: 33_000}  # index -> body size over a frame: 3, 5, 3 frames
REJECT, RELEASE = 60, 61  # the receiver's nth delivery (0-based): rejected, released


def _message(i: int, rnd: random.Random) -> Message:
    body: Any
    if i in BIG:
        body = rnd.randbytes(BIG[i])
    elif i % 5 == 1:
        body = f"order {i}: " + "x" * rnd.randrange(0, 200)  # amqp-value, a string
    elif i % 5 == 3:
        body = {"order": i, "lines": [rnd.randrange(100) for _ in range(i % 6)], "ok": True}
    else:
        body = rnd.randbytes(rnd.randrange(0, 600))  # data
    properties: dict[str, Any] = {"seq": i, "tenant": f"t-{i % 7}"}
    if i % 3 == 0:
        properties.update(
            {
                "flag": i % 2 == 0,
                "price": i * 1.25,
                "count": uint(i * 3),
                "small": ubyte(i % 256),
                "big": ulong(2**40 + i),
                "kind": symbol("refund" if i % 2 else "order"),
                "raw": bytes([i % 256, 0, 255]),
            }
        )
    fields: dict[str, Any] = dict(
        body=body,
        id=f"msg-{i:04d}" if i % 4 else ulong(i),
        user_id=b"guest" if i % 10 == 7 else None,
        subject=f"subject {i % 5}" if i % 2 else None,
        reply_to="/queue/replies" if i % 8 == 3 else None,
        correlation_id=f"corr-{i}" if i % 4 == 1 else None,
        content_type="application/octet-stream" if isinstance(body, bytes) else None,
        creation_time=1_700_000_000.0 + i if i % 2 == 0 else None,
        group_id="orders" if i % 6 == 0 else None,
        priority=i % 10 if i % 6 else None,
        ttl=600.0 if i % 9 == 0 else None,
        durable=i % 4 != 0,
        properties=properties,
        annotations={symbol("x-opt-sample"): i} if i % 7 == 0 else None,
    )
    # proton takes no None for an absent property: leave those out
    return Message(**{k: v for k, v in fields.items() if v is not None})


def proton_session(port: int) -> None:
    conn = BlockingConnection(
        f"amqp://guest:guest@127.0.0.1:{port}",
        timeout=30,
        allowed_mechs="PLAIN",
        max_frame_size=MAX_FRAME_SIZE,
        container_id="specgen-sample",
    )
    sender = conn.create_sender(f"/queue/{QUEUE}", name="sample-sender")
    rnd = random.Random(17)
    for i in range(PUBLISHED):
        sender.send(_message(i, rnd))  # waits for the server's disposition (accepted)
    # RabbitMQ 3.10 answers a closing detach with a detach that does not close (closed
    # absent), so proton's BlockingSender.close would wait for ever: close the link and go on
    sender.link.close()

    receiver = conn.create_receiver(f"/amq/queue/{QUEUE}", credit=50, name="sample-receiver")
    seen: set[object] = set()
    accepted = rejected = released = 0
    n = 0
    while accepted + rejected < PUBLISHED:
        msg = receiver.receive(timeout=30)
        if n == REJECT:
            receiver.reject()
            rejected += 1
        elif n == RELEASE:
            receiver.release(delivered=False)  # back to the queue, delivered again
            released += 1
        else:
            assert msg.id not in seen, f"{msg.id} twice"
            seen.add(msg.id)
            receiver.accept()
            accepted += 1
        n += 1
    assert (accepted, rejected, released) == (PUBLISHED - 1, 1, 1), (accepted, rejected)
    receiver.link.close()
    conn.close()


def check(folder: Path) -> int:
    """Every recorded byte file read back frame by frame, each frame re-encoded to its very
    bytes; the number of frames (and protocol headers)."""
    total = 0
    for path in sorted(folder.glob("*.bin")):
        data = path.read_bytes()
        reader = FrameReader()
        reader.feed(data)
        frames = list(reader)
        reader.finish()
        at = 0
        for frame in frames:
            again = encode(frame)
            assert data[at : at + len(again)] == again, f"{path.name} at {at}: {frame!r}"
            at += len(again)
        assert at == len(data), f"{path.name}: {len(data) - at} bytes left over"
        kinds: dict[str, int] = {}
        for frame in frames:
            name = frame.COMMAND if isinstance(frame, Frame) else "protocol-header"
            kinds[name] = kinds.get(name, 0) + 1
        print(f"{path.name}: {len(data)} bytes, {len(frames)} frames re-encode exactly: {kinds}")
        total += len(frames)
    return total


def main() -> int:
    args = sys.argv[1:]
    only_check = "--check" in args
    args = [a for a in args if a != "--check"]
    out = Path(args[0]) if args else ROOT / "samples" / "amqp-1-0"
    code = 0 if only_check else record(out, lambda node: node.amqp_port, proton_session)
    print(f"{check(out / 'session-1')} frames in all")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
