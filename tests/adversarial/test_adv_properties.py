"""Property-based tests (hypothesis, derandomized): valid messages always format,
and random provider responses, events and stream bytes only ever raise the
package's own errors.

The round trips of `Msg` itself are in tests/test_message_properties.py and
the stream snapshot properties (never shrinking, any split) in
tests/test_streams.py; these add the adversarial side.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentscope_proto import errors
from agentscope_proto.formatting import format
from agentscope_proto.parsing import StreamParser, parse

from adversarial_inputs import (
    GOLDEN,
    GOLDEN_PROVIDERS,
    PROVIDERS,
    golden,
    known_bug,
    paths,
    replaced,
)

SETTINGS = settings(
    derandomize=True,
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
PNG_B64 = base64.b64encode((GOLDEN / "media" / "cat.png").read_bytes()).decode()


@pytest.fixture(autouse=True)
def _quiet(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    with caplog.at_level(logging.CRITICAL, logger="agentscope_proto"):
        yield


# -- valid messages always format --------------------------------------------------

text = st.text(min_size=1, max_size=30)
ids = st.text(alphabet="abcdef0123456789_", min_size=1, max_size=8)
json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=10)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
INLINE_SOURCE = {"type": "base64", "media_type": "image/png", "data": PNG_B64}
INLINE_IMAGE = {"type": "image", "source": INLINE_SOURCE}
WEB_IMAGE = {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}}
# Gemini and Ollama send images inline, so a web image needs a download, which
# format() refuses unless allowed: those get inline images only.
NEEDS_DOWNLOAD = {"gemini", "ollama"}
text_block = st.builds(lambda t: {"type": "text", "text": t}, text)
thinking_block = st.builds(lambda t: {"type": "thinking", "thinking": t}, text)


@st.composite
def conversations(draw: st.DrawFn, web_images: bool = True) -> list[dict[str, Any]]:
    """A valid AgentScope 1.x conversation: optional system prompt, then user and
    assistant turns, each tool call answered by a result in the next message."""
    image = st.sampled_from([INLINE_IMAGE, WEB_IMAGE] if web_images else [INLINE_IMAGE])
    msgs: list[dict[str, Any]] = []
    if draw(st.booleans()):
        msgs.append({"name": "system", "role": "system", "content": draw(text)})
    for _ in range(draw(st.integers(1, 4))):
        user = draw(st.lists(text_block | image, min_size=1, max_size=3))
        msgs.append({"name": "user", "role": "user", "content": user})
        reply = draw(st.lists(text_block | thinking_block, max_size=2))
        calls = [
            {
                "type": "tool_use",
                "id": f"call_{len(msgs)}_{i}",
                "name": draw(ids),
                "input": draw(
                    st.dictionaries(st.text(min_size=1, max_size=5), json_values, max_size=3)
                ),
            }
            for i in range(draw(st.integers(0, 2)))
        ]
        if not reply and not calls:
            reply = [{"type": "text", "text": "ok"}]
        msgs.append({"name": "Friday", "role": "assistant", "content": reply + calls})
        if calls:
            results = []
            for call in calls:
                output = draw(st.one_of(text, st.lists(text_block | image, min_size=1, max_size=2)))
                result = {"type": "tool_result", "id": call["id"], "name": call["name"]}
                results.append({**result, "output": output})
            msgs.append({"name": "system", "role": "system", "content": results})
    return msgs


@pytest.mark.parametrize("provider", PROVIDERS)
@SETTINGS
@given(data=st.data(), multi_agent=st.booleans())
def test_valid_conversations_always_format(
    provider: str, data: st.DataObject, multi_agent: bool
) -> None:
    msgs = data.draw(conversations(web_images=provider not in NEEDS_DOWNLOAD))
    body = format(provider, msgs, multi_agent=multi_agent)
    json.dumps(dict(body), default=lambda b: base64.b64encode(b).decode())


# -- random responses, events and bytes raise only typed errors ----------------------


def _typed(call: Any) -> None:
    try:
        call()
    except errors.AgentScopeProtoError:
        pass
    except Exception as exc:
        if known_bug(exc) is None:
            raise


def _response_cases() -> list[tuple[str, Any]]:
    return [
        (provider, case["response"])
        for provider in GOLDEN_PROVIDERS
        for case in golden("parsers", provider)
        if not case["stream"]
    ][::5]


RESPONSES = _response_cases()


@SETTINGS
@given(case=st.sampled_from(RESPONSES), where=st.integers(0, 10_000), value=json_values)
def test_any_value_anywhere_in_a_response_is_a_typed_error_at_worst(
    case: tuple[str, Any], where: int, value: Any
) -> None:
    provider, response = case
    every = list(paths(response))
    mutated = replaced(response, every[where % len(every)], value)
    _typed(lambda: parse(provider, mutated))
    _typed(lambda: parse(provider, json.dumps(mutated)))


def _stream_cases() -> list[tuple[str, list[Any]]]:
    return [
        (provider, case["chunks"])
        for provider in GOLDEN_PROVIDERS
        for case in golden("parsers", provider)
        if case["stream"]
    ][::4]


STREAMS = _stream_cases()


@SETTINGS
@given(case=st.sampled_from(STREAMS), order=st.lists(st.integers(0, 1000), max_size=30))
def test_events_reordered_dropped_or_repeated_are_typed_errors_at_worst(
    case: tuple[str, list[Any]], order: list[int]
) -> None:
    provider, chunks = case

    def run() -> None:
        parser = StreamParser(provider)
        for index in order:
            parser.feed(chunks[index % len(chunks)])
        parser.finish()

    _typed(run)


SSE_PIECES = [b"data: ", b"\n", b"\n\n", b"{", b"}", b'"', b"data: {}\n\n", b"[DONE]"]


@pytest.mark.parametrize("provider", PROVIDERS)
@SETTINGS
@given(data=st.lists(st.binary(max_size=200) | st.sampled_from(SSE_PIECES), max_size=20))
def test_random_stream_bytes_are_typed_errors_at_worst(provider: str, data: list[bytes]) -> None:
    def run() -> None:
        parser = StreamParser(provider)
        for piece in data:
            parser.feed_bytes(piece)
        parser.finish()

    _typed(run)
