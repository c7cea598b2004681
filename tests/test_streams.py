"""Stream parsing beyond parity: prefixes, raw bodies split anywhere, think tags."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from agentscope_proto import errors
from agentscope_proto._think import split_think_blocks
from agentscope_proto.parsing import ParsedResponse, StreamParser, _Framer, parse
from agentscope_proto.providers import PROVIDERS

from conftest import default_options, load_golden

STREAMS = [
    pytest.param(provider, case, id=f"{provider}:{case['name']}")
    for provider in sorted(PROVIDERS)
    if "agentscope" in PROVIDERS[provider].variants  # golden streams: AgentScope's providers
    for case in load_golden(f"parsers/{provider}.json")["cases"]
    if case["stream"] and "error" not in case["expected"] and default_options(case)
]


def _grows(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> str | None:
    """Why `after` is not a growth of `before` (blocks matched by kind and ordinal), or None."""
    for kind in {b["type"] for b in before}:
        old = [b for b in before if b["type"] == kind]
        new = [b for b in after if b["type"] == kind]
        if len(new) < len(old):
            return f"{kind} blocks went from {len(old)} to {len(new)}"
        for was, now in zip(old, new, strict=False):
            for key in ("text", "thinking", "raw_input"):
                if isinstance(was.get(key), str) and not str(now.get(key, "")).startswith(was[key]):
                    return f"{kind}.{key} shrank: {was[key]!r} -> {now.get(key)!r}"
    return None


def _body(provider: str, chunks: list[Any]) -> bytes:
    if PROVIDERS[provider].framing == "ndjson":
        return b"".join(json.dumps(c).encode() + b"\n" for c in chunks)
    return (
        b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    )


@pytest.mark.parametrize(("provider", "case"), STREAMS)
def test_every_prefix_parses_and_snapshots_never_shrink(
    provider: str, case: dict[str, Any]
) -> None:
    chunks = case["chunks"]
    parser = StreamParser(provider)
    previous: list[dict[str, Any]] = []
    for count, chunk in enumerate(chunks, 1):
        snapshot = parser.feed(chunk)
        if snapshot is not None:
            assert _grows(previous, snapshot.content) is None, _grows(previous, snapshot.content)
            previous = snapshot.content
        # The stream may end after any event: finishing there must work too.
        prefix = StreamParser(provider)
        for earlier in chunks[:count]:
            prefix.feed(earlier)
        assert isinstance(prefix.finish(), ParsedResponse)
    final = parser.finish()
    assert _grows(previous, final.content) is None


@pytest.mark.parametrize(("provider", "case"), STREAMS)
def test_raw_body_split_at_every_byte_frames_the_same_events(
    provider: str, case: dict[str, Any]
) -> None:
    body = _body(provider, case["chunks"])
    framing = PROVIDERS[provider].framing
    whole = _Framer(framing)
    expected = whole.push(body) + whole.flush()
    assert [json.loads(e) for e in expected] == case["chunks"]
    for split in range(1, len(body)):
        framer = _Framer(framing)
        events = framer.push(body[:split]) + framer.push(body[split:]) + framer.flush()
        assert events == expected, split


@pytest.mark.parametrize(("provider", "case"), STREAMS)
def test_feed_bytes_in_random_slices_equals_feeding_events(
    provider: str, case: dict[str, Any]
) -> None:
    reference = StreamParser(provider)
    for chunk in case["chunks"]:
        reference.feed(chunk)
    expected = reference.finish()
    body = _body(provider, case["chunks"])
    rng = random.Random(len(body))
    for _ in range(3):
        cuts = sorted(rng.sample(range(1, len(body)), min(8, len(body) - 1)))
        parser = StreamParser(provider)
        for start, end in zip([0, *cuts], [*cuts, len(body)], strict=True):
            parser.feed_bytes(body[start:end])
        result = parser.finish()
        assert result.content == expected.content
        assert result.usage == expected.usage
        assert result.response_id == expected.response_id


def test_sse_comments_event_lines_and_crlf_are_tolerated() -> None:
    framer = _Framer("sse")
    body = (
        b": keep-alive\r\nevent: message_start\r\n"
        b'data: {"a":\r\ndata: 1}\r\n\r\ndata: [DONE]\r\n\r\n'
    )
    assert framer.push(body) + framer.flush() == [b'{"a":\n1}']


def test_malformed_chunk_is_a_parse_error_naming_it() -> None:
    parser = StreamParser("openai")
    with pytest.raises(errors.ParseError, match=r"chunk\[0\]"):
        parser.feed(b"{nope")


# -- <think> tags -------------------------------------------------------------


def _text(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", _text("plain")),
        (
            "<think>why</think>\n\nAnswer",
            [{"type": "thinking", "thinking": "why"}, *_text("Answer")],
        ),
        (
            "<think>a</think>x<think>b</think>y",
            [{"type": "thinking", "thinking": "a\nb"}, *_text("xy")],
        ),
        ("<think>never closed", [{"type": "thinking", "thinking": "never closed"}]),
        ("<think></think>", [{"type": "thinking", "thinking": ""}]),
    ],
)
def test_split_think_tags(text: str, expected: list[dict[str, Any]]) -> None:
    assert split_think_blocks(_text(text)) == expected


def test_split_think_tags_is_off_by_default_in_parse() -> None:
    response = {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "<think>hm</think>Hi"},
                "finish_reason": "stop",
            }
        ],
    }
    assert parse("openai", response).content == _text("<think>hm</think>Hi")
    split = parse("openai", response, split_think_tags=True).content
    assert split == [{"type": "thinking", "thinking": "hm"}, *_text("Hi")]


@pytest.mark.parametrize("cut", range(1, 30))
def test_think_tags_cut_across_chunks_never_shrink(cut: int) -> None:
    text = "<think>plan it</think>Done."
    pieces = [text[:cut], text[cut:]] if cut < len(text) else [text]
    parser = StreamParser("openai", split_think_tags=True)
    previous: list[dict[str, Any]] = []
    for index, piece in enumerate(pieces):
        chunk = {
            "id": "c1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
        }
        snapshot = parser.feed(chunk)
        if snapshot is not None:
            assert _grows(previous, snapshot.content) is None, (index, snapshot.content)
            assert all("<" not in b.get("text", "") for b in snapshot.content), snapshot.content
            previous = snapshot.content
    final = parser.finish()
    assert final.content == [{"type": "thinking", "thinking": "plan it"}, *_text("Done.")]
