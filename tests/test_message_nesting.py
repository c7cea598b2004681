"""Tool results and hints nest only as deep as a message can travel: the cap
is derived from the schema, every dialect's reader keeps it, and it is tight
(one level more and the deepest envelope no longer decodes). docs/dialects.md
states every cap as the code holds it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message

from agentscope_proto import MessageFormatError, Msg, _json, from_dict, to_dict
from agentscope_proto._generated.agentscope.agent.v1 import agent_service_pb2, hub_service_pb2
from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2
from agentscope_proto.dialects import _java_rules
from agentscope_proto.message import (
    ContentBlock,
    ContentBlocks,
    HintBlock,
    ImageBlock,
    MediaSource,
    Role,
    TextBlock,
    ToolResultBlock,
)
from agentscope_proto.message._nesting import MAX_NESTING, check_nesting

# AgentScope 2.x holds only text and data in a tool result: it never nests.
DIALECTS = ["agentscope", "java"]


def _nested(
    levels: int, kind: str = "tool_result", inner: ContentBlock | None = None
) -> ContentBlock:
    block = inner or ContentBlock(text=TextBlock(text="inner"))
    for level in range(levels):
        inner = ContentBlocks(items=[block])
        if kind == "tool_result":
            block = ContentBlock(
                tool_result=ToolResultBlock(id=f"c{level}", name="t", blocks=inner)
            )
        else:
            block = ContentBlock(hint=HintBlock(id=f"h{level}", blocks=inner))
    return block


def _msg(levels: int, kind: str = "tool_result") -> Msg:
    role = Role.ROLE_USER if kind == "hint" else Role.ROLE_ASSISTANT
    return Msg(
        id="m1",
        name="a",
        role=role,
        timestamp="2026-12-05 10:00:00.000",
        blocks=ContentBlocks(items=[_nested(levels, kind)]),
    )


def _path_to_block(message: Descriptor) -> list[FieldDescriptor]:
    """The longest field path from `message` to a content block."""
    best: list[FieldDescriptor] = []
    for field in message.fields:
        if field.type != FieldDescriptor.TYPE_MESSAGE:
            continue
        if field.message_type is ContentBlock.DESCRIPTOR:
            path = [field]
        else:
            below = _path_to_block(field.message_type)
            path = [field, *below] if below else []
        if len(path) > len(best):
            best = path
    return best


def _deepest_envelope() -> tuple[type[Message], list[FieldDescriptor]]:
    found: list[tuple[int, Descriptor]] = []
    for module in (agent_service_pb2, hub_service_pb2, formatter_service_pb2):
        for service in module.DESCRIPTOR.services_by_name.values():
            for method in service.methods:
                for kind in (method.input_type, method.output_type):
                    found.append((len(_path_to_block(kind)), kind))
    _, deepest = max(found, key=lambda item: item[0])
    cls: Any = getattr(
        next(
            m
            for m in (agent_service_pb2, hub_service_pb2, formatter_service_pb2)
            if deepest.file.name == m.DESCRIPTOR.name
        ),
        deepest.name,
    )
    return cls, _path_to_block(deepest)


def _in_envelope(block: ContentBlock) -> bytes:
    cls, path = _deepest_envelope()
    envelope = cls()
    current: Any = envelope
    for field in path:
        value = getattr(current, field.name)
        current = value.add() if hasattr(value, "add") else value
    current.CopyFrom(block)
    return envelope.SerializeToString()


def test_the_cap_is_tight_in_the_deepest_envelope() -> None:
    """An image's source is as deep as a block goes below itself."""
    cls, _ = _deepest_envelope()
    image = ContentBlock(image=ImageBlock(source=MediaSource(url="https://example.com/a.png")))
    cls.FromString(_in_envelope(_nested(MAX_NESTING, inner=image)))
    with pytest.raises(DecodeError):
        cls.FromString(_in_envelope(_nested(MAX_NESTING + 1, inner=image)))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_reader_takes_the_cap_and_refuses_one_more(dialect: str) -> None:
    from_dict(to_dict(_msg(MAX_NESTING), dialect), dialect).SerializeToString()
    with pytest.raises(MessageFormatError) as info:
        from_dict(to_dict(_msg(MAX_NESTING + 1), dialect), dialect)
    assert info.value.path == "content[0]" + ".output[0]" * MAX_NESTING + ".output"
    assert f"nest at most {MAX_NESTING} levels" in info.value.reason


def test_hints_count_as_nesting_too() -> None:
    check_nesting(_msg(MAX_NESTING, "hint"))
    with pytest.raises(MessageFormatError) as info:
        check_nesting(_msg(MAX_NESTING + 1, "hint"))
    assert info.value.path == "content[0]" + ".hint[0]" * MAX_NESTING + ".hint"


def _caps_table() -> dict[str, list[str]]:
    text = (Path(__file__).resolve().parents[1] / "docs" / "dialects.md").read_text("utf-8")
    table = text.split("<!-- caps-table:start -->\n", 1)[1].split("<!-- caps-table:end -->")[0]
    rows = [line.strip("|").split("|") for line in table.splitlines()[2:]]
    return {cells[0].strip(): [cell.strip() for cell in cells[1:]] for cells in rows}


def test_the_docs_state_each_cap_as_the_code_holds_it() -> None:
    here = {cap: cells[0] for cap, cells in _caps_table().items()}
    expected = {
        "JSON value depth": f"{_json.MAX_DEPTH} levels",
        "tool results (or hints) nested": f"{MAX_NESTING} levels (`MAX_NESTING`",
        "a string": f"{_java_rules.MAX_STRING:,} UTF-16 units",
        "an object key": f"{_java_rules.MAX_NAME:,} UTF-16 units",
        "a number": f"{_java_rules.MAX_DIGITS:,} digits",
    }
    for start, value in expected.items():
        (cell,) = [cell for cap, cell in here.items() if cap.startswith(start)]
        assert cell.startswith(value), (start, cell)
    assert len(here) == len(expected), "a cap the test does not know: add it here"
