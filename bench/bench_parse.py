"""Parse speed: `parse` / `StreamParser` vs AgentScope's parsers, on the golden
responses and streams (tests/golden/parsers/*.json).

AgentScope's parsers are methods of its model classes and take the provider
SDK's response objects; `tests/golden/make_parsers.py` shows how to drive them
offline, and this script uses its model factories and stream adapters. Cases
whose golden outcome is an error are left out. Two views:

- from JSON text (the target): both start from the response body (or each
  stream event) as JSON text. Ours: `parse(provider, text)` /
  `StreamParser.feed(text)`. AgentScope: `json.loads`, the SDK's object
  (`construct_type`, `GenerateContentResponse._from_response`,
  `GenerationResponse.from_api_response`, `ollama.ChatResponse`), then the
  parser, as an SDK client does after reading the body.
- parser only: ours from the decoded dict; AgentScope from SDK objects built
  beforehand.

One call parses every case of a provider; streams are consumed to the end
(`finish()` on our side). AgentScope's stream parsers are async generators,
timed inside one coroutine (`_common.async_timer`).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

from _common import (
    ROOT,
    Budget,
    async_timer,
    compare,
    parse_args,
    quiet_logging,
    registry_providers,
    sync_timer,
    write_json,
)

from agentscope_proto.parsing import StreamParser, parse

sys.path.insert(0, str(ROOT / "tests" / "golden"))
import make_parsers as golden

# --- SDK objects, as each SDK builds them from the JSON it received ------------


def _openai_response(data: dict[str, Any]) -> Any:
    from openai._models import construct_type
    from openai.types.chat import ChatCompletion

    return construct_type(type_=ChatCompletion, value=data)


def _anthropic_response(data: dict[str, Any]) -> Any:
    from anthropic._models import construct_type
    from anthropic.types import Message

    return construct_type(type_=Message, value=data)


def _anthropic_event(data: dict[str, Any]) -> Any:
    from anthropic._models import construct_type
    from anthropic.types import RawMessageStreamEvent

    return construct_type(type_=RawMessageStreamEvent, value=data)


def _gemini_response(data: dict[str, Any]) -> Any:
    from google.genai import types
    from google.genai.models import _GenerateContentResponse_from_mldev

    converted = _GenerateContentResponse_from_mldev(data)
    return types.GenerateContentResponse._from_response(response=converted, kwargs={})


def _dashscope_response(data: dict[str, Any]) -> Any:
    from dashscope.api_entities.dashscope_response import DashScopeAPIResponse, GenerationResponse

    return GenerationResponse.from_api_response(
        DashScopeAPIResponse(
            status_code=data.get("status_code", 200),
            request_id=data.get("request_id", ""),
            code=data.get("code", ""),
            message=data.get("message", ""),
            output=data.get("output"),
            usage=data.get("usage"),
            headers={},
        )
    )


def _ollama_response(data: dict[str, Any]) -> Any:
    import ollama

    return ollama.ChatResponse(**data)


def _responses_response(data: dict[str, Any]) -> Any:
    from openai._models import construct_type
    from openai.types.responses import Response

    return construct_type(type_=Response, value=data)


def _responses_event(data: dict[str, Any]) -> Any:
    from openai._models import construct_type
    from openai.types.responses import ResponseStreamEvent

    return construct_type(type_=ResponseStreamEvent, value=data)


class _Stream:
    """An SDK stream: an async iterator that is also an async context manager
    (OpenAI's `AsyncStream`; the other parsers only iterate)."""

    def __init__(self, items: AsyncIterator[Any]) -> None:
        self._items = items

    async def __aenter__(self) -> _Stream:
        return self

    async def __aexit__(self, *exc: Any) -> bool:
        return False

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._items


# provider -> (response builder, parser method, event builder, stream parser method)
SDK: dict[str, tuple[Callable[..., Any], str, Callable[..., Any], str]] = {
    "openai": (
        _openai_response,
        "_parse_openai_completion_response",
        # Real ChatCompletionChunk objects crash 1.0.21; see make_parsers.py.
        golden.openai_chunk_namespace,
        "_parse_openai_stream_response",
    ),
    "anthropic": (
        _anthropic_response,
        "_parse_anthropic_completion_response",
        _anthropic_event,
        "_parse_anthropic_stream_completion_response",
    ),
    "gemini": (
        _gemini_response,
        "_parse_gemini_generation_response",
        _gemini_response,
        "_parse_gemini_stream_generation_response",
    ),
    "dashscope": (
        _dashscope_response,
        "_parse_dashscope_generation_response",
        _dashscope_response,
        "_parse_dashscope_stream_response",
    ),
    "ollama": (
        _ollama_response,
        "_parse_ollama_completion_response",
        _ollama_response,
        "_parse_ollama_stream_completion_response",
    ),
    "openai_responses": (
        _responses_response,
        "_parse_response",
        _responses_event,
        "_parse_stream_response",
    ),
}
SDK["deepseek"] = SDK["openai"]


def _our_options(case: dict[str, Any]) -> dict[str, Any]:
    """Our keyword arguments for the AgentScope options of a case (as the tests map them)."""
    options = case["options"]
    kwargs: dict[str, Any] = {}
    if options.get("structured_model"):
        kwargs["structured_output"] = True
    audio = options.get("generate_kwargs", {}).get("audio", {})
    if "format" in audio:
        kwargs["audio_format"] = audio["format"]
    if case["stream"] and "stream_tool_parsing" in options:
        kwargs["stream_tool_parsing"] = options["stream_tool_parsing"]
    return kwargs


def _cases(provider: str) -> list[dict[str, Any]]:
    doc = json.loads((ROOT / "tests" / "golden" / "parsers" / f"{provider}.json").read_text())
    return [c for c in doc["cases"] if "error" not in c and "error" not in c["expected"]]


_MODELS: dict[tuple[str, str, bool], Any] = {}


def _model(suite: Any, options: dict[str, Any], stream: bool) -> Any:
    """AgentScope's model object for these options (building one makes SDK clients: slow)."""
    kwargs = golden.ctor_kwargs(options)
    key = (suite.provider, json.dumps(kwargs, sort_keys=True), stream)
    if key not in _MODELS:
        _MODELS[key] = suite.make_model(kwargs, stream=stream)
    return _MODELS[key]


class _Case:
    """One golden case, ready for both sides."""

    def __init__(self, provider: str, suite: Any, case: dict[str, Any]) -> None:
        self.options = _our_options(case)
        self.stream = bool(case["stream"])
        self.model = _model(suite, case["options"], self.stream)
        self.structured = golden.structured_model_for(case["options"])
        build, method, build_event, stream_method = SDK[provider]
        if self.stream:
            events = [c for c in case["chunks"] if not suite.skip_chunk(c)]
            self.texts = [json.dumps(c).encode() for c in case["chunks"]]
            # Ours is fed every event; the SDK drops some (Anthropic's pings).
            self.sdk_texts = [json.dumps(c).encode() for c in events]
            self.dicts = case["chunks"]
            self.built = [build_event(json.loads(t)) for t in self.sdk_texts]
            self.build = build_event
            self.method = getattr(self.model, stream_method)
        else:
            self.text = json.dumps(case["response"]).encode()
            self.dict = case["response"]
            self.built_one = build(json.loads(self.text))
            self.build = build
            self.method = getattr(self.model, method)


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _timers(provider: str, cases: list[_Case], loop: asyncio.AbstractEventLoop) -> dict[str, Any]:
    responses = [c for c in cases if not c.stream]
    streams = [c for c in cases if c.stream]
    start = golden.START

    def ours_text() -> None:
        for c in responses:
            parse(provider, c.text, **c.options)

    def ours_dict() -> None:
        for c in responses:
            parse(provider, c.dict, **c.options)

    async def theirs_text() -> None:
        for c in responses:
            await _maybe_await(c.method(start, c.build(json.loads(c.text)), c.structured))

    async def theirs_built() -> None:
        for c in responses:
            await _maybe_await(c.method(start, c.built_one, c.structured))

    def ours_stream_text() -> None:
        for c in streams:
            parser = StreamParser(provider, **c.options)
            for text in c.texts:
                parser.feed(text)
            parser.finish()

    def ours_stream_dict() -> None:
        for c in streams:
            parser = StreamParser(provider, **c.options)
            for data in c.dicts:
                parser.feed(data)
            parser.finish()

    async def _events_from_text(c: _Case) -> AsyncIterator[Any]:
        for text in c.sdk_texts:
            yield c.build(json.loads(text))

    async def _events_built(c: _Case) -> AsyncIterator[Any]:
        for event in c.built:
            yield event

    async def theirs_stream_text() -> None:
        for c in streams:
            async for _ in c.method(start, _Stream(_events_from_text(c)), c.structured):
                pass

    async def theirs_stream_built() -> None:
        for c in streams:
            async for _ in c.method(start, _Stream(_events_built(c)), c.structured):
                pass

    return {
        "responses": len(responses),
        "streams": len(streams),
        "events": sum(len(c.texts) for c in streams),
        "parse": {
            "ours": sync_timer(ours_text),
            "agentscope": async_timer(loop, theirs_text),
            "ours_dict": sync_timer(ours_dict),
            "agentscope_parser_only": async_timer(loop, theirs_built),
        },
        "stream": {
            "ours": sync_timer(ours_stream_text),
            "agentscope": async_timer(loop, theirs_stream_text),
            "ours_dict": sync_timer(ours_stream_dict),
            "agentscope_parser_only": async_timer(loop, theirs_stream_built),
        },
    }


def main() -> None:
    args = parse_args(__doc__ or "")
    budget = Budget.of(args.quick)
    golden.block_network()
    quiet_logging()
    loop = asyncio.new_event_loop()
    suites = {suite.provider: suite for suite in golden.SUITES}
    rows = []
    providers = registry_providers()
    missing = [provider for provider in providers if provider not in SDK]
    if missing:
        raise SystemExit(f"bench_parse.py: registry providers without an SDK entry: {missing}")
    for provider in providers:
        cases = [_Case(provider, suites[provider], case) for case in _cases(provider)]
        timers = _timers(provider, cases, loop)
        row: dict[str, Any] = {
            "provider": provider,
            "responses": timers["responses"],
            "streams": timers["streams"],
            "events": timers["events"],
        }
        for kind in ("parse", "stream"):
            contenders = timers[kind]
            if args.quick:
                # A smoke run skips the secondary "parser only" view.
                contenders = {k: v for k, v in contenders.items() if k in ("ours", "agentscope")}
            row[kind] = compare(contenders, budget)
        rows.append(row)
    loop.close()
    write_json(args.json, {"rows": rows})


if __name__ == "__main__":
    main()
