"""docs/a2a.md's mapping table, row by row, against the code.

The table (between its `a2a-table` markers) has a row per thing a `Msg` may hold.
Each row has an example here: a `Msg` holding it, the part the row is about
(None for the message's own fields) and a probe reading the thing from a
`Msg` (falsy when the `Msg` does not hold it). The example is written with
`msg_to_a2a` and each cell is checked: the A2A column names the part kind or
the message field that holds it; the agentscope-java column the block type and
keys written; the extension column the ProtoJSON fields the extension adds
(`—`: nothing beyond the part); the last column what reading the message without
the extension gives: the same (kept), something else (mapped) or nothing (lost).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from a2a.types import Message, Role
from google.protobuf import json_format

from agentscope_proto import (
    ContentBlock,
    ContentBlocks,
    ErrorType,
    FinishedReason,
    ImageBlock,
    MediaSource,
    Msg,
    OpaqueBlock,
    PermissionBehavior,
    PermissionRule,
    ServerToolUseBlock,
    ThinkingBlock,
    ToolCallState,
    ToolResultState,
    new_audio_block,
    new_data_block,
    new_hint_block,
    new_image_block,
    new_msg,
    new_text_block,
    new_thinking_block,
    new_tool_result_block,
    new_tool_use_block,
    to_dict,
)
from agentscope_proto.a2a import BLOCK_KEY, EXTENSION_URI, MSGS_KEY, a2a_to_msg, msg_to_a2a
from agentscope_proto.message._codec import block_from_dict

DOC = Path(__file__).resolve().parent.parent / "docs" / "a2a.md"
COLUMNS = (
    "row",
    "the Msg holds",
    "A2A",
    "agentscope-java keys",
    "extension",
    "without the extension",
)
VERDICTS = ("kept", "mapped", "lost")
PNG = b"\x89PNG\r\n\x1a\n" + bytes(8)
EXACT = {"n": 42, "big": 2**63 - 1}


def read_table() -> dict[str, dict[str, str]]:
    text = DOC.read_text(encoding="utf-8")
    body = text.split("<!-- a2a-table:start -->")[1].split("<!-- a2a-table:end -->")[0]
    lines = [line for line in body.strip().splitlines() if line.startswith("|")]
    header = tuple(cell.strip() for cell in lines[0].strip("|").split("|"))
    assert header == COLUMNS
    table = {}
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        row = dict(zip(header, cells, strict=True))
        table[row["row"]] = row
    return table


TABLE = read_table()


@dataclass
class Example:
    msg: Msg
    # The index of the part the row is about; None: the message's own fields.
    part: int | None
    probe: Callable[[Msg], Any]


def _blocks(*blocks: Any, role: str = "assistant", **fields: Any) -> Msg:
    return new_msg("Friday", list(blocks), role, id="m1", **fields)


def _block(msg: Msg) -> Any:
    """The first block as AgentScope's dict."""
    return to_dict(msg)["content"][0]


def _present(*values: Any) -> tuple[Any, ...]:
    return tuple(value for value in values if value)


def _thinking_signatures() -> Msg:
    block = ThinkingBlock(
        thinking="hmm",
        signature="sig",
        redacted_data="EmwK",
        encrypted_content="enc",
        reasoning_id="rs_1",
        thought_signature=b"\x01",
    )
    return _blocks(block)


def _call_state() -> Msg:
    block = new_tool_use_block("c1", "Bash", {"cmd": "ls"}, raw_input='{"cmd": "ls"')
    block.state = ToolCallState.TOOL_CALL_STATE_ASKING
    block.suggested_rules.append(
        PermissionRule(tool_name="Bash", behavior=PermissionBehavior.PERMISSION_BEHAVIOR_ASK)
    )
    return _blocks(block)


def _result(**fields: Any) -> Msg:
    block = new_tool_result_block("c1", "f", "ok")
    for name, value in fields.items():
        if name == "blocks":
            block.blocks.CopyFrom(value)
        else:
            setattr(block, name, value)
    return _blocks(block, role="tool")


def _reply_fields() -> Msg:
    msg = _blocks(new_text_block("x"))
    msg.finished_at = "2026-01-01T00:00:01"
    msg.finished_reason = FinishedReason.FINISHED_REASON_ERROR
    msg.structured_output_json = json.dumps(EXACT)
    msg.error.type = ErrorType.ERROR_TYPE_RATE_LIMIT
    return msg


def _with(msg: Msg, **fields: Any) -> Msg:
    for name, value in fields.items():
        if name == "usage":
            msg.usage.input_tokens = value
        else:
            setattr(msg, name, value)
    return msg


def _timed() -> Msg:
    block = new_text_block("x")
    block.id, block.created_at, block.finished_at = "b1", "2026-01-01", "2026-01-02"
    return _blocks(block)


def _tool_use(msg: Msg) -> Any:
    block = msg.blocks.items[0].tool_use
    return _present(block.state, block.raw_input, list(block.suggested_rules))


EXAMPLES: dict[str, Example] = {
    "text": Example(_blocks(new_text_block("hi")), 0, _block),
    "string-content": Example(
        new_msg("Friday", "hi", "user", id="m1"), 0, lambda m: to_dict(m)["content"]
    ),
    "thinking": Example(_blocks(new_thinking_block("hmm")), 0, _block),
    "thinking-signature": Example(
        _thinking_signatures(),
        0,
        lambda m: _present(*(v for k, v in _block(m).items() if k not in ("type", "thinking"))),
    ),
    "hint": Example(_blocks(new_hint_block("Be brief.")), 0, _block),
    "hint-blocks": Example(
        _blocks(
            new_hint_block(
                [new_text_block("Look:"), new_image_block(data=PNG, media_type="image/png")]
            )
        ),
        0,
        _block,
    ),
    "media-bytes": Example(
        _blocks(_with(new_image_block(data=PNG, media_type="image/png"), name="cat.png")), 0, _block
    ),
    "media-url": Example(
        _blocks(new_audio_block("https://example.com/a.mp3", media_type="audio/mpeg")), 0, _block
    ),
    "data": Example(
        _blocks(new_data_block(data=b"%PDF-", media_type="application/pdf", name="r.pdf")),
        0,
        _block,
    ),
    "base64-text": Example(
        _blocks(ImageBlock(source=MediaSource(base64_text="iVBORw0KGgo", media_type="image/png"))),
        0,
        lambda m: json_format.MessageToDict(m.blocks.items[0].image.source),
    ),
    "tool-call": Example(
        _blocks(new_tool_use_block("c1", "f", EXACT)),
        0,
        lambda m: json.loads(m.blocks.items[0].tool_use.input_json),
    ),
    "tool-call-state": Example(_call_state(), 0, _tool_use),
    "tool-result": Example(_result(), 0, _block),
    "tool-result-blocks": Example(
        _result(
            blocks=ContentBlocks(
                items=[
                    ContentBlock(text=new_text_block("a")),
                    ContentBlock(image=new_image_block(data=PNG, media_type="image/png")),
                ]
            )
        ),
        0,
        lambda m: _block(m)["output"],
    ),
    "tool-result-metadata": Example(
        _result(metadata_json=json.dumps(EXACT)),
        0,
        lambda m: json.loads(m.blocks.items[0].tool_result.metadata_json or "null"),
    ),
    "tool-result-state": Example(
        _result(state=ToolResultState.TOOL_RESULT_STATE_ERROR),
        0,
        lambda m: m.blocks.items[0].tool_result.state,
    ),
    "provider-kinds": Example(
        _blocks(ServerToolUseBlock(id="s1", name="web_search", input_json=json.dumps(EXACT))),
        0,
        _block,
    ),
    "unknown-kind": Example(
        _blocks(
            OpaqueBlock(
                block_type="tool_call", block_json=json.dumps({"type": "tool_call", **EXACT})
            )
        ),
        0,
        _block,
    ),
    "block-times": Example(
        _timed(),
        0,
        lambda m: _present(*(_block(m).get(k) for k in ("id", "created_at", "finished_at"))),
    ),
    "block-keys": Example(
        _blocks(
            block_from_dict(
                {"text": "x", "type": "text", "cache_control": {"type": "ephemeral"}}
            ).text
        ),
        0,
        lambda m: _present(
            m.blocks.items[0].text.extra_json, list(m.blocks.items[0].text.key_order)
        ),
    ),
    "msg-id": Example(_blocks(new_text_block("x")), None, lambda m: m.id),
    "name": Example(_blocks(new_text_block("x")), None, lambda m: m.name),
    "role": Example(
        _blocks(new_tool_result_block("c1", "f", "ok"), role="tool"), None, lambda m: m.role
    ),
    "metadata": Example(
        _blocks(new_text_block("x"), metadata=EXACT),
        None,
        lambda m: json.loads(m.metadata_json or "null"),
    ),
    "timestamp": Example(_blocks(new_text_block("x")), None, lambda m: m.timestamp),
    "usage": Example(
        _with(_blocks(new_text_block("x")), usage=12), None, lambda m: m.HasField("usage")
    ),
    "reply-fields": Example(
        _reply_fields(),
        None,
        lambda m: _present(
            m.finished_at, m.finished_reason, m.structured_output_json, m.HasField("error")
        ),
    ),
    "invocation-id": Example(
        _blocks(new_text_block("x"), invocation_id="call-9"), None, lambda m: m.invocation_id
    ),
    "msg-keys": Example(
        _with(_blocks(new_text_block("x")), extra_json='{"topic":"x"}'),
        None,
        lambda m: m.extra_json,
    ),
}


def test_every_row_has_an_example() -> None:
    assert set(TABLE) == set(EXAMPLES)


def _ticks(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _without_the_extension(message: Message) -> Message:
    plain = Message()
    plain.CopyFrom(message)
    for owner in [plain, *plain.parts]:
        for key in list(owner.metadata.fields):
            if key.startswith(EXTENSION_URI):
                del owner.metadata.fields[key]
    del plain.extensions[:]
    return plain


def _empty(value: Any) -> bool:
    return isinstance(value, dict) and all(_empty(item) for item in value.values())


def _check_a2a(cell: str, message: Message, msg: Msg, part: Any) -> None:
    kinds = {"text part": "text", "raw part": "raw", "url part": "url", "data part": "data"}
    for words, kind in kinds.items():
        if cell.startswith(words):
            assert part.WhichOneof("content") == kind
            return
    if cell.startswith("part metadata"):
        assert set(json.loads(msg.blocks.items[0].tool_result.metadata_json)) <= set(
            part.metadata.fields
        )
    elif cell.startswith("`message_id`"):
        assert message.message_id == msg.id
    elif cell.startswith("`role`"):
        assert message.role == Role.ROLE_AGENT  # the example is a tool's message
    elif cell.startswith("message `metadata[<msg id>]`"):
        assert msg.id in message.metadata.fields
    else:
        assert cell == "—", cell


def _check_java(cell: str, message: Message, part: Any) -> None:
    if cell == "—":
        return
    tokens = _ticks(cell)
    keys = [t for t in tokens if t.startswith("_agentscope_")]
    types = [t for t in tokens if not t.startswith("_agentscope_")]
    for owner in [part] if part is not None else list(message.parts):
        metadata = json_format.MessageToDict(owner.metadata)
        assert set(keys) <= set(metadata), keys
        if types:
            assert metadata["_agentscope_block_type"] in types


def _check_extension(cell: str, message: Message, part: Any) -> None:
    if part is not None and BLOCK_KEY in part.metadata.fields:
        payload = json_format.MessageToDict(part.metadata)[BLOCK_KEY]
        payload = next(iter(payload.values()), {})
    else:
        # The message's own fields, or string content: the Msg's entry says.
        payload = json_format.MessageToDict(message.metadata)[MSGS_KEY][0]
    if cell == "—":
        assert _empty(payload), payload
        return
    assert not _empty(payload)
    for field in _ticks(cell):
        assert field in payload, (field, payload)


@pytest.mark.parametrize("row", list(TABLE))
def test_the_row_says_what_the_code_does(row: str) -> None:
    cells, example = TABLE[row], EXAMPLES[row]
    message = msg_to_a2a(example.msg)
    assert a2a_to_msg(message) == example.msg
    part = message.parts[example.part] if example.part is not None else None
    _check_a2a(cells["A2A"], message, example.msg, part)
    _check_java(cells["agentscope-java keys"], message, part)
    _check_extension(cells["extension"], message, part)
    verdict = next((v for v in VERDICTS if cells["without the extension"].startswith(v)), None)
    assert verdict is not None, cells["without the extension"]
    want = example.probe(example.msg)
    assert want, "the example holds what the row is about"
    got = example.probe(a2a_to_msg(_without_the_extension(message)))
    found = "kept" if got == want else "mapped" if got else "lost"
    assert found == verdict, (want, got)


def test_the_extension_uri_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert f"**`{EXTENSION_URI}`**" in text
