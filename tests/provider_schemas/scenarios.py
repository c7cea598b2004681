"""Realistic agent-app conversations for provider fidelity: they cross providers
(thinking and signatures from one replayed to another), loop over parallel tool
calls, carry media where some providers cannot take it, and bring JSON Schema
keywords only some providers accept. Built here, not recorded.
"""

from __future__ import annotations

from typing import Any

_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAGUlEQVR4AQEOAPH/AP8AAAD/"
    "AAAAAP////8f7gX73t3sKwAAAABJRU5ErkJggg=="
)
# A tiny SVG and a few bytes standing for MP3 / MP4 data (never decoded here).
_SVG = "PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciLz4="
_MP3 = "//sUxAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
_MP4 = "AAAAGGZ0eXBtcDQyAAAAAG1wNDJpc29t"


def _msg(name: str, role: str, content: Any) -> dict[str, Any]:
    return {"name": name, "role": role, "content": content}


def _media(kind: str, media_type: str, data: str) -> dict[str, Any]:
    return {"type": kind, "source": {"type": "base64", "media_type": media_type, "data": data}}


def _result(call_id: str, name: str, output: Any) -> dict[str, Any]:
    return _msg(
        "system",
        "system",
        [{"type": "tool_result", "id": call_id, "name": name, "output": output}],
    )


def _call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": args}


TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": {
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "city": {"type": "string", "minLength": 1, "examples": ["Paris"]},
                    "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
                    "days": {"type": "integer", "minimum": 1, "exclusiveMaximum": 15},
                    "where": {
                        "type": "object",
                        "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
                        "const": None,
                    },
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "render_chart",
            "description": "Render a chart as an image.",
            "parameters": {"type": "object", "properties": {"spec": {"type": "string"}}},
        },
    },
]

# -- Claude's server tools (provider fidelity keeps them; only Claude takes them back) --

_SEARCH_ID = "srvtoolu_01WeB5eArCh"
_CODE_ID = "srvtoolu_01CoDeExEc"


def server_use(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic server tool call as a provider-fidelity parse gives it."""
    raw = {"type": "server_tool_use", "id": call_id, "name": name, "input": args}
    return {
        "type": "server_tool_use",
        "id": call_id,
        "name": name,
        "input": args,
        "provider_type": "server_tool_use",
        "raw": raw,
    }


def server_result(kind: str, call_id: str, output: Any) -> dict[str, Any]:
    """An Anthropic server tool result as a provider-fidelity parse gives it."""
    raw = {"type": kind, "tool_use_id": call_id, "content": output}
    return {
        "type": "server_tool_result",
        "tool_use_id": call_id,
        "provider_type": kind,
        "output": output,
        "is_error": False,
        "raw": raw,
    }


_CITATION = {
    "type": "web_search_result_location",
    "cited_text": "The museum reopens on Friday after a two-year renovation.",
    "url": "https://example.com/news/museum",
    "title": "Museum reopens",
    "encrypted_index": "EpABCioIARgCIiQ=",
}

# Redacted and signed-but-empty thinking, a web search whose answer cites its
# source (text either side of the search kept apart), code execution, and a
# client tool call made from the code (programmatic calling, `caller`) that the
# conversation has not answered yet.
SERVER_TOOL_TURN = [
    _msg("user", "user", "What reopens this week? And how many days is 6 weeks?"),
    _msg(
        "Friday",
        "assistant",
        [
            {"type": "thinking", "thinking": "", "redacted_data": "EmwKAhgBEgy3va3pzix/LafPsn4="},
            {"type": "thinking", "thinking": "", "signature": "EqQBCkYIARgCKkA="},
            {"type": "text", "text": "Let me search."},
            server_use(_SEARCH_ID, "web_search", {"query": "reopens this week"}),
            server_result(
                "web_search_tool_result",
                _SEARCH_ID,
                [
                    {
                        "type": "web_search_result",
                        "url": "https://example.com/news/museum",
                        "title": "Museum reopens",
                        "encrypted_content": "EqgfCioIARgCIiQ=",
                        "page_age": "2 days ago",
                    }
                ],
            ),
            {"type": "text", "text": "The museum reopens on Friday.", "citations": [_CITATION]},
            server_use(_CODE_ID, "bash_code_execution", {"command": "echo $((6 * 7))"}),
            server_result(
                "bash_code_execution_tool_result",
                _CODE_ID,
                {
                    "type": "bash_code_execution_result",
                    "stdout": "42\n",
                    "stderr": "",
                    "return_code": 0,
                    "content": [],
                },
            ),
            {"type": "text", "text": "Six weeks are 42 days."},
            {
                **_call("toolu_01Pending", "get_weather", {"city": "Paris"}),
                "caller": {"type": "direct"},
            },
        ],
    ),
]


# Thinking replayed from another provider (no signature), a Gemini thought
# signature on text, parallel calls answered by separate results, media in
# tool results, an SVG, user audio and video, and empty blocks.
CROSS_PROVIDER_TOOL_LOOP = [
    _msg("system", "system", "You are Friday, a helpful assistant."),
    _msg(
        "user",
        "user",
        [
            {"type": "text", "text": "Weather in Paris and Rome, and a chart?"},
            _media("image", "image/png", _PNG),
            _media("image", "image/svg+xml", _SVG),
            {"type": "text", "text": ""},
        ],
    ),
    _msg(
        "Friday",
        "assistant",
        [
            {"type": "thinking", "thinking": "Two cities: call the tool twice."},
            {"type": "text", "text": "Checking both.", "thought_signature": "AXNpZy10ZXh0/w=="},
            _call("call_1", "get_weather", {"city": "Paris"}),
            _call("call_2", "get_weather", {"city": "Rome"}),
        ],
    ),
    _result("call_1", "get_weather", [{"type": "text", "text": "Sunny, 25C"}]),
    _result(
        "call_2",
        "get_weather",
        [{"type": "text", "text": "Rain, 18C"}, _media("audio", "audio/mp3", _MP3)],
    ),
    _msg(
        "Friday",
        "assistant",
        [
            {"type": "thinking", "thinking": ""},
            {"type": "text", "text": "Paris is sunny, Rome rainy. Rendering."},
            _call("call_3", "render_chart", {"spec": "bar"}),
        ],
    ),
    _result(
        "call_3",
        "render_chart",
        [_media("image", "image/png", _PNG), _media("video", "video/mp4", _MP4)],
    ),
    _msg("Friday", "assistant", [{"type": "text", "text": "Here is the chart."}]),
    _msg(
        "user",
        "user",
        [{"type": "text", "text": "Listen to this."}, _media("audio", "audio/mp3", _MP3)],
    ),
    _msg(
        "Friday",
        "assistant",
        [
            {"type": "thinking", "thinking": "Signed reasoning.", "signature": "EqQBCkYIARgC"},
            _call("call_4", "get_weather", {"city": "Oslo"}),
        ],
    ),
]

# A tool call the conversation never answers (an interrupted loop).
UNANSWERED_CALL = [
    _msg("user", "user", "Weather?"),
    _msg("Friday", "assistant", [_call("call_u", "get_weather", {"city": "Quito"})]),
    _msg("user", "user", "Never mind. Hello!"),
]

# Server-side tools and grounding parsed in provider fidelity, replayed to every
# provider: Gemini code execution (signed) and grounding, an OpenAI citation on
# text, an Anthropic web search with its result, then a call left unanswered.
# Each provider takes back what is its own and drops the rest.
_GEMINI_CODE = {"language": "PYTHON", "code": "print(sum(range(10)))"}
_GEMINI_RESULT = {"outcome": "OUTCOME_OK", "output": "45\n"}
SERVER_TOOLS = [
    _msg("user", "user", "Sum 0 to 9 with code, then search the web for Euro 2024."),
    _msg(
        "Friday",
        "assistant",
        [
            {"type": "text", "text": "Computing."},
            {
                "type": "server_tool_use",
                "id": "code_0",
                "name": "code_execution",
                "input": _GEMINI_CODE,
                "provider_type": "executableCode",
                "raw": {"executableCode": _GEMINI_CODE, "thoughtSignature": "AXNpZy1jb2Rl/w=="},
            },
            {
                "type": "server_tool_result",
                "tool_use_id": "code_0",
                "provider_type": "codeExecutionResult",
                "output": _GEMINI_RESULT,
                "is_error": False,
                "raw": {"codeExecutionResult": _GEMINI_RESULT},
            },
            {
                "type": "text",
                "text": "The sum is 45 (example.com).",
                "citations": [
                    {
                        "type": "url_citation",
                        "url_citation": {
                            "start_index": 14,
                            "end_index": 27,
                            "title": "Example",
                            "url": "https://example.com/",
                        },
                    }
                ],
            },
            {
                "type": "grounding",
                "provider_type": "groundingMetadata",
                "sources": [{"url": "https://example.com/", "title": "Example"}],
                "queries": ["sum of 0 to 9"],
                "raw": {
                    "webSearchQueries": ["sum of 0 to 9"],
                    "groundingChunks": [
                        {"web": {"uri": "https://example.com/", "title": "Example"}}
                    ],
                },
            },
        ],
    ),
    _msg("user", "user", "Thanks. Now Euro 2024?"),
    _msg(
        "Friday",
        "assistant",
        [
            {
                "type": "server_tool_use",
                "id": "srvtoolu_01",
                "name": "web_search",
                "input": {"query": "euro 2024 winner"},
                "provider_type": "server_tool_use",
                "raw": {
                    "type": "server_tool_use",
                    "id": "srvtoolu_01",
                    "name": "web_search",
                    "input": {"query": "euro 2024 winner"},
                },
            },
            {
                "type": "server_tool_result",
                "tool_use_id": "srvtoolu_01",
                "provider_type": "web_search_tool_result",
                "output": [],
                "is_error": False,
                "raw": {
                    "type": "web_search_tool_result",
                    "tool_use_id": "srvtoolu_01",
                    "content": [],
                },
            },
            {"type": "text", "text": "Spain won Euro 2024."},
            _call("call_s", "get_weather", {"city": "Berlin"}),
        ],
    ),
    # The user moves on: the call is never answered.
    _msg("user", "user", "Great."),
]

SCENARIOS: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]] | None]] = {
    "cross_provider_tool_loop": (CROSS_PROVIDER_TOOL_LOOP[:-1], TOOLS),
    "server_tool_turn": (SERVER_TOOL_TURN, TOOLS),
    "cross_provider_pending_call": (CROSS_PROVIDER_TOOL_LOOP, TOOLS),
    "unanswered_call": (UNANSWERED_CALL, TOOLS),
    "server_tools": (SERVER_TOOLS, TOOLS),
}

# An OpenAI Responses agent turn as the provider-fidelity parse gives it:
# encrypted reasoning, a server-side web search, cited text, a call answered,
# and a last call left pending (every other provider must drop or adapt what
# it cannot take: reasoning ids, Responses items, Responses annotations).
_URL_CITATION = {
    "type": "url_citation",
    "url": "https://example.com/paris",
    "title": "Paris weather",
    "start_index": 0,
    "end_index": 5,
}
_WEB_SEARCH = {
    "type": "web_search_call",
    "id": "ws_1",
    "status": "completed",
    "action": {"type": "search", "query": "weather Paris"},
}
RESPONSES_SERVER_TOOLS = [
    _msg("system", "system", "You are Friday, a helpful assistant."),
    _msg("user", "user", "Weather in Paris, then Rome?"),
    _msg(
        "Friday",
        "assistant",
        [
            {
                "type": "thinking",
                "thinking": "Search first.",
                "reasoning_id": "rs_1",
                "encrypted_content": "gAAAAB-opaque",
            },
            {
                "type": "server_tool_use",
                "id": "ws_1",
                "name": "web_search",
                "input": {"action": _WEB_SEARCH["action"]},
                "provider_type": "web_search_call",
                "raw": _WEB_SEARCH,
            },
            {"type": "thinking", "thinking": "", "reasoning_id": "rs_2"},
            {"type": "text", "text": "Paris: sunny.", "citations": [_URL_CITATION]},
            _call("call_r1", "get_weather", {"city": "Rome"}),
        ],
    ),
    _result("call_r1", "get_weather", [{"type": "text", "text": "Rain, 18C"}]),
    _msg(
        "Friday",
        "assistant",
        [
            {"type": "thinking", "thinking": "", "reasoning_id": "rs_3", "encrypted_content": "gA"},
            _call("call_r2", "get_weather", {"city": "Oslo"}),
        ],
    ),
]
SCENARIOS["responses_server_tools"] = (RESPONSES_SERVER_TOOLS, TOOLS)


# -- AgentScope 2.x's own messages --------------------------------------------------------
# Real `model_dump`s from tests/golden/agentscope2/messages.json (made by the real
# AgentScope 2.0.11): an agent's tool loop as 2.x keeps it (thinking, text, the tool
# call and its result, a hint, the answer, in one assistant message), and a user
# giving a PDF as a data block.


def _agentscope2(*names: str) -> list[dict[str, Any]]:
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "golden" / "agentscope2" / "messages.json"
    with path.open(encoding="utf-8") as file:
        dumps = {case["name"]: case["dump"] for case in json.load(file)["cases"]}
    return [dumps[name] for name in names]


AGENTSCOPE2_TOOL_LOOP = _agentscope2("role/user.text", "turn/tool_loop", "role/user.text")
AGENTSCOPE2_PDF = _agentscope2("role/user.text", "data/base64.application_pdf")
