"""The way back: an AG-UI `RunAgentInput` as a `ReplyRequest` (agentscope_proto.agui).

The answers are checked against the ones the golden replies
(tests/golden/agentscope2/events.json) really gave AgentScope 2.x: the resume
of the interrupts our `RunStream` wrote for a turn must make the same answer.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import UserMessage
from hypothesis import given, settings
from hypothesis import strategies as st

from agentscope_proto import MessageFormatError
from agentscope_proto._generated.agentscope.agent.v1 import events_pb2 as pb
from agentscope_proto.agui import (
    RunStream,
    msg_from_user_message,
    read_run_input,
    reply_request,
    user_message_from_msg,
)
from agentscope_proto.events import event_from_dict
from agentscope_proto.message import (
    AudioBlock,
    ContentBlock,
    ContentBlocks,
    DataBlock,
    ImageBlock,
    MediaSource,
    Msg,
    Role,
    TextBlock,
    VideoBlock,
)

REPLIES = {
    reply["name"]: reply
    for reply in json.loads(
        (Path(__file__).resolve().parent / "golden/agentscope2/events.json").read_text("utf-8")
    )["replies"]
}


def _asking(reply: str, turn: int) -> pb.AgentEvent:
    """The asking event that ends a golden turn."""
    items = REPLIES[reply]["turns"][turn]
    dumps = [item["event"] for item in items if "event" in item]
    return event_from_dict(next(d for d in dumps if d["type"].startswith("REQUIRE_")))


def _two_calls(asking: pb.AgentEvent) -> pb.AgentEvent:
    """The asking event with a second call (the golden replies ask about one)."""
    twice = pb.AgentEvent()
    twice.CopyFrom(asking)
    calls = getattr(twice, twice.WhichOneof("event") or "").tool_calls
    calls.add().CopyFrom(calls[0])
    calls[1].id = "call_second"
    return twice


def _interrupts(asking: pb.AgentEvent) -> list[dict[str, Any]]:
    stream = RunStream("session-1", "run-1")
    stream.events(asking)
    finished = stream.finish()[-1].model_dump(mode="json", by_alias=True)
    return list(finished["outcome"]["interrupts"])


def _run(**fields: Any) -> dict[str, Any]:
    return {"threadId": "session-1", "runId": "run-2", "messages": [], **fields}


def _resume(asking: pb.AgentEvent, payload: Any, status: str = "resolved") -> dict[str, Any]:
    entries = [
        {"interruptId": item["id"], "status": status, "payload": payload}
        for item in _interrupts(asking)
    ]
    return _run(resume=entries)


def test_new_user_messages_are_the_reply_request() -> None:
    run = read_run_input(
        _run(
            messages=[
                {"id": "u1", "role": "user", "content": "old"},
                {"id": "a1", "role": "assistant", "content": "answer"},
                {"id": "u2", "role": "user", "content": "hi"},
                {
                    "id": "u3",
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "look"},
                        {"type": "image", "source": {"type": "url", "value": "https://x/a.png"}},
                    ],
                },
            ]
        )
    )
    request = reply_request(run)
    assert request.session_id == "session-1"
    assert request.reply_id == "run-2"
    assert [msg.id for msg in request.msgs] == ["u2", "u3"]
    assert request.msgs[0].text == "hi"
    assert request.msgs[0].role == Role.ROLE_USER
    assert request.msgs[1].blocks.items[1].image.source.url == "https://x/a.png"
    assert request.WhichOneof("answer") is None


@pytest.mark.parametrize("reply", ["confirmed", "denied"])
def test_resume_of_a_confirmation_is_the_answer_agentscope_got(reply: str) -> None:
    asking = _asking(reply, 0)
    real = event_from_dict(REPLIES[reply]["turns"][1][0]["input"]).user_confirm_result
    confirmed = real.confirm_results[0].confirmed
    request = reply_request(read_run_input(_resume(asking, {"confirmed": confirmed})), asking)
    answer = request.user_confirm_result
    assert request.session_id == "session-1"
    assert answer.reply_id == real.reply_id
    assert [(r.confirmed, r.tool_call) for r in answer.confirm_results] == [
        (r.confirmed, r.tool_call) for r in real.confirm_results
    ]
    assert not request.msgs
    assert not request.reply_id  # an answer goes on in the reply that asked


def test_a_cancelled_interrupt_interrupts_the_reply() -> None:
    asking = _asking("interrupted", 0)
    request = reply_request(read_run_input(_resume(asking, None, "cancelled")), asking)
    real = event_from_dict(REPLIES["interrupted"]["turns"][1][0]["input"]).user_interrupt
    assert request.user_interrupt == real


def test_external_execution_by_resume_and_by_tool_messages() -> None:
    asking = _asking("three_tools", 1)
    assert asking.WhichOneof("event") == "require_external_execution"
    calls = list(asking.require_external_execution.tool_calls)
    by_resume = reply_request(read_run_input(_resume(asking, {"output": "3 results"})), asking)
    messages = [
        {"id": f"t{i}", "role": "tool", "toolCallId": call.id, "content": "3 results"}
        for i, call in enumerate(calls)
    ]
    by_messages = reply_request(read_run_input(_run(messages=messages)), asking)
    for request in (by_resume, by_messages):
        results = request.external_execution_result.execution_results
        assert [(r.id, r.name, r.text) for r in results] == [
            (call.id, call.name, "3 results") for call in calls
        ]
        reply_id = asking.require_external_execution.reply_id
        assert request.external_execution_result.reply_id == reply_id


def _fails(path: str, run: dict[str, Any], asking: pb.AgentEvent | None = None) -> None:
    with pytest.raises(MessageFormatError) as caught:
        reply_request(read_run_input(run), asking)
    assert caught.value.path == path, caught.value


def test_bad_input_names_the_field() -> None:
    confirm = _asking("confirmed", 0)
    external = _two_calls(_asking("three_tools", 1))
    ids = [item["id"] for item in _interrupts(confirm)]
    _fails("threadId", _run(threadId=""))
    unknown = _run(resume=[{"interruptId": "x", "status": "resolved"}])
    _fails("resume", unknown)
    _fails("resume[0].interruptId", unknown, confirm)
    twice = [{"interruptId": ids[0], "status": "resolved", "payload": {"confirmed": True}}] * 2
    _fails("resume[1].interruptId", _run(resume=twice), confirm)
    _fails("resume[0].payload", _resume(confirm, "yes"), confirm)
    _fails("resume[0].payload.confirmed", _resume(confirm, {"confirmed": "yes"}), confirm)
    _fails("resume[0].payload.output", _resume(external, {"output": 3}), external)
    _fails("resume[0].payload.state", _resume(external, {"output": "", "state": "odd"}), external)
    some = _resume(external, {"output": ""})
    some["resume"] = some["resume"][:1]
    _fails("resume", some, external)
    first = external.require_external_execution.tool_calls[0].id
    partial = [{"id": "t", "role": "tool", "toolCallId": first, "content": "x"}]
    _fails("messages", _run(messages=partial), external)
    file_part = {"type": "document", "source": {"type": "file", "value": "file-1"}}
    _fails(
        "messages[0].content[0].source",
        _run(messages=[{"id": "u", "role": "user", "content": [file_part]}]),
    )


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ("{}", "threadId"),
        ('{"threadId": "t", "runId": "r", "messages": 3}', "messages"),
        ('{"threadId": "t", "runId": "", "messages": [], "resume": [{}]}', "resume[0].interruptId"),
        ("not json", ""),
    ],
)
def test_malformed_run_input(data: str, path: str) -> None:
    with pytest.raises(MessageFormatError) as caught:
        read_run_input(data)
    assert caught.value.path == path


def test_a_message_agui_has_no_part_for() -> None:
    msg = Msg(id="m", name="user", role=Role.ROLE_USER)
    msg.blocks.items.add().thinking.thinking = "hm"
    with pytest.raises(MessageFormatError, match=r"msg\.blocks\[0\]"):
        user_message_from_msg(msg)
    with pytest.raises(MessageFormatError, match=r"msg\.role"):
        user_message_from_msg(Msg(id="m", name="a", role=Role.ROLE_ASSISTANT, text="x"))


# --- Round trip: a user Msg -> AG-UI (as JSON) -> the same Msg ----------------

_texts = st.text(max_size=20)
_media_types = st.sampled_from(["image/png", "audio/wav", "video/mp4", "application/pdf"])


@st.composite
def _sources(draw: st.DrawFn) -> MediaSource:
    if draw(st.booleans()):
        source = MediaSource(url=draw(_texts))
        if draw(st.booleans()):
            source.media_type = draw(_media_types)
        return source
    source = MediaSource(media_type=draw(_media_types))
    raw = draw(st.binary(max_size=12))
    if draw(st.booleans()) and raw:
        source.base64_text = base64.b64encode(raw).decode().rstrip("=") + "\n"
    else:
        source.data = raw
    return source


@st.composite
def _blocks(draw: st.DrawFn) -> ContentBlock:
    kind = draw(st.sampled_from(["text", "image", "audio", "video", "data"]))
    if kind == "text":
        return ContentBlock(text=TextBlock(text=draw(_texts)))
    block = {"image": ImageBlock, "audio": AudioBlock, "video": VideoBlock, "data": DataBlock}[kind]
    return ContentBlock(**{kind: block(source=draw(_sources()))})


@st.composite
def _user_msgs(draw: st.DrawFn) -> Msg:
    msg = Msg(id=draw(st.text(min_size=1, max_size=8)), name=draw(st.text(min_size=1, max_size=8)))
    msg.role = Role.ROLE_USER
    if draw(st.booleans()):
        msg.text = draw(_texts)
    else:
        msg.blocks.CopyFrom(ContentBlocks(items=draw(st.lists(_blocks(), max_size=4))))
    return msg


@settings(max_examples=200, deadline=None)
@given(_user_msgs())
def test_user_msg_round_trip(msg: Msg) -> None:
    wire = user_message_from_msg(msg).model_dump_json(by_alias=True)
    back = msg_from_user_message(UserMessage.model_validate_json(wire), "message")
    assert back == msg
