"""Gemini beyond AgentScope: streamed function-call arguments (both fidelities),
and in provider fidelity grounding, URL context and code execution parsed and
formatted back, structured output, foreign server-tool blocks dropped; the
REST request body (parameters and structured output in `generation_config`,
no model, the system prompt as `system_instruction` in provider fidelity).

Recorded streams come from ../shared/provider-transcripts/gemini/ (read at run
time; those tests skip without it). Grounding, URL context and code execution
have no recording there: their fixtures below are written from the shapes the
Gemini API documents (`groundingMetadata`, `urlContextMetadata`,
`executableCode`, `codeExecutionResult`).
"""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest

from agentscope_proto import StreamParser, parse
from agentscope_proto.errors import ParseError
from agentscope_proto.formatting import format
from provider_schemas import client
from provider_schemas.golden import REQUESTS
from provider_schemas.scenarios import TOOLS as SCENARIO_TOOLS
from provider_schemas.scenarios import server_result, server_use
from transcripts import ROOT, Transcript, count_parsed, count_raw, load_events, missing

from fidelity_helpers import kinds as _kinds
from fidelity_helpers import msg as _msg

GEMINI = ROOT / "gemini"
needs_transcripts = pytest.mark.skipif(not GEMINI.is_dir(), reason=missing(GEMINI))
needs_sdks = pytest.mark.skipif(not client.available(), reason=client.MISSING_REASON)

FIDELITIES = ("agentscope", "provider")
CODE_SIGNATURE = base64.b64encode(b"code-signature").decode()

GROUNDING = {
    "webSearchQueries": ["who won euro 2024"],
    "searchEntryPoint": {"renderedContent": "<div>...</div>"},
    "groundingChunks": [
        {"web": {"uri": "https://vertexaisearch.example/a", "title": "uefa.com"}},
        {"web": {"uri": "https://vertexaisearch.example/b", "title": "aljazeera.com"}},
    ],
    "groundingSupports": [
        {
            "segment": {"startIndex": 0, "endIndex": 38, "text": "Spain won Euro 2024."},
            "groundingChunkIndices": [0, 1],
        }
    ],
}
URL_CONTEXT = {
    "urlMetadata": [
        {
            "retrievedUrl": "https://example.com/recipe",
            "urlRetrievalStatus": "URL_RETRIEVAL_STATUS_SUCCESS",
        }
    ]
}


def _response(parts: list[dict[str, Any]], **candidate: Any) -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", **candidate}
        ],
        "usageMetadata": {"promptTokenCount": 10, "totalTokenCount": 30},
        "responseId": "resp-1",
    }


def _code_parts() -> list[dict[str, Any]]:
    return [
        {"text": "Let me compute that."},
        {
            "executableCode": {"language": "PYTHON", "code": "print(sum(range(10)))"},
            "thoughtSignature": CODE_SIGNATURE,
        },
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "45\n"}},
        {"text": "The sum is 45."},
    ]


def _events(name: str) -> list[dict[str, Any]]:
    return load_events(GEMINI / name)


def _stream(events: list[dict[str, Any]], fidelity: str = "agentscope") -> Any:
    parser = StreamParser("gemini", fidelity=fidelity)
    snapshots = [parser.feed(event) for event in events]
    return parser.finish(), [s for s in snapshots if s is not None]


def _calls(content: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [(b["name"], b["input"]) for b in content if b["type"] == "tool_use"]


def _assistant_turn(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"name": "user", "role": "user", "content": "Go on."},
        {"name": "Friday", "role": "assistant", "content": content},
        {"name": "user", "role": "user", "content": "Thanks."},
    ]


# -- streamed function-call arguments -------------------------------------------------


@needs_transcripts
@pytest.mark.parametrize("fidelity", FIDELITIES)
def test_streamed_arguments_become_complete_calls(fidelity: str) -> None:
    events = _events("vercel-google-google-stream-tool-call-arguments.events.jsonl")
    final, _ = _stream(events, fidelity)
    assert _calls(final.content) == [
        ("getWeather", {"location": "Boston"}),
        ("getWeather", {"location": "San Francisco"}),
    ]
    first = final.content[0]
    # AgentScope's rule: the call's id is its thought signature.
    signature = events[0]["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
    assert first["id"] == first["thought_signature"] == signature
    assert json.loads(first["raw_input"]) == {"location": "Boston"}


@needs_transcripts
def test_nested_paths_and_string_pieces_are_joined() -> None:
    events = _events("vercel-google-google-vertex-stream-tool-call-arguments-nested.1.events.jsonl")
    final, snapshots = _stream(events)
    [(name, args)] = _calls(final.content)
    assert name == "cookRecipe"
    recipe = args["recipe"]
    assert recipe["name"] == "Lasagna"
    assert len(recipe["ingredients"]) == 10
    assert recipe["ingredients"][0] == {"amount": "16 oz", "name": "Lasagna noodles"}
    assert len(recipe["steps"]) == 10
    # Two string pieces of one path, the first saying willContinue.
    assert recipe["steps"][1].endswith("drain and set aside.")
    assert recipe["steps"][4] == "In a 9x13 baking dish, spread a thin layer of meat sauce."
    # The call grows snapshot by snapshot: its input is never lost on the way.
    sizes = [len(json.dumps(_calls(s.content)[0][1])) for s in snapshots if _calls(s.content)]
    assert sizes == sorted(sizes)
    assert sizes[0] < sizes[-1]


@needs_transcripts
def test_a_call_without_terminal_piece_is_complete() -> None:
    name = "vercel-google-google-stream-tool-call-array-arguments-missing-terminal-function-call"
    final, _ = _stream(_events(f"{name}.events.jsonl"))
    [(_, args)] = _calls(final.content)
    assert [op["itemid"] for op in args["operations"]] == ["apple_001", "banana_001"]
    assert [op["price"] for op in args["operations"]] == [0.5, 0.3]


@needs_transcripts
def test_parallel_streamed_calls_and_a_call_without_arguments() -> None:
    final, _ = _stream(_events("vercel-google-google-stream-no-args-tool-call.events.jsonl"))
    assert _calls(final.content) == [
        ("read_theme", {}),
        ("read_screen", {"id": "A"}),
        ("read_screen", {"id": "B"}),
        ("read_screen", {"id": "C"}),
    ]
    assert len({b["id"] for b in final.content if b["type"] == "tool_use"}) == 4


@needs_transcripts
def test_streamed_calls_go_back_as_whole_function_calls() -> None:
    final, _ = _stream(_events("vercel-google-google-stream-tool-call-arguments.events.jsonl"))
    calls = [b for b in final.content if b["type"] == "tool_use"]
    results = [
        {
            "name": "system",
            "role": "system",
            "content": [{"type": "tool_result", "id": c["id"], "name": c["name"], "output": "ok"}],
        }
        for c in calls
    ]
    msgs = [{"name": "a", "role": "assistant", "content": final.content}, *results]
    body = format("gemini", msgs, fidelity="provider")
    parts = body["contents"][0]["parts"]
    assert [p["function_call"]["args"] for p in parts] == [
        {"location": "Boston"},
        {"location": "San Francisco"},
    ]
    assert parts[0]["thought_signature"] == base64.b64decode(calls[0]["thought_signature"])


def test_complete_response_with_pieces_and_snake_case() -> None:
    parts = [
        {"function_call": {"name": "set", "will_continue": True}},
        {
            "function_call": {
                "partial_args": [
                    {"json_path": "$.flags[0]", "bool_value": True},
                    {"json_path": "$['odd key']", "null_value": "NULL_VALUE"},
                    {"json_path": "$.n", "number_value": 3},
                    {"json_path": "$.s", "string_value": "ab", "will_continue": True},
                ],
                "will_continue": True,
            }
        },
        {"function_call": {"partial_args": [{"json_path": "$.s", "string_value": "c"}]}},
    ]
    result = parse("gemini", _response(parts))
    assert _calls(result.content) == [
        ("set", {"flags": [True], "odd key": None, "n": 3, "s": "abc"})
    ]


@pytest.mark.parametrize(
    "pieces",
    [
        [{"functionCall": {"partialArgs": [{"jsonPath": "$.a", "stringValue": "x"}]}}],
        [
            {"functionCall": {"name": "f", "willContinue": True}},
            {"functionCall": {"partialArgs": [{"jsonPath": "$.a[5]", "numberValue": 1}]}},
        ],
        [
            {"functionCall": {"name": "f", "willContinue": True}},
            {"functionCall": {"partialArgs": [{"jsonPath": "a", "numberValue": 1}]}},
        ],
        [
            {"functionCall": {"name": "f", "willContinue": True}},
            {"functionCall": {"partialArgs": [{"jsonPath": "$.a"}]}},
        ],
        [{"functionCall": {"args": {"a": 1}}}],
    ],
)
def test_bad_pieces_are_parse_errors(pieces: list[dict[str, Any]]) -> None:
    for fidelity in FIDELITIES:
        with pytest.raises(ParseError):
            parse("gemini", _response(pieces), fidelity=fidelity)


# -- grounding and URL context ----------------------------------------------------------


def test_grounding_and_url_context_are_kept_in_provider_fidelity() -> None:
    response = _response(
        [{"text": "Spain won Euro 2024."}],
        groundingMetadata=GROUNDING,
        urlContextMetadata=URL_CONTEXT,
    )
    parity = parse("gemini", response)
    assert [b["type"] for b in parity.content] == ["text"]
    result = parse("gemini", copy.deepcopy(response), fidelity="provider")
    text, grounding, url_context = result.content
    assert text == parity.content[0]
    assert grounding == {
        "type": "grounding",
        "provider_type": "groundingMetadata",
        "sources": [
            {"url": "https://vertexaisearch.example/a", "title": "uefa.com"},
            {"url": "https://vertexaisearch.example/b", "title": "aljazeera.com"},
        ],
        "queries": ["who won euro 2024"],
        "raw": GROUNDING,
    }
    assert url_context["provider_type"] == "urlContextMetadata"
    assert url_context["sources"] == [{"url": "https://example.com/recipe", "title": ""}]
    assert url_context["raw"] == URL_CONTEXT


def test_grounding_is_not_sent_back_and_needs_no_warning() -> None:
    response = _response([{"text": "Spain won."}], groundingMetadata=GROUNDING)
    content = parse("gemini", response, fidelity="provider").content
    body = format("gemini", _assistant_turn(content), fidelity="provider")
    assert body["contents"][1] == {"role": "model", "parts": [{"text": "Spain won."}]}
    assert "grounding" not in json.dumps(body, default=str)
    assert body.warnings == []


def test_grounding_in_a_stream_is_kept_once() -> None:
    chunks = [
        _response([{"text": "Spain "}]),
        _response([{"text": "won."}], groundingMetadata=GROUNDING),
    ]
    chunks.append(copy.deepcopy(chunks[-1]))
    chunks[-1]["candidates"][0]["content"]["parts"] = []
    final, _ = _stream(chunks, "provider")
    assert [b["type"] for b in final.content] == ["text", "grounding"]
    assert final.content[0]["text"] == "Spain won."


def test_grounding_stays_out_of_agentscope_fidelity_streamed_or_not() -> None:
    # AgentScope 1.0.21 never reads grounding: not a block, and no error for a
    # record it would not look at.
    chunks = [_response([{"text": "Spain "}]), _response([{"text": "won."}])]
    plain, _ = _stream(copy.deepcopy(chunks))
    for record in (GROUNDING, {"groundingChunks": "not a list"}):
        grounded = copy.deepcopy(chunks)
        grounded[-1]["candidates"][0]["groundingMetadata"] = record
        final, _ = _stream(grounded)
        assert final.content == plain.content == [{"type": "text", "text": "Spain won."}]
        response = _response([{"text": "Spain won."}], groundingMetadata=record)
        assert parse("gemini", response).content == [{"type": "text", "text": "Spain won."}]


# -- citations and the finish message ------------------------------------------------------

CITATIONS = {
    "citations": [
        {
            "startIndex": 0,
            "endIndex": 10,
            "uri": "https://example.org/euro-2024",
            "title": "Euro 2024",
            "license": "",
        }
    ]
}


def test_citation_metadata_is_the_texts_citations_in_provider_fidelity() -> None:
    response = _response([{"text": "Spain won."}], citationMetadata=CITATIONS)
    assert parse("gemini", copy.deepcopy(response)).content == [
        {"type": "text", "text": "Spain won."}
    ]
    result = parse("gemini", response, fidelity="provider")
    assert result.content == [
        {"type": "text", "text": "Spain won.", "citations": CITATIONS["citations"]}
    ]
    # Typed where the schema has a place, the citation verbatim beside.
    (citation,) = result.to_proto().msg.blocks.items[0].text.citations
    assert (citation.url, citation.title, citation.start_index, citation.end_index) == (
        "https://example.org/euro-2024",
        "Euro 2024",
        0,
        10,
    )
    assert json.loads(citation.raw_json) == CITATIONS["citations"][0]
    # No request field takes them: the text goes back without, and without a word.
    body = format("gemini", _assistant_turn(result.content), fidelity="provider")
    assert body["contents"][1] == {"role": "model", "parts": [{"text": "Spain won."}]}
    assert body.warnings == []


def test_streamed_citations_are_kept_once_on_the_text() -> None:
    chunks = [
        _response([{"text": "Spain "}], citationMetadata=CITATIONS),
        _response([{"text": "won."}], citationMetadata=CITATIONS, finishMessage="Done."),
    ]
    final, _ = _stream(chunks, "provider")
    assert final.content == [
        {"type": "text", "text": "Spain won.", "citations": CITATIONS["citations"]}
    ]
    assert final.metadata == {"finishMessage": "Done."}
    plain, _ = _stream(copy.deepcopy(chunks))
    assert plain.content == [{"type": "text", "text": "Spain won."}]
    assert plain.metadata is None


def test_the_finish_message_is_kept_in_the_metadata() -> None:
    message = "Malformed function call: the arguments are not valid JSON."
    response = _response([], finishReason="MALFORMED_FUNCTION_CALL", finishMessage=message)
    result = parse("gemini", response, fidelity="provider")
    assert result.metadata == {"finishMessage": message}
    assert json.loads(result.msg.metadata_json) == {"finishMessage": message}
    assert parse("gemini", response).metadata is None
    # The SDK's spelling too.
    snake = _response([{"text": "Hi."}], finish_message="Stopped.")
    assert parse("gemini", snake, fidelity="provider").metadata == {"finishMessage": "Stopped."}


# -- code execution -----------------------------------------------------------------------


def test_code_execution_parses_in_order_with_text_kept_apart() -> None:
    result = parse("gemini", _response(_code_parts()), fidelity="provider")
    kinds = [b["type"] for b in result.content]
    assert kinds == ["text", "server_tool_use", "server_tool_result", "text"]
    use, outcome = result.content[1], result.content[2]
    assert use["name"] == "code_execution"
    assert use["input"] == {"language": "PYTHON", "code": "print(sum(range(10)))"}
    assert use["raw"] == _code_parts()[1]
    assert outcome["tool_use_id"] == use["id"]
    assert outcome["output"] == {"outcome": "OUTCOME_OK", "output": "45\n"}
    assert outcome["is_error"] is False
    # The code part's signature stays with it, not on the text.
    assert "thought_signature" not in result.content[3]


def test_agentscope_fidelity_ignores_code_execution_as_agentscope_does() -> None:
    result = parse("gemini", _response(_code_parts()))
    assert result.content == [
        {"type": "text", "text": "Let me compute that."},
        # AgentScope gives the last non-call signature to the last text.
        {"type": "text", "text": "The sum is 45.", "thought_signature": CODE_SIGNATURE},
    ]


def test_failed_code_execution_is_an_error_result() -> None:
    parts = [
        {"executableCode": {"language": "PYTHON", "code": "1/0", "id": "c1"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_FAILED", "output": "ZeroDivisionError"}},
    ]
    use, result = parse("gemini", _response(parts), fidelity="provider").content
    assert use["id"] == "c1"
    assert result["tool_use_id"] == "c1"
    assert result["is_error"] is True


def test_code_execution_goes_back_as_parts_in_the_model_turn() -> None:
    content = parse("gemini", _response(_code_parts()), fidelity="provider").content
    body = format("gemini", _assistant_turn(content), fidelity="provider")
    assert body["contents"][1] == {
        "role": "model",
        "parts": [
            {"text": "Let me compute that."},
            {
                "executable_code": {"language": "PYTHON", "code": "print(sum(range(10)))"},
                "thought_signature": b"code-signature",
            },
            {"code_execution_result": {"outcome": "OUTCOME_OK", "output": "45\n"}},
            {"text": "The sum is 45."},
        ],
    }
    assert body.warnings == []


def test_agentscope_fidelity_skips_the_new_kinds_with_agentscopes_warning() -> None:
    content = parse("gemini", _response(_code_parts()), fidelity="provider").content
    body = format("gemini", _assistant_turn(content))
    assert body["contents"][1]["parts"] == [
        {"text": "Let me compute that."},
        {"text": "The sum is 45."},
    ]
    assert [w.block_type for w in body.warnings] == ["server_tool_use", "server_tool_result"]


def test_complete_and_streamed_code_execution_agree() -> None:
    parts = _code_parts()
    complete = parse("gemini", _response(parts, groundingMetadata=GROUNDING), fidelity="provider")
    chunks = [_response([part]) for part in parts]
    chunks[-1]["candidates"][0]["groundingMetadata"] = GROUNDING
    streamed, _ = _stream(chunks, "provider")
    assert streamed.content == complete.content


def test_streamed_text_around_code_is_not_glued() -> None:
    parts = _code_parts()
    chunks = [_response([{"text": "Let me "}]), _response([{"text": "compute that."}])]
    chunks += [_response([part]) for part in parts[1:]]
    streamed, _ = _stream(chunks, "provider")
    texts = [b["text"] for b in streamed.content if b["type"] == "text"]
    assert texts == ["Let me compute that.", "The sum is 45."]


def test_other_providers_server_tools_are_dropped_with_a_warning() -> None:
    foreign = [
        {"type": "text", "text": "Searching."},
        server_use("srvtoolu_1", "web_search", {"query": "euro 2024"}),
        server_result("web_search_tool_result", "srvtoolu_1", []),
    ]
    body = format("gemini", _assistant_turn(foreign), fidelity="provider")
    assert body["contents"][1]["parts"] == [{"text": "Searching."}]
    warned = [(w.path, w.block_type) for w in body.warnings]
    assert warned == [
        ("messages[1].content[1]", "server_tool_use"),
        ("messages[1].content[2]", "server_tool_result"),
    ]


@needs_sdks
def test_bodies_with_code_execution_validate() -> None:
    content = parse("gemini", _response(_code_parts()), fidelity="provider").content
    body = format(
        "gemini", _assistant_turn(content), fidelity="provider", request=REQUESTS["gemini"]
    )
    assert client.validate_many([("gemini", dict(body))]) == [[]]


# -- structured output ------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "temperature": {"type": "number"}},
    "required": ["city", "temperature"],
}
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


def test_structured_output_request_as_agentscope_sends_it() -> None:
    msgs = [{"name": "user", "role": "user", "content": "Weather in Paris?"}]
    body = format("gemini", msgs, tools=TOOLS, tool_choice="auto", response_schema=SCHEMA)
    assert body["response_mime_type"] == "application/json"
    assert body["response_schema"] == SCHEMA
    assert "tools" not in body
    assert "tool_config" not in body
    assert [w.block_type for w in body.warnings] == ["tool"]
    provider = format("gemini", msgs, response_schema=SCHEMA, fidelity="provider")
    # Where the REST body takes them, the schema where a JSON Schema goes.
    assert provider["generation_config"] == {
        "response_mime_type": "application/json",
        "response_json_schema": SCHEMA,
    }
    assert set(provider) == {"contents", "generation_config"}
    assert [w.message for w in provider.warnings] == [
        "moved to generation_config.response_json_schema"
    ]


@needs_sdks
def test_structured_output_body_validates() -> None:
    msgs = [{"name": "user", "role": "user", "content": "Weather in Paris?"}]
    body = format(
        "gemini", msgs, response_schema=SCHEMA, fidelity="provider", request=REQUESTS["gemini"]
    )
    assert client.validate_many([("gemini", dict(body))]) == [[]]


# -- the REST request body ---------------------------------------------------------------

PARAMS = {
    "model": "gemini-2.5-flash",
    "max_output_tokens": 256,
    "temperature": 0.2,
    "top_p": 0.9,
    "stop": ["END"],
    "seed": 7,
}
# `PARAMS` under the names REST `generationConfig` gives them (model aside:
# it is the URL's).
GENERATION = {
    "max_output_tokens": 256,
    "temperature": 0.2,
    "top_p": 0.9,
    "stop_sequences": ["END"],
    "seed": 7,
}
CHAT = [
    {"name": "system", "role": "system", "content": "Be brief."},
    {"name": "user", "role": "user", "content": "Weather in Paris?"},
]


@pytest.mark.parametrize("fidelity", FIDELITIES)
@pytest.mark.parametrize("multi_agent", [False, True], ids=["chat", "multi_agent"])
def test_parameters_go_in_generation_config_and_the_model_nowhere(
    fidelity: str, multi_agent: bool
) -> None:
    plain = format("gemini", CHAT, fidelity=fidelity, multi_agent=multi_agent)
    body = format("gemini", CHAT, fidelity=fidelity, multi_agent=multi_agent, request=PARAMS)
    assert dict(body) == {**plain, "generation_config": GENERATION}
    assert "model" not in json.dumps(dict(body))


@pytest.mark.parametrize("fidelity", FIDELITIES)
def test_structured_output_joins_the_parameters_in_generation_config(fidelity: str) -> None:
    body = format("gemini", CHAT, response_schema=SCHEMA, fidelity=fidelity, request=PARAMS)
    schema_key = "response_schema" if fidelity == "agentscope" else "response_json_schema"
    assert body["generation_config"] == {
        "response_mime_type": "application/json",
        schema_key: SCHEMA,
        **GENERATION,
    }
    assert not set(body) & {"response_mime_type", "response_schema", "response_json_schema"}


def test_extra_body_merges_into_generation_config() -> None:
    extra = {"generation_config": {"top_k": 40, "thinking_config": {"thinking_budget": 0}}}
    body = format("gemini", CHAT, request={**PARAMS, "extra_body": extra})
    assert body["generation_config"] == {**GENERATION, **extra["generation_config"]}


def test_the_system_prompt_is_the_system_instruction_in_provider_fidelity() -> None:
    later = {"name": "system", "role": "system", "content": "Answer in French."}
    for multi_agent in (False, True):
        body = format("gemini", [*CHAT, later], fidelity="provider", multi_agent=multi_agent)
        assert body["system_instruction"] == {"parts": [{"text": "Be brief."}]}
        texts = json.dumps(body["contents"])
        assert "Be brief." not in texts
        assert all(turn["role"] in ("user", "model") for turn in body["contents"])
    chat = format("gemini", [*CHAT, later], fidelity="provider")
    # A later system message stays where it was, a user turn.
    assert chat["contents"][-1] == {"role": "user", "parts": [{"text": "Answer in French."}]}
    # Alone it is the content the API needs, a user turn as AgentScope sends it.
    alone = format("gemini", CHAT[:1], fidelity="provider")
    assert alone["contents"] == [{"role": "user", "parts": [{"text": "Be brief."}]}]
    assert "system_instruction" not in alone


def test_the_token_budget_counts_the_system_prompt_as_before() -> None:
    """The system mark the body pass reads is not counted: a budget truncates
    the same messages in both fidelities, and counts the same."""
    msgs = [*CHAT, {"name": "user", "role": "user", "content": "And in Rome? " * 4}]
    whole = format("gemini", msgs, token_counter="char").token_count
    # The budget the whole conversation just fits: nothing is dropped.
    budgets = {"token_counter": "char", "max_tokens": whole}
    parity = format("gemini", msgs, **budgets)
    provider = format("gemini", msgs, fidelity="provider", **budgets)
    assert parity.token_count == provider.token_count == whole
    assert len(parity["contents"]) == 3
    assert provider["contents"] == parity["contents"][1:]


def test_agentscope_fidelity_sends_the_system_prompt_as_a_user_turn() -> None:
    body = format("gemini", CHAT, request=PARAMS)
    assert body["contents"][0] == {"role": "user", "parts": [{"text": "Be brief."}]}
    assert "system_instruction" not in body


@needs_sdks
@pytest.mark.parametrize("fidelity", FIDELITIES)
def test_bodies_with_parameters_validate_as_rest_requests(fidelity: str) -> None:
    bodies = [
        format("gemini", CHAT, fidelity=fidelity, request=PARAMS),
        format("gemini", CHAT, response_schema=SCHEMA, fidelity=fidelity, request=PARAMS),
    ]
    verdicts = client.validate_many([("gemini", dict(body)) for body in bodies])
    assert verdicts == [[], []]


@pytest.mark.parametrize("fidelity", FIDELITIES)
def test_structured_output_parses_the_json_text(fidelity: str) -> None:
    text = '{"city": "Paris", "temperature": 22.5}'
    result = parse("gemini", _response([{"text": text}]), structured_output=True, fidelity=fidelity)
    assert result.structured_output == {"city": "Paris", "temperature": 22.5}
    chunks = [_response([{"text": text[:10]}]), _response([{"text": text[10:]}])]
    parser = StreamParser("gemini", structured_output=True, fidelity=fidelity)
    for chunk in chunks:
        parser.feed(chunk)
    assert parser.finish().structured_output == result.structured_output


# -- every recorded transcript ------------------------------------------------------------


@needs_transcripts
@pytest.mark.parametrize("fidelity", FIDELITIES)
def test_every_gemini_transcript_parses(fidelity: str) -> None:
    for path in sorted(GEMINI.iterdir()):
        if path.suffix == ".json":
            result = parse("gemini", path.read_text(), fidelity=fidelity)
        else:
            result, _ = _stream(_events(path.name), fidelity)
        assert result.content, path.name
        assert all(b.get("name") for b in result.content if b["type"] == "tool_use"), path.name


def test_an_empty_grounding_record_gives_no_block() -> None:
    response = _response([{"text": "Hi."}], groundingMetadata={}, urlContextMetadata={})
    assert parse("gemini", response, fidelity="provider").content == [
        {"type": "text", "text": "Hi."}
    ]


def test_the_transcript_counter_finds_every_record_kept(tmp_path: Path) -> None:
    """The fixtures, as transcripts: what tests/test_transcripts.py counts is kept."""
    response = _response(_code_parts(), groundingMetadata=GROUNDING, urlContextMetadata=URL_CONTEXT)
    complete = tmp_path / "fixture.json"
    complete.write_text(json.dumps(response))
    stream = tmp_path / "fixture.events.jsonl"
    chunks = [_response([part]) for part in _code_parts()]
    chunks[-1]["candidates"][0]["groundingMetadata"] = GROUNDING
    chunks.append(copy.deepcopy(chunks[-1]))
    stream.write_text("".join(json.dumps(chunk) + "\n" for chunk in chunks))
    for transcript in (
        Transcript("gemini", complete, "json"),
        Transcript("gemini", stream, "events"),
    ):
        expected = count_raw(transcript)
        assert expected["server_tool_use"] == expected["server_tool_result"] == 1
        assert count_parsed(transcript.run("provider").content) == expected


@needs_transcripts
@pytest.mark.parametrize("fidelity", FIDELITIES)
def test_streamed_and_complete_calls_agree(fidelity: str) -> None:
    """The recorded stream's parts as one complete response give the same calls."""
    events = _events("vercel-google-google-vertex-stream-tool-call-arguments-nested.1.events.jsonl")
    parts = [p for e in events for c in e["candidates"][:1] for p in c["content"]["parts"]]
    # The model that signed the calls, which the stream names too.
    response = {**_response(parts), "modelVersion": events[0]["modelVersion"]}
    complete = parse("gemini", response, fidelity=fidelity)
    streamed, _ = _stream(events, fidelity)
    calls = [b for b in streamed.content if b["type"] == "tool_use"]
    assert calls == [b for b in complete.content if b["type"] == "tool_use"]


def test_a_turn_of_code_execution_only_is_not_empty() -> None:
    parts = _code_parts()[1:3]
    content = parse("gemini", _response(parts), fidelity="provider").content
    assert [b["type"] for b in content] == ["server_tool_use", "server_tool_result"]
    body = format("gemini", _assistant_turn(content), fidelity="provider")
    assert [set(p) - {"thought_signature"} for p in body["contents"][1]["parts"]] == [
        {"executable_code"},
        {"code_execution_result"},
    ]


# -- the provider-fidelity body (moved from test_fidelity.py) --------------------------


def test_gemini_schema_keywords() -> None:
    body = format("gemini", [_msg("user", "user", "Hi")], tools=SCENARIO_TOOLS, fidelity="provider")
    parameters = body["tools"][0]["function_declarations"][0]["parameters"]
    assert "$schema" not in parameters
    assert "examples" not in parameters["properties"]["city"]
    assert "exclusiveMaximum" not in parameters["properties"]["days"]
    assert parameters["properties"]["unit"]["default"] == "c"  # Gemini takes it
    paths = [path for path, kind in _kinds(body) if kind == "tool_schema"]
    assert "tools[0].function_declarations[0].parameters.$schema" in paths


def _two_calls(signature: str | None) -> list[dict[str, Any]]:
    """A user question, a model turn of two parallel calls (the first signed
    with `signature` by Gemini where given), and their results."""
    calls = [
        {"type": "tool_use", "id": f"call_{n}", "name": "get_weather", "input": {"city": city}}
        for n, city in enumerate(("Paris", "Oslo"))
    ]
    if signature is not None:
        calls[0]["thought_signature"] = signature
    results = [
        {"type": "tool_result", "id": f"call_{n}", "name": "get_weather", "output": "sunny"}
        for n in range(2)
    ]
    return [
        {"role": "user", "name": "user", "content": "Weather in Paris and Oslo?"},
        {"role": "assistant", "name": "friday", "content": calls},
        {"role": "system", "name": "system", "content": results},
    ]


def _function_calls(body: Any) -> list[dict[str, Any]]:
    return [p for turn in body["contents"] for p in turn["parts"] if "function_call" in p]


def test_calls_gemini_did_not_sign_carry_its_documented_placeholder() -> None:
    """Calls another model made (no Gemini signature) would be refused by
    Gemini 3: the first call of the turn carries the placeholder Gemini's docs
    give for such a conversation, with a warning; the second stays as it is,
    as Gemini signs only the first of parallel calls."""
    body = format("gemini", _two_calls(None), fidelity="provider")
    first, second = _function_calls(body)
    assert first["thought_signature"] == b"skip_thought_signature_validator"
    assert "thought_signature" not in second
    assert [(w.path, w.block_type) for w in body.warnings] == [("contents[1].parts[0]", "tool_use")]


def test_calls_gemini_signed_go_back_as_they_came() -> None:
    signature = base64.b64encode(b"gemini-signed").decode()
    body = format("gemini", _two_calls(signature), fidelity="provider")
    first, second = _function_calls(body)
    assert first["thought_signature"] == b"gemini-signed"
    assert "thought_signature" not in second
    assert body.warnings == []


def test_agentscope_fidelity_sends_unsigned_calls_as_agentscope_does() -> None:
    body = format("gemini", _two_calls(None))
    assert all("thought_signature" not in call for call in _function_calls(body))
    assert body.warnings == []


@needs_sdks
def test_the_placeholder_body_validates() -> None:
    body = format(
        "gemini", _two_calls(None), fidelity="provider", request={"model": "gemini-3-pro-preview"}
    )
    assert client.validate("gemini", dict(body)) == []
