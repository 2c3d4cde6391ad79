"""What the wire-truth overlay entries do to the generated codec, on the server's own bytes.

The frames below are copied from RabbitMQ 3.10.8's answers (the live suite checks the same
bytes against a running server); here they pin the generated code without a server.
"""

from __future__ import annotations

import pytest

from specgen_codecs.rabbitmq_stream import v4_0 as rs

SASL_OK = bytes.fromhex("0000000a80130001000000030001")
OPEN_REFUSED = bytes.fromhex("0000000a8015000100000004000c")
ROUTE_NO_BIT = bytes.fromhex("0000000e0018000100000005000200000000")
PARTITIONS_NO_BIT = bytes.fromhex("0000000e0019000100000005000200000000")


def test_sasl_authenticate_response_without_data() -> None:
    msg = rs.decode(SASL_OK, sender="server")
    assert msg == rs.SaslAuthenticateResponse(3, rs.ResponseCode.OK, None)
    assert rs.encode(msg) == SASL_OK
    with_data = rs.SaslAuthenticateResponse(3, 0x0A, b"challenge")
    assert rs.decode(rs.encode(with_data)) == with_data


def test_refused_open_has_no_properties() -> None:
    msg = rs.decode(OPEN_REFUSED, sender="server")
    assert isinstance(msg, rs.OpenResponse)
    assert msg.response_code == rs.ResponseCode.VIRTUAL_HOST_ACCESS_FAILURE
    assert msg.connection_properties is None
    assert rs.encode(msg) == OPEN_REFUSED


@pytest.mark.parametrize(
    ("frame", "cls", "query"),
    [
        (ROUTE_NO_BIT, rs.RouteResponse, rs.RouteRequest),
        (PARTITIONS_NO_BIT, rs.PartitionsResponse, rs.PartitionsRequest),
    ],
)
def test_responses_under_the_request_key(frame: bytes, cls: type, query: type) -> None:
    msg = rs.decode(frame, sender="server")
    assert isinstance(msg, cls)
    assert (msg.correlation_id, msg.response_code, msg.stream) == (
        5,
        rs.ResponseCode.STREAM_DOES_NOT_EXIST,
        [],
    )
    # decoded, it remembers the key it came under and gives back its own bytes
    assert msg.key_on_wire == query.KEY
    assert rs.encode(msg) == frame
    # built by a user, it is written under the reference's key, with the response bit
    fresh = cls(msg.correlation_id, msg.response_code, msg.stream)
    assert fresh == msg  # the key it came under is not part of its value
    assert rs.encode(fresh)[4:6] == (query.KEY | 0x8000).to_bytes(2, "big")
    fresh.key_on_wire = 0x1234
    with pytest.raises(rs.EncodeError, match="key_on_wire"):
        rs.encode(fresh)
    # from the client, the same key is the query
    reader = rs.FrameReader(sender="server")
    reader.feed(frame)
    assert [type(m) for m in reader] == [cls]


def test_declare_publisher_reference_is_never_null() -> None:
    frame = rs.encode(rs.DeclarePublisherRequest(7, 1, "", "s"))
    assert frame[4 + 4 + 4 + 1 :][:2] == b"\x00\x00"
    with pytest.raises(rs.EncodeError):
        rs.encode(rs.DeclarePublisherRequest(7, 1, None, "s"))  # type: ignore[arg-type]
    null = frame[:13] + b"\xff\xff" + frame[15:]
    null = (len(null) - 4).to_bytes(4, "big") + null[4:]
    with pytest.raises(rs.DecodeError) as info:
        rs.decode(null)
    assert info.value.field == "DeclarePublisherRequest.publisher_reference"


def test_declare_publisher_reference_length_is_the_servers_rule() -> None:
    """One rule both ways: 'max 256 characters' is documented, never refused by the codec."""
    long = rs.DeclarePublisherRequest(7, 1, "r" * 300, "s")
    frame = rs.encode(long)
    assert rs.decode(frame) == long
    assert rs.encode(rs.decode(frame)) == frame
