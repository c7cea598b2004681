"""OpenAI Responses in provider fidelity: what AgentScope drops is kept on
parse (encrypted reasoning, annotations, every server-side item) and goes back
with the next turn where the API expects it.

The recorded responses are read from `../shared/provider-transcripts/
openai_responses/` (next to the repository) at run time; those tests skip when
it is absent. The rest use small responses written here after OpenAI's
documented shapes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentscope_proto import format, parse
from agentscope_proto.errors import ParseError, ProviderError
from agentscope_proto.parsing import StreamParser
from provider_schemas import client
from provider_schemas.scenarios import server_result, server_use
from transcripts import ROOT, load_events, missing, without_raw_input

from fidelity_helpers import kinds as _kinds
from fidelity_helpers import msg as _msg

TRANSCRIPTS = ROOT / "openai_responses"
needs_transcripts = pytest.mark.skipif(not TRANSCRIPTS.is_dir(), reason=missing(TRANSCRIPTS))
needs_sdks = pytest.mark.skipif(not client.available(), reason=client.MISSING_REASON)

# Items AgentScope reads itself; every other item is a server-side one.
_CORE = {"message", "reasoning", "function_call", "custom_tool_call"}


def _files(pattern: str) -> list[Path]:
    return sorted(TRANSCRIPTS.glob(pattern)) if TRANSCRIPTS.is_dir() else []


def _ids(paths: list[Path]) -> list[str]:
    return [path.name for path in paths]


_COMPLETE = _files("*.json")
_STREAMS = _files("*.events.jsonl")


def _load(name: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((TRANSCRIPTS / name).read_text())
    return result


def _provider(response: dict[str, Any], **options: Any) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = parse(
        "openai_responses", response, fidelity="provider", **options
    ).content
    return content


def _next_turn(content: list[dict[str, Any]], **options: Any) -> Any:
    """The conversation continued after an assistant turn holding `content`:
    its calls answered, then a new user question."""
    msgs: list[dict[str, Any]] = [
        {"name": "user", "role": "user", "content": "Question?"},
        {"name": "Friday", "role": "assistant", "content": content},
    ]
    calls = [block for block in content if block["type"] == "tool_use"]
    if calls:
        results = [
            {"type": "tool_result", "id": c["id"], "name": c["name"], "output": "done"}
            for c in calls
        ]
        msgs.append({"name": "system", "role": "system", "content": results})
    msgs.append({"name": "user", "role": "user", "content": "And then?"})
    return format("openai_responses", msgs, fidelity="provider", **options)


# -- every recorded response ---------------------------------------------------------------


@needs_transcripts
@pytest.mark.parametrize("path", _COMPLETE, ids=_ids(_COMPLETE))
def test_provider_parse_keeps_every_item(path: Path) -> None:
    response = _load(path.name)
    content = _provider(response)
    output = response["output"]
    server = [item for item in output if item.get("type") not in _CORE]
    kept = [block["raw"] for block in content if "raw" in block]
    assert kept == server
    annotations = [
        annotation
        for item in output
        if item.get("type") == "message"
        for part in item["content"]
        for annotation in part.get("annotations") or []
    ]
    assert [c for block in content for c in block.get("citations", [])] == annotations
    encrypted = [
        i["encrypted_content"]
        for i in output
        if i.get("type") == "reasoning" and i.get("encrypted_content")
    ]
    assert [b["encrypted_content"] for b in content if "encrypted_content" in b] == encrypted
    reasoning = {i["id"] for i in output if i.get("type") == "reasoning"}
    assert {b["reasoning_id"] for b in content if "reasoning_id" in b} == reasoning
    # A turn is never empty when the response held anything.
    assert bool(content) == bool(output)


@needs_transcripts
@pytest.mark.parametrize("path", _COMPLETE, ids=_ids(_COMPLETE))
def test_agentscope_fidelity_keeps_none_of_it(path: Path) -> None:
    response = _load(path.name)
    content = parse("openai_responses", response).content
    assert {block["type"] for block in content} <= {"text", "thinking", "tool_use"}
    for block in content:
        assert not {"citations", "reasoning_id", "encrypted_content", "raw"} & set(block)


@needs_transcripts
@pytest.mark.parametrize("path", _STREAMS, ids=_ids(_STREAMS))
def test_stream_agrees_with_the_complete_parse(path: Path) -> None:
    """The stream's final content is the complete parse of the items it streamed
    (`response.output_item.done`), in both fidelities nothing untyped is raised."""
    events = load_events(path)
    for fidelity in ("agentscope", "provider"):
        parser = StreamParser("openai_responses", fidelity=fidelity)
        try:
            for event in events:
                parser.feed(event)
            final = parser.finish()
        except (ParseError, ProviderError):
            assert any(event.get("type") in ("error", "response.failed") for event in events)
            return
    done = [e["item"] for e in events if e.get("type") == "response.output_item.done"]
    # The items, and the model the stream names (`response.created`).
    named = [e["response"]["model"] for e in events if "model" in e.get("response", {})]
    complete = _provider({"output": done, "model": named[0]} if named else {"output": done})
    assert without_raw_input(final.content) == complete


_OPENAI = [path for path in _COMPLETE if "-xai-" not in path.name]
_XAI = [path for path in _COMPLETE if "-xai-" in path.name]


@needs_transcripts
@pytest.mark.parametrize("path", _OPENAI, ids=_ids(_OPENAI))
def test_the_next_turn_carries_every_item_back(path: Path) -> None:
    response = _load(path.name)
    body = _next_turn(_provider(response))
    returned = [item for item in body["input"] if item.get("type") not in (None, "message")]
    server = [item for item in response["output"] if item.get("type") not in _CORE]
    # In output order, each once (a result never repeats its call's item).
    assert [item for item in returned if item in server] == server
    assert not [w for w in body.warnings if w.block_type.startswith("server_tool")]


@needs_transcripts
@pytest.mark.parametrize("path", _XAI, ids=_ids(_XAI))
def test_items_openai_refuses_are_dropped_or_narrowed_with_a_warning(path: Path) -> None:
    """xAI's own item shapes: what OpenAI's input schema cannot take is dropped
    or loses the keys it does not define, each with a warning."""
    response = _load(path.name)
    body = _next_turn(_provider(response))
    returned = [item for item in body["input"] if item.get("type") not in (None, "message")]
    server = [item for item in response["output"] if item.get("type") not in _CORE]
    changed = [item for item in server if item not in returned]
    warned = [w for w in body.warnings if w.block_type.startswith("server_tool")]
    assert len(warned) == len(changed)
    for item in returned:
        originals = [i for i in server if i.get("id") == item.get("id")]
        assert originals
        assert all(item[key] == originals[0][key] for key in item)


@needs_sdks
@needs_transcripts
def test_next_turn_bodies_validate() -> None:
    """Every recorded turn, given back, is a body OpenAI's own types accept."""
    bodies = [("openai_responses", dict(_next_turn(_provider(_load(p.name))))) for p in _COMPLETE]
    verdicts = client.validate_many(bodies)
    invalid = {
        p.name: [str(v) for v in found]
        for p, found in zip(_COMPLETE, verdicts, strict=True)
        if found
    }
    assert invalid == {}


# -- feature by feature ------------------------------------------------------------------


@needs_transcripts
def test_encrypted_reasoning_goes_back_before_the_message() -> None:
    response = _load("vercel-openai-openai-reasoning-encrypted-content.1.json")
    reasoning, message = response["output"]
    content = _provider(response)
    assert content[0]["encrypted_content"] == reasoning["encrypted_content"]
    assert content[0]["thinking"] == reasoning["summary"][0]["text"]
    body = _next_turn(content)["input"]
    assert body[1] == {
        "type": "reasoning",
        "id": reasoning["id"],
        "summary": reasoning["summary"],
        "encrypted_content": reasoning["encrypted_content"],
    }
    assert body[2]["role"] == "assistant"
    assert body[2]["content"][0]["text"] == message["content"][0]["text"]


@needs_transcripts
def test_web_search_and_its_citations_go_back_in_order() -> None:
    response = _load("vercel-openai-openai-web-search-tool.1.json")
    body = _next_turn(_provider(response))["input"]
    kinds = [item.get("type") or item["role"] for item in body]
    assert kinds == ["user"] + [item["type"] for item in response["output"][:-1]] + [
        "assistant",
        "user",
    ]
    annotations = response["output"][-1]["content"][0]["annotations"]
    assert body[-2]["content"][0]["annotations"] == annotations


@needs_transcripts
def test_a_server_item_is_one_block_and_an_output_item_a_result() -> None:
    content = _provider(_load("vercel-openai-openai-mcp-tool.1.json"))
    calls = [b for b in content if b.get("provider_type") == "mcp_call"]
    assert len(calls) == 1
    assert calls[0]["type"] == "server_tool_use"
    assert calls[0]["name"] == calls[0]["raw"]["name"]
    assert calls[0]["input"] == json.loads(calls[0]["raw"]["arguments"])
    assert "server_tool_result" not in {b["type"] for b in content}
    search = _provider({"output": [_SEARCH]})
    assert search[0]["input"] == {"action": _SEARCH["action"]}
    assert search[0]["name"] == "web_search"
    shell = _provider(_load("vercel-openai-openai-shell-container.1.json"))
    assert [b["type"] for b in shell] == ["server_tool_use", "server_tool_result", "text"]
    output = shell[1]["raw"]
    assert shell[1] == {
        "type": "server_tool_result",
        "tool_use_id": shell[0]["raw"]["call_id"],
        "provider_type": "shell_call_output",
        "output": output["output"],
        "is_error": False,
        "raw": output,
    }


@needs_transcripts
def test_a_turn_of_server_items_only_is_not_empty() -> None:
    response = _load("vercel-openai-openai-mcp-tool-approval.1.json")
    assert parse("openai_responses", response).content == []
    content = _provider(response)
    assert [b.get("provider_type") for b in content if b["type"] != "thinking"] == [
        "mcp_list_tools",
        "mcp_approval_request",
    ]


@needs_transcripts
def test_separate_messages_stay_separate_text_blocks() -> None:
    response = _load("vercel-openai-openai-phase.1.json")
    texts = [item["content"][0]["text"] for item in response["output"]]
    assert [b["text"] for b in _provider(response)] == texts
    events = load_events(TRANSCRIPTS / "vercel-openai-openai-phase.1.events.jsonl")
    parser = StreamParser("openai_responses", fidelity="provider")
    for event in events:
        parser.feed(event)
    assert len([b for b in parser.finish().content if b["type"] == "text"]) == 2


# -- documented shapes (no transcript needed) ---------------------------------------------

_REASONING = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [
        {"type": "summary_text", "text": "First."},
        {"type": "summary_text", "text": "Second."},
    ],
    "encrypted_content": "gAAAA-opaque",
}
_CALL = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "get_weather",
    "arguments": '{"city": "Paris"}',
    "status": "completed",
}
_SEARCH = {
    "type": "web_search_call",
    "id": "ws_1",
    "status": "completed",
    "action": {"type": "search", "query": "weather Paris"},
}


def _message(*texts: str) -> dict[str, Any]:
    parts = [{"type": "output_text", "text": t, "annotations": []} for t in texts]
    return {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": parts,
    }


def test_several_summaries_go_back_as_one_reasoning_item() -> None:
    content = _provider({"id": "resp_1", "output": [_REASONING, _SEARCH, _CALL]})
    assert [b["thinking"] for b in content if b["type"] == "thinking"] == ["First.", "Second."]
    body = _next_turn(content)
    assert body.body["input"][1] == _REASONING
    assert body.body["input"][2] == _SEARCH
    assert body.body["input"][3]["type"] == "function_call"
    assert body.body["input"][4]["type"] == "function_call_output"


def test_text_around_a_server_call_is_not_glued() -> None:
    first, second = _message("Searching."), _message("Found it.")
    content = _provider({"output": [first, _SEARCH, second]})
    assert [b["type"] for b in content] == ["text", "server_tool_use", "text"]
    body = _next_turn(content).body["input"]
    assert [item.get("type") or item["role"] for item in body[1:4]] == [
        "assistant",
        "web_search_call",
        "assistant",
    ]


def test_a_reasoning_item_whose_call_is_dropped_is_dropped_too() -> None:
    content = _provider({"output": [_REASONING, _CALL]})
    msgs: list[dict[str, Any]] = [
        {"name": "user", "role": "user", "content": "Weather?"},
        {"name": "Friday", "role": "assistant", "content": content},
        {"name": "user", "role": "user", "content": "Never mind."},
    ]
    body = format("openai_responses", msgs, fidelity="provider")
    assert [item.get("role") for item in body.body["input"]] == ["user", "user"]
    assert [w.block_type for w in body.warnings] == ["tool_use", "thinking"]


def test_other_providers_blocks_are_dropped_with_a_warning() -> None:
    content: list[dict[str, Any]] = [
        {"type": "thinking", "thinking": "Claude's.", "signature": "EqQB"},
        server_use("srvtoolu_1", "web_search", {"query": "x"}),
        server_result("web_search_tool_result", "srvtoolu_1", []),
        {"type": "grounding", "provider_type": "gemini", "sources": [], "queries": []},
        {
            "type": "text",
            "text": "Cited.",
            "citations": [{"type": "char_location", "cited_text": "x"}, _url_citation()],
        },
    ]
    body = _next_turn(content)
    assert body.body["input"][1] == {
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Cited.", "annotations": [_url_citation()]}],
    }
    assert [w.path for w in body.warnings] == [f"messages[1].content[{i}]" for i in range(5)]


def _url_citation() -> dict[str, Any]:
    return {
        "type": "url_citation",
        "url": "https://example.com",
        "title": "Example",
        "start_index": 0,
        "end_index": 6,
    }


def test_agentscope_fidelity_formats_as_before() -> None:
    content = _provider({"output": [_REASONING, _SEARCH, _message("Hi."), _CALL]})
    msgs: list[dict[str, Any]] = [
        {"name": "user", "role": "user", "content": "Question?"},
        {"name": "Friday", "role": "assistant", "content": content},
    ]
    body = format("openai_responses", msgs)
    assert body.body["input"][1:] == [
        {"role": "assistant", "content": [{"type": "output_text", "text": "Hi."}]},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
        },
    ]
    assert [w.message for w in body.warnings] == [
        f"Unsupported block type {kind} in the message, skipped."
        for kind in ("thinking", "thinking", "server_tool_use")
    ]


def test_structured_output_is_parsed_from_the_last_text() -> None:
    response = {"output": [_REASONING, _message('{"city": "Paris"}')]}
    for fidelity in ("agentscope", "provider"):
        parsed = parse("openai_responses", response, structured_output=True, fidelity=fidelity)
        assert parsed.structured_output == {"city": "Paris"}


_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("fidelity", ["agentscope", "provider"])
def test_a_response_schema_is_a_strict_json_schema_format(fidelity: str) -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    msgs = [{"name": "user", "role": "user", "content": "City?"}]
    body = format(
        "openai_responses",
        msgs,
        tools=tools,
        tool_choice="auto",
        response_schema=_SCHEMA,
        response_schema_name="City",
        fidelity=fidelity,
    )
    assert body.body["text"] == {
        "format": {"type": "json_schema", "name": "City", "schema": _SCHEMA, "strict": True}
    }
    # AgentScope leaves tools out with a structured model, and says so.
    assert "tools" not in body.body
    assert "tool_choice" not in body.body
    assert [w.path for w in body.warnings] == ["tools"]
    unnamed = format("openai_responses", msgs, response_schema=_SCHEMA, fidelity=fidelity)
    assert unnamed.body["text"]["format"]["name"] == "response"
    assert unnamed.warnings == []


@pytest.mark.parametrize("provider_type", [["web_search_call"], {"type": 1}, None, 7])
def test_a_malformed_server_block_is_dropped_not_a_crash(provider_type: Any) -> None:
    block = {"type": "server_tool_use", "id": "x", "name": "x", "input": {}, "raw": _SEARCH}
    body = _next_turn([{**block, "provider_type": provider_type}, {"type": "text", "text": "Hi."}])
    assert [item.get("type") for item in body.body["input"]] == [None, None, None]
    assert [w.block_type for w in body.warnings] == ["server_tool_use"]


@needs_sdks
def test_a_structured_output_body_validates() -> None:
    msgs = [{"name": "user", "role": "user", "content": "City?"}]
    bodies = [
        (
            "openai_responses",
            dict(format("openai_responses", msgs, response_schema=_SCHEMA, fidelity=fidelity)),
        )
        for fidelity in ("agentscope", "provider")
    ]
    assert client.validate_many(bodies) == [[], []]


# -- phase, logprobs, reasoning text, callers (documented shapes) ------------------------


def _phased(phase: str, *texts: str) -> dict[str, Any]:
    return {**_message(*texts), "phase": phase}


_LOGPROBS = [
    {"token": "Hi", "logprob": -0.25, "bytes": [72, 105], "top_logprobs": []},
    {"token": ".", "logprob": -0.5, "bytes": [46], "top_logprobs": []},
]


def test_a_message_phase_is_kept_and_goes_back_on_its_message() -> None:
    content = _provider(
        {"output": [_phased("commentary", "Looking."), _SEARCH, _phased("final_answer", "Done.")]}
    )
    assert [b.get("phase") for b in content] == ["commentary", None, "final_answer"]
    body = _next_turn(content)
    assert body.body["input"][1] == {
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Looking."}],
        "phase": "commentary",
    }
    assert body.body["input"][3]["phase"] == "final_answer"
    assert not body.warnings
    # Two phases side by side stay two messages; text of no phase joins none.
    two = _next_turn(
        [
            {"type": "text", "text": "a", "phase": "commentary"},
            {"type": "text", "text": "b", "phase": "final_answer"},
        ]
    ).body["input"]
    assert [(m.get("phase"), len(m["content"])) for m in two[1:3]] == [
        ("commentary", 1),
        ("final_answer", 1),
    ]
    assert "phase" not in _next_turn([{"type": "text", "text": "c"}]).body["input"][1]


def test_logprobs_are_kept_on_their_text_and_not_sent_back() -> None:
    message = _message("Hi.")
    message["content"][0]["logprobs"] = _LOGPROBS
    content = _provider({"output": [message]})
    assert content == [{"type": "text", "text": "Hi.", "logprobs": _LOGPROBS}]
    assert parse("openai_responses", {"output": [message]}).content == [
        {"type": "text", "text": "Hi."}
    ]
    body = _next_turn(content)
    assert body.body["input"][1]["content"] == [{"type": "output_text", "text": "Hi."}]
    assert not body.warnings


def _stream(events: list[dict[str, Any]]) -> Any:
    parser = StreamParser("openai_responses", fidelity="provider")
    for event in events:
        parser.feed(event)
    return parser.finish()


def test_streamed_logprobs_and_phase_are_kept() -> None:
    item = {"type": "message", "id": "msg_1", "role": "assistant", "phase": "final_answer"}
    events = [
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "content": []}},
        {
            "type": "response.content_part.added",
            "output_index": 0,
            "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": [], "logprobs": []},
        },
    ]
    for text, logprob in (("Hi", _LOGPROBS[0]), (".", _LOGPROBS[1])):
        events.append(
            {
                "type": "response.output_text.delta",
                "output_index": 0,
                "content_index": 0,
                "delta": text,
                "logprobs": [logprob],
            }
        )
    # Cut short before `response.output_item.done`: the deltas hold them all.
    assert _stream(events).content == [
        {"type": "text", "text": "Hi.", "logprobs": _LOGPROBS, "phase": "final_answer"}
    ]


_REASONING_TEXT = {
    "type": "reasoning",
    "id": "rs_2",
    "summary": [],
    "content": [{"type": "reasoning_text", "text": "The user wants the weather."}],
}


def test_reasoning_text_is_thinking_and_goes_back_as_reasoning_text() -> None:
    content = _provider({"output": [_REASONING_TEXT, _CALL]})
    assert content[0] == {
        "type": "thinking",
        "thinking": "The user wants the weather.",
        "reasoning_part": "reasoning_text",
        "reasoning_id": "rs_2",
    }
    body = _next_turn(content)
    assert body.body["input"][1] == _REASONING_TEXT
    # AgentScope reads summaries only.
    assert parse("openai_responses", {"output": [_REASONING_TEXT]}).content == []


def test_streamed_reasoning_text_is_thinking() -> None:
    start = {**_REASONING_TEXT, "content": []}
    events: list[dict[str, Any]] = [
        {"type": "response.output_item.added", "output_index": 0, "item": start}
    ]
    for piece in ("The user ", "wants the weather."):
        events.append(
            {
                "type": "response.reasoning_text.delta",
                "item_id": "rs_2",
                "output_index": 0,
                "content_index": 0,
                "delta": piece,
            }
        )
    content = _stream(events).content
    assert [(b["type"], b["thinking"]) for b in content] == [
        ("thinking", "The user wants the weather.")
    ]
    assert content == _provider({"output": [_REASONING_TEXT]})


def test_a_programs_call_keeps_its_caller_for_the_responses_api_only() -> None:
    caller = {"type": "program", "caller_id": "call_prog"}
    content = _provider({"output": [{**_CALL, "caller": caller}]})
    assert content[0]["caller"] == caller
    body = _next_turn(content)
    assert body.body["input"][1]["caller"] == caller
    # Claude's code execution is not the caller of this call: dropped, said.
    claude = format(
        "anthropic",
        [
            {"name": "user", "role": "user", "content": "Roll."},
            {"name": "Friday", "role": "assistant", "content": content},
            {
                "name": "system",
                "role": "system",
                "content": [{"type": "tool_result", "id": "call_1", "name": "f", "output": "4"}],
            },
        ],
        fidelity="provider",
    )
    assert "caller" not in claude.body["messages"][1]["content"][0]
    assert [w.block_type for w in claude.warnings] == ["tool_use"]
    # And Claude's caller does not reach the Responses API.
    theirs = [{**content[0], "caller": {"type": "code_execution_20250825", "tool_id": "s"}}]
    body = _next_turn(theirs)
    assert "caller" not in body.body["input"][1]
    assert [w.block_type for w in body.warnings] == ["tool_use"]


@pytest.mark.parametrize(
    "provider", ["openai", "anthropic", "gemini", "ollama", "deepseek", "dashscope"]
)
def test_phase_and_logprobs_stay_out_of_other_providers_bodies_silently(provider: str) -> None:
    message = _phased("final_answer", "Hi.")
    message["content"][0]["logprobs"] = _LOGPROBS
    content = _provider({"output": [message]})
    msgs = [
        _msg("user", "user", "Question?"),
        _msg("Friday", "assistant", content),
        _msg("user", "user", "And then?"),
    ]
    body = format(provider, msgs, fidelity="provider")
    text = json.dumps(body.body, default=str)
    assert "Hi." in text
    assert "final_answer" not in text
    assert "logprob" not in text
    assert body.warnings == []


def test_a_refusal_part_is_a_marked_text_block_and_goes_back_as_one() -> None:
    message = _message()
    message["content"] = [{"type": "refusal", "refusal": "I can't help with that."}]
    assert parse("openai_responses", {"output": [message]}).content == []
    content = _provider({"output": [message]})
    assert content == [{"type": "text", "text": "I can't help with that.", "refusal": True}]
    body = _next_turn(content)
    assert body.body["input"][1]["content"] == message["content"]
    assert not body.warnings
    events = [
        {"type": "response.output_item.added", "output_index": 0, "item": _message()},
        {
            "type": "response.content_part.added",
            "output_index": 0,
            "content_index": 0,
            "part": {"type": "refusal", "refusal": ""},
        },
    ]
    for piece in ("I can't ", "help with that."):
        events.append(
            {
                "type": "response.refusal.delta",
                "output_index": 0,
                "content_index": 0,
                "delta": piece,
            }
        )
    assert _stream(events).content == content


@needs_sdks
def test_phase_reasoning_text_and_caller_bodies_validate() -> None:
    content = _provider(
        {
            "output": [
                _REASONING_TEXT,
                {**_CALL, "caller": {"type": "program", "caller_id": "call_prog"}},
                _phased("commentary", "Checked."),
            ]
        }
    )
    content.append({"type": "text", "text": "I can't.", "refusal": True})
    assert client.validate("openai_responses", dict(_next_turn(content))) == []


# -- the provider-fidelity body (moved from test_fidelity.py) --------------------------


def test_openai_responses() -> None:
    audio = {
        "type": "audio",
        "source": {"type": "base64", "media_type": "audio/wav", "data": "UklGRg=="},
    }
    image = {"type": "image", "source": {"type": "url", "url": "https://x/cat.png"}}
    msgs = [_msg("user", "user", [{"type": "text", "text": "Hear."}, audio, image])]
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    body = format("openai_responses", msgs, tools=tools, fidelity="provider")
    parts = body["input"][0]["content"]
    assert parts[1]["type"] == "input_text"
    assert "input_audio omitted" in parts[1]["text"]
    assert parts[2]["detail"] == "auto"
    assert body["tools"][0]["strict"] is False
    assert _kinds(body) == [("input[0].content[1]", "input_audio")]
