"""`_wire`: fields read from a message's bytes as protobuf reads them, also
past fields the schema does not have (a group included: a decoder keeps
one as an unknown field, so a request that decoded may hold one)."""

from __future__ import annotations

from agentscope_proto._generated.agentscope.agent.v1 import hub_service_pb2 as hub_pb
from agentscope_proto._generated.agentscope.message.v1.message_pb2 import Msg
from agentscope_proto._wire import WireMessages, field_bytes, varint_bytes

# Unknown fields of each wire type: 20 varint, 21 fixed64, 22 bytes, 23 fixed32,
# and 24 a group holding a varint and a nested group.
_UNKNOWN = (
    varint_bytes(20 << 3) + varint_bytes(300)
    + varint_bytes(21 << 3 | 1) + bytes(8)
    + varint_bytes(22 << 3 | 2) + b"\x02ab"
    + varint_bytes(23 << 3 | 5) + bytes(4)
    + varint_bytes(24 << 3 | 3)
    + varint_bytes(1 << 3) + b"\x01"
    + varint_bytes(2 << 3 | 3) + varint_bytes(2 << 3 | 4)
    + varint_bytes(24 << 3 | 4)
)  # fmt: skip


def test_a_field_is_found_past_unknown_fields_and_groups() -> None:
    msg = Msg(name="bob", text="hi")
    request = hub_pb.PublishRequest(topic="room", msg=msg)
    data = _UNKNOWN + request.SerializeToString() + _UNKNOWN
    decoded = hub_pb.PublishRequest.FromString(data)  # the decoder takes it
    number = hub_pb.PublishRequest.DESCRIPTOR.fields_by_name["msg"].number
    assert Msg.FromString(field_bytes(data, number)) == decoded.msg == msg


def test_repeated_entries_are_walked_past_groups() -> None:
    entries = [Msg(name=f"m{i}", text="x") for i in range(3)]
    data = b"".join(
        varint_bytes(1 << 3 | 2) + varint_bytes(len(e.SerializeToString())) + e.SerializeToString()
        for e in entries
    )
    wire = WireMessages.of(_UNKNOWN + data + _UNKNOWN, 1)
    assert wire is not None
    assert wire.walk()
    assert wire.first == entries[0].SerializeToString()
    assert wire.messages == [e.SerializeToString() for e in entries]
