"""0-9-1's content body frames its one field as it is (`_frame_content_body`, one join): the bytes
must be the spec's frame (type 3, channel, size, the payload, frame-end 0xCE) for any payload, and a
payload that is no bytes must still be refused with EncodeError naming the class."""

from __future__ import annotations

import pytest

from specgen_codecs.amqp_0_9_1 import rabbitmq, v0_9_1
from specgen_codecs.amqp_0_9_1.errors import EncodeError

PAYLOADS = [b"", b"x", bytes(range(256)) * 5, bytearray(b"abc"), memoryview(b"view")]


@pytest.mark.parametrize("version", [v0_9_1, rabbitmq])
@pytest.mark.parametrize("payload", PAYLOADS, ids=lambda p: f"{type(p).__name__}-{len(p)}")
@pytest.mark.parametrize("channel", [0, 1, 65535])
def test_a_content_body_is_the_specs_frame(version: object, payload: bytes, channel: int) -> None:
    msg = version.ContentBody(payload, channel)  # type: ignore[attr-defined]
    frame = version.encode(msg)  # type: ignore[attr-defined]
    body = bytes(payload)
    # amqp0-9-1.xml's frame: octet type, short channel, long size, the payload, octet frame-end
    assert (
        frame
        == b"\x03" + channel.to_bytes(2, "big") + len(body).to_bytes(4, "big") + body + b"\xce"
    )
    assert msg.encode() == frame
    again = version.decode(frame)  # type: ignore[attr-defined]
    assert again == version.ContentBody(body, channel)  # type: ignore[attr-defined]


@pytest.mark.parametrize("bad", [("text", 1), (None, 1), (b"x", -1), (b"x", 65536)])
def test_a_content_body_that_does_not_fit_is_refused(bad: tuple[object, int]) -> None:
    with pytest.raises(EncodeError, match="ContentBody"):
        v0_9_1.encode(v0_9_1.ContentBody(*bad))  # type: ignore[arg-type]
