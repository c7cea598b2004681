"""docs/agui.md's tables against the code: the events one against the handler
table (every `AgentEvent.event` field once, with the AG-UI events it gives on
the recorded 2.x streams), the way back one against the two schemas."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

from ag_ui.core import RunAgentInput

from agentscope_proto._generated.agentscope.agent.v1 import agent_service_pb2, events_pb2
from agentscope_proto.agui import HANDLERS, RunStream
from agentscope_proto.events import event_from_dict

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "agui.md").read_text(encoding="utf-8")
GOLDEN = json.loads((ROOT / "tests/golden/agentscope2/events.json").read_text(encoding="utf-8"))
FIELDS = [field.name for field in events_pb2.AgentEvent.DESCRIPTOR.oneofs_by_name["event"].fields]


def _rows(marker: str) -> list[list[str]]:
    block = DOC.split(f"<!-- {marker} -->")[1].split(f"<!-- /{marker} -->")[0]
    lines = [line for line in block.strip().splitlines()[2:] if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def _ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _golden_events() -> list[events_pb2.AgentEvent]:
    dumps = [case["dump"] for case in GOLDEN["events"]]
    for reply in GOLDEN["replies"]:
        dumps += [item["event"] for turn in reply["turns"] for item in turn if "event" in item]
    return [event_from_dict(dump) for dump in dumps]


def test_every_event_field_has_one_row_and_one_handler() -> None:
    documented = [_ticked(row[0])[0] for row in _rows("agui-events")]
    assert documented == FIELDS
    assert list(HANDLERS) == FIELDS


def test_each_row_says_what_its_handler_gives() -> None:
    given: dict[str, set[str]] = defaultdict(set)
    for event in _golden_events():
        kind = event.WhichOneof("event") or ""
        given[kind] |= {item.type.value for item in HANDLERS[kind](RunStream("t", "r"), event)}
    for row in _rows("agui-events"):
        field = _ticked(row[0])[0]
        assert set(_ticked(row[1])) == given[field], field


def test_the_way_back_names_real_fields() -> None:
    aliases = {field.alias or name for name, field in RunAgentInput.model_fields.items()}
    request = agent_service_pb2.ReplyRequest.DESCRIPTOR.fields_by_name
    rows = _rows("agui-input")
    assert rows
    for row in rows:
        assert _ticked(row[0])[0] in aliases, row
        assert _ticked(row[1])[0] in request, row
