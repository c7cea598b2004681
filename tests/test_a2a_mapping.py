"""The A2A 1.0 mapping (`agentscope_proto.a2a`, docs/a2a.md), on a2a-sdk's own types.

- Msg -> A2A -> Msg is exact (`==` on the protos) for every golden message (the
  AgentScope 1.x ones and the 2.x dumps), a whole history in one message, and
  random Msgs drawn from the schema itself (every field, every block kind),
  also through the wire: the gRPC bytes and the JSON-RPC ProtoJSON.
- A2A -> Msg -> A2A keeps every field A2A defines, for random peer messages
  and for our own messages whose envelope changed in transit.
- A peer without the extension is read sensibly; agentscope-java's bridge is
  read as it writes, and its keys are written as it reads them.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from a2a.types import Artifact, Message, Part, Role
from google.protobuf import json_format, message_factory, struct_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from hypothesis import given, settings
from hypothesis import strategies as st

from agentscope_proto import (
    MessageFormatError,
    Msg,
    from_dict,
    new_data_block,
    new_image_block,
    new_msg,
    new_text_block,
    new_thinking_block,
    new_tool_result_block,
    new_tool_use_block,
    to_dict,
)
from agentscope_proto._json import dumps
from agentscope_proto.a2a import (
    BLOCK_KEY,
    EXTENSION_URI,
    MSG_KEY,
    MSGS_KEY,
    a2a_to_msg,
    a2a_to_msgs,
    agent_extension,
    artifact_to_msg,
    msg_to_a2a,
    msg_to_artifact,
    msgs_to_a2a,
    prefix_speaker_names,
)

from conftest import load_golden
from strict import assert_same

SETTINGS = settings(max_examples=200, deadline=None, derandomize=True, database=None)
GOLDEN_1X = [from_dict(c["input"]) for c in load_golden("messages.json")["cases"]]
GOLDEN_2X = [
    from_dict(c["dump"], dialect="agentscope2")
    for c in load_golden("agentscope2/messages.json")["cases"]
]
PNG = b"\x89PNG\r\n\x1a\n" + bytes(16)


def wire(target: Any) -> Any:
    """`target` after the gRPC binding (bytes) and the JSON-RPC one (ProtoJSON)."""
    cls = type(target)
    return json_format.Parse(
        json_format.MessageToJson(cls.FromString(target.SerializeToString())), cls()
    )


# --- Random Msgs, drawn from the schema ----------------------------------------

texts = st.text(max_size=6)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**64), 2**64)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
# Without an "a2a" key: where a Msg or block has one it is the A2A envelope,
# whose own tests are below (a malformed one is a MessageFormatError).
json_objects = st.dictionaries(texts.filter(lambda key: key != "a2a"), json_values, max_size=3)
# The `*_json` fields the schema documents as a JSON object; the rest hold any JSON.
OBJECT_JSON = {"extra_json", "metadata_json", "structured_output_json", "raw_json", "block_json"}
F = FieldDescriptor


def _repeated(field: FieldDescriptor) -> bool:
    # `label` is gone in protobuf 7; `is_repeated` is not in 5.29.
    if hasattr(field, "is_repeated"):
        return bool(field.is_repeated)
    return bool(field.label == F.LABEL_REPEATED)


def _scalars(field: FieldDescriptor) -> st.SearchStrategy[Any]:
    if field.name.endswith("_json"):
        return (json_objects if field.name in OBJECT_JSON else json_values).map(dumps)
    if field.type == F.TYPE_ENUM:
        return st.sampled_from([value.number for value in field.enum_type.values])
    by_type: dict[int, st.SearchStrategy[Any]] = {
        F.TYPE_STRING: texts,
        F.TYPE_BYTES: st.binary(max_size=8),
        F.TYPE_BOOL: st.booleans(),
        F.TYPE_DOUBLE: st.floats(allow_nan=False),
        F.TYPE_INT64: st.integers(-(2**63), 2**63 - 1),
    }
    return by_type[field.type]


@st.composite
def protos(draw: st.DrawFn, descriptor: Descriptor = Msg.DESCRIPTOR, depth: int = 0) -> Any:
    """Any message of the schema: each oneof one member or none, each other
    field set or not, nested blocks three levels deep."""
    message = message_factory.GetMessageClass(descriptor)()
    fields = []
    for oneof in descriptor.oneofs:
        if oneof.name.startswith("_"):
            continue  # a proto3 optional's own oneof
        choices = [f for f in oneof.fields if f.message_type is None or depth < 3]
        fields.append(draw(st.none() | st.sampled_from(choices)))
    for field in descriptor.fields:
        oneof = field.containing_oneof
        if (oneof is None or oneof.name.startswith("_")) and draw(st.booleans()):
            fields.append(field)
    for field in fields:
        if field is None or (field.message_type is not None and depth >= 3):
            continue
        if field.message_type is not None:
            values = protos(field.message_type, depth + 1)
        else:
            values = _scalars(field)
        if _repeated(field):
            getattr(message, field.name).extend(draw(st.lists(values, max_size=2)))
        elif field.message_type is not None:
            getattr(message, field.name).CopyFrom(draw(values))
        else:
            setattr(message, field.name, draw(values))
    return message


# --- Msg -> A2A -> Msg ----------------------------------------------------------


def assert_round_trips(msg: Msg) -> None:
    assert a2a_to_msg(wire(msg_to_a2a(msg))) == msg
    assert artifact_to_msg(wire(msg_to_artifact(msg))) == msg


def test_every_golden_message_round_trips_exactly() -> None:
    for msg in [*GOLDEN_1X, *GOLDEN_2X]:
        assert_round_trips(msg)


def test_a_history_round_trips_as_one_message() -> None:
    for history in (GOLDEN_1X, GOLDEN_2X):
        message = wire(msgs_to_a2a(history))
        assert a2a_to_msgs(message) == history
        assert len(message.metadata[MSGS_KEY]) == len(history)


@SETTINGS
@given(protos())
def test_any_msg_round_trips_exactly(msg: Msg) -> None:
    assert_round_trips(msg)


@settings(SETTINGS, max_examples=50)
@given(st.lists(protos(), min_size=1, max_size=3))
def test_any_history_round_trips_exactly(msgs: list[Msg]) -> None:
    assert a2a_to_msgs(wire(msgs_to_a2a(msgs))) == msgs


def test_exact_numbers_ride_the_extension_as_json_text() -> None:
    exact = {"n": 42, "big": 2**63 - 1, "zero": -0.0}
    msg = new_msg(
        "Friday",
        [new_tool_use_block("call_1", "f", exact)],
        "assistant",
        metadata=exact,
    )
    message = wire(msg_to_a2a(msg))
    # What A2A's Struct makes of them, in the copies plain peers read:
    struct = json_format.MessageToDict(message.metadata)[msg.id]
    assert struct["n"] == 42.0
    assert struct["big"] == 9.223372036854776e18
    back = a2a_to_msg(message)
    assert_same(json.loads(back.metadata_json), exact)
    assert_same(json.loads(back.blocks.items[0].tool_use.input_json), exact)


# --- The A2A envelope ------------------------------------------------------------


def test_the_envelope_is_kept_on_the_msg_and_written_back() -> None:
    msg = new_msg("Friday", "Sunny.", "assistant", id="m1")
    message = msg_to_a2a(
        msg, role=Role.ROLE_USER, context_id="ctx", task_id="t1", reference_task_ids=["t0"]
    )
    assert (message.message_id, message.role, message.context_id) == ("m1", Role.ROLE_USER, "ctx")
    back = a2a_to_msg(wire(message))
    assert json.loads(back.metadata_json) == {
        "a2a": {
            "role": "ROLE_USER",
            "context_id": "ctx",
            "task_id": "t1",
            "reference_task_ids": ["t0"],
        }
    }
    again = msg_to_a2a(back)
    assert (again.role, again.context_id, again.task_id) == (Role.ROLE_USER, "ctx", "t1")
    assert list(again.reference_task_ids) == ["t0"]
    # Arguments win over what the Msg says; the Msg says it again once read.
    assert msg_to_a2a(back, context_id="ctx2").context_id == "ctx2"


def test_agentscope_2_a2a_metadata_continues_its_context() -> None:
    # AgentScope 2.x's A2AAgent leaves {"a2a": {"context_id": ...}} on its replies.
    reply = new_msg("remote", "Hi", "assistant", metadata={"a2a": {"context_id": "c9"}})
    assert msg_to_a2a(reply).context_id == "c9"
    with pytest.raises(MessageFormatError, match=r"metadata\.a2a\.context_id"):
        msg_to_a2a(new_msg("x", "y", "user", metadata={"a2a": {"context_id": 5}}))
    with pytest.raises(MessageFormatError, match=r"metadata\.a2a: expected an object"):
        msg_to_a2a(new_msg("x", "y", "user", metadata={"a2a": []}))


def test_message_ids() -> None:
    msg = new_msg("a", "hi", "user", id="m1")
    assert msg_to_a2a(msg).message_id == "m1"
    nameless = Msg(text="hi")
    derived = msg_to_a2a(nameless).message_id
    assert len(derived) == 32
    assert msg_to_a2a(nameless).message_id == derived  # the same on every conversion
    assert a2a_to_msg(msg_to_a2a(nameless)) == nameless  # still without an id
    history = msgs_to_a2a([msg, msg])
    assert history.message_id not in ("", "m1")
    # An id given in transit is kept, on the last Msg.
    message = msg_to_a2a(msg, message_id="given")
    back = a2a_to_msgs(message)
    assert back[0].id == "m1"
    assert msg_to_a2a(back[0]).message_id == "given"


# JSON objects as a Struct holds them (no integers beyond 2^53), keyed apart
# from what our writer adds.
struct_objects = st.dictionaries(
    texts.filter(lambda k: not k.startswith(("_agentscope_", EXTENSION_URI))),
    st.recursive(
        st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False) | texts,
        lambda inner: st.lists(inner, max_size=2) | st.dictionaries(texts, inner, max_size=2),
        max_leaves=4,
    ),
    max_size=3,
)


@st.composite
def parts(draw: st.DrawFn) -> Part:
    kind = draw(st.sampled_from(["text", "raw", "url", "data"]))
    part = Part(media_type=draw(st.sampled_from(["", "image/png", "application/pdf", "text/x"])))
    if kind == "text":
        part.text = draw(texts)
    elif kind == "raw":
        part.raw = draw(st.binary(max_size=8))
    elif kind == "url":
        part.url = draw(texts)
    else:
        part.data.CopyFrom(json_format.ParseDict(draw(struct_objects), struct_pb2.Value()))
    part.filename = draw(st.sampled_from(["", "a.bin"]))
    part.metadata.update(draw(struct_objects))
    return part


@st.composite
def peer_messages(draw: st.DrawFn) -> Message:
    """Messages from a peer that knows nothing of AgentScope."""
    message = Message(
        message_id=draw(texts),
        context_id=draw(texts),
        task_id=draw(texts),
        role=draw(st.sampled_from([Role.ROLE_USER, Role.ROLE_AGENT, Role.ROLE_UNSPECIFIED])),
        parts=draw(st.lists(parts(), max_size=4)),
        extensions=draw(st.lists(texts.filter(lambda e: e != EXTENSION_URI), max_size=2)),
        reference_task_ids=draw(st.lists(texts, max_size=2)),
    )
    message.metadata.update(draw(struct_objects))
    return message


def ours_removed(message: Message, java: bool = True) -> Message:
    """`message` without what our writer adds: the extension's URI and keys,
    and (`java`) agentscope-java's keys."""
    out = Message()
    out.CopyFrom(message)
    kept = [e for e in out.extensions if e != EXTENSION_URI]
    del out.extensions[:]
    out.extensions.extend(kept)
    for owner in [out, *out.parts]:
        for key in list(owner.metadata.fields):
            if key.startswith((EXTENSION_URI, "_agentscope_") if java else EXTENSION_URI):
                del owner.metadata.fields[key]
        if not owner.metadata.fields:
            owner.ClearField("metadata")  # an empty Struct is no metadata
    return out


@SETTINGS
@given(peer_messages())
def test_a_peers_message_keeps_every_a2a_field(message: Message) -> None:
    assert ours_removed(msg_to_a2a(a2a_to_msg(wire(message)))) == ours_removed(message)


@SETTINGS
@given(protos(), peer_messages())
def test_an_envelope_changed_in_transit_is_kept(msg: Msg, peer: Message) -> None:
    message = msg_to_a2a(msg)
    message.message_id, message.context_id = peer.message_id, peer.context_id
    message.task_id, message.role = peer.task_id, peer.role
    message.reference_task_ids.extend(peer.reference_task_ids)
    message.extensions.extend(peer.extensions)
    for key, value in peer.metadata.fields.items():
        message.metadata.fields[key].CopyFrom(value)
    back = msg_to_a2a(a2a_to_msg(wire(message)))
    assert ours_removed(back) == ours_removed(message)


# --- Peers without the extension ----------------------------------------------------


def test_a_peers_message_reads_as_text_and_media() -> None:
    message = Message(message_id="m1", context_id="c1", role=Role.ROLE_USER)
    message.parts.add(text="Look:").metadata.update({"lang": "en"})
    message.parts.add(raw=PNG, media_type="image/png", filename="cat.png")
    message.parts.add(url="https://example.com/a.mp3", media_type="audio/mpeg")
    message.parts.add(raw=b"%PDF-", media_type="application/pdf", filename="doc.pdf")
    message.parts.add(data=json_format.ParseDict({"k": 1}, struct_pb2.Value()))
    message.metadata.update({"userId": "u1"})
    msg = a2a_to_msg(message, name="Alice")
    assert (msg.id, msg.name, msg.role, msg.timestamp) == ("m1", "Alice", 1, "")
    assert_same(
        json.loads(msg.metadata_json),
        {"a2a": {"context_id": "c1", "metadata": {"userId": "u1"}}},
    )
    assert_same(
        to_dict(msg)["content"],
        [
            {"type": "text", "text": "Look:", "a2a": {"metadata": {"lang": "en"}}},
            {
                "type": "image",
                "source": {
                    "type": "base64",
                    "media_type": "image/png",
                    "data": base64.b64encode(PNG).decode(),
                },
                "name": "cat.png",
            },
            {
                "type": "audio",
                "source": {
                    "type": "url",
                    "url": "https://example.com/a.mp3",
                    "media_type": "audio/mpeg",
                },
            },
            {
                "type": "data",
                "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="},
                "name": "doc.pdf",
            },
            {"type": "text", "text": '{"k":1}', "a2a": {"data": True}},
        ],
    )


def test_speaker_names_for_peers_without_the_extension() -> None:
    history = [
        new_msg("Alice", "Rain tomorrow?", "user"),
        new_msg("Bob", [new_thinking_block("hmm"), new_text_block("Likely.")], "assistant"),
        new_msg("Carol", [new_image_block(data=PNG, media_type="image/png")], "assistant"),
        Msg(text="anonymous"),
    ]
    named = prefix_speaker_names(history)
    message = msgs_to_a2a(named)
    assert [p.text for p in message.parts if p.WhichOneof("content") == "text"] == [
        "[Alice]: Rain tomorrow?",
        "hmm",
        "[Bob]: Likely.",
        "[Carol]:",
        "anonymous",
    ]
    assert [p.WhichOneof("content") for p in message.parts] == [
        "text",
        "text",
        "text",
        "text",
        "raw",
        "text",
    ]
    assert message.parts[4].raw == PNG
    assert history[0].text == "Rain tomorrow?"  # copies: the history is unchanged


# --- agentscope-java's bridge ---------------------------------------------------------
# agentscope-java (agentscope-extensions-a2a-client, MessageConvertUtil and the
# block parsers) sends a list of Msgs as one message: each block one part whose
# metadata says the block type, the Msg's id, name (`_agentscope_msg_source`)
# and role; text and thinking are text parts, a tool call a data part of its
# input with the call id and tool name (and the call's own metadata) as keys, a
# tool result a data part {"_agentscope_tool_output": <output blocks>}, media a
# file part with a random file name; each Msg's metadata under its id in the
# message's metadata; the role AGENT when every Msg is ASSISTANT or TOOL, else
# USER. Its server streams a reply as artifact parts marked
# `_agentscope_stream_chunk`, to be merged per Msg.


def java_part(part: Part, msg_id: str, name: str, role: str | None, **keys: Any) -> Part:
    part.metadata.update({"_agentscope_msg_id": msg_id, "_agentscope_msg_source": name, **keys})
    if role is not None:
        part.metadata.update({"_agentscope_msg_role": role})
    return part


def java_message() -> Message:
    message = Message(message_id="5f0c...", role=Role.ROLE_USER)
    message.parts.extend(
        [
            java_part(Part(text="Weather?"), "u1", "user", "USER", _agentscope_block_type="text"),
            java_part(
                Part(raw=PNG, media_type="image/png", filename="3b1f-uuid"), "u1", "user", "USER"
            ),
            java_part(
                Part(text="Checking."),
                "a1",
                "Friday",
                "ASSISTANT",
                _agentscope_block_type="thinking",
            ),
            java_part(
                Part(data=json_format.ParseDict({"city": "Paris", "days": 3}, struct_pb2.Value())),
                "a1",
                "Friday",
                "ASSISTANT",
                _agentscope_block_type="tool_use",
                _agentscope_tool_call_id="call_1",
                _agentscope_tool_name="get_weather",
                thoughtSignature="c2ln",
            ),
            java_part(
                Part(
                    data=json_format.ParseDict(
                        {"_agentscope_tool_output": [{"type": "text", "text": "Sunny"}]},
                        struct_pb2.Value(),
                    )
                ),
                "t1",
                "Friday",
                "TOOL",
                _agentscope_block_type="tool_result",
                _agentscope_tool_call_id="call_1",
                _agentscope_tool_name="get_weather",
                elapsed=0.5,
            ),
        ]
    )
    message.metadata.update({"u1": {"channel": "web", "count": 2}})
    return message


def test_reads_what_agentscope_java_writes() -> None:
    msgs = a2a_to_msgs(wire(java_message()))
    assert [to_dict(m, dialect="java") for m in msgs] == [
        {
            "id": "u1",
            "name": "user",
            "role": "USER",
            "content": [
                {"type": "text", "text": "Weather?"},
                {
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": "image/png",
                        "data": base64.b64encode(PNG).decode(),
                    },
                },
            ],
            "metadata": {"channel": "web", "count": 2},
            "timestamp": None,
            "usage": None,
        },
        {
            "id": "a1",
            "name": "Friday",
            "role": "ASSISTANT",
            "content": [
                {"type": "thinking", "thinking": "Checking.", "metadata": None},
                {
                    "type": "tool_use",
                    "id": "call_1",
                    "name": "get_weather",
                    "input": {"city": "Paris", "days": 3},
                    "content": None,
                    "metadata": {"thoughtSignature": "c2ln"},
                    "state": "pending",
                },
            ],
            "metadata": {},
            "timestamp": None,
            "usage": None,
        },
        {
            "id": "t1",
            "name": "Friday",
            "role": "TOOL",
            "content": [
                {
                    "type": "tool_result",
                    "id": "call_1",
                    "name": "get_weather",
                    "output": [{"type": "text", "text": "Sunny"}],
                    "metadata": {"elapsed": 0.5},
                    "state": "running",
                }
            ],
            # The message's id is no Msg's: kept on the last one.
            "metadata": {"a2a": {"message_id": "5f0c..."}},
            "timestamp": None,
            "usage": None,
        },
    ]
    # The image's random file name is its name; Java's keys are not metadata.
    assert msgs[0].blocks.items[1].image.name == "3b1f-uuid"


def test_agentscope_java_over_a2a_0_3() -> None:
    """agentscope-java's bridge is on a2a-java 0.3.3: its JSON (`kind`ed parts, file
    parts with base64 bytes) reaches these 1.0 types through a2a-sdk's 0.3 layer,
    metadata and all; what we write goes back to 0.3 in the shapes its parsers take."""
    from a2a.compat.v0_3 import conversions
    from a2a.compat.v0_3 import types as v03

    def meta(msg_id: str, name: str, role: str, **keys: Any) -> dict[str, Any]:
        return {
            "_agentscope_msg_id": msg_id,
            "_agentscope_msg_source": name,
            "_agentscope_msg_role": role,
            **keys,
        }

    tool = {"_agentscope_tool_call_id": "call_1", "_agentscope_tool_name": "get_weather"}
    java_json = {
        "kind": "message",
        "messageId": "5f0c...",
        "role": "user",
        "metadata": {"u1": {"channel": "web", "count": 2}},
        "parts": [
            {
                "kind": "text",
                "text": "Weather?",
                "metadata": meta("u1", "user", "USER", _agentscope_block_type="text"),
            },
            {
                "kind": "file",
                "file": {
                    "bytes": base64.b64encode(PNG).decode(),
                    "mimeType": "image/png",
                    "name": "3b1f-uuid",
                },
                "metadata": meta("u1", "user", "USER"),
            },
            {
                "kind": "text",
                "text": "Checking.",
                "metadata": meta("a1", "Friday", "ASSISTANT", _agentscope_block_type="thinking"),
            },
            {
                "kind": "data",
                "data": {"city": "Paris", "days": 3},
                "metadata": meta(
                    "a1",
                    "Friday",
                    "ASSISTANT",
                    _agentscope_block_type="tool_use",
                    thoughtSignature="c2ln",
                    **tool,
                ),
            },
            {
                "kind": "data",
                "data": {"_agentscope_tool_output": [{"type": "text", "text": "Sunny"}]},
                "metadata": meta(
                    "t1",
                    "Friday",
                    "TOOL",
                    _agentscope_block_type="tool_result",
                    elapsed=0.5,
                    **tool,
                ),
            },
        ],
    }
    core = conversions.to_core_message(v03.Message.model_validate(java_json))
    msgs = a2a_to_msgs(core)
    assert msgs == a2a_to_msgs(java_message())
    back = conversions.to_compat_message(msgs_to_a2a(msgs)).model_dump(
        mode="json", by_alias=True, exclude_none=True
    )
    kinds = [(p["kind"], p["metadata"].get("_agentscope_block_type")) for p in back["parts"]]
    assert kinds == [
        ("text", "text"),
        ("file", "image"),
        ("text", "thinking"),
        ("data", "tool_use"),
        ("data", "tool_result"),
    ]
    assert back["parts"][1]["file"]["mimeType"] == "image/png"
    assert back["parts"][3]["data"] == {"city": "Paris", "days": 3.0}
    assert back["parts"][4]["data"] == {"_agentscope_tool_output": "Sunny"}
    assert back["metadata"]["u1"] == {"channel": "web", "count": 2.0}


def test_reads_agentscope_javas_streamed_reply() -> None:
    artifact = Artifact(artifact_id="art-1", name="agent-response")
    for text, kind in [("Thin", "thinking"), ("king", "thinking"), ("Hel", "text"), ("lo", "text")]:
        part = java_part(Part(text=text), "r1", "Friday", None, _agentscope_block_type=kind)
        part.metadata.update({"_agentscope_stream_chunk": True})
        artifact.parts.append(part)
    artifact.metadata.update({"source": "stream"})
    msg = artifact_to_msg(wire(artifact))
    assert to_dict(msg, dialect="java")["content"] == [
        {"type": "thinking", "thinking": "Thinking", "metadata": None},
        {"type": "text", "text": "Hello"},
    ]
    assert (msg.id, msg.name, msg.role) == ("r1", "Friday", 2)
    assert json.loads(msg.metadata_json) == {
        "source": "stream",
        "a2a": {"artifact_id": "art-1", "name": "agent-response"},
    }


def test_writes_agentscope_javas_keys() -> None:
    history = [
        new_msg("user", [new_text_block("Weather?")], "user", id="u1", metadata={"channel": "web"}),
        new_msg(
            "Friday",
            [
                new_thinking_block("Checking."),
                new_tool_use_block("call_1", "get_weather", {"city": "Paris"}),
            ],
            "assistant",
            id="a1",
        ),
        new_msg(
            "Friday",
            [new_tool_result_block("call_1", "get_weather", "Sunny")],
            "tool",
            id="t1",
        ),
    ]
    message = json_format.MessageToDict(ours_removed(msgs_to_a2a(history), java=False))
    assert message["role"] == "ROLE_USER"
    assert message["metadata"] == {"u1": {"channel": "web"}}
    assert [(p.get("text"), p.get("data"), p["metadata"]) for p in message["parts"]] == [
        (
            "Weather?",
            None,
            {
                "_agentscope_block_type": "text",
                "_agentscope_msg_id": "u1",
                "_agentscope_msg_source": "user",
                "_agentscope_msg_role": "USER",
            },
        ),
        (
            "Checking.",
            None,
            {
                "_agentscope_block_type": "thinking",
                "_agentscope_msg_id": "a1",
                "_agentscope_msg_source": "Friday",
                "_agentscope_msg_role": "ASSISTANT",
            },
        ),
        (
            None,
            {"city": "Paris"},
            {
                "_agentscope_block_type": "tool_use",
                "_agentscope_tool_call_id": "call_1",
                "_agentscope_tool_name": "get_weather",
                "_agentscope_msg_id": "a1",
                "_agentscope_msg_source": "Friday",
                "_agentscope_msg_role": "ASSISTANT",
            },
        ),
        (
            None,
            {"_agentscope_tool_output": "Sunny"},
            {
                "_agentscope_block_type": "tool_result",
                "_agentscope_tool_call_id": "call_1",
                "_agentscope_tool_name": "get_weather",
                "_agentscope_msg_id": "t1",
                "_agentscope_msg_source": "Friday",
                "_agentscope_msg_role": "TOOL",
            },
        ),
    ]
    assert msgs_to_a2a(history[1:]).role == Role.ROLE_AGENT


def test_what_java_reads_of_ours_is_what_it_would_have_sent() -> None:
    """Our message, its extension removed, reads (as Java reads it) into the
    Msgs Java would have sent for the same blocks."""
    history = a2a_to_msgs(java_message())
    plain = ours_removed(msgs_to_a2a(history), java=False)
    again = a2a_to_msgs(plain)
    assert [to_dict(m, dialect="java") for m in again] == [
        to_dict(m, dialect="java") for m in history
    ]


# --- Artifacts, errors, packaging ------------------------------------------------------


def test_artifacts() -> None:
    reply = new_msg(
        "Friday",
        [new_data_block(data=b"%PDF-", media_type="application/pdf", name="r.pdf")],
        "assistant",
        id="m7",
    )
    artifact = msg_to_artifact(reply, description="the report")
    assert (artifact.artifact_id, artifact.name, artifact.description) == (
        "m7",
        "Friday",
        "the report",
    )
    assert (artifact.parts[0].raw, artifact.parts[0].media_type, artifact.parts[0].filename) == (
        b"%PDF-",
        "application/pdf",
        "r.pdf",
    )
    back = artifact_to_msg(artifact)
    assert json.loads(back.metadata_json) == {"a2a": {"description": "the report"}}
    again = msg_to_artifact(back)
    assert (again.artifact_id, again.name, again.description) == ("m7", "Friday", "the report")
    peer = Artifact(artifact_id="x", name="summary", parts=[Part(text="All good.")])
    msg = artifact_to_msg(peer)
    assert (msg.id, msg.name, msg.role, msg.blocks.items[0].text.text) == (
        "x",
        "summary",
        2,
        "All good.",
    )


def _bad(edit: Any) -> Message:
    message = msg_to_a2a(new_msg("a", [new_text_block("x")], "user"))
    edit(message)
    return message


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        (lambda m: m.metadata.update({MSGS_KEY: "nope"}), f'message.metadata["{MSGS_KEY}"]'),
        (
            lambda m: m.metadata.update({MSGS_KEY: [{"name": 5}]}),
            f'message.metadata["{MSGS_KEY}"][0]',
        ),
        (
            lambda m: m.parts[0].metadata.update({MSG_KEY: 3}),
            f'message.parts[0].metadata["{MSG_KEY}"]',
        ),
        (
            lambda m: m.parts[0].metadata.update({BLOCK_KEY: {"text": 1}}),
            f'message.parts[0].metadata["{BLOCK_KEY}"]',
        ),
        (lambda m: m.parts.add(), f'message.parts[1].metadata["{MSG_KEY}"]'),
    ],
)
def test_bad_extension_data_names_where(edit: Any, path: str) -> None:
    with pytest.raises(MessageFormatError) as error:
        a2a_to_msg(_bad(edit))
    assert error.value.path == path


def test_a_part_without_content_is_refused() -> None:
    with pytest.raises(MessageFormatError, match=r"message\.parts\[0\]: a part holds no"):
        a2a_to_msg(Message(message_id="m", parts=[Part()]))


def test_the_agent_card_entry() -> None:
    extension = agent_extension()
    assert extension.uri == EXTENSION_URI
    assert "agentscope" in EXTENSION_URI
    assert EXTENSION_URI.startswith("https://")
    assert not extension.required


def test_the_package_imports_without_the_extra() -> None:
    code = (
        "import sys; sys.modules['a2a'] = None\n"
        "import agentscope_proto\n"
        "assert 'agentscope_proto.a2a' not in sys.modules\n"
        "try:\n    import agentscope_proto.a2a\nexcept ImportError as e:\n    print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout.strip()
        == 'agentscope_proto.a2a needs a2a-sdk: pip install "agentscope-proto[a2a]"'
    )


def test_the_readme_example_runs() -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("\n## A2A\n") :]
    start = section.index("```python\n") + len("```python\n")
    exec(compile(section[start : section.index("```", start)], "README.md", "exec"), {})


def test_a_struct_reads_the_same_whatever_order_it_was_built_in() -> None:
    # A Struct keeps no key order, and its iteration order varies between
    # processes: the same data must read as the same message every time.
    def message(keys: list[str]) -> Message:
        data = struct_pb2.Value()
        for key in keys:
            data.struct_value.fields[key].number_value = len(key)
        out = Message(message_id="m", role=Role.ROLE_USER)
        out.parts.append(Part(data=data))
        out.metadata.update({key: key for key in keys})
        return out

    keys = [f"k{i}" * (i + 1) for i in range(12)]
    assert a2a_to_msg(message(keys)) == a2a_to_msg(message(keys[::-1]))


class _Text(str):
    """A str subclass: the writer hands what it does not know to ParseDict."""


@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers(-(2**70), 2**70)
        | st.floats()
        | texts
        | texts.map(_Text),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.lists(inner, max_size=3).map(tuple)
            | st.dictionaries(texts, inner, max_size=3)
        ),
        max_leaves=8,
    )
)
def test_a_value_is_written_as_parse_dict_writes_it(data: Any) -> None:
    # `fill_value` stands in for json_format.ParseDict on the hot path: same bytes,
    # empty objects and lists present, NaN, infinities and wide integers alike.
    from agentscope_proto.a2a.mapping import fill_value

    expected, actual = struct_pb2.Value(), struct_pb2.Value()
    try:
        json_format.ParseDict(data, expected)
    except json_format.ParseError:  # protobuf 5.x takes no tuple
        with pytest.raises(json_format.ParseError):
            fill_value(actual, data)
        return
    fill_value(actual, data)
    assert actual.SerializeToString(deterministic=True) == expected.SerializeToString(
        deterministic=True
    )


def test_a_value_json_does_not_hold_is_refused_as_parse_dict_refuses_it() -> None:
    from agentscope_proto.a2a.mapping import fill_value

    with pytest.raises(json_format.ParseError):
        fill_value(struct_pb2.Value(), {"a": [1, {2, 3}]})


_any_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)


@given(_any_json, st.sampled_from(["Value", "Struct", "ListValue", "unset"]))
def test_a_value_is_read_as_message_to_dict_reads_it(data: Any, kind: str) -> None:
    # `_py` reads Structs directly where `_ints(MessageToDict(...))` walked
    # them: the same values, and the same error for NaN and infinities.
    from agentscope_proto.a2a.mapping import _ints, _py

    value = struct_pb2.Value()
    json_format.ParseDict(data, value)
    message: Any = {
        "Value": value,
        "Struct": struct_pb2.Struct(fields={"k": value, "j": value}),
        "ListValue": struct_pb2.ListValue(values=[value, value]),
        "unset": struct_pb2.Value(),
    }[kind]
    try:
        expected: Any = _ints(json_format.MessageToDict(message))
    except ValueError as error:
        with pytest.raises(ValueError, match=str(error)):
            _py(message)
        return
    assert json.dumps(_py(message)) == json.dumps(expected)  # key order and int vs float too
