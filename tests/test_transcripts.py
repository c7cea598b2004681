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

import json
from collections import Counter
from typing import Any

import pytest

from agentscope_proto import ParseError, ProviderError
from agentscope_proto.parsing import ParsedResponse
from kept_features import dropped, is_usage
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
    found = Counter() if result is None else count_parsed(result.content, result.metadata)
    assert found == expected, f"{transcript.name}: kept {dict(found)} of {dict(expected)}"


# What provider fidelity still drops of the recorded transcripts (tests/kept_features.py
# finds it: every key path of the model's output whose values the parse holds nowhere),
# usage aside, and why. Anything else dropped fails the test below.
ALLOWED_DROPS = {
    # An earlier message's container (a stream of several messages): the latest
    # one is kept, the one the next request names.
    "anthropic": {"container.expires_at", "delta.container.expires_at"},
    # Azure's per-chunk content filter verdicts: a filtered answer says so in
    # its finish reason (`content_filter`); the verdicts have no place to go back.
    "openai": {
        f"choices[].content_filter_results.{category}.severity"
        for category in ("hate", "self_harm", "sexual", "violence")
    },
}


def test_provider_fidelity_drops_nothing_else_of_the_model_output() -> None:
    if not TRANSCRIPTS:
        pytest.skip(MISSING_REASON)
    unexpected = {}
    for transcript in TRANSCRIPTS:
        _, lost = dropped(transcript)
        allowed = ALLOWED_DROPS.get(transcript.provider, set())
        extra = [path for path in lost if not is_usage(path) and path not in allowed]
        if extra:
            unexpected[transcript.name] = extra
    assert unexpected == {}


# --- The counter itself -------------------------------------------------------------

# Categories the corpus is known to hold, per provider: if the raw counter found
# none of them, it would be broken and every equality above vacuous.
KNOWN = {
    "anthropic": {"citation", "server_tool_use", "server_tool_result", "caller", "stop_details"},
    "gemini": {"finish_message"},
    "openai_responses": {"citation", "server_tool_use", "server_tool_result", "caller"},
    "openai": {"reasoning_text"},
    "deepseek": {"reasoning_text"},
}
KNOWN["openai_responses"] |= {"encrypted_reasoning", "phase", "logprobs", "reasoning_text"}


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
    cited = (
        '{"candidates": [{"content": {"role": "model", "parts": [{"text": "1"}]},'
        '"finishMessage": "Done.",'
        '"citationMetadata": {"citations": [{"startIndex": 0, "uri": "https://a"}]}}]}'
    )
    expected = Counter(citation=1, finish_message=1)
    assert count_raw(_gemini(tmp_path, cited)) == expected
    result = _gemini(tmp_path, cited).run("provider")
    assert count_parsed(result.content, result.metadata) == expected
    # A stream repeating the same record counts it once.
    chunk = '{"candidates": [{"groundingMetadata": {"webSearchQueries": ["q"]}}]}'
    stream = _gemini(tmp_path, f"{chunk}\n{chunk}\n", "g.events.jsonl")
    assert count_raw(stream) == Counter(grounding=1)


def test_responses_phase_logprobs_reasoning_text_and_caller_are_counted(tmp_path: Any) -> None:
    response = {
        "output": [
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [],
                "content": [{"type": "reasoning_text", "text": "Think."}],
            },
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "f",
                "arguments": "{}",
                "caller": {"type": "program", "caller_id": "p1"},
            },
            {
                "type": "message",
                "phase": "final_answer",
                "content": [
                    {"type": "output_text", "text": "a", "logprobs": [{"token": "a"}]},
                    {"type": "output_text", "text": "b", "logprobs": []},
                ],
            },
        ]
    }
    path = tmp_path / "r.json"
    path.write_text(json.dumps(response), encoding="utf-8")
    transcript = Transcript("openai_responses", path, "json")
    expected = Counter(reasoning_text=1, caller=1, phase=2, logprobs=1)
    assert count_raw(transcript) == expected
    result = transcript.run("provider")
    assert count_parsed(result.content, result.metadata) == expected
    # AgentScope fidelity keeps none of them.
    assert count_parsed(transcript.run("agentscope").content) == Counter()


def test_chat_logprobs_are_counted_complete_and_streamed(tmp_path: Any) -> None:
    token = {"token": "Hi", "logprob": -0.5, "bytes": [72, 105], "top_logprobs": []}
    response = {
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hi"},
                "logprobs": {"content": [token], "refusal": None},
                "finish_reason": "stop",
            }
        ]
    }
    chunks = [
        {"choices": [{"index": 0, "delta": {"content": "H"}, "logprobs": {"content": [token]}}]},
        {"choices": [{"index": 0, "delta": {"content": "i"}, "logprobs": {"content": [token]}}]},
    ]
    (tmp_path / "c.json").write_text(json.dumps(response), encoding="utf-8")
    lines = "".join(json.dumps(chunk) + "\n" for chunk in chunks)
    (tmp_path / "c.events.jsonl").write_text(lines, encoding="utf-8")
    for name, kind in (("c.json", "json"), ("c.events.jsonl", "events")):
        transcript = Transcript("openai", tmp_path / name, kind)
        assert count_raw(transcript) == Counter(logprobs=1)
        result = transcript.run("provider")
        assert count_parsed(result.content, result.metadata) == Counter(logprobs=1)
        assert count_parsed(transcript.run("agentscope").content) == Counter()


_USAGE = {"input_tokens": 5, "output_tokens": 1}


def test_anthropic_stop_details_are_counted_once(tmp_path: Any) -> None:
    details = {"type": "refusal", "category": "cyber", "explanation": "No."}
    events = [
        {"type": "message_start", "message": {"id": "m", "content": [], "usage": _USAGE}},
        {"type": "message_delta", "delta": {"stop_reason": "refusal", "stop_details": details}},
        {"type": "message_stop"},
    ]
    path = tmp_path / "a.events.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in events), encoding="utf-8")
    transcript = Transcript("anthropic", path, "events")
    assert count_raw(transcript) == Counter(stop_details=1)
    result = transcript.run("provider")
    assert result.metadata == {"stop_details": details}
    assert count_parsed(result.content, result.metadata) == Counter(stop_details=1)


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
