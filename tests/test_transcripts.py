"""Every recorded provider transcript through the parsers (see tests/transcripts.py).

(a) Each transcript parses in both fidelities, or fails with a typed error
    (`ParseError`, `ProviderError`); any other exception is a bug.
(c) In both fidelities, the cache read and write and reasoning token counts
    of the parsed usage are the ones the response (a stream: its final
    report) gives (`raw_usage`).
(b) In provider fidelity, for the providers in `COUNTED`, the parse result
    holds as many citations, server-tool blocks, encrypted/redacted reasoning
    blocks and grounding blocks as the transcript holds records of them
    (`count_raw` == `count_parsed`). A provider joins `COUNTED` when its
    provider-fidelity parser keeps everything.

The transcripts live outside the repository (`../shared/provider-transcripts/`);
without them these tests skip.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from agentscope_proto import ParseError, ProviderError
from agentscope_proto.parsing import ParsedResponse
from transcripts import (
    CATEGORIES,
    MISSING_REASON,
    PROVIDER_DIRS,
    USAGE_COUNTS,
    Transcript,
    count_parsed,
    count_raw,
    raw_usage,
    transcripts,
)

# Providers whose provider-fidelity parse keeps every counted record.
COUNTED: set[str] = {"anthropic", "deepseek", "gemini", "openai", "openai_responses"}

TRANSCRIPTS = transcripts()
PARAMS = [pytest.param(t, id=t.name) for t in TRANSCRIPTS] or [
    pytest.param(None, id="no-transcripts")
]


def _require(transcript: Transcript | None) -> Transcript:
    if transcript is None:
        pytest.skip(MISSING_REASON)
    return transcript


def _run(transcript: Transcript, fidelity: str) -> ParsedResponse | None:
    """The parse result, or None after a typed error (any other one propagates)."""
    try:
        return transcript.run(fidelity)
    except (ParseError, ProviderError):
        return None


@pytest.mark.parametrize("fidelity", ["agentscope", "provider"])
@pytest.mark.parametrize("transcript", PARAMS)
def test_only_typed_errors(transcript: Transcript | None, fidelity: str) -> None:
    result = _run(_require(transcript), fidelity)
    assert result is None or isinstance(result.content, list)


@pytest.mark.parametrize("fidelity", ["agentscope", "provider"])
@pytest.mark.parametrize("transcript", PARAMS)
def test_usage_counts_are_the_reported_ones(transcript: Transcript | None, fidelity: str) -> None:
    transcript = _require(transcript)
    reported = raw_usage(transcript)
    result = _run(transcript, fidelity)
    if result is None or reported is None:
        return
    usage = result.usage
    parsed = {name: None if usage is None else usage[name] for name in USAGE_COUNTS}
    assert parsed == reported


@pytest.mark.parametrize("transcript", PARAMS)
def test_provider_fidelity_keeps_every_counted_record(transcript: Transcript | None) -> None:
    transcript = _require(transcript)
    if transcript.provider not in COUNTED:
        pytest.skip(f"{transcript.provider} is not in COUNTED yet")
    expected = count_raw(transcript)
    result = _run(transcript, "provider")
    found = Counter() if result is None else count_parsed(result.content)
    assert found == expected, f"{transcript.name}: kept {dict(found)} of {dict(expected)}"


# --- The counter itself -------------------------------------------------------------

# Categories the corpus is known to hold, per provider: if the raw counter found
# none of them, it would be broken and every equality above vacuous.
KNOWN = {
    "anthropic": {"citation", "server_tool_use", "server_tool_result"},
    "openai_responses": {"citation", "server_tool_use", "server_tool_result"},
}
KNOWN["openai_responses"].add("encrypted_reasoning")


@pytest.mark.parametrize("provider", sorted(KNOWN))
def test_the_raw_counter_finds_what_the_corpus_holds(provider: str) -> None:
    if not TRANSCRIPTS:
        pytest.skip(MISSING_REASON)
    total: Counter[str] = Counter()
    for transcript in TRANSCRIPTS:
        if transcript.provider == provider:
            total += count_raw(transcript)
    assert KNOWN[provider] <= set(total), dict(total)
    assert set(total) <= set(CATEGORIES)


def test_every_transcript_maps_to_a_provider() -> None:
    if not TRANSCRIPTS:
        pytest.skip(MISSING_REASON)
    assert {t.provider for t in TRANSCRIPTS} == set(PROVIDER_DIRS)
    assert {t.kind for t in TRANSCRIPTS} == {"json", "events", "raw"}


def _gemini(tmp_path: Any, text: str, name: str = "g.json") -> Transcript:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return Transcript("gemini", path, "json" if name.endswith(".json") else "events")


def test_gemini_records_are_counted(tmp_path: Any) -> None:
    """The corpus has no Gemini grounding or code execution: a documented shape."""
    response = (
        '{"candidates": [{"content": {"role": "model", "parts": ['
        '{"executableCode": {"language": "PYTHON", "code": "print(1)"}},'
        '{"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}},'
        '{"text": "1"}]},'
        '"groundingMetadata": {"webSearchQueries": ["q"]},'
        '"urlContextMetadata": {"urlMetadata": []}}]}'
    )
    assert count_raw(_gemini(tmp_path, response)) == Counter(
        server_tool_use=1, server_tool_result=1, grounding=2
    )
    # A stream repeating the same record counts it once.
    chunk = '{"candidates": [{"groundingMetadata": {"webSearchQueries": ["q"]}}]}'
    stream = _gemini(tmp_path, f"{chunk}\n{chunk}\n", "g.events.jsonl")
    assert count_raw(stream) == Counter(grounding=1)


def test_parsed_content_is_counted() -> None:
    content = [
        {"type": "text", "text": "a", "citations": [{"type": "url_citation"}, {"type": "x"}]},
        {"type": "text", "text": "b", "citations": "not a list"},
        {"type": "thinking", "thinking": "", "encrypted_content": "E", "reasoning_id": "rs"},
        {"type": "thinking", "thinking": "", "redacted_data": "R"},
        {"type": "server_tool_use", "id": "1", "name": "web_search", "input": {}},
        {"type": "server_tool_result", "tool_use_id": "1", "output": []},
        {"type": "grounding", "sources": [], "queries": []},
        {"type": "tool_use", "id": "2", "name": "f", "input": {}},
    ]
    assert count_parsed(content) == Counter(
        citation=2,
        encrypted_reasoning=1,
        redacted_reasoning=1,
        server_tool_use=1,
        server_tool_result=1,
        grounding=1,
    )
