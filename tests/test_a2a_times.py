"""Times in A2A: ISO 8601 instants in UTC with `Z` wherever the mapping
writes one (the A2A TCK's DM-SERIAL-003), and the original text back on
reading (agentscope_proto.a2a.times, docs/a2a.md "Times").
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from a2a.types import Message, TaskStatusUpdateEvent
from google.protobuf import json_format

from agentscope_proto import (
    ContentBlock,
    Msg,
    new_data_block,
    new_msg,
    new_text_block,
    new_tool_result_block,
)
from agentscope_proto._generated.agentscope.agent.v1 import agent_service_pb2 as service_pb
from agentscope_proto._generated.agentscope.agent.v1.events_pb2 import AgentEvent
from agentscope_proto.a2a import (
    TIMES_KEY,
    a2a_to_msgs,
    artifact_to_msg,
    msg_to_artifact,
    msgs_to_a2a,
)
from agentscope_proto.a2a.protocol import read_events, read_request, write_events, write_request
from agentscope_proto.a2a.times import utc

from a2a_tck import bad_times


@pytest.fixture
def kolkata(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process in UTC+05:30, so that a local time is not a UTC one."""
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def _timed_msgs() -> list[Msg]:
    """Messages with times at every place the schema has one, in every form."""
    text = new_text_block("hi")
    text.created_at, text.finished_at = "2026-12-05T13:27:22.438208", "2026-12-05T13:27:23"
    nested = new_tool_result_block("c1", "f", [new_text_block("out")])
    nested.created_at = "2026-12-05 13:27:22.438"  # AgentScope 1.x's form
    nested.blocks.items[0].text.created_at = "2026-12-05T08:00:00+02:00"
    data = new_data_block(data=b"\x00", media_type="application/octet-stream")
    data.created_at = "2026-12-05T13:27:22"
    first = new_msg("Friday", [text, nested], "assistant", timestamp="2026-12-05 13:27:22.438")
    first.finished_at = "not a time"  # kept, but no peer is told it is one
    second = new_msg("Alice", "hi", "user", timestamp="2026-12-05T07:57:22.438208Z")
    second.blocks.items.append(ContentBlock(data=data))
    return [first, second]


def _json(message: object) -> object:
    return json.loads(json_format.MessageToJson(message))  # type: ignore[arg-type]


def test_utc_reads_local_times_in_the_local_zone(kolkata: None) -> None:
    assert utc("2026-12-05T13:27:22.438208") == "2026-12-05T07:57:22.438208Z"
    assert utc("2026-12-05 13:27:22.438") == "2026-12-05T07:57:22.438000Z"
    assert utc("2026-12-05T13:27:22+01:00") == "2026-12-05T12:27:22Z"
    assert utc("2026-12-05T07:57:22Z") == "2026-12-05T07:57:22Z"
    assert utc("0999-01-01T01:00:00+01:00") == "0999-01-01T00:00:00Z"  # padded year
    assert utc("2026-12-05T07:57:22.5Z") == "2026-12-05T07:57:22.500000Z"  # any digits
    assert utc("2026-12-05T07:57:22.123456789Z") == "2026-12-05T07:57:22.123456Z"
    assert utc("yesterday") is None


def test_a_message_holds_its_times_in_utc_and_reads_back_exactly(kolkata: None) -> None:
    msgs = _timed_msgs()
    message = msgs_to_a2a(msgs)
    assert bad_times(_json(message)) == []
    payloads = _json(message)["metadata"]  # type: ignore[index]
    first = payloads[f"{TIMES_KEY[: -len('/times')]}/msgs"][0]
    assert first["timestamp"] == "2026-12-05T07:57:22.438000Z"
    assert "finishedAt" not in first  # not a time: the original alone keeps it
    assert payloads[TIMES_KEY]["msgs[0].finishedAt"] == "not a time"
    # The way back gives the original texts, byte for byte.
    wire = Message.FromString(message.SerializeToString())
    assert a2a_to_msgs(wire) == msgs


def test_an_artifact_holds_its_times_in_utc_and_reads_back_exactly(kolkata: None) -> None:
    msg = _timed_msgs()[0]
    artifact = msg_to_artifact(msg)
    assert bad_times(_json(artifact)) == []
    assert artifact_to_msg(artifact) == msg


def test_a_peer_s_utc_times_are_read_as_they_are() -> None:
    msg = new_msg("Friday", "hi", "assistant", timestamp="2026-12-05T07:57:22Z")
    message = msgs_to_a2a([msg])
    assert TIMES_KEY not in message.metadata.fields  # nothing to keep
    assert a2a_to_msgs(message) == [msg]


def test_events_on_a_status_update_hold_utc_times_and_read_back_exactly(kolkata: None) -> None:
    start = AgentEvent(id="e1", created_at="2026-12-05T13:27:22.438208")
    start.reply_start.reply_id = "r1"
    delta = AgentEvent(id="e2", created_at="2026-12-05T13:27:22.5")
    delta.text_block_delta.delta = "hi"
    update = TaskStatusUpdateEvent(task_id="t", context_id="c")
    update.status.timestamp.GetCurrentTime()
    write_events(update.metadata, [start, delta])
    assert bad_times(_json(update)) == []
    assert read_events(update.metadata) == [start, delta]


def test_a_request_s_answer_holds_utc_times_and_reads_back_exactly(kolkata: None) -> None:
    request = service_pb.ReplyRequest()
    result = request.external_execution_result
    result.reply_id = "r1"
    block = new_tool_result_block("c1", "f", "ok")
    block.created_at = "2026-12-05T13:27:22.438208"
    result.execution_results.add().CopyFrom(block)
    message = msgs_to_a2a([new_msg("user", "ok", "user")])
    write_request(message, request)
    assert bad_times(_json(message)) == []
    assert read_request(message) == request


def test_a_task_s_merged_metadata_reads_its_last_events_exactly(kolkata: None) -> None:
    # a2a-sdk merges each status update's metadata into its task's.
    task = TaskStatusUpdateEvent(task_id="t", context_id="c")
    local = AgentEvent(id="e1", created_at="2026-12-05T13:27:22.438208")
    local.reply_start.reply_id = "r1"
    instant = AgentEvent(id="e2", created_at="2026-12-05T07:57:22Z")
    instant.reply_start.reply_id = "r2"
    for events in ([local], [instant]):
        update = TaskStatusUpdateEvent(task_id="t", context_id="c")
        write_events(update.metadata, events)
        task.metadata.MergeFrom(update.metadata)
        assert read_events(task.metadata) == events


def test_an_appended_artifact_chunk_reads_with_its_own_times(kolkata: None) -> None:
    local = new_msg("Friday", "hi", "assistant", timestamp="2026-12-05T13:27:22.438208")
    instant = new_msg("Friday", "there", "assistant", timestamp="2026-12-05T07:57:22Z")
    merged = msg_to_artifact(local)
    chunk = msg_to_artifact(instant)
    # As a2a-sdk appends a chunk: its parts, its metadata merged into the artifact's.
    merged.metadata.update(dict(chunk.metadata.items()))
    del merged.parts[:]
    merged.parts.extend(chunk.parts)
    assert artifact_to_msg(merged).timestamp == instant.timestamp
