"""Anthropic in provider fidelity, round trip per feature: a response carrying it
(the recorded transcripts in ../shared/provider-transcripts/anthropic, read at run
time, or a fixture written here from Anthropic's documented shapes) parses with
the feature kept, and the next turn, formatted with `fidelity="provider"`, carries
it where Claude expects it, in a body the SDK's request types accept.
AgentScope fidelity stays AgentScope's: parity is the golden tests' business.
"""

from __future__ import annotations

import copy
import json
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agentscope_proto.cache import FormatCache
from agentscope_proto.client import FormatterClient
from agentscope_proto.errors import ParseError
from agentscope_proto.formatting import format
from agentscope_proto.message import new_msg
from agentscope_proto.parsing import StreamParser, parse
from agentscope_proto.results import ParsedResponse
from agentscope_proto.service import ServerConfig
from provider_schemas import client
from provider_schemas.golden import REQUESTS
from transcripts import ROOT, load_events, missing, without_raw_input

from fidelity_helpers import TOOL_LOOP
from fidelity_helpers import kinds as _kinds
from fidelity_helpers import result as _result
from server_harness import RunningServer

TRANSCRIPTS = ROOT / "anthropic"
needs_transcripts = pytest.mark.skipif(not TRANSCRIPTS.is_dir(), reason=missing(TRANSCRIPTS))
needs_sdks = pytest.mark.skipif(not client.available(), reason=client.MISSING_REASON)

_USES = ("server_tool_use", "mcp_tool_use")
# Kinds the GA Messages API types know; the others (MCP, advisor, compaction,
# fallback) are beta blocks, sent back as they came but not in the SDK's GA types.
_BETA = ("mcp_tool_use", "mcp_tool_result", "advisor_tool_result", "compaction", "fallback")


def _json_files() -> list[Path]:
    return sorted(TRANSCRIPTS.glob("*.json")) if TRANSCRIPTS.is_dir() else []


def _event_files() -> list[Path]:
    return sorted(TRANSCRIPTS.glob("*.events.jsonl")) if TRANSCRIPTS.is_dir() else []


def _msg(name: str, role: str, content: Any) -> dict[str, Any]:
    return {"name": name, "role": role, "content": content}


def _stream(events: list[dict[str, Any]], **options: Any) -> ParsedResponse:
    parser = StreamParser("anthropic", **options)
    for event in events:
        parser.feed(event)
    return parser.finish()


# -- counting what a response holds and what a parse kept ----------------------------


def _records(blocks: list[dict[str, Any]]) -> Counter[str]:
    """The records AgentScope drops, in the API's blocks."""
    found: Counter[str] = Counter()
    for block in blocks:
        kind = block["type"]
        if kind in _USES or kind.endswith("_tool_result"):
            found[kind] += 1
        elif kind == "redacted_thinking":
            found["redacted_thinking"] += 1
        elif kind == "text":
            found["citation"] += len(block.get("citations") or [])
        elif kind == "thinking" and not block["thinking"] and block.get("signature"):
            found["empty_thinking_signature"] += 1
        elif kind not in ("thinking", "tool_use"):
            found[kind] += 1
    return +found


def _kept(content: list[dict[str, Any]]) -> Counter[str]:
    """The same records, in a provider-fidelity parse."""
    found: Counter[str] = Counter()
    for block in content:
        kind = block["type"]
        if kind in ("server_tool_use", "server_tool_result"):
            found[block["provider_type"]] += 1
        elif kind == "thinking" and "redacted_data" in block:
            found["redacted_thinking"] += 1
        elif kind == "thinking" and not block["thinking"] and block.get("signature"):
            found["empty_thinking_signature"] += 1
        elif kind == "text":
            found["citation"] += len(block.get("citations") or [])
        elif kind not in ("thinking", "tool_use"):
            found[kind] += 1
    return +found


def _streamed_records(events: list[dict[str, Any]]) -> Counter[str]:
    """The records of a stream: its start blocks, grown by their deltas."""
    blocks: dict[tuple[int, int], dict[str, Any]] = {}
    message = -1
    for event in events:
        if event["type"] == "message_start":
            message += 1
            for index, block in enumerate(event["message"].get("content") or []):
                blocks[message, index] = copy.deepcopy(block)
        elif event["type"] == "content_block_start":
            blocks[message, event["index"]] = copy.deepcopy(event["content_block"])
        elif event["type"] == "content_block_delta":
            block, delta = blocks[message, event["index"]], event["delta"]
            if delta["type"] == "citations_delta":
                block["citations"] = [*(block.get("citations") or []), delta["citation"]]
            elif delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
    return _records(list(blocks.values()))


# -- a stream written from a complete response ---------------------------------------


def _halves(text: str) -> list[str]:
    return [text[: len(text) // 2], text[len(text) // 2 :]]


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _as_stream(response: dict[str, Any]) -> list[dict[str, Any]]:
    """The events Anthropic streams for `response` (as its streaming docs show them)."""
    start = {k: v for k, v in response.items() if k not in ("content", "container")}
    start["usage"] = {"input_tokens": response["usage"]["input_tokens"], "output_tokens": 1}
    events = [{"type": "message_start", "message": {**start, "content": [], "stop_reason": None}}]
    for index, block in enumerate(response["content"]):
        kind = block["type"]
        deltas = []
        first = copy.deepcopy(block)
        if kind == "text":
            first["text"] = ""
            if block.get("citations"):
                first["citations"] = []
                deltas += [{"type": "citations_delta", "citation": c} for c in block["citations"]]
            deltas += [{"type": "text_delta", "text": piece} for piece in _halves(block["text"])]
        elif kind == "thinking":
            first.update(thinking="", signature="")
            deltas += [{"type": "thinking_delta", "thinking": block["thinking"]}]
            deltas += [{"type": "signature_delta", "signature": block["signature"]}]
        elif kind in ("tool_use", *_USES):
            first["input"] = {}
            pieces = _halves(json.dumps(block["input"]))
            deltas += [{"type": "input_json_delta", "partial_json": p} for p in pieces]
        elif kind == "compaction":
            first["content"] = None
            deltas += [{"type": "compaction_delta", "content": block["content"]}]
        events.append({"type": "content_block_start", "index": index, "content_block": first})
        events += [_delta(index, delta) for delta in deltas]
        events.append({"type": "content_block_stop", "index": index})
    final = {"stop_reason": response["stop_reason"], "stop_sequence": None}
    if response.get("container") is not None:
        final["container"] = response["container"]
    usage = {"output_tokens": response["usage"]["output_tokens"]}
    events.append({"type": "message_delta", "delta": final, "usage": usage})
    events.append({"type": "message_stop"})
    return events


# -- the recorded transcripts ----------------------------------------------------------


@needs_transcripts
@pytest.mark.parametrize("path", _json_files(), ids=lambda p: p.name)
def test_a_complete_response_keeps_every_record(path: Path) -> None:
    response = json.loads(path.read_text())
    result = parse("anthropic", response, fidelity="provider")
    assert _kept(result.content) == _records(response.get("content") or [])
    result.to_proto()
    # Server-tool blocks carry the API's block verbatim, in the API's order.
    raws = [b["raw"] for b in result.content if "raw" in b]
    server = [b for b in response["content"] if b["type"] in _USES or "_tool_result" in b["type"]]
    assert raws == server
    # The container and a refusal's stop details, in the message's metadata.
    kept = {k: response[k] for k in ("container", "stop_details") if response.get(k)}
    if kept:
        assert json.loads(result.msg.metadata_json) == kept
    else:
        assert not result.msg.HasField("metadata_json")


@needs_transcripts
@pytest.mark.parametrize("path", _event_files(), ids=lambda p: p.name)
def test_a_stream_keeps_every_record(path: Path) -> None:
    events = load_events(path)
    parser = StreamParser("anthropic", fidelity="provider")
    for event in events:
        snapshot = parser.feed(event)
        if snapshot is not None:
            snapshot.to_proto()
    result = parser.finish()
    assert _kept(result.content) == _streamed_records(events)
    # Given at message_start (a later message of a stream) or message_delta: the last counts.
    holders = [e.get("message") or e.get("delta") or {} for e in events]
    kept = {
        key: values[-1]
        for key in ("container", "stop_details")
        if (values := [h[key] for h in holders if isinstance(h, dict) and h.get(key)])
    }
    if kept:
        assert json.loads(result.msg.metadata_json) == kept
    else:
        assert not result.msg.HasField("metadata_json")


@needs_transcripts
@pytest.mark.parametrize("path", _json_files(), ids=lambda p: p.name)
def test_streamed_and_complete_parses_agree(path: Path) -> None:
    response = json.loads(path.read_text())
    if not response.get("content"):
        pytest.skip("an empty transcript response: nothing to stream")
    complete = parse("anthropic", response, fidelity="provider")
    streamed = _stream(_as_stream(response), fidelity="provider")
    assert without_raw_input(streamed.content) == complete.content
    assert streamed.msg.metadata_json == complete.msg.metadata_json


@needs_transcripts
def test_text_on_either_side_of_a_server_tool_stays_apart() -> None:
    events = load_events(TRANSCRIPTS / "vercel-anthropic-anthropic-web-search-tool.1.events.jsonl")
    kept = _stream(events, fidelity="provider").content
    kinds = [e["content_block"]["type"] for e in events if e["type"] == "content_block_start"]
    assert kinds.count("text") > 10
    assert [b.get("provider_type", b["type"]) for b in kept] == kinds
    # AgentScope glues every text of the stream into one block.
    glued = _stream(events).content
    assert [b["type"] for b in glued] == ["text"]
    assert glued[0]["text"] == "".join(b["text"] for b in kept if b["type"] == "text")


def _next_turn(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation continued after an assistant turn holding `content`."""
    msgs = [_msg("user", "user", "Go on."), _msg("Friday", "assistant", content)]
    calls = [b for b in content if b["type"] == "tool_use"]
    if calls:
        results = [
            {"type": "tool_result", "id": c["id"], "name": c["name"], "output": "done"}
            for c in calls
        ]
        msgs.append(_msg("system", "system", results))
    msgs.append(_msg("user", "user", "Thanks."))
    return msgs


def _round_trips() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    trips = []
    for path in _json_files():
        response = json.loads(path.read_text())
        content = parse("anthropic", response, fidelity="provider").content
        if content:
            # The next request of the conversation calls the model that answered.
            request = {**REQUESTS["anthropic"], "model": response["model"]}
            body = format("anthropic", _next_turn(content), fidelity="provider", request=request)
            trips.append((path.name, response, dict(body)))
    return trips


@needs_transcripts
def test_the_next_turn_carries_every_block_where_claude_expects_it() -> None:
    trips = _round_trips()
    assert trips
    for name, response, body in trips:
        assistant = next(m for m in body["messages"] if m["role"] == "assistant")
        sent = assistant["content"]
        # Every server tool block verbatim, in order, with the text around it.
        wanted = [
            b
            for b in response["content"]
            if b["type"] in _USES
            or "_tool_result" in b["type"]
            or b["type"] in ("compaction", "fallback")
        ]
        assert [b for b in sent if b["type"] not in ("text", "thinking", "tool_use")] == wanted
        cited = [
            c for b in response["content"] if b["type"] == "text" for c in b.get("citations") or []
        ]
        assert [c for b in sent if b["type"] == "text" for c in b.get("citations", [])] == cited, (
            name
        )
        signatures = [b["signature"] for b in response["content"] if b["type"] == "thinking"]
        assert [b["signature"] for b in sent if b["type"] == "thinking"] == signatures, name
        callers = [b.get("caller") for b in response["content"] if b["type"] == "tool_use"]
        assert [b.get("caller") for b in sent if b["type"] == "tool_use"] == callers, name


@needs_transcripts
@pytest.mark.parametrize("path", _json_files(), ids=lambda p: p.name)
def test_the_parsed_message_formats_as_its_blocks_do(path: Path) -> None:
    """The typed `Msg` of a parse (what a client keeps) gives the same next turn."""
    result = parse("anthropic", json.loads(path.read_text()), fidelity="provider")
    kinds = {item.WhichOneof("block") for item in result.msg.blocks.items}
    assert kinds <= {"text", "thinking", "tool_use", "server_tool_use", "server_tool_result"} | (
        {"opaque"} if _kept(result.content).keys() & {"compaction", "fallback"} else set()
    )
    user = new_msg("user", "Go on.", "user")
    from_msg = format("anthropic", [user, result.msg], fidelity="provider")
    dicts = _next_turn(result.content)[:2]
    if result.metadata:  # the container, which the Msg carries in its metadata
        dicts[1] = {**dicts[1], "metadata": result.metadata}
    from_dicts = format("anthropic", dicts, fidelity="provider")
    assert dict(from_msg) == dict(from_dicts)
    assert from_msg.warnings == from_dicts.warnings


@needs_transcripts
def test_the_next_request_runs_in_the_same_container() -> None:
    """Code execution continues where it ran: the latest response's container
    goes back as the request's `container` (provider fidelity only)."""
    seen = 0
    for path in _json_files():
        response = json.loads(path.read_text())
        if not isinstance(response.get("container"), dict):
            continue
        seen += 1
        result = parse("anthropic", response, fidelity="provider")
        history = [
            new_msg("user", "Run it.", "user"),
            result.msg,
            new_msg("user", "Again.", "user"),
        ]
        body = format("anthropic", history, fidelity="provider")
        assert body["container"] == response["container"]["id"], path.name
        assert "container" not in format("anthropic", history)
    assert seen


@needs_sdks
def test_a_request_with_its_container_validates() -> None:
    assistant = new_msg(
        "friday",
        "Done.",
        "assistant",
        metadata={"container": {"id": "container_011", "expires_at": "2026-01-01T00:00:00Z"}},
    )
    history = [new_msg("user", "Run it.", "user"), assistant, new_msg("user", "Again.", "user")]
    body = format("anthropic", history, fidelity="provider", request=REQUESTS["anthropic"])
    assert body["container"] == "container_011"
    assert client.validate_many([("anthropic", dict(body))]) == [[]]


@needs_transcripts
@needs_sdks
def test_the_next_turn_validates_against_the_sdk_types() -> None:
    trips = _round_trips()
    verdicts = client.validate_many(("anthropic", body) for _, _, body in trips)
    invalid = {}
    for (name, response, _), violations in zip(trips, verdicts, strict=True):
        if any(b["type"] in _BETA for b in response["content"]):
            continue
        # `abort_reason` is newer than the SDK's types; it goes back as the API gave it.
        left = [str(v) for v in violations if not v.path.endswith(".abort_reason")]
        if left:
            invalid[name] = left
    assert invalid == {}


# Run by the SDKs' interpreter: the bodies (stdin) against the beta Messages types.
_BETA_CHECK = """
import json, sys
from anthropic.types.beta import message_create_params as params
from provider_schemas._walk import Walker
walker = Walker()
kind = params.MessageCreateParamsNonStreaming
found = [walker.check({"model": "m", "max_tokens": 1024, **b}, kind) for b in json.load(sys.stdin)]
json.dump([[str(v.to_json()) for v in each] for each in found], sys.stdout)
"""


@needs_transcripts
@needs_sdks
def test_the_next_turn_of_a_beta_tool_validates_against_the_beta_types() -> None:
    """MCP, advisor, compaction and fallback blocks go back as the beta API takes them."""
    trips = [t for t in _round_trips() if any(b["type"] in _BETA for b in t[1]["content"])]
    assert trips
    done = subprocess.run(
        [str(client.SCHEMAS_PYTHON), "-c", _BETA_CHECK],
        input=json.dumps([body for _, _, body in trips]),
        capture_output=True,
        text=True,
        cwd=client.ROOT / "tests",
        check=True,
    )
    verdicts = zip([name for name, _, _ in trips], json.loads(done.stdout), strict=True)
    assert {name: found for name, found in verdicts if found} == {}


# -- fixtures from Anthropic's documented examples --------------------------------------

# The extended-thinking docs' response with redacted thinking (data shortened).
REDACTED_RESPONSE = {
    "id": "msg_01Redacted",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [
        {"type": "thinking", "thinking": "", "signature": "EuYBCkQYAiJAgCs="},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw"},
        {"type": "text", "text": "I'm not able to help with that."},
    ],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 10, "output_tokens": 20},
}


def test_redacted_thinking_and_an_empty_thinking_signature_round_trip() -> None:
    result = parse("anthropic", REDACTED_RESPONSE, fidelity="provider")
    assert result.content[:2] == [
        {
            "type": "thinking",
            "thinking": "",
            "signature": "EuYBCkQYAiJAgCs=",
            "signed_model": "claude-sonnet-4-5",
        },
        {
            "type": "thinking",
            "thinking": "",
            "redacted_data": REDACTED_RESPONSE["content"][1]["data"],
            "signed_model": "claude-sonnet-4-5",
        },
    ]
    # AgentScope drops the redacted block.
    assert [b["type"] for b in parse("anthropic", REDACTED_RESPONSE).content] == [
        "thinking",
        "text",
    ]
    body = format("anthropic", _next_turn(result.content), fidelity="provider")
    assert body["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "", "signature": "EuYBCkQYAiJAgCs="},
        {"type": "redacted_thinking", "data": REDACTED_RESPONSE["content"][1]["data"]},
        {"type": "text", "text": "I'm not able to help with that."},
    ]
    assert body.warnings == []


def test_a_streamed_empty_thinking_keeps_its_signature_and_redacted_thinking() -> None:
    events = _as_stream(REDACTED_RESPONSE)
    kept = _stream(events, fidelity="provider").content
    assert kept == parse("anthropic", REDACTED_RESPONSE, fidelity="provider").content
    # AgentScope's stream loses both: an empty thinking buffer yields no block.
    assert [b["type"] for b in _stream(events).content] == ["text"]


# A web search turn, as the web search tool's docs show it (trimmed).
SEARCH_RESPONSE = {
    "id": "msg_01Search",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [
        {"type": "text", "text": "I'll search for that."},
        {
            "type": "server_tool_use",
            "id": "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE",
            "name": "web_search",
            "input": {"query": "claude shannon birth date"},
        },
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE",
            "content": [
                {
                    "type": "web_search_result",
                    "url": "https://en.wikipedia.org/wiki/Claude_Shannon",
                    "title": "Claude Shannon - Wikipedia",
                    "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUt",
                    "page_age": "April 30, 2025",
                }
            ],
        },
        {"type": "text", "text": "Based on the search results, "},
        {
            "type": "text",
            "text": "Claude Shannon was born on April 30, 1916, in Petoskey, Michigan",
            "citations": [
                {
                    "type": "web_search_result_location",
                    "url": "https://en.wikipedia.org/wiki/Claude_Shannon",
                    "title": "Claude Shannon - Wikipedia",
                    "encrypted_index": "Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm",
                    "cited_text": "Claude Elwood Shannon (April 30, 1916 - February 24, 2001)...",
                }
            ],
        },
    ],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 6039, "output_tokens": 931},
}


def test_a_web_search_turn_round_trips() -> None:
    result = parse("anthropic", SEARCH_RESPONSE, fidelity="provider")
    use, found = result.content[1], result.content[2]
    assert use == {
        "type": "server_tool_use",
        "id": "srvtoolu_01WYG3ziw53XMcoyKL4XcZmE",
        "name": "web_search",
        "input": {"query": "claude shannon birth date"},
        "provider_type": "server_tool_use",
        "raw": SEARCH_RESPONSE["content"][1],
    }
    assert found["tool_use_id"] == use["id"]
    assert found["output"] == SEARCH_RESPONSE["content"][2]["content"]
    assert found["is_error"] is False
    assert result.content[4]["citations"] == SEARCH_RESPONSE["content"][4]["citations"]
    assert "citations" not in result.content[3]
    # AgentScope keeps only the text.
    assert [b["type"] for b in parse("anthropic", SEARCH_RESPONSE).content] == ["text"] * 3
    body = format("anthropic", _next_turn(result.content), fidelity="provider")
    assert body["messages"][1] == {"role": "assistant", "content": SEARCH_RESPONSE["content"]}
    assert body.warnings == []


def test_a_turn_holding_only_server_tool_items_is_not_empty() -> None:
    response = {**SEARCH_RESPONSE, "content": SEARCH_RESPONSE["content"][1:3]}
    complete = parse("anthropic", response, fidelity="provider")
    streamed = _stream(_as_stream(response), fidelity="provider")
    assert [b["type"] for b in complete.content] == ["server_tool_use", "server_tool_result"]
    assert without_raw_input(streamed.content) == complete.content
    assert parse("anthropic", response).content == []
    body = format("anthropic", _next_turn(complete.content), fidelity="provider")
    assert body["messages"][1]["content"] == response["content"]


def test_agentscope_fidelity_skips_the_new_kinds_as_agentscope_does() -> None:
    content = parse("anthropic", SEARCH_RESPONSE, fidelity="provider").content
    body = format("anthropic", _next_turn(content))
    assert [w.block_type for w in body.warnings] == ["server_tool_use", "server_tool_result"]
    assert all("Unsupported block type" in w.message for w in body.warnings)
    # Text goes as AgentScope copies it: citations included.
    assert body["messages"][1]["content"][2]["citations"] == content[4]["citations"]


def test_errors_and_mcp_failures_are_marked() -> None:
    response = {
        **SEARCH_RESPONSE,
        "content": [
            {
                "type": "web_fetch_tool_result",
                "tool_use_id": "srvtoolu_1",
                "content": {"type": "web_fetch_tool_result_error", "error_code": "unavailable"},
            },
            {
                "type": "mcp_tool_result",
                "tool_use_id": "mcptoolu_1",
                "is_error": True,
                "content": [{"type": "text", "text": "boom"}],
            },
            {
                "type": "mcp_tool_result",
                "tool_use_id": "mcptoolu_2",
                "is_error": False,
                "content": [{"type": "text", "text": "fine"}],
            },
        ],
    }
    content = parse("anthropic", response, fidelity="provider").content
    assert [b["is_error"] for b in content] == [True, True, False]


def test_other_providers_server_tools_and_grounding_are_dropped_with_a_warning() -> None:
    foreign = [
        {"type": "text", "text": "Searched."},
        {
            "type": "server_tool_use",
            "id": "ws_1",
            "name": "web_search",
            "input": {"query": "x"},
            "provider_type": "web_search_call",
            "raw": {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        },
        {
            "type": "server_tool_result",
            "tool_use_id": "",
            "provider_type": "code_execution_result",
            "output": {"outcome": "OUTCOME_OK"},
            "is_error": False,
            "raw": {"codeExecutionResult": {"outcome": "OUTCOME_OK"}},
        },
        {
            "type": "grounding",
            "provider_type": "grounding_metadata",
            "sources": [{"url": "https://example.com", "title": "example.com"}],
            "queries": ["x"],
            "raw": {"webSearchQueries": ["x"]},
        },
    ]
    body = format("anthropic", _next_turn(foreign), fidelity="provider")
    assert body["messages"][1]["content"] == [{"type": "text", "text": "Searched."}]
    assert [(w.path, w.block_type) for w in body.warnings] == [
        ("messages[1].content[1]", "server_tool_use"),
        ("messages[1].content[2]", "server_tool_result"),
        ("messages[1].content[3]", "grounding"),
    ]


def test_document_citations_go_back_as_the_request_types_take_them() -> None:
    citation = {
        "type": "char_location",
        "cited_text": "The grass is green.",
        "document_index": 0,
        "document_title": "Example Document",
        "start_char_index": 0,
        "end_char_index": 20,
        "file_id": None,
    }
    text = {"type": "text", "text": "the grass is green", "citations": [citation]}
    body = format("anthropic", _next_turn([text]), fidelity="provider")
    sent = body["messages"][1]["content"][0]["citations"]
    assert sent == [{k: v for k, v in citation.items() if k != "file_id"}]
    assert [w.path for w in body.warnings] == ["messages[1].content[0].citations[0].file_id"]


def test_a_programmatic_tool_call_keeps_its_caller() -> None:
    caller = {"type": "code_execution_20250825", "tool_id": "srvtoolu_1"}
    response = {
        **SEARCH_RESPONSE,
        "content": [
            {
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "code_execution",
                "input": {"code": "await roll()"},
            },
            {"type": "tool_use", "id": "toolu_1", "name": "roll", "input": {}, "caller": caller},
        ],
        "stop_reason": "tool_use",
    }
    complete = parse("anthropic", response, fidelity="provider")
    assert complete.content[1]["caller"] == caller
    streamed = _stream(_as_stream(response), fidelity="provider")
    assert without_raw_input(streamed.content) == complete.content
    assert "caller" not in parse("anthropic", response).content[0]
    body = format("anthropic", _next_turn(complete.content), fidelity="provider")
    assert body["messages"][1]["content"][1]["caller"] == caller


def test_a_stream_of_several_messages_keeps_each_ones_blocks() -> None:
    first = {
        **SEARCH_RESPONSE,
        "content": SEARCH_RESPONSE["content"][:2],
        "stop_reason": "pause_turn",
    }
    second = {**SEARCH_RESPONSE, "content": SEARCH_RESPONSE["content"][2:]}
    streamed = _stream(_as_stream(first) + _as_stream(second), fidelity="provider")
    assert streamed.content == parse("anthropic", SEARCH_RESPONSE, fidelity="provider").content


@pytest.mark.parametrize(
    ("block", "path"),
    [
        ({"type": "text", "text": "x", "citations": "nope"}, "content[0].citations"),
        ({"type": "text", "text": "x", "citations": [1]}, "content[0].citations[0]"),
        ({"type": "server_tool_use", "name": "web_search", "input": {}}, "content[0].id"),
        ({"type": "server_tool_use", "id": "s", "name": "n", "input": []}, "content[0].input"),
        ({"type": "web_search_tool_result", "content": []}, "content[0].tool_use_id"),
        ({"type": "redacted_thinking", "data": 1}, "content[0].data"),
    ],
)
def test_malformed_blocks_are_parse_errors_naming_the_path(
    block: dict[str, Any], path: str
) -> None:
    response = {**SEARCH_RESPONSE, "content": [block]}
    with pytest.raises(ParseError) as caught:
        parse("anthropic", response, fidelity="provider")
    assert caught.value.path == path


@pytest.mark.parametrize(
    "event",
    [
        {
            "type": "content_block_start",
            "index": "0",
            "content_block": {"type": "text", "text": ""},
        },
        {"type": "content_block_start", "index": 0, "content_block": []},
        {"type": "content_block_delta", "index": [0], "delta": {"type": "text_delta", "text": "x"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta"}},
        {"type": "message_delta", "delta": {"container": "c"}, "usage": {"output_tokens": 1}},
    ],
)
def test_malformed_stream_events_are_parse_errors(event: dict[str, Any]) -> None:
    start = _as_stream(SEARCH_RESPONSE)[0]
    with pytest.raises(ParseError):
        _stream([start, event], fidelity="provider")


def test_another_providers_citations_are_dropped_with_a_warning() -> None:
    url_citation = {
        "type": "url_citation",
        "url": "https://example.com",
        "title": "Example",
        "start_index": 0,
        "end_index": 4,
    }
    text = {"type": "text", "text": "Spain won.", "citations": [url_citation]}
    body = format("anthropic", _next_turn([text]), fidelity="provider")
    assert body["messages"][1]["content"] == [{"type": "text", "text": "Spain won."}]
    assert [(w.path, w.block_type) for w in body.warnings] == [
        ("messages[1].content[0].citations[0]", "citation")
    ]


@pytest.mark.parametrize("fidelity", ["agentscope", "provider"])
def test_a_format_cache_gives_the_same_body_and_warnings(fidelity: str) -> None:
    content = parse("anthropic", SEARCH_RESPONSE, fidelity="provider").content
    msgs = _next_turn([*content, *REDACTED_RESPONSE["content"][:1]])
    plain = format("anthropic", msgs, fidelity=fidelity)
    cache = FormatCache()
    for _ in range(2):
        cached = format("anthropic", msgs, fidelity=fidelity, cache=cache)
        assert dict(cached) == dict(plain)
        assert cached.warnings == plain.warnings


def test_the_service_keeps_what_a_local_parse_keeps() -> None:
    container = {"id": "container_01Example", "expires_at": "2026-01-01T00:00:00Z"}
    response = {**SEARCH_RESPONSE, "container": container}
    local = parse("anthropic", response, fidelity="provider")
    assert local.metadata == {"container": container}
    streamed_local = _stream(_as_stream(response), fidelity="provider")
    running = RunningServer(ServerConfig(port=0)).start()
    try:
        with FormatterClient(running.target) as remote:
            one = remote.parse("anthropic", response, fidelity="provider")
            *_, last = remote.parse_stream("anthropic", _as_stream(response), fidelity="provider")
    finally:
        running.stop()
    assert one.content == local.content
    assert one.metadata == local.metadata
    assert last.content == streamed_local.content
    assert last.metadata == {"container": container}


# -- the provider-fidelity body (moved from test_fidelity.py) --------------------------


def test_anthropic() -> None:
    msgs = [
        _msg("user", "user", "Hi"),
        _msg(
            "Friday",
            "assistant",
            [
                {"type": "thinking", "thinking": "From another provider."},
                {"type": "thinking", "thinking": "Claude's.", "signature": "sig"},
                {"type": "text", "text": ""},
                *TOOL_LOOP[1]["content"],
            ],
        ),
        _result("c1", [{"type": "audio", "source": {"type": "url", "url": "https://x/a.mp3"}}]),
        _result("c2", "Rain"),
    ]
    body = format("anthropic", msgs, fidelity="provider")
    assistant, results = body["messages"][1], body["messages"][2]
    assert assistant["content"][:3] == [
        {"type": "text", "text": "From another provider."},
        {"type": "thinking", "thinking": "Claude's.", "signature": "sig"},
        {"type": "text", "text": "Checking."},
    ]
    # Parallel results: one user turn; audio replaced by a note.
    assert [b["tool_use_id"] for b in results["content"]] == ["c1", "c2"]
    assert results["content"][0]["content"][0]["type"] == "text"
    assert "audio omitted" in results["content"][0]["content"][0]["text"]
    assert len(body["messages"]) == 3
    kinds = _kinds(body)
    assert ("messages[1].content[0]", "thinking") in kinds
    assert ("messages[1].content[2]", "text") in kinds
    assert ("messages[1].content[3].thought_signature", "text") in kinds
    assert ("messages[2].content[0].content[0]", "audio") in kinds
    assert ("messages[3]", "tool_result") in kinds


def test_anthropic_refuses_svg_by_url_or_data() -> None:
    svg_url = {"type": "image", "source": {"type": "url", "url": "https://x/logo.SVG?v=2"}}
    png_url = {"type": "image", "source": {"type": "url", "url": "https://x/cat.png"}}
    body = format("anthropic", [_msg("user", "user", [svg_url, png_url])], fidelity="provider")
    content = body["messages"][0]["content"]
    assert content[0] == {"type": "text", "text": "[image/svg+xml omitted: Claude cannot hold it]"}
    assert content[1]["type"] == "image"
    assert _kinds(body) == [("messages[0].content[0]", "image")]
