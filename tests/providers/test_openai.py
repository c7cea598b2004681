"""The Chat Completions family (openai.py: OpenAI, and DeepSeek on the same
body and parsers) beyond AgentScope: citations from
`annotations`, reasoning sent back under the key it came from
(`reasoning_content` / vLLM's `reasoning`), structured output, and other
providers' server-tool blocks dropped with a warning.

Recorded responses come from ../shared/provider-transcripts/{openai,deepseek}/
(read at run time; those tests skip without it). None of them carries an
annotation: the citation fixtures below follow OpenAI's documented web-search
example (`message.annotations`, `url_citation`).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from agentscope_proto import StreamParser, parse
from agentscope_proto.cache import FormatCache
from agentscope_proto.formatting import format
from agentscope_proto.providers import PROVIDERS
from provider_schemas import client
from provider_schemas.golden import REQUESTS
from transcripts import ROOT, Transcript, count_parsed, count_raw, load_events, missing

from fidelity_helpers import TOOL_LOOP
from fidelity_helpers import call as _call
from fidelity_helpers import msg as _msg
from fidelity_helpers import result as _result

TRANSCRIPTS = ROOT
needs_transcripts = pytest.mark.skipif(not TRANSCRIPTS.is_dir(), reason=missing(TRANSCRIPTS))
needs_sdks = pytest.mark.skipif(not client.available(), reason=client.MISSING_REASON)

FIDELITIES = ("agentscope", "provider")
CHAT = ("openai", "deepseek")
TEXT = "Spain won Euro 2024 ([uefa.com](https://www.uefa.com/euro2024/))."
ANNOTATION = {
    "type": "url_citation",
    "url_citation": {
        "start_index": 20,
        "end_index": 65,
        "title": "UEFA EURO 2024",
        "url": "https://www.uefa.com/euro2024/",
    },
}


def _completion(message: dict[str, Any], finish: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1735732800,
        "model": "gpt-4o-search-preview",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30},
    }


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _cited() -> dict[str, Any]:
    return _completion({"role": "assistant", "content": TEXT, "annotations": [ANNOTATION]})


def _stream(provider: str, events: list[dict[str, Any]], fidelity: str) -> Any:
    parser = StreamParser(provider, fidelity=fidelity)
    for event in events:
        parser.feed(event)
    return parser.finish()


def _loop(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A user turn, the parsed assistant turn, and a result for each of its calls."""
    msgs = [
        {"name": "user", "role": "user", "content": "Weather in San Francisco?"},
        {"name": "Friday", "role": "assistant", "content": content},
    ]
    for block in content:
        if block["type"] == "tool_use":
            result = {"type": "tool_result", "id": block["id"], "name": block["name"]}
            msgs.append(
                {"name": "system", "role": "system", "content": [{**result, "output": "Sunny"}]}
            )
    return msgs


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((TRANSCRIPTS / name).read_text())
    return data


# -- citations ---------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", CHAT)
def test_annotations_become_citations_in_provider_fidelity(provider: str) -> None:
    parity = parse(provider, _cited())
    assert parity.content == [{"type": "text", "text": TEXT}]
    result = parse(provider, _cited(), fidelity="provider")
    assert result.content == [{"type": "text", "text": TEXT, "citations": [ANNOTATION]}]


def test_streamed_annotations_become_citations() -> None:
    events = [
        _chunk({"role": "assistant", "content": TEXT[:20]}),
        _chunk({"content": TEXT[20:]}),
        _chunk({"annotations": [ANNOTATION]}, "stop"),
    ]
    streamed = _stream("openai", events, "provider")
    assert streamed.content == parse("openai", _cited(), fidelity="provider").content
    assert _stream("openai", events, "agentscope").content == [{"type": "text", "text": TEXT}]


def test_citations_are_not_sent_back_and_need_no_warning() -> None:
    content = parse("openai", _cited(), fidelity="provider").content
    msgs = [*_loop(content), {"name": "user", "role": "user", "content": "Thanks."}]
    body = format("openai", msgs, fidelity="provider")
    assert body["messages"][1]["content"] == [{"type": "text", "text": TEXT}]
    assert body.warnings == []


# -- reasoning back under its key ---------------------------------------------------------------


REFUSAL = "I can't help with that."


def _next_turn(provider: str, content: list[dict[str, Any]]) -> Any:
    msgs = [
        _msg("user", "user", "Question?"),
        _msg("Friday", "assistant", content),
        _msg("user", "user", "Why not?"),
    ]
    return format(provider, msgs, fidelity="provider", request=REQUESTS[provider])


def test_a_refusal_is_a_marked_text_block_and_goes_back_as_one() -> None:
    response = _completion({"role": "assistant", "content": None, "refusal": REFUSAL})
    assert parse("openai", copy.deepcopy(response)).content == []
    content = parse("openai", response, fidelity="provider").content
    assert content == [{"type": "text", "text": REFUSAL, "refusal": True}]
    body = _next_turn("openai", content)
    assert body["messages"][1]["content"] == [{"type": "refusal", "refusal": REFUSAL}]
    assert body.warnings == []
    # Elsewhere it is the text the model said, without the mark (and without a word).
    claude = _next_turn("anthropic", content)
    assert claude["messages"][1]["content"] == [{"type": "text", "text": REFUSAL}]
    assert claude.warnings == []


def test_a_streamed_refusal_is_kept() -> None:
    events = [_chunk({"role": "assistant", "refusal": "I can't "}), _chunk({"refusal": "help."})]
    events.append(_chunk({}, "stop"))
    final = _stream("openai", events, "provider")
    assert final.content == [{"type": "text", "text": "I can't help.", "refusal": True}]


@needs_sdks
def test_a_refusal_body_validates() -> None:
    content = [{"type": "text", "text": REFUSAL, "refusal": True}]
    assert client.validate("openai", dict(_next_turn("openai", content))) == []


# -- token logprobs ----------------------------------------------------------------------------


def _token(token: str, logprob: float) -> dict[str, Any]:
    """One `ChatCompletionTokenLogprob`, with its alternatives (`top_logprobs: 1`)."""
    raw = list(token.encode())
    return {
        "token": token,
        "logprob": logprob,
        "bytes": raw,
        "top_logprobs": [{"token": token, "logprob": logprob, "bytes": raw}],
    }


LOGPROBS = [_token("Hello", -0.0001), _token("!", -0.25), _token(" Hi", -1.5)]
FAMILY = ("openai", "deepseek", "moonshot", "xai", "volcengine", "zhipu", "minimax")


def _with_logprobs(message: dict[str, Any], logprobs: dict[str, Any]) -> dict[str, Any]:
    response = _completion(message)
    response["choices"][0]["logprobs"] = logprobs
    return response


@pytest.mark.parametrize("provider", FAMILY)
def test_logprobs_stay_on_the_text_complete_and_streamed(provider: str) -> None:
    response = _with_logprobs(
        {"role": "assistant", "content": "Hello! Hi"}, {"content": LOGPROBS, "refusal": None}
    )
    kept = [{"type": "text", "text": "Hello! Hi", "logprobs": LOGPROBS}]
    assert parse(provider, copy.deepcopy(response), fidelity="provider").content == kept
    # Streamed: each chunk's `logprobs.content` holds its tokens' entries.
    events = [
        _chunk({"role": "assistant", "content": "Hello"}),
        _chunk({"content": "!"}),
        _chunk({"content": " Hi"}, "stop"),
    ]
    for event, token in zip(events, LOGPROBS, strict=True):
        event["choices"][0]["logprobs"] = {"content": [token], "refusal": None}
    events.append({"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 3}})
    assert _stream(provider, events, "provider").content == kept


def test_logprobs_are_agentscopes_to_drop_in_its_fidelity() -> None:
    response = _with_logprobs({"role": "assistant", "content": "Hello! Hi"}, {"content": LOGPROBS})
    assert parse("openai", response).content == [{"type": "text", "text": "Hello! Hi"}]
    events = [_chunk({"role": "assistant", "content": "Hello! Hi"}, "stop")]
    events[0]["choices"][0]["logprobs"] = {"content": LOGPROBS}
    assert _stream("openai", events, "agentscope").content == [
        {"type": "text", "text": "Hello! Hi"}
    ]


def test_a_refusals_logprobs_stay_on_the_refusal() -> None:
    tokens = [_token("I can't", -0.1), _token(" help with that.", -0.2)]
    response = _with_logprobs(
        {"role": "assistant", "content": None, "refusal": REFUSAL},
        {"content": None, "refusal": tokens},
    )
    content = parse("openai", response, fidelity="provider").content
    assert content == [{"type": "text", "text": REFUSAL, "refusal": True, "logprobs": tokens}]
    events = [_chunk({"role": "assistant", "refusal": "I can't"}), _chunk({"refusal": " help"})]
    for event, token in zip(events, tokens, strict=True):
        event["choices"][0]["logprobs"] = {"content": None, "refusal": [token]}
    streamed = _stream("openai", events, "provider").content
    refused = {"type": "text", "text": "I can't help", "refusal": True, "logprobs": tokens}
    assert streamed == [refused]


def test_logprobs_are_never_sent_back() -> None:
    """No request reads logprobs: every provider's body goes without them,
    and without a warning (the text goes)."""
    response = _with_logprobs({"role": "assistant", "content": "Hello! Hi"}, {"content": LOGPROBS})
    content = parse("openai", response, fidelity="provider").content
    for provider in PROVIDERS:
        body = _next_turn(provider, content)
        assert "logprob" not in json.dumps(dict(body)), provider
        assert body.warnings == [], provider


def _thinking_call(key: str) -> dict[str, Any]:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "weather", "arguments": '{"city": "SF"}'},
    }
    message = {"role": "assistant", "content": None, key: "Use the tool.", "tool_calls": [call]}
    return _completion(message, "tool_calls")


@pytest.mark.parametrize("key", ["reasoning_content", "reasoning"])
def test_the_thinking_block_records_where_reasoning_came_from(key: str) -> None:
    thinking = parse("openai", _thinking_call(key), fidelity="provider").content[0]
    assert thinking == {"type": "thinking", "thinking": "Use the tool.", "reasoning_field": key}
    assert "reasoning_field" not in parse("openai", _thinking_call(key)).content[0]


@pytest.mark.parametrize("provider", CHAT)
@pytest.mark.parametrize("key", ["reasoning_content", "reasoning"])
def test_reasoning_goes_back_under_its_key_in_a_tool_loop(provider: str, key: str) -> None:
    content = parse(provider, _thinking_call(key), fidelity="provider").content
    body = format(provider, _loop(content), fidelity="provider")
    assistant = body["messages"][1]
    assert assistant[key] == "Use the tool."
    other = "reasoning" if key == "reasoning_content" else "reasoning_content"
    assert other not in assistant
    assert assistant["tool_calls"][0]["id"] == "call_1"
    assert not [w for w in body.warnings if w.block_type == "thinking"]


def test_agentscope_fidelity_keeps_agentscopes_reasoning_rules() -> None:
    content = parse("openai", _thinking_call("reasoning"), fidelity="provider").content
    openai = format("openai", _loop(content))
    assert "reasoning" not in openai["messages"][1]
    assert [w.block_type for w in openai.warnings] == ["thinking"]
    deepseek = format("deepseek", _loop(content))
    assert deepseek["messages"][1]["reasoning_content"] == "Use the tool."


def test_thinking_of_another_provider_is_still_dropped_for_openai() -> None:
    content = [
        {"type": "thinking", "thinking": "Claude's.", "signature": "sig"},
        {"type": "tool_use", "id": "call_1", "name": "weather", "input": {}},
    ]
    body = format("openai", _loop(content), fidelity="provider")
    assert "reasoning_content" not in body["messages"][1]
    assert "reasoning" not in body["messages"][1]
    assert [w.path for w in body.warnings if w.block_type == "thinking"] == [
        "messages[1].content[0]"
    ]


@needs_transcripts
@pytest.mark.parametrize("streamed", [False, True])
def test_deepseek_tool_loop_from_the_recording_sends_reasoning_back(streamed: bool) -> None:
    name = "deepseek/vercel-deepseek-deepseek-tool-call"
    if streamed:
        result = _stream("deepseek", load_events(TRANSCRIPTS / f"{name}.events.jsonl"), "provider")
    else:
        result = parse("deepseek", _load(f"{name}.json"), fidelity="provider")
    thinking = result.content[0]
    assert thinking["reasoning_field"] == "reasoning_content"
    body = format("deepseek", _loop(result.content), fidelity="provider")
    assert body["messages"][1]["reasoning_content"] == thinking["thinking"]
    assert body["messages"][1]["tool_calls"]


@needs_transcripts
def test_vllm_style_reasoning_from_the_recording() -> None:
    result = parse("openai", _load("openai/vercel-groq-groq-reasoning.json"), fidelity="provider")
    assert result.content[0]["reasoning_field"] == "reasoning"
    msgs = [*_loop(result.content), {"name": "user", "role": "user", "content": "And?"}]
    body = format("openai", msgs, fidelity="provider")
    assert body["messages"][1]["reasoning"] == result.content[0]["thinking"]


# -- other providers' blocks -------------------------------------------------------------------

FOREIGN = [
    {"type": "text", "text": "Computing."},
    {
        "type": "server_tool_use",
        "id": "code_0",
        "name": "code_execution",
        "input": {"language": "PYTHON", "code": "print(1)"},
        "provider_type": "executableCode",
        "raw": {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
    },
    {
        "type": "server_tool_result",
        "tool_use_id": "code_0",
        "provider_type": "codeExecutionResult",
        "output": {"outcome": "OUTCOME_OK", "output": "1\n"},
        "is_error": False,
        "raw": {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}},
    },
    {
        "type": "grounding",
        "provider_type": "groundingMetadata",
        "sources": [],
        "queries": [],
        "raw": {},
    },
]


@pytest.mark.parametrize("provider", CHAT)
def test_server_tool_blocks_of_other_providers_are_dropped_with_a_warning(provider: str) -> None:
    msgs = [*_loop(copy.deepcopy(FOREIGN)), {"name": "user", "role": "user", "content": "Ok."}]
    body = format(provider, msgs, fidelity="provider")
    assert "print(1)" not in json.dumps(body["messages"])
    warned = [(w.path, w.block_type) for w in body.warnings]
    assert warned == [
        ("messages[1].content[1]", "server_tool_use"),
        ("messages[1].content[2]", "server_tool_result"),
    ]
    # AgentScope fidelity: the unknown kinds AgentScope skips, each with its warning.
    parity = format(provider, msgs)
    assert [w.block_type for w in parity.warnings] == [
        "server_tool_use",
        "server_tool_result",
        "grounding",
    ]


@needs_sdks
def test_provider_fidelity_bodies_validate() -> None:
    bodies = []
    for provider in CHAT:
        for content in (
            parse(provider, _cited(), fidelity="provider").content,
            parse(provider, _thinking_call("reasoning_content"), fidelity="provider").content,
            copy.deepcopy(FOREIGN),
        ):
            msgs = [*_loop(content), {"name": "user", "role": "user", "content": "Ok."}]
            body = format(provider, msgs, fidelity="provider", request=REQUESTS[provider])
            bodies.append((provider, dict(body)))
    verdicts = client.validate_many(bodies)
    for (provider, body), violations in zip(bodies, verdicts, strict=True):
        # OpenAI's own schema has no reasoning key: a block carries one only when
        # an OpenAI-compatible server (Kimi, vLLM...) sent it, and that server reads it.
        sent = [f"$.messages[1].{key}" for key in ("reasoning_content",) if key in str(body)]
        assert [v.path for v in violations] == (sent if provider == "openai" else [])


# -- structured output -----------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "temperature": {"type": "number"}},
    "required": ["city", "temperature"],
    "additionalProperties": False,
}
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
USER = [{"name": "user", "role": "user", "content": "Weather in Paris, as JSON."}]


@pytest.mark.parametrize("provider", CHAT)
@pytest.mark.parametrize("fidelity", FIDELITIES)
def test_structured_output_request(provider: str, fidelity: str) -> None:
    body = format(
        provider,
        USER,
        tools=TOOLS,
        tool_choice="auto",
        response_schema=SCHEMA,
        response_schema_name="Weather",
        fidelity=fidelity,
    )
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Weather", "schema": SCHEMA, "strict": True},
    }
    assert "tools" not in body
    assert "tool_choice" not in body
    assert [w.block_type for w in body.warnings] == ["tool"]
    unnamed = format(provider, USER, response_schema=SCHEMA, fidelity=fidelity)
    assert unnamed["response_format"]["json_schema"]["name"] == "response"
    assert unnamed.warnings == []


@needs_sdks
def test_structured_output_bodies_validate() -> None:
    bodies = [
        (
            provider,
            dict(
                format(
                    provider,
                    USER,
                    response_schema=SCHEMA,
                    fidelity="provider",
                    request=REQUESTS[provider],
                )
            ),
        )
        for provider in CHAT
    ]
    assert client.validate_many(bodies) == [[], []]


@pytest.mark.parametrize("provider", CHAT)
def test_structured_output_is_the_json_content_in_provider_fidelity(provider: str) -> None:
    text = '{"city": "Paris", "temperature": 22.5}'
    response = _completion({"role": "assistant", "content": text})
    result = parse(provider, response, structured_output=True, fidelity="provider")
    assert result.structured_output == {"city": "Paris", "temperature": 22.5}
    assert result.content == [{"type": "text", "text": text}]
    # AgentScope fidelity: the parity result (no `message.parsed` in the response).
    assert parse(provider, response, structured_output=True).structured_output is None
    # Not asked for: none.
    assert parse(provider, response, fidelity="provider").structured_output is None


def test_structured_output_falls_back_to_the_tool_call_as_agentscope() -> None:
    response = _thinking_call("reasoning_content")
    result = parse("openai", response, structured_output=True, fidelity="provider")
    assert result.structured_output == {"city": "SF"}
    plain = _completion({"role": "assistant", "content": "not json"})
    assert (
        parse("openai", plain, structured_output=True, fidelity="provider").structured_output
        is None
    )


def test_streamed_structured_output_agrees_with_the_complete_one() -> None:
    text = '{"city": "Paris", "temperature": 22.5}'
    events = [_chunk({"content": text[:12]}), _chunk({"content": text[12:]}, "stop")]
    parser = StreamParser("openai", structured_output=True, fidelity="provider")
    for event in events:
        parser.feed(event)
    complete = parse(
        "openai",
        _completion({"role": "assistant", "content": text}),
        structured_output=True,
        fidelity="provider",
    )
    assert parser.finish().structured_output == complete.structured_output


# -- every recorded transcript -----------------------------------------------------------------


@needs_transcripts
@pytest.mark.parametrize("folder", CHAT)
@pytest.mark.parametrize("fidelity", FIDELITIES)
def test_complete_and_streamed_recordings_agree(folder: str, fidelity: str) -> None:
    """Where a response was recorded both ways, the same blocks come out (the
    recordings are separate calls: compared by kind, and thinking's origin)."""
    pairs = 0
    for path in sorted((TRANSCRIPTS / folder).glob("*.json")):
        events = path.with_name(path.name[: -len(".json")] + ".events.jsonl")
        if not events.exists():
            continue
        pairs += 1
        complete = parse(folder, path.read_text(), fidelity=fidelity)
        streamed = _stream(folder, load_events(TRANSCRIPTS / f"{folder}/{events.name}"), fidelity)
        shape = [(b["type"], b.get("reasoning_field")) for b in complete.content]
        assert [(b["type"], b.get("reasoning_field")) for b in streamed.content] == shape, path
    assert pairs


@needs_transcripts
@pytest.mark.parametrize("fidelity", FIDELITIES)
def test_every_chat_transcript_parses(fidelity: str) -> None:
    for folder in CHAT:
        for path in sorted((TRANSCRIPTS / folder).iterdir()):
            if path.suffix == ".json":
                parse(folder, path.read_text(), fidelity=fidelity)
            elif path.name.endswith(".events.jsonl"):
                _stream(folder, load_events(TRANSCRIPTS / f"{folder}/{path.name}"), fidelity)
            else:
                parser = StreamParser(folder, fidelity=fidelity)
                parser.feed_bytes(path.read_bytes())
                parser.finish()


def test_the_transcript_counter_finds_every_citation_kept(tmp_path: Path) -> None:
    complete = tmp_path / "cited.json"
    complete.write_text(json.dumps(_cited()))
    stream = tmp_path / "cited.events.jsonl"
    events = [_chunk({"content": TEXT}), _chunk({"annotations": [ANNOTATION, ANNOTATION]}, "stop")]
    stream.write_text("".join(json.dumps(event) + "\n" for event in events))
    for transcript, cited in (
        (Transcript("openai", complete, "json"), 1),
        (Transcript("openai", stream, "events"), 2),
    ):
        assert count_raw(transcript) == {"citation": cited}
        assert count_parsed(transcript.run("provider").content) == count_raw(transcript)


def test_a_format_cache_keeps_the_fidelities_apart() -> None:
    """One cache, both fidelities, in turn: each body as without a cache."""
    cache = FormatCache()
    thinking = parse("deepseek", _thinking_call("reasoning"), fidelity="provider").content
    for provider, content in [
        ("openai", thinking),
        ("deepseek", thinking),
        ("gemini", copy.deepcopy(FOREIGN)),
        ("openai", copy.deepcopy(FOREIGN)),
    ]:
        msgs = [*_loop(content), {"name": "user", "role": "user", "content": "Ok."}]
        for fidelity in [*FIDELITIES, *FIDELITIES]:
            plain = format(provider, msgs, fidelity=fidelity)
            cached = format(provider, msgs, fidelity=fidelity, cache=cache)
            assert dict(cached) == dict(plain), (provider, fidelity)
            assert list(cached.warnings) == list(plain.warnings), (provider, fidelity)


# -- the provider-fidelity body (moved from test_fidelity.py) --------------------------


def test_openai_chat_and_deepseek() -> None:
    body = format("openai", TOOL_LOOP, fidelity="provider")
    assert body["messages"][1]["content"] == [{"type": "text", "text": "Checking."}]
    tools = [m for m in body["messages"] if m["role"] == "tool"]
    assert [sorted(m) for m in tools] == [["content", "role", "tool_call_id"]] * 2
    reasoning = [
        _msg("user", "user", "Hi"),
        _msg("Friday", "assistant", [{"type": "thinking", "thinking": "Plan."}, _call("c1")]),
        _result("c1", "Sunny"),
    ]
    deepseek = format("deepseek", reasoning, fidelity="provider")
    assert deepseek["messages"][1]["reasoning_content"] == "Plan."
    assert "name" not in deepseek["messages"][2]
