"""`format()` beyond AgentScope parity: named turns, real token counts, the result object."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from agentscope_proto import FormatError, FormattedBody, format, from_dict
from agentscope_proto.formatting import body_to_json
from agentscope_proto.providers._media import MEDIA_DIR


def _msg(name: str, role: str, content: Any) -> dict[str, Any]:
    return {"name": name, "role": role, "content": content}


DEBATE = [
    _msg("system", "system", "You moderate a debate."),
    _msg("Alice", "user", "Cats are better."),
    _msg("Bob", "assistant", "Dogs are loyal."),
    _msg("Friday", "assistant", [{"type": "text", "text": "Both are fine."}]),
    _msg("Alice", "user", "Goldfish?"),
]


def test_named_turns_keep_the_agent_as_assistant_and_name_the_others() -> None:
    body = format("openai", DEBATE, multi_agent=True, agent_name="Friday")
    roles = [(m["role"], m["content"][0]["text"]) for m in body["messages"]]
    assert roles == [
        ("system", "You moderate a debate."),
        ("user", "[Alice]: Cats are better."),
        ("user", "[Bob]: Dogs are loyal."),
        ("assistant", "Both are fine."),
        ("user", "[Alice]: Goldfish?"),
    ]


def test_named_turns_need_a_name() -> None:
    with pytest.raises(FormatError, match="agent_name"):
        format("anthropic", DEBATE, multi_agent=True, agent_name="")


def test_result_is_the_plain_body_with_warnings_beside_it() -> None:
    msgs = [
        _msg(
            "Friday",
            "assistant",
            [{"type": "thinking", "thinking": "x"}, {"type": "text", "text": "y"}],
        )
    ]
    body = format("openai", msgs)
    assert isinstance(body, FormattedBody)
    assert set(body) == {"messages"}  # only the provider's own fields
    assert [w.block_type for w in body.warnings] == ["thinking"]
    assert body.warnings[0].path == "messages[0].content[0]"
    assert body.token_count is None
    assert body.body == dict(body)


def test_char_token_count_is_reported() -> None:
    body = format("openai", DEBATE, token_counter="char")
    assert body.token_count == len("\n".join(str(m) for m in body["messages"]))


def test_tiktoken_counter_truncates_to_fit() -> None:
    long = [DEBATE[0]] + [
        _msg("u", "user" if i % 2 else "assistant", "hello world " * 40) for i in range(8)
    ]
    full = format("openai", long, token_counter="tiktoken", model="gpt-4o")
    assert full.token_count is not None
    assert full.token_count > 400
    cut = format("openai", long, token_counter="tiktoken", max_tokens=300)
    assert cut.token_count is not None
    assert cut.token_count <= 300
    assert cut["messages"][0]["role"] == "system"
    assert len(cut["messages"]) < len(full["messages"])


def test_gemini_bytes_become_base64_in_json() -> None:
    signature = base64.b64encode(b"\x01sig").decode()
    msgs = [
        _msg(
            "Friday", "assistant", [{"type": "text", "text": "hi", "thought_signature": signature}]
        )
    ]
    body = format("gemini", msgs)
    assert body["contents"][0]["parts"][0]["thought_signature"] == b"\x01sig"
    assert (
        json.loads(body_to_json(body))["contents"][0]["parts"][0]["thought_signature"] == signature
    )


def test_protos_and_dicts_format_the_same() -> None:
    as_protos = [from_dict(m) for m in DEBATE]
    assert format("dashscope", as_protos, multi_agent=True) == format(
        "dashscope", DEBATE, multi_agent=True
    )


def test_write_media_writes_the_cited_file() -> None:
    data = b"\x89PNG\r\n\x1a\nfake"
    output = [
        {
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": "image/png",
                "data": base64.b64encode(data).decode(),
            },
        }
    ]
    msgs = [
        _msg("Friday", "assistant", [{"type": "tool_use", "id": "c", "name": "plot", "input": {}}]),
        _msg(
            "system",
            "system",
            [{"type": "tool_result", "id": "c", "name": "plot", "output": output}],
        ),
    ]
    body = format("openai", msgs, write_media=True)
    text = body["messages"][1]["content"]
    path = text.removeprefix("The returned image can be found at: ")
    assert path.startswith(MEDIA_DIR)
    assert Path(path).read_bytes() == data
    Path(path).unlink()
