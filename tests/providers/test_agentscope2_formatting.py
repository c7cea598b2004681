"""AgentScope 2.x's messages through `format()`.

In AgentScope fidelity a 2.x message formats as 1.0.21 formats its 1.x form
(`to_dict(msg)`): its images are images, its `hint` and other `data` blocks
are kinds 1.0.21 skips with its warning. In provider fidelity it goes out as
2.x's own formatters send it: the content before a run of tool results first,
then the results, then what follows; a hint as a user turn where it stands;
documents where the provider takes them, refused naming the provider where
not. The bodies validate against the providers' SDK request types in
tests/providers/test_fidelity_schemas.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentscope_proto import (
    PROVIDERS,
    FormatError,
    UnsupportedMediaError,
    format,
    from_dict,
    new_data_block,
    new_hint_block,
    new_msg,
    new_text_block,
    new_tool_result_block,
    new_tool_use_block,
    to_dict,
)
from provider_schemas.golden import REQUESTS
from provider_schemas.scenarios import AGENTSCOPE2_PDF, AGENTSCOPE2_TOOL_LOOP

TAKE_PDF = sorted(name for name, p in PROVIDERS.items() if "application/pdf" in p.document_types)
# Those that read documents by web URL only (GLM's `file_url`): inline ones
# are dropped with a warning.
BY_URL = ["zhipu"]
DOCUMENTS = sorted(set(TAKE_PDF) - set(BY_URL))
NO_DOCUMENTS = sorted(set(PROVIDERS) - set(TAKE_PDF))
# The providers AgentScope 1.0.21 has: its fidelity is theirs alone.
AGENTSCOPE = sorted(name for name, p in PROVIDERS.items() if "agentscope" in p.variants)


def _turns(provider: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = body.get("messages") or body.get("contents") or body["input"]
    return messages


@pytest.mark.parametrize("provider", AGENTSCOPE)
def test_agentscope_fidelity_formats_the_1x_form(provider: str) -> None:
    msgs = [from_dict(m) for m in AGENTSCOPE2_TOOL_LOOP]
    one_x = [to_dict(m) for m in msgs]
    ours = format(provider, msgs, fidelity="agentscope")
    assert dict(ours) == dict(format(provider, one_x, fidelity="agentscope"))
    assert [w.message for w in ours.warnings] == [
        w.message for w in format(provider, one_x, fidelity="agentscope").warnings
    ]
    # The hint is a kind 1.0.21 does not know: skipped, with its warning.
    assert any(w.block_type == "hint" for w in ours.warnings)


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_tool_results_follow_their_calls(provider: str) -> None:
    body = format(provider, AGENTSCOPE2_TOOL_LOOP, fidelity="provider", request=REQUESTS[provider])
    text = repr(_turns(provider, body))
    # The call goes out before its result, and no call is dropped as unanswered.
    assert text.index("get_weather") < text.index("Sunny")
    assert not [w for w in body.warnings if "no tool" in w.message]
    # The hint is a user turn between the result and the answer.
    assert text.index("Sunny") < text.index("Keep it short.") < text.index("It is sunny in Paris")


def test_the_hint_is_a_user_turn_named_after_its_source() -> None:
    body = format("openai", AGENTSCOPE2_TOOL_LOOP, fidelity="provider")
    (hint,) = [m for m in body["messages"] if "Keep it short." in repr(m)]
    assert hint == {
        "role": "user",
        "name": "system",
        "content": [{"type": "text", "text": "Keep it short."}],
    }


@pytest.mark.parametrize("provider", DOCUMENTS)
def test_a_pdf_goes_where_the_provider_takes_documents(provider: str) -> None:
    body = format(provider, AGENTSCOPE2_PDF, fidelity="provider", request=REQUESTS[provider])
    text = repr(_turns(provider, body)[-1])
    assert "JVBERi0xLj" in text  # the PDF's bytes, base64
    part = {
        "anthropic": "'type': 'document'",
        "openai": "'type': 'file'",
        "openai_responses": "'type': 'input_file'",
        "gemini": "'inline_data'",
    }[provider]
    assert part in text


@pytest.mark.parametrize("provider", BY_URL)
def test_an_inline_pdf_is_dropped_with_a_warning_where_documents_go_by_url(provider: str) -> None:
    assert provider in TAKE_PDF
    body = format(provider, AGENTSCOPE2_PDF, fidelity="provider", request=REQUESTS[provider])
    assert "JVBERi0xLj" not in repr(dict(body))
    (dropped,) = [w for w in body.warnings if w.block_type == "data"]
    assert dropped.path == "messages[1].content[0]"
    assert "web URL" in dropped.message


@pytest.mark.parametrize("provider", NO_DOCUMENTS)
def test_a_pdf_is_refused_where_the_provider_takes_none(provider: str) -> None:
    with pytest.raises(UnsupportedMediaError) as caught:
        format(provider, AGENTSCOPE2_PDF, fidelity="provider")
    assert caught.value.path == "messages[1].content[0]"
    assert caught.value.reason.startswith(f"{provider} cannot take application/pdf data")
    # AgentScope fidelity: an unknown kind, skipped with 1.0.21's warning.
    if provider in AGENTSCOPE:
        warnings = format(provider, AGENTSCOPE2_PDF, fidelity="agentscope").warnings
        assert [w.block_type for w in warnings] == ["data"]


def test_errors_inside_a_split_message_name_the_callers_block() -> None:
    msg = new_msg(
        "Friday",
        [
            new_text_block("x"),
            new_tool_use_block("c1", "f", {}),
            new_tool_result_block("c1", "f", "ok"),
            new_hint_block(
                [
                    new_text_block("see"),
                    new_data_block(data=b"%PDF-1.7", media_type="application/pdf"),
                ]
            ),
        ],
        "assistant",
    )
    with pytest.raises(UnsupportedMediaError) as caught:
        format("deepseek", [new_msg("u", "hi", "user"), msg], fidelity="provider")
    assert caught.value.path == "messages[1].content[3].hint[1]"
    body = format("anthropic", [new_msg("u", "hi", "user"), msg], fidelity="provider")
    assert body["messages"][-1]["content"][1]["type"] == "document"


def test_a_pdf_url_needs_a_download_where_the_api_takes_no_url() -> None:
    url = new_msg(
        "u", [new_data_block("https://example.com/r.pdf", media_type="application/pdf")], "user"
    )
    with pytest.raises(FormatError, match="allow_download"):
        format("openai", [url], fidelity="provider")
    # Anthropic and the Responses API take the URL itself.
    anthropic = format("anthropic", [url], fidelity="provider")
    assert anthropic["messages"][0]["content"][0]["source"] == {
        "type": "url",
        "url": "https://example.com/r.pdf",
    }
    responses = format("openai_responses", [url], fidelity="provider")
    assert responses["input"][0]["content"][0] == {
        "type": "input_file",
        "file_url": "https://example.com/r.pdf",
    }


def test_invalid_base64_in_a_document_is_refused() -> None:
    msg = new_msg("u", [new_data_block(data=b"%PDF", media_type="application/pdf")], "user")
    msg.blocks.items[0].data.source.base64_text = "!!not base64!!"
    with pytest.raises(FormatError) as caught:
        format("anthropic", [msg], fidelity="provider")
    assert caught.value.path == "messages[0].content[0].source.data"


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_the_bookkeeping_of_2x_blocks_is_never_content(provider: str) -> None:
    """AgentScope 2.x gives every block an id and its times, which its own
    formatters never send: in provider fidelity they are left out of every
    content block (a tool result's items too) without a warning, and a call
    keeps its id."""
    body = format(provider, AGENTSCOPE2_TOOL_LOOP, fidelity="provider", request=REQUESTS[provider])
    text = repr(dict(body))
    assert "created_at" not in text
    assert "gen-id-" not in text  # the blocks' ids
    assert "toolu_01" in text or provider in ("gemini", "ollama")
    books = [w for w in body.warnings if w.path.endswith((".id", ".created_at", ".finished_at"))]
    # Ollama's calls carry no id at all (its API has none): that one is a call id.
    assert [w.path for w in books if ".tool_calls[" not in w.path] == []
