"""DeepSeek: AgentScope's DeepSeek formatters on the Chat Completions family's
body and parsers (openai.py, whose shared behaviour test_openai.py covers for
both). These pin what is DeepSeek's own; parity as a whole is the golden
tests'."""

from __future__ import annotations

import pytest

from agentscope_proto import parse
from agentscope_proto.errors import FormatError, UnsupportedMediaError
from agentscope_proto.formatting import format

from fidelity_helpers import call, msg, result

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "YPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


def test_content_is_text_only_and_reasoning_goes_as_reasoning_content() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    msgs = [
        msg("user", "user", [{"type": "text", "text": "Look"}, image]),
        msg("Friday", "assistant", [{"type": "thinking", "thinking": "Plan."}, call("c1")]),
        result("c1", "Sunny"),
        # Reasoning alone, or nothing at all: no message.
        msg("Friday", "assistant", [{"type": "thinking", "thinking": "Only this."}]),
        msg("Friday", "assistant", ""),
    ]
    body = format("deepseek", msgs)
    assert body["messages"][0] == {"role": "user", "content": "Look"}
    assert body["messages"][1]["content"] is None
    assert body["messages"][1]["reasoning_content"] == "Plan."
    assert body["messages"][2]["role"] == "tool"
    assert len(body["messages"]) == 3
    assert [(w.path, w.block_type) for w in body.warnings] == [("messages[0].content[1]", "image")]


def test_the_history_is_one_string() -> None:
    msgs = [msg("u", "user", "hi"), msg("F", "assistant", [{"type": "text", "text": "x"}])]
    (history,) = format("deepseek", msgs, multi_agent=True)["messages"]
    assert isinstance(history["content"], str)
    assert history["content"].endswith("<history>\nu: hi\nF: x\n</history>")


def test_the_output_budget_is_max_tokens_and_there_is_no_seed() -> None:
    body = format("deepseek", [msg("u", "user", "Hi")], request={"max_output_tokens": 3})
    assert body["max_tokens"] == 3
    with pytest.raises(FormatError, match=r"^request\.seed: the deepseek API takes no seed"):
        format("deepseek", [msg("u", "user", "Hi")], request={"seed": 1})


def test_cached_tokens_come_from_deepseeks_own_field() -> None:
    response = {
        "id": "x",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "prompt_cache_hit_tokens": 4},
    }
    assert parse("deepseek", response).usage.cache_read_input_tokens == 4


# -- provider fidelity -------------------------------------------------------------------


def test_reasoning_goes_back_under_the_key_it_came_from() -> None:
    """vLLM's `reasoning` goes back there; DeepSeek's own (and another
    provider's) as `reasoning_content`, as in parity."""
    thinking = {"type": "thinking", "thinking": "Plan.", "reasoning_field": "reasoning"}
    msgs = [
        msg("u", "user", "Hi"),
        msg("F", "assistant", [thinking, call("c1")]),
        result("c1", "ok"),
    ]
    assistant = format("deepseek", msgs, fidelity="provider")["messages"][1]
    assert assistant["reasoning"] == "Plan."
    assert "reasoning_content" not in assistant
    assert format("deepseek", msgs)["messages"][1]["reasoning_content"] == "Plan."
    thinking.pop("reasoning_field")
    assistant = format("deepseek", msgs, fidelity="provider")["messages"][1]
    assert assistant["reasoning_content"] == "Plan."


def test_documents_are_refused_naming_the_provider() -> None:
    pdf = {
        "type": "data",
        "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="},
    }
    with pytest.raises(UnsupportedMediaError, match="deepseek cannot take application/pdf"):
        format("deepseek", [msg("u", "user", [pdf])], fidelity="provider")
