"""Nothing lost in translation: every ordered pair of registered providers.

A response of provider A is parsed in provider fidelity, its message goes
into the next request (the user's question, A's turn, a result for each of
its tool calls), and that request is formatted for provider B in provider
fidelity. For every pair, on real recorded responses (../shared, skipped
where absent), on a response of each provider's own shape written here, and
on the provider-fidelity scenarios (conversations that already crossed
providers):

- a reasoning signature reaches B only when B issued it, and the model B's
  request calls issued it (the next request of A's own conversation calls the
  model that answered; B's calls the model of `REQUESTS`), and then
  unchanged; each one B may not take is a warning on its block;
- every tool-call id in B's body is one B's API takes, and each call keeps
  its result (the same id on both, none dropped);
- a cache marker (`cache_control`, its TTL included) reaches B as it is
  where B's API documents them (Claude), else none does, each with a warning;
- B's body validates on B's request schema (tests/provider_schemas, when its
  venv is there).

Providers join by registering (`PROVIDERS`): a Chat Completions family
member as a source through the family's response shape, any other by a
response of its own in `_RESPONSES` (a test says which one lacks it).
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest

from agentscope_proto import from_dict, to_dict
from agentscope_proto._engine.body import body_to_json
from agentscope_proto._generated.agentscope.message.v1.message_pb2 import Msg
from agentscope_proto.cache import FormatCache
from agentscope_proto.errors import ParseError, ProviderError
from agentscope_proto.formatting import FormattedBody, format
from agentscope_proto.parsing import parse
from agentscope_proto.providers import PROVIDERS, get_provider
from agentscope_proto.providers._between import SIGNED_MODEL, issuers, mapped_id, same_model
from agentscope_proto.providers._provider import ProviderFidelity
from agentscope_proto.providers.openai import ChatCompletions
from provider_schemas import client
from provider_schemas.golden import REQUESTS
from provider_schemas.scenarios import SCENARIOS
from transcripts import MISSING_REASON, ROOT, transcripts

_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
_ARGS = '{"city": "Paris"}'

# -- a response of each provider's shape, signed where the provider signs ----------

_ANTHROPIC_SIGNATURE = "EqQBCkYIBxgCKkDgrid+sig/Anthropic=="
_ANTHROPIC_REDACTED = "EmwKAhgBEgyRedacted+Grid/Anthropic="
_GEMINI_TEXT_SIGNATURE = base64.b64encode(b"gemini text signature \xff").decode("ascii")
_GEMINI_CALL_SIGNATURE = base64.b64encode(b"gemini call signature \xfe\xff" * 4).decode("ascii")
_RESPONSES_ENCRYPTED = "gAAAAABgrid-encrypted-reasoning-of-openai=="

_CHAT_RESPONSE = {
    "id": "chatcmpl-grid",
    "object": "chat.completion",
    "created": 1,
    "model": "grid-model",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Checking.",
                "reasoning_content": "The user wants the weather: call the tool.",
                "tool_calls": [
                    {
                        # Kimi's id shape: a dot and a colon, which Claude refuses.
                        "id": "functions.get_weather:0",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": _ARGS},
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
}

_RESPONSES: dict[str, dict[str, Any]] = {
    "anthropic": {
        "id": "msg_grid",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [
            {
                "type": "thinking",
                "thinking": "The user wants the weather.",
                "signature": _ANTHROPIC_SIGNATURE,
            },
            {"type": "redacted_thinking", "data": _ANTHROPIC_REDACTED},
            {"type": "text", "text": "Checking."},
            {
                "type": "tool_use",
                "id": "toolu_01GridCall",
                "name": "get_weather",
                "input": {"city": "Paris"},
            },
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 12, "output_tokens": 7},
    },
    "gemini": {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": "Checking.", "thoughtSignature": _GEMINI_TEXT_SIGNATURE},
                        {
                            "functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
                            "thoughtSignature": _GEMINI_CALL_SIGNATURE,
                        },
                    ],
                },
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 7},
        "modelVersion": "gemini-3-pro-preview",
    },
    "openai_responses": {
        "id": "resp_grid",
        "object": "response",
        "status": "completed",
        "model": "gpt-5",
        "output": [
            {
                "type": "reasoning",
                "id": "rs_grid",
                "summary": [{"type": "summary_text", "text": "Call the weather tool."}],
                "encrypted_content": _RESPONSES_ENCRYPTED,
            },
            {
                "type": "function_call",
                "id": "fc_grid",
                "call_id": "call_grid",
                "name": "get_weather",
                "arguments": _ARGS,
                "status": "completed",
            },
        ],
        "usage": {"input_tokens": 12, "output_tokens": 7, "total_tokens": 19},
    },
    "dashscope": {
        "request_id": "grid",
        "output": {
            "choices": [
                {
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": [{"text": "Checking."}],
                        "reasoning_content": "Call the tool.",
                        "tool_calls": [
                            {
                                "id": "call_dashscope_grid",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": _ARGS},
                            }
                        ],
                    },
                }
            ]
        },
        "usage": {"input_tokens": 12, "output_tokens": 7},
    },
    "ollama": {
        "model": "qwen3",
        "created_at": "2026-11-27T00:00:00Z",
        "message": {
            "role": "assistant",
            "content": "Checking.",
            "thinking": "Call the tool.",
            "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}],
        },
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": 12,
        "eval_count": 7,
    },
}


def _own_response(provider: str) -> dict[str, Any] | None:
    """A response of `provider`'s shape: its own, else the Chat Completions
    family's when it is a member."""
    if provider in _RESPONSES:
        return _RESPONSES[provider]
    if isinstance(get_provider(provider).variant("provider"), ChatCompletions):
        return _CHAT_RESPONSE
    return None


# -- the sources ------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """The messages of a next request: the caller's, with the turn whose blocks
    are checked at `turn` (None: every message's blocks are)."""

    name: str
    msgs: tuple[Msg | dict[str, Any], ...]
    tools: tuple[dict[str, Any], ...] | None
    turn: int | None
    # The provider that answered, and the model its response named.
    provider: str | None = None
    model: str | None = None


def _results(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    calls = [block for block in content if block.get("type") == "tool_use"]
    return [
        {
            "name": "system",
            "role": "system",
            "content": [
                {"type": "tool_result", "id": c["id"], "name": c["name"], "output": "Sunny."}
            ],
        }
        for c in calls
    ]


def _next_request(name: str, provider: str, msg: Msg, content: list[dict[str, Any]]) -> Source:
    question = {"name": "user", "role": "user", "content": "Weather in Paris?"}
    after = _results(content) or [{"name": "user", "role": "user", "content": "Go on."}]
    models = [block[SIGNED_MODEL] for block in content if SIGNED_MODEL in block]
    model = models[0] if models else None
    return Source(name, (question, msg, *after), (_TOOL,), 1, provider, model)


def _signed_or_calls(content: list[dict[str, Any]]) -> bool:
    return any(issuers(block) or block.get("type") == "tool_use" for block in content)


@cache
def _own_sources() -> tuple[Source, ...]:
    found = []
    for provider in PROVIDERS:
        response = _own_response(provider)
        if response is not None:
            result = parse(provider, response, fidelity="provider")
            found.append(_next_request(f"{provider}:own", provider, result.msg, result.content))
    return tuple(found)


@cache
def _recorded_sources() -> tuple[Source, ...]:
    """Each recorded response or stream whose parse carries a signature or a
    tool call (a provider's error bodies and the like left out)."""
    found = []
    for transcript in transcripts():
        try:
            result = transcript.run("provider")
        except (ParseError, ProviderError):
            continue  # error bodies and the like: test_transcripts covers them
        if _signed_or_calls(result.content):
            found.append(
                _next_request(transcript.name, transcript.provider, result.msg, result.content)
            )
    return tuple(found)


_HOUR = {"type": "ephemeral", "ttl": "1h"}
_FIVE_MINUTES = {"type": "ephemeral"}
# Cache breakpoints as Claude documents them (system, a long document, a tool
# result), one with a TTL.
_CACHED = (
    {
        "name": "system",
        "role": "system",
        "content": [{"type": "text", "text": "You are Friday.", "cache_control": _HOUR}],
    },
    {
        "name": "user",
        "role": "user",
        "content": [{"type": "text", "text": "A long report...", "cache_control": _FIVE_MINUTES}],
    },
    {
        "name": "Friday",
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "toolu_01Cache", "name": "get_weather", "input": {}},
        ],
    },
    {
        "name": "system",
        "role": "system",
        "content": [
            {
                "type": "tool_result",
                "id": "toolu_01Cache",
                "name": "get_weather",
                "output": "Sunny.",
                "cache_control": _FIVE_MINUTES,
            }
        ],
    },
    {"name": "user", "role": "user", "content": "And tomorrow?"},
)


def _scenario_sources() -> tuple[Source, ...]:
    return (
        *(
            Source(f"scenario:{name}", tuple(msgs), tuple(tools) if tools else None, None)
            for name, (msgs, tools) in SCENARIOS.items()
        ),
        Source("cache markers", _CACHED, (_TOOL,), None),
        Source("cache markers (Msg)", tuple(from_dict(m) for m in _CACHED), (_TOOL,), None),
    )


# -- the checks ------------------------------------------------------------------------


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, str):
        yield value


def _blocks(source: Source) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(message index, block index, block dict) of the blocks checked."""
    for index, msg in enumerate(source.msgs):
        if source.turn is not None and index != source.turn:
            continue
        content = to_dict(msg)["content"] if isinstance(msg, Msg) else msg["content"]
        if isinstance(content, list):
            for number, block in enumerate(content):
                yield index, number, block


def _calls_and_results(body: dict[str, Any]) -> tuple[Counter[str], Counter[str]]:
    """The tool calls and tool results of a body, each by its call id (by the
    tool's name where the API pairs them by name: Ollama, Gemini without ids)."""
    calls: Counter[str] = Counter()
    results: Counter[str] = Counter()

    def walk(value: Any) -> None:
        if isinstance(value, list):
            for item in value:
                walk(item)
            return
        if not isinstance(value, dict):
            return
        kind = value.get("type")
        if kind == "tool_use":
            calls[value["id"]] += 1
        elif kind == "tool_result":
            results[value["tool_use_id"]] += 1
        elif kind == "function_call":
            calls[value["call_id"]] += 1
        elif kind == "function_call_output":
            results[value["call_id"]] += 1
        for call in value.get("tool_calls") or ():
            calls[call.get("id") or call["function"]["name"]] += 1
        if value.get("role") == "tool":
            results[value.get("tool_call_id") or value.get("tool_name") or ""] += 1
        for key, into in (("function_call", calls), ("function_response", results)):
            part = value.get(key)
            if isinstance(part, dict):
                # Gemini pairs them by name (AgentScope sends no call id).
                into[part["name"]] += 1
        for key, item in value.items():
            if key not in ("function_call", "function_response", "tool_calls"):
                walk(item)

    walk(body)
    return calls, results


def _check(source: Source, target: str, body: FormattedBody) -> None:
    """The guarantees of one (source, target) pair; an AssertionError names
    the pair and what broke."""
    where = f"{source.name} -> {target}"
    called = _request(source, target)["model"]
    leaves = set(_leaves(json.loads(body_to_json(body))))
    warned = [w.path for w in body.warnings]
    sent_calls = 0
    for index, number, block in _blocks(source):
        at = f"messages[{index}].content[{number}]"
        issued = block.get(SIGNED_MODEL)
        for key, issuer in issuers(block).items():
            value = block[key]
            if issuer == target and (issued is None or same_model(issued, called)):
                # Unless the body pass dropped such a block whole, with a
                # warning (a reasoning item no output follows, a call nothing
                # answers): its paths point into the body, not the messages.
                given = value in leaves or any(
                    w.block_type == block["type"] and w.message.startswith("dropped")
                    for w in body.warnings
                )
                assert given, f"{where}: {at}.{key} ({issuer}'s) not given back"
            else:
                assert value not in leaves, (
                    f"{where}: {at}.{key} ({issuer}'s, {issued}'s) reached {target} ({called})"
                )
                assert any(path.startswith(at) for path in warned), (
                    f"{where}: {at}.{key} ({issuer}'s) dropped without a warning"
                )
        if "cache_control" in block:
            _check_cache_marker(where, target, block["cache_control"], body, at)
        if block.get("type") == "tool_use":
            sent_calls += 1
    calls, results = _calls_and_results(dict(body))
    assert not results - calls, f"{where}: results {dict(results - calls)} answer no call"
    if source.turn is not None:
        # Every call answered: none dropped, each with its result.
        assert calls == results, f"{where}: calls {dict(calls)} answered by {dict(results)}"
        assert sum(calls.values()) == sent_calls, f"{where}: a tool call was lost"
    rule = get_provider(target).variant("provider")
    assert isinstance(rule, ProviderFidelity)
    if rule.call_ids is not None:
        refused = [i for i in calls if not rule.call_ids.valid(i)]
        assert not refused, f"{where}: ids {target} refuses: {refused}"


def _markers(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        if "cache_control" in value:
            yield value["cache_control"]
        for item in value.values():
            yield from _markers(item)
    elif isinstance(value, list):
        for item in value:
            yield from _markers(item)


def _check_cache_marker(where: str, target: str, marker: Any, body: FormattedBody, at: str) -> None:
    """Claude gets a cache marker as it is (its TTL included); any other
    provider none, with a warning."""
    markers = list(_markers(json.loads(body_to_json(body))))
    variant = get_provider(target).variant("provider")
    assert isinstance(variant, ProviderFidelity)
    if variant.cache_markers:
        assert marker in markers, f"{where}: {at}.cache_control not kept"
    else:
        assert markers == [], f"{where}: cache markers reached {target}"
        paths = [w.path for w in body.warnings]
        assert f"{at}.cache_control" in paths or at in paths, f"{where}: {at} marker not warned"


def _request(source: Source, target: str) -> dict[str, Any]:
    """The request parameters of `source`'s next request for `target`: the
    model that answered where `target` answered it (the conversation goes on
    with its model), else `target`'s model in `REQUESTS`."""
    if source.provider == target and source.model is not None:
        return {**REQUESTS[target], "model": source.model}
    return REQUESTS[target]


def _format(source: Source, target: str) -> FormattedBody:
    return format(
        target,
        list(source.msgs),
        tools=list(source.tools) if source.tools else None,
        fidelity="provider",
        request=_request(source, target),
    )


_TARGETS = sorted(PROVIDERS)


def test_every_provider_is_a_source() -> None:
    """Every registered provider's response goes through the grid (a provider
    outside the Chat Completions family adds its shape to `_RESPONSES`)."""
    assert [p for p in PROVIDERS if _own_response(p) is None] == []


@pytest.mark.parametrize("target", _TARGETS)
def test_own_responses_to(target: str) -> None:
    for source in _own_sources():
        _check(source, target, _format(source, target))


@pytest.mark.parametrize("target", _TARGETS)
def test_scenarios_to(target: str) -> None:
    for source in _scenario_sources():
        _check(source, target, _format(source, target))


@pytest.mark.parametrize("target", _TARGETS)
def test_typed_messages_are_screened_as_their_dicts(target: str) -> None:
    """The screen reads a `Msg`'s blocks from the view the format built, or
    from its typed fields where the view is a cached one: the body and the
    warnings are the message dicts' either way."""
    for source in (*_own_sources(), *_scenario_sources()):
        if not all(isinstance(msg, dict) for msg in source.msgs):
            continue
        expected = _format(source, target)
        typed = Source(source.name, tuple(from_dict(m) for m in source.msgs), source.tools, None)
        assert _format(typed, target) == expected, source.name
        assert _format(typed, target).warnings == expected.warnings, source.name
        cache = FormatCache()
        for _ in range(2):  # the second call reads every view from the cache
            cached = format(
                target,
                list(typed.msgs),
                tools=list(source.tools) if source.tools else None,
                fidelity="provider",
                request=_request(source, target),
                cache=cache,
            )
            assert cached == expected, source.name
            assert cached.warnings == expected.warnings, source.name


@pytest.mark.skipif(not ROOT.is_dir(), reason=MISSING_REASON)
@pytest.mark.parametrize("target", _TARGETS)
def test_recorded_responses_to(target: str) -> None:
    sources = _recorded_sources()
    assert sources, "no recorded response carries a signature or a tool call"
    for source in sources:
        _check(source, target, _format(source, target))


def test_the_grid_crosses_every_kind_of_signature() -> None:
    """The own responses hold each signature kind, so every pair sees them."""
    kinds = {
        (issuer, key)
        for source in _own_sources()
        for _, _, block in _blocks(source)
        for key, issuer in issuers(block).items()
    }
    assert kinds >= {
        ("anthropic", "signature"),
        ("anthropic", "redacted_data"),
        ("gemini", "thought_signature"),
        ("openai_responses", "encrypted_content"),
        ("openai_responses", "reasoning_id"),
    }


def test_a_refused_id_maps_the_same_for_call_and_result() -> None:
    """Claude gets the Gemini call's id (its base64 signature) mapped, the
    same on the call and on its result, and the same in every request."""
    source = next(s for s in _own_sources() if s.name == "gemini:own")
    first, again = _format(source, "anthropic"), _format(source, "anthropic")
    calls, results = _calls_and_results(dict(first))
    assert list(calls) == list(results) == [mapped_id(_GEMINI_CALL_SIGNATURE)]
    assert dict(first) == dict(again)
    assert [w.path for w in first.warnings if w.path.endswith(".id")] == [
        "messages[1].content[1].id",
        "messages[2].content[0].id",
    ]


def test_agentscope_fidelity_keeps_what_it_gets() -> None:
    """Parity is untouched: AgentScope 1.0.21 sends the Gemini call's id as it is."""
    source = next(s for s in _own_sources() if s.name == "gemini:own")
    body = format("anthropic", list(source.msgs), tools=[_TOOL])
    calls, _ = _calls_and_results(dict(body))
    assert list(calls) == [_GEMINI_CALL_SIGNATURE]


def test_a_signature_under_another_apis_key_names_its_issuer() -> None:
    """A Chat Completions server that returns encrypted reasoning under the
    Responses key (`encrypted_content` on a thinking block) is its issuer,
    not OpenAI: the parse names it in `signed_by`, and Responses does not get
    it."""
    from agentscope_proto.providers._between import SIGNED_BY, sign

    content = [{"type": "thinking", "thinking": "x", "encrypted_content": "enc-of-deepseek"}]
    sign(content, "deepseek")
    assert content[0][SIGNED_BY] == "deepseek"
    msgs: list[dict[str, Any]] = [
        {"name": "user", "role": "user", "content": "Hi"},
        {"name": "assistant", "role": "assistant", "content": content},
        {"name": "user", "role": "user", "content": "Go on."},
    ]
    for target in ("openai_responses", "anthropic"):
        body = format(target, msgs, fidelity="provider")
        assert "enc-of-deepseek" not in set(_leaves(json.loads(body_to_json(body))))
        assert any(w.path.startswith("messages[1].content[0]") for w in body.warnings)
    body = format("anthropic", msgs, fidelity="provider")
    assert "messages[1].content[0].encrypted_content" in [w.path for w in body.warnings]
    own = [{"type": "thinking", "thinking": "x", "encrypted_content": "enc-of-openai"}]
    sign(own, "openai_responses")
    assert SIGNED_BY not in own[0]


def _family_reasoning(target: str, violation: client.Violation) -> bool:
    """The one departure from OpenAI's own types the grid accepts: `openai` is
    the Chat Completions family (vLLM, Kimi, Groq... behind its URL), and a
    thinking block parsed from a family member's `reasoning_content` or
    `reasoning` goes back there, for the servers that want it in a tool loop
    (providers/openai.py); the OpenAI SDK's types have no such key."""
    return (
        target == "openai"
        and violation.unknown
        and violation.path.endswith((".reasoning_content", ".reasoning"))
    )


@pytest.mark.skipif(not client.available(), reason=client.MISSING_REASON)
def test_every_grid_body_validates() -> None:
    sources = [*_own_sources(), *_scenario_sources()]
    if ROOT.is_dir():
        sources += _recorded_sources()
    bodies = [
        (f"{source.name} -> {target}", target, dict(_format(source, target)))
        for source in sources
        for target in _TARGETS
    ]
    verdicts = client.validate_many((target, body) for _, target, body in bodies)
    failed = {
        name: found
        for (name, target, _), verdict in zip(bodies, verdicts, strict=True)
        if (found := [str(v) for v in verdict if not _family_reasoning(target, v)])
    }
    assert failed == {}, "\n".join(f"{name}: {found}" for name, found in failed.items())


# -- a signature goes back to its model -------------------------------------------------

_SIGNING = ("anthropic", "gemini", "openai_responses")


def _signatures(source: Source) -> list[tuple[str, str]]:
    """(path, value) of each signature the checked turn holds."""
    return [
        (f"messages[{index}].content[{number}].{key}", block[key])
        for index, number, block in _blocks(source)
        for key in issuers(block)
    ]


@pytest.mark.parametrize("provider", _SIGNING)
def test_a_signature_goes_back_only_to_the_model_that_issued_it(provider: str) -> None:
    """The parse records the model its response named; the next request
    gives the signatures back when it calls that model (a dated snapshot or
    the model's alias is the model), or names none, and leaves them out with
    a warning each when it calls another model of the same provider."""
    source = next(s for s in _own_sources() if s.name == f"{provider}:own")
    model = _RESPONSES[provider].get("model") or _RESPONSES[provider]["modelVersion"]
    assert source.model == model
    signatures = _signatures(source)
    assert signatures

    def body_for(called: str | None) -> FormattedBody:
        request = None if called is None else {**REQUESTS[provider], "model": called}
        return format(
            provider, list(source.msgs), tools=[_TOOL], fidelity="provider", request=request
        )

    for called in (model, f"{model}-20991231", None):
        body = body_for(called)
        leaves = set(_leaves(json.loads(body_to_json(body))))
        assert all(value in leaves for _, value in signatures), called
        assert not [w for w in body.warnings if "signature" in w.message], called
        assert SIGNED_MODEL not in body_to_json(body).decode()
    switched = body_for("another-model")
    leaves = set(_leaves(json.loads(body_to_json(_without_call_ids(dict(switched))))))
    assert not [value for _, value in signatures if value in leaves]
    warned = {w.path: w.message for w in switched.warnings}
    for path, _ in signatures:
        block = path.rsplit(".", 1)[0]
        if path in warned:
            assert f"{model} issued: this request calls another-model" in warned[path], path
        else:
            # The walk dropped the whole block (Responses: a reasoning item
            # without its id), with a warning of its own.
            assert block in warned, path
    if provider == "gemini":
        # Gemini 3 refuses a call without a signature: the documented placeholder.
        parts = [p for c in switched["contents"] for p in c["parts"] if "function_call" in p]
        assert [p["thought_signature"] for p in parts] == [b"skip_thought_signature_validator"]


def test_a_stream_records_the_model_it_names() -> None:
    """Anthropic names its model in `message_start`, Responses in
    `response.created`, Gemini in every chunk: a streamed parse records it
    as the complete one does."""
    from agentscope_proto.parsing import StreamParser

    events = {
        "anthropic": [
            {
                "type": "message_start",
                # AgentScope reads nothing of a stream before its usage.
                "message": {
                    "model": "claude-opus-4-1",
                    "content": [],
                    "usage": {"input_tokens": 1},
                },
            },
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": ""},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "Call the tool."},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "signature_delta", "signature": "EqQBsig"},
            },
            {"type": "content_block_stop", "index": 0},
            {"type": "message_stop"},
        ],
        "openai_responses": [
            {"type": "response.created", "response": {"model": "o4-mini", "output": []}},
            {
                "type": "response.output_item.done",
                "output_index": 0,
                "item": {
                    "type": "reasoning",
                    "id": "rs_1",
                    "summary": [],
                    "encrypted_content": "E",
                },
            },
        ],
        "gemini": [
            {
                "candidates": [{"content": {"role": "model", "parts": [_GEMINI_PART]}}],
                "modelVersion": "gemini-2.5-pro",
            }
        ],
    }
    expected = {"anthropic": "claude-opus-4-1", "openai_responses": "o4-mini"}
    expected["gemini"] = "gemini-2.5-pro"
    for provider, stream in events.items():
        parser = StreamParser(provider, fidelity="provider")
        for event in stream:
            parser.feed(event)
        content = parser.finish().content
        signed = [block for block in content if issuers(block)]
        assert signed, provider
        assert [block[SIGNED_MODEL] for block in signed] == [expected[provider]] * len(signed)
        # AgentScope fidelity records nothing.
        parity = StreamParser(provider)
        for event in stream:
            parity.feed(event)
        assert not [b for b in parity.finish().content if SIGNED_MODEL in b], provider


def _without_call_ids(value: Any) -> Any:
    """`value` without Gemini's call ids (AgentScope names a Gemini call after
    its signature: an id, not a signature, which any Gemini model takes)."""
    if isinstance(value, list):
        return [_without_call_ids(item) for item in value]
    if not isinstance(value, dict):
        return value
    out = {key: _without_call_ids(item) for key, item in value.items()}
    for key in ("function_call", "function_response"):
        if isinstance(out.get(key), dict):
            out[key] = {k: v for k, v in out[key].items() if k != "id"}
    return out


_GEMINI_PART = {
    "functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
    "thoughtSignature": _GEMINI_CALL_SIGNATURE,
}


@pytest.mark.skipif(not ROOT.is_dir(), reason=MISSING_REASON)
def test_xai_encrypted_reasoning_read_as_responses_never_reaches_openai() -> None:
    """xAI's Responses API returns encrypted reasoning under OpenAI's key:
    recorded under `openai_responses`, it is xAI's model's, so a request to
    OpenAI's model leaves it out (with a warning) and one to the Grok model
    that issued it gives it back."""
    recorded = [
        t
        for t in transcripts()
        if t.provider == "openai_responses" and "-xai-" in t.name and "reasoning" in t.name
    ]
    signed = [
        (t, block)
        for t in recorded
        for block in t.run("provider").content
        if block.get("encrypted_content")
    ]
    assert signed, "no recorded xAI response holds encrypted reasoning"
    for transcript, block in signed:
        answered = [block, {"type": "text", "text": "4"}]
        grok = block[SIGNED_MODEL]
        assert grok.startswith("grok"), transcript.name
        msgs = [
            {"name": "user", "role": "user", "content": "Hi"},
            # Its answer after it: Responses drops reasoning no output follows.
            {"name": "Grok", "role": "assistant", "content": answered},
            {"name": "user", "role": "user", "content": "Go on."},
        ]
        for called, given in (("gpt-5", False), (grok, True)):
            body = format("openai_responses", msgs, fidelity="provider", request={"model": called})
            sent = block["encrypted_content"] in set(_leaves(json.loads(body_to_json(body))))
            assert sent is given, (transcript.name, called)
            warned = [w.path for w in body.warnings if w.path.startswith("messages[1].content[0]")]
            assert bool(warned) is not given, (transcript.name, called)


@pytest.mark.parametrize(
    ("issued", "called", "same"),
    [
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5", True),
        ("claude-3-7-sonnet-20250219", "claude-3-7-sonnet-latest", True),
        ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5", True),
        ("gpt-5-2025-08-07", "gpt-5", True),
        ("models/gemini-2.5-flash", "gemini-2.5-flash", True),
        ("gemini-1.5-pro-002", "gemini-1.5-pro", True),
        ("grok-4-0709", "grok-4", True),
        ("doubao-seed-1-6-250615", "doubao-seed-1-6", True),
        ("claude-sonnet-4-5-20250929", "claude-opus-4-5", False),
        ("gemini-2.5-pro", "gemini-3-pro-preview", False),
        ("gpt-5-mini-2025-08-07", "gpt-5", False),
        ("grok-4-fast-reasoning", "gpt-5", False),
    ],
)
def test_same_model(issued: str, called: str, same: bool) -> None:
    assert same_model(issued, called) is same
    assert same_model(called, issued) is same


def test_the_cache_keeps_each_model_apart() -> None:
    """The turns a cache keeps are the request's for one model: formatting
    the same history for another model, through the same cache and in a
    `Conversation`, gives what an uncached call gives."""
    from agentscope_proto.conversation import Conversation

    source = next(s for s in _own_sources() if s.name == "anthropic:own")
    msgs = [from_dict(m) if isinstance(m, dict) else m for m in source.msgs]
    cache = FormatCache()
    for called in ("claude-sonnet-4-5", "claude-opus-4-5", "claude-sonnet-4-5-20250929"):
        request = {"model": called, "max_output_tokens": 64}
        plain = format("anthropic", msgs, tools=[_TOOL], fidelity="provider", request=request)
        for _ in range(2):
            cached = format(
                "anthropic", msgs, tools=[_TOOL], fidelity="provider", request=request, cache=cache
            )
            assert cached == plain, called
            assert cached.warnings == plain.warnings, called
        conversation = Conversation(
            "anthropic", tools=[_TOOL], fidelity="provider", request=request
        )
        for msg in msgs:
            conversation.append(msg)
            conversation.format_json()
        assert conversation.format() == plain, called
        assert conversation.format_json().body_json == body_to_json(plain), called
