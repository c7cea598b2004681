"""Hand-made request bodies for the validator's self-tests: per provider,
minimal bodies that must pass and bodies the API rejects (or silently drops
parts of) that must fail with a given violation. Each is sent with the
model call's required parameters (`_CALL`) unless it is about them."""

from __future__ import annotations

import base64
from typing import Any, NamedTuple

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode("ascii")
TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


class Case(NamedTuple):
    provider: str
    body: dict[str, Any]
    # None: must be valid. Else (kind, path) of a violation that must be reported.
    expect: tuple[str, str] | None


def _user(content: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": content}]}


def _anthropic_user(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": list(blocks)}]}


def _gemini(*parts: dict[str, Any], role: str = "user") -> dict[str, Any]:
    return {"contents": [{"role": role, "parts": list(parts)}]}


def _text(text: str = "hi", **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": text, **extra}


_OPENAI_TOOL_LOOP: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "Sunny"},
]


def _tool_loop(assistant: dict[str, Any], tool: dict[str, Any]) -> list[dict[str, Any]]:
    """The OpenAI tool loop with extra keys on its assistant turn and tool message."""
    return [
        *_OPENAI_TOOL_LOOP[:2],
        {**_OPENAI_TOOL_LOOP[2], **assistant},
        {**_OPENAI_TOOL_LOOP[3], **tool},
    ]


_IMAGE_PART = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
_AUDIO_PART = {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}}
_KIMI_SEARCH_CALL = {
    "id": "search_1",
    "type": "builtin_function",
    "function": {"name": "$web_search", "arguments": '{"query": "Paris weather"}'},
}
_MINIMAX_REASONING = [
    {
        "type": "reasoning.text",
        "id": "r1",
        "format": "MiniMax-response-v1",
        "index": 0,
        "text": "Look it up.",
    }
]

MUST_PASS: dict[str, Case] = {
    "openai/text": Case("openai", _user("hi"), None),
    "openai/parts": Case(
        "openai",
        _user(
            [
                _text(),
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}},
            ]
        ),
        None,
    ),
    "openai/tool_loop": Case(
        "openai",
        {"messages": _OPENAI_TOOL_LOOP, "tools": [TOOL], "tool_choice": "required"},
        None,
    ),
    "openai/named_choice": Case(
        "openai",
        {
            **_user("hi"),
            "tools": [TOOL],
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        },
        None,
    ),
    "responses/text": Case(
        "openai_responses",
        {
            "input": [
                {"role": "system", "content": [{"type": "input_text", "text": "Be brief."}]},
                {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
                {"role": "assistant", "content": [{"type": "output_text", "text": "hello"}]},
                {
                    "role": "user",
                    "content": [
                        {"type": "input_image", "image_url": "https://x/y.png", "detail": "auto"}
                    ],
                },
            ]
        },
        None,
    ),
    "responses/tool_loop": Case(
        "openai_responses",
        {
            "input": [
                {"role": "user", "content": "Weather in Paris?"},
                {
                    "type": "function_call",
                    "call_id": "call_1",
                    "name": "get_weather",
                    "arguments": '{"city": "Paris"}',
                },
                {"type": "function_call_output", "call_id": "call_1", "output": "Sunny"},
            ],
            "tools": [
                {
                    "type": "function",
                    "name": "get_weather",
                    "parameters": {"type": "object", "properties": {}},
                    "strict": False,
                }
            ],
            "tool_choice": "auto",
        },
        None,
    ),
    "anthropic/text": Case(
        "anthropic",
        {"system": "Be brief.", **_anthropic_user(_text())},
        None,
    ),
    "anthropic/tool_loop": Case(
        "anthropic",
        {
            "system": [_text("Be brief.")],
            "messages": [
                {"role": "user", "content": [_text("Weather in Paris?")]},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "Look it up.", "signature": "c2ln"},
                        {
                            "type": "tool_use",
                            "id": "toolu_1",
                            "name": "get_weather",
                            "input": {"city": "Paris"},
                        },
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "toolu_1",
                            "content": [
                                _text("Sunny"),
                                {
                                    "type": "image",
                                    "source": {
                                        "type": "base64",
                                        "media_type": "image/png",
                                        "data": PNG,
                                    },
                                },
                            ],
                        }
                    ],
                },
            ],
            "tools": [
                {
                    "name": "get_weather",
                    "description": "Weather for a city.",
                    "input_schema": {
                        "type": "object",
                        "properties": {},
                        "additionalProperties": False,
                    },
                }
            ],
            "tool_choice": {"type": "tool", "name": "get_weather"},
        },
        None,
    ),
    "gemini/text": Case(
        "gemini",
        {
            "contents": [
                {"role": "user", "parts": [{"text": "hi"}]},
                {"role": "model", "parts": [{"text": "hello", "thought_signature": b"sig"}]},
            ]
        },
        None,
    ),
    "gemini/tool_loop": Case(
        "gemini",
        {
            "contents": [
                {"role": "user", "parts": [{"text": "Weather?"}]},
                {
                    "role": "model",
                    "parts": [{"function_call": {"id": None, "name": "f", "args": {"a": 1}}}],
                },
                {
                    "role": "user",
                    "parts": [
                        {"function_response": {"id": "1", "name": "f", "response": {"output": "x"}}}
                    ],
                },
                {
                    "role": "user",
                    "parts": [{"inline_data": {"data": PNG, "mime_type": "image/png"}}],
                },
            ],
            "tools": [
                {
                    "function_declarations": [
                        {
                            "name": "f",
                            "parameters": {
                                "type": "object",
                                "properties": {"a": {"type": "integer"}},
                            },
                        }
                    ]
                }
            ],
            "tool_config": {
                "function_calling_config": {"mode": "ANY", "allowed_function_names": ["f"]}
            },
        },
        None,
    ),
    "gemini/generation_config": Case(
        "gemini",
        {
            **_gemini({"text": "Weather?"}),
            "system_instruction": {"parts": [{"text": "Be brief."}]},
            "generation_config": {
                "response_mime_type": "application/json",
                "response_json_schema": {"type": "object"},
                "max_output_tokens": 256,
                "temperature": 0.0,
                "top_p": 0.9,
                "stop_sequences": ["END"],
                "seed": 7,
                "top_k": 40,
                "thinking_config": {"thinking_budget": 0},
            },
        },
        None,
    ),
    "gemini/camel_case": Case(
        "gemini",
        {
            "contents": [
                {"role": "user", "parts": [{"inlineData": {"data": PNG, "mimeType": "image/png"}}]}
            ],
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
            "generationConfig": {"temperature": 0.2, "thinkingConfig": {"includeThoughts": True}},
        },
        None,
    ),
    "ollama/tool_loop": Case(
        "ollama",
        {
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Weather?", "images": [PNG]},
                {
                    "role": "assistant",
                    "content": "",
                    "thinking": "Look it up.",
                    "tool_calls": [
                        {"function": {"name": "get_weather", "arguments": {"city": "P"}}}
                    ],
                },
                {"role": "tool", "content": "Sunny", "tool_name": "get_weather"},
            ],
            "tools": [TOOL],
            "think": True,
        },
        None,
    ),
    "deepseek/thinking_tool_loop": Case(
        "deepseek",
        {
            "messages": [
                *_OPENAI_TOOL_LOOP[:2],
                {**_OPENAI_TOOL_LOOP[2], "reasoning_content": "Look it up."},
                _OPENAI_TOOL_LOOP[3],
                {"role": "assistant", "content": "It is", "prefix": True},
            ],
            "thinking": {"type": "enabled"},
            "tools": [TOOL],
        },
        None,
    ),
    "dashscope/multimodal": Case(
        "dashscope",
        {
            "messages": [
                {"role": "system", "content": "Be brief."},
                {
                    "role": "user",
                    "content": [
                        {"text": "What is this?"},
                        {"image": f"data:image/png;base64,{PNG}"},
                        {"audio": "https://x/a.wav"},
                        {"video": ["https://x/1.png", "https://x/2.png"], "fps": 2},
                    ],
                },
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": _OPENAI_TOOL_LOOP[2]["tool_calls"],
                },
                {
                    "role": "tool",
                    "content": "Sunny",
                    "tool_call_id": "call_1",
                    "name": "get_weather",
                },
            ],
            "tools": [TOOL],
            "tool_choice": "auto",
            "enable_thinking": True,
        },
        None,
    ),
    "dashscope_compatible/multimodal": Case(
        "dashscope_compatible",
        {
            "messages": [
                {
                    "role": "system",
                    "content": [_text("Be brief.", cache_control={"type": "ephemeral"})],
                },
                {
                    "role": "user",
                    "content": [
                        _text("What happens?"),
                        {"type": "video", "video": ["https://x/1.png", "https://x/2.png"]},
                        {"type": "video_url", "video_url": {"url": "https://x/v.mp4"}},
                    ],
                },
                {"role": "assistant", "content": "It", "partial": True},
            ],
            "enable_thinking": False,
            "top_k": 20,
        },
        None,
    ),
    "moonshot/text": Case("moonshot", _user("hi"), None),
    "moonshot/image_and_partial": Case(
        "moonshot",
        {
            "messages": [
                {"role": "user", "content": [_text("Describe it."), _IMAGE_PART]},
                {"role": "assistant", "name": "Narrator", "content": "It is", "partial": True},
            ],
            "max_tokens": 256,
        },
        None,
    ),
    "moonshot/builtin_search_loop": Case(
        "moonshot",
        {
            "messages": [
                {"role": "user", "content": "Weather in Paris?"},
                {
                    "role": "assistant",
                    "content": "",
                    "reasoning_content": "Search the web.",
                    "tool_calls": [_KIMI_SEARCH_CALL],
                },
                {
                    "role": "tool",
                    "tool_call_id": "search_1",
                    "name": "$web_search",
                    "content": '{"query": "Paris weather"}',
                },
            ],
            "tools": [
                {"type": "builtin_function", "function": {"name": "$web_search"}},
                TOOL,
            ],
            "thinking": {"type": "enabled"},
        },
        None,
    ),
    "xai/text": Case("xai", _user("hi"), None),
    "xai/image_tool_loop_search": Case(
        "xai",
        {
            "messages": [
                {"role": "user", "content": [_text("Where is this?"), _IMAGE_PART]},
                *_OPENAI_TOOL_LOOP,
            ],
            "tools": [TOOL],
            "tool_choice": "auto",
            "max_completion_tokens": 512,
            "seed": 7,
            "stop": ["\n\n"],
            "reasoning_effort": "low",
            "search_parameters": {
                "mode": "auto",
                "sources": [{"type": "web"}, {"type": "news"}],
                "return_citations": True,
                "max_search_results": 5,
            },
        },
        None,
    ),
    "volcengine/text": Case("volcengine", _user("hi"), None),
    "volcengine/media_parts": Case(
        "volcengine",
        {
            **_user(
                [
                    _text("What happens?"),
                    _IMAGE_PART,
                    {"type": "video_url", "video_url": {"url": "https://x/v.mp4", "fps": 1.0}},
                    {"type": "input_audio", "input_audio": {"url": "https://x/a.mp3"}},
                    {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}},
                ]
            ),
            "thinking": {"type": "auto"},
            "max_tokens": 512,
        },
        None,
    ),
    "volcengine/thinking_tool_loop": Case(
        "volcengine",
        {
            "messages": _tool_loop({"reasoning_content": "Look it up."}, {"name": "get_weather"}),
            "tools": [TOOL],
            "tool_choice": "required",
            "thinking": {"type": "enabled"},
            "reasoning_effort": "medium",
            "max_completion_tokens": 1024,
        },
        None,
    ),
    "zhipu/text": Case("zhipu", _user("hi"), None),
    "zhipu/user_parts": Case(
        "zhipu",
        {
            "messages": [
                {"role": "system", "content": "Be brief."},
                {
                    "role": "user",
                    "content": [
                        _text("Compare them."),
                        _IMAGE_PART,
                        {"type": "video_url", "video_url": {"url": "https://x/v.mp4"}},
                        {"type": "file_url", "file_url": {"url": "https://x/d.pdf"}},
                    ],
                },
            ],
            "response_format": {"type": "json_object"},
            "thinking": {"type": "disabled"},
        },
        None,
    ),
    "zhipu/thinking_tool_loop": Case(
        "zhipu",
        {
            "messages": _tool_loop({"reasoning_content": "Look it up."}, {}),
            "tools": [TOOL, {"type": "web_search", "web_search": {"search_result": True}}],
            "tool_choice": "auto",
            "thinking": {"type": "enabled", "clear_thinking": False},
            "max_tokens": 1024,
            "seed": 7,
            "stop": ["\n\n"],
            "tool_stream": True,
            "stream": True,
        },
        None,
    ),
    "minimax/text": Case("minimax", _user("hi"), None),
    "minimax/reasoning_split_tool_loop": Case(
        "minimax",
        {
            "messages": [
                {"role": "user", "content": [_text("Where is it warm?"), _IMAGE_PART]},
                *_tool_loop({"reasoning_details": _MINIMAX_REASONING}, {})[1:],
            ],
            "tools": [TOOL],
            "tool_choice": "auto",
            "reasoning_split": True,
            "thinking": {"type": "adaptive"},
            "max_completion_tokens": 1024,
        },
        None,
    ),
    "minimax/json_schema": Case(
        "minimax",
        {
            "messages": [
                {"role": "assistant", "content": "<think>\nHm.\n</think>\nA city?"},
                {"role": "user", "content": "Paris, as JSON."},
            ],
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": "city",
                    "schema": {"type": "object", "properties": {"name": {"type": "string"}}},
                },
            },
            "tool_choice": "none",
            "tools": [TOOL],
        },
        None,
    ),
}

MUST_FAIL: dict[str, Case] = {
    # OpenAI chat
    "openai/thought_signature_on_text": Case(
        "openai",
        _user([_text(thought_signature="c2ln")]),
        ("unknown_key", "$.messages[0].content[0].thought_signature"),
    ),
    "openai/cache_control_on_text": Case(
        "openai",
        _user([_text(cache_control={"type": "ephemeral"})]),
        ("unknown_key", "$.messages[0].content[0].cache_control"),
    ),
    "openai/bogus_role": Case(
        "openai",
        {"messages": [{"role": "bogus", "content": "x"}]},
        ("bad_value", "$.messages[0].role"),
    ),
    # pydantic's lazy Iterable validation would let the third message through.
    "openai/bogus_role_after_valid_ones": Case(
        "openai",
        {"messages": [*_OPENAI_TOOL_LOOP, {"role": "bogus", "content": "x"}]},
        ("bad_value", "$.messages[4].role"),
    ),
    "openai/name_on_tool_message": Case(
        "openai",
        {"messages": [*_OPENAI_TOOL_LOOP[:3], {**_OPENAI_TOOL_LOOP[3], "name": "get_weather"}]},
        ("unknown_key", "$.messages[3].name"),
    ),
    "openai/arguments_as_object": Case(
        "openai",
        {
            "messages": [
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "c", "type": "function", "function": {"name": "f", "arguments": {}}}
                    ],
                }
            ]
        },
        ("wrong_type", "$.messages[0].tool_calls[0].function.arguments"),
    ),
    "openai/missing_messages": Case("openai", {"tools": [TOOL]}, ("missing_key", "$.messages")),
    "openai/bool_is_not_int": Case("openai", {**_user("x"), "n": True}, ("wrong_type", "$.n")),
    "openai/unknown_top_level": Case("openai", {**_user("x"), "foo": 1}, ("unknown_key", "$.foo")),
    # OpenAI Responses
    "responses/input_audio_in_user_message": Case(
        "openai_responses",
        {
            "input": [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}}
                    ],
                }
            ]
        },
        ("bad_value", "$.input[0].content[0].type"),
    ),
    "responses/tool_without_strict": Case(
        "openai_responses",
        {
            "input": "hi",
            "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
        },
        ("missing_key", "$.tools[0].strict"),
    ),
    "responses/input_text_in_assistant_message": Case(
        "openai_responses",
        {"input": [{"role": "assistant", "content": [{"type": "input_text", "text": "x"}]}]},
        ("constraint", "$.input[0].content[0].type"),
    ),
    "responses/output_text_in_user_message": Case(
        "openai_responses",
        {"input": [{"role": "user", "content": [{"type": "output_text", "text": "x"}]}]},
        ("constraint", "$.input[0].content[0].type"),
    ),
    "responses/function_call_without_name": Case(
        "openai_responses",
        {"input": [{"type": "function_call", "call_id": "call_1", "arguments": "{}"}]},
        ("missing_key", "$.input[0].name"),
    ),
    # Anthropic
    "anthropic/thinking_without_signature": Case(
        "anthropic",
        {"messages": [{"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}]}]},
        ("missing_key", "$.messages[0].content[0].signature"),
    ),
    "anthropic/svg": Case(
        "anthropic",
        _anthropic_user(
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/svg+xml", "data": PNG},
            }
        ),
        ("bad_value", "$.messages[0].content[0].source.media_type"),
    ),
    "anthropic/image_detail": Case(
        "anthropic",
        _anthropic_user(
            {
                "type": "image",
                "source": {"type": "url", "url": "https://x/y.png"},
                "detail": "high",
            }
        ),
        ("unknown_key", "$.messages[0].content[0].detail"),
    ),
    "anthropic/audio_in_tool_result": Case(
        "anthropic",
        _anthropic_user(
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [
                    {
                        "type": "audio",
                        "source": {"type": "base64", "media_type": "audio/wav", "data": "UklG"},
                    }
                ],
            }
        ),
        ("bad_value", "$.messages[0].content[0].content[0].type"),
    ),
    "anthropic/gemini_signature_on_text": Case(
        "anthropic",
        _anthropic_user(_text(thought_signature="c2ln")),
        ("unknown_key", "$.messages[0].content[0].thought_signature"),
    ),
    "anthropic/tool_use_without_id": Case(
        "anthropic",
        {
            "messages": [
                {"role": "assistant", "content": [{"type": "tool_use", "name": "f", "input": {}}]}
            ]
        },
        ("missing_key", "$.messages[0].content[0].id"),
    ),
    "anthropic/bogus_role": Case(
        "anthropic",
        {"messages": [{"role": "model", "content": "x"}]},
        ("bad_value", "$.messages[0].role"),
    ),
    # Gemini
    "gemini/unknown_key_on_part": Case(
        "gemini",
        _gemini({"text": "x", "cache_control": {}}),
        ("unknown_key", "$.contents[0].parts[0].cache_control"),
    ),
    "gemini/bogus_role": Case(
        "gemini", _gemini({"text": "x"}, role="assistant"), ("constraint", "$.contents[0].role")
    ),
    "gemini/two_kinds_of_data": Case(
        "gemini",
        _gemini({"text": "x", "function_call": {"name": "f", "args": {}}}, role="model"),
        ("constraint", "$.contents[0].parts[0]"),
    ),
    "gemini/signature_alone": Case(
        "gemini",
        _gemini({"thought_signature": b"sig"}, role="model"),
        ("constraint", "$.contents[0].parts[0]"),
    ),
    "gemini/no_parts": Case(
        "gemini",
        {"contents": [{"role": "user", "parts": []}]},
        ("constraint", "$.contents[0].parts"),
    ),
    "gemini/not_base64": Case(
        "gemini",
        _gemini({"inline_data": {"data": "not base64!", "mime_type": "image/png"}}),
        ("bad_value", "$.contents[0].parts[0].inline_data.data"),
    ),
    "gemini/bogus_mode": Case(
        "gemini",
        {
            **_gemini({"text": "x"}),
            "tool_config": {"function_calling_config": {"mode": "SOMETIMES"}},
        },
        ("bad_value", "$.tool_config.function_calling_config.mode"),
    ),
    "gemini/json_schema_keyword": Case(
        "gemini",
        {
            **_gemini({"text": "x"}),
            "tools": [
                {
                    "function_declarations": [
                        {
                            "name": "f",
                            "parameters": {"$schema": "https://json-schema.org/draft-07/schema#"},
                        }
                    ]
                }
            ],
        },
        ("unknown_key", "$.tools[0].function_declarations[0].parameters.$schema"),
    ),
    "gemini/bad_generation_config": Case(
        "gemini",
        {**_gemini({"text": "x"}), "generationConfig": {"temperature": "hot"}},
        ("wrong_type", "$.generationConfig.temperature"),
    ),
    "gemini/missing_contents": Case("gemini", {"tools": []}, ("missing_key", "$.contents")),
    # REST takes sampling in `generationConfig` only (the SDK's flat config is
    # not a body), and the model in the URL.
    "gemini/sampling_at_the_top": Case(
        "gemini", {**_gemini({"text": "x"}), "temperature": 0.2}, ("unknown_key", "$.temperature")
    ),
    "gemini/structured_output_at_the_top": Case(
        "gemini",
        {**_gemini({"text": "x"}), "response_mime_type": "application/json"},
        ("unknown_key", "$.response_mime_type"),
    ),
    "gemini/model_in_the_body": Case(
        "gemini",
        {**_gemini({"text": "x"}), "model": "gemini-2.5-flash"},
        ("unknown_key", "$.model"),
    ),
    "gemini/system_role": Case(
        "gemini", _gemini({"text": "x"}, role="system"), ("constraint", "$.contents[0].role")
    ),
    # Ollama
    "ollama/tool_call_id_on_tool_message": Case(
        "ollama",
        {"messages": [{"role": "tool", "content": "x", "tool_call_id": "c", "name": "f"}]},
        ("unknown_key", "$.messages[0].tool_call_id"),
    ),
    "ollama/bogus_role": Case(
        "ollama",
        {"messages": [{"role": "model", "content": "x"}]},
        ("constraint", "$.messages[0].role"),
    ),
    "ollama/arguments_as_text": Case(
        "ollama",
        {
            "messages": [
                {
                    "role": "assistant",
                    "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}],
                }
            ]
        },
        ("wrong_type", "$.messages[0].tool_calls[0].function.arguments"),
    ),
    "ollama/openai_style_content": Case(
        "ollama", _user([_text()]), ("wrong_type", "$.messages[0].content")
    ),
    # DeepSeek
    "deepseek/image_part": Case(
        "deepseek",
        _user([{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]),
        ("bad_value", "$.messages[0].content[0].type"),
    ),
    "deepseek/bogus_thinking": Case(
        "deepseek", {**_user("x"), "thinking": {"type": "on"}}, ("bad_value", "$.thinking.type")
    ),
    "deepseek/dashscope_parameter": Case(
        "deepseek", {**_user("x"), "enable_thinking": True}, ("unknown_key", "$.enable_thinking")
    ),
    # DashScope
    "dashscope/openai_style_part": Case(
        "dashscope", _user([_text()]), ("unknown_key", "$.messages[0].content[0].type")
    ),
    "dashscope/null_content": Case(
        "dashscope",
        {"messages": [{"role": "system", "content": None}]},
        ("wrong_type", "$.messages[0].content"),
    ),
    "dashscope/bogus_role": Case(
        "dashscope",
        {"messages": [{"role": "model", "content": "x"}]},
        ("bad_value", "$.messages[0].role"),
    ),
    "dashscope_compatible/native_part": Case(
        "dashscope_compatible",
        _user([{"text": "hi"}]),
        ("missing_key", "$.messages[0].content[0].type"),
    ),
    "dashscope_compatible/native_parameter": Case(
        "dashscope_compatible",
        {**_user("x"), "result_format": "message"},
        ("unknown_key", "$.result_format"),
    ),
    # Moonshot (Kimi)
    "moonshot/audio_part": Case(
        "moonshot", _user([_text(), _AUDIO_PART]), ("bad_value", "$.messages[0].content[1].type")
    ),
    "moonshot/file_part": Case(
        "moonshot",
        _user([{"type": "file", "file": {"file_id": "file-1"}}]),
        ("bad_value", "$.messages[0].content[0].type"),
    ),
    "moonshot/partial_not_last": Case(
        "moonshot",
        {
            "messages": [
                {"role": "assistant", "content": "It is", "partial": True},
                {"role": "user", "content": "go on"},
            ]
        },
        ("constraint", "$.messages[0].partial"),
    ),
    "moonshot/builtin_tool_with_schema": Case(
        "moonshot",
        {
            **_user("hi"),
            "tools": [
                {
                    "type": "builtin_function",
                    "function": {"name": "$web_search", "parameters": {"type": "object"}},
                }
            ],
        },
        ("unknown_key", "$.tools[0].function.parameters"),
    ),
    "moonshot/bogus_thinking": Case(
        "moonshot", {**_user("x"), "thinking": {"type": "auto"}}, ("bad_value", "$.thinking.type")
    ),
    # xAI (REST chat)
    "xai/audio_part": Case(
        "xai", _user([_AUDIO_PART]), ("bad_value", "$.messages[0].content[0].type")
    ),
    "xai/reasoning_sent_back": Case(
        "xai",
        {"messages": _tool_loop({"reasoning_content": "Look it up."}, {})},
        ("unknown_key", "$.messages[2].reasoning_content"),
    ),
    "xai/encrypted_reasoning_sent_back": Case(
        "xai",
        {"messages": [{"role": "assistant", "content": "hi", "encrypted_content": "ZW5j"}]},
        ("unknown_key", "$.messages[0].encrypted_content"),
    ),
    "xai/search_parameters_not_an_object": Case(
        "xai", {**_user("x"), "search_parameters": "auto"}, ("wrong_type", "$.search_parameters")
    ),
    # Volcengine Ark
    "volcengine/unknown_part_type": Case(
        "volcengine",
        _user([{"type": "file", "file": {"file_data": PNG, "filename": "a.pdf"}}]),
        ("bad_value", "$.messages[0].content[0].type"),
    ),
    "volcengine/video_url_without_url": Case(
        "volcengine",
        _user([{"type": "video_url", "video_url": {"fps": 2}}]),
        ("missing_key", "$.messages[0].content[0].video_url.url"),
    ),
    "volcengine/bogus_thinking": Case(
        "volcengine", {**_user("x"), "thinking": {"type": "on"}}, ("bad_value", "$.thinking.type")
    ),
    "volcengine/seed": Case("volcengine", {**_user("x"), "seed": 7}, ("unknown_key", "$.seed")),
    "volcengine/encrypted_reasoning_sent_back": Case(
        "volcengine",
        {"messages": [{"role": "assistant", "content": "hi", "encrypted_content": "ZW5j"}]},
        ("unknown_key", "$.messages[0].encrypted_content"),
    ),
    # Zhipu GLM
    "zhipu/name_on_user_message": Case(
        "zhipu",
        {"messages": [{"role": "user", "name": "Alice", "content": "hi"}]},
        ("unknown_key", "$.messages[0].name"),
    ),
    "zhipu/name_on_tool_message": Case(
        "zhipu",
        {"messages": _tool_loop({}, {"name": "get_weather"})},
        ("unknown_key", "$.messages[3].name"),
    ),
    "zhipu/parts_on_system_message": Case(
        "zhipu",
        {"messages": [{"role": "system", "content": [_text("Be brief.")]}]},
        ("wrong_type", "$.messages[0].content"),
    ),
    "zhipu/parts_on_assistant_message": Case(
        "zhipu",
        {"messages": [{"role": "assistant", "content": [_text("hello")]}]},
        ("wrong_type", "$.messages[0].content"),
    ),
    "zhipu/required_tool_choice": Case(
        "zhipu",
        {**_user("x"), "tools": [TOOL], "tool_choice": "required"},
        ("bad_value", "$.tool_choice"),
    ),
    "zhipu/audio_part": Case(
        "zhipu", _user([_AUDIO_PART]), ("bad_value", "$.messages[0].content[0].type")
    ),
    "zhipu/json_schema_format": Case(
        "zhipu",
        {
            **_user("x"),
            "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}},
        },
        ("bad_value", "$.response_format.type"),
    ),
    # MiniMax
    "minimax/stop": Case("minimax", {**_user("x"), "stop": ["\n"]}, ("unknown_key", "$.stop")),
    "minimax/seed": Case("minimax", {**_user("x"), "seed": 7}, ("unknown_key", "$.seed")),
    "minimax/required_tool_choice": Case(
        "minimax",
        {**_user("x"), "tools": [TOOL], "tool_choice": "required"},
        ("bad_value", "$.tool_choice"),
    ),
    "minimax/named_tool_choice": Case(
        "minimax",
        {
            **_user("x"),
            "tools": [TOOL],
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        },
        ("bad_value", "$.tool_choice"),
    ),
    "minimax/audio_part": Case(
        "minimax", _user([_AUDIO_PART]), ("bad_value", "$.messages[0].content[0].type")
    ),
    "minimax/enabled_thinking": Case(
        "minimax", {**_user("x"), "thinking": {"type": "enabled"}}, ("bad_value", "$.thinking.type")
    ),
    # Rules across messages (sequences.py)
    "openai/orphan_tool_message": Case(
        "openai",
        {"messages": [_OPENAI_TOOL_LOOP[1], _OPENAI_TOOL_LOOP[3]]},
        ("constraint", "$.messages[1].tool_call_id"),
    ),
    "openai/unanswered_call": Case(
        "openai",
        {"messages": [*_OPENAI_TOOL_LOOP[:3], {"role": "user", "content": "and?"}]},
        ("constraint", "$.messages[2].tool_calls[0]"),
    ),
    "deepseek/thinking_without_reasoning": Case(
        "deepseek",
        {"messages": _OPENAI_TOOL_LOOP, "thinking": {"type": "enabled"}},
        ("constraint", "$.messages[2].reasoning_content"),
    ),
    "responses/orphan_output": Case(
        "openai_responses",
        {"input": [{"type": "function_call_output", "call_id": "call_9", "output": "x"}]},
        ("constraint", "$.input[0].call_id"),
    ),
    "responses/unanswered_call": Case(
        "openai_responses",
        {
            "input": [
                {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"},
                {"role": "user", "content": "and?"},
            ]
        },
        ("constraint", "$.input[0]"),
    ),
    "anthropic/orphan_tool_result": Case(
        "anthropic",
        _anthropic_user({"type": "tool_result", "tool_use_id": "toolu_9", "content": "x"}),
        ("constraint", "$.messages[0].content[0].tool_use_id"),
    ),
    "anthropic/tool_result_after_text": Case(
        "anthropic",
        {
            "messages": [
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [
                        _text("here:"),
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"},
                    ],
                },
            ]
        },
        ("constraint", "$.messages[1].content[1]"),
    ),
    "anthropic/unanswered_tool_use": Case(
        "anthropic",
        {
            "messages": [
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}],
                },
                {"role": "user", "content": "and?"},
            ]
        },
        ("constraint", "$.messages[1].content[0]"),
    ),
}


# What every request carries beside what a case is about: the model, and the
# `max_tokens` Anthropic's API requires. Gemini's model is in the URL.
_CALL = {"model": "model-name"}
_CALLS = {"anthropic": {**_CALL, "max_tokens": 1024}, "gemini": {}}


def _sent(case: Case) -> Case:
    return case._replace(body={**case.body, **_CALLS.get(case.provider, _CALL)})


MUST_PASS = {name: _sent(case) for name, case in MUST_PASS.items()}
MUST_FAIL = {name: _sent(case) for name, case in MUST_FAIL.items()}
# Without them: what a caller who gives no `request=` has (the validator adds nothing).
MUST_FAIL.update(
    {
        "openai/no_model": Case("openai", _user("hi"), ("missing_key", "$.model")),
        "anthropic/no_max_tokens": Case(
            "anthropic", {**_user("hi"), **_CALL}, ("missing_key", "$.max_tokens")
        ),
        "ollama/no_model": Case("ollama", _user("hi"), ("missing_key", "$.model")),
        "dashscope/no_model": Case("dashscope", _user("hi"), ("missing_key", "$.model")),
        "moonshot/no_model": Case("moonshot", _user("hi"), ("missing_key", "$.model")),
        "xai/no_model": Case("xai", _user("hi"), ("missing_key", "$.model")),
        "volcengine/no_model": Case("volcengine", _user("hi"), ("missing_key", "$.model")),
        "zhipu/no_model": Case("zhipu", _user("hi"), ("missing_key", "$.model")),
        "minimax/no_model": Case("minimax", _user("hi"), ("missing_key", "$.model")),
    }
)
