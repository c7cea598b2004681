"""The provider-fidelity block kinds and keys: codec mapping, dialects, formatters.

`server_tool_use`, `server_tool_result` and `grounding` blocks, text
`citations` and the redacted/encrypted reasoning keys of thinking blocks map to
their typed fields and back unchanged (the property tests cover random ones;
these pin the documented cases). To AgentScope the new kinds are unknown block
types: in agentscope fidelity every formatter skips them with AgentScope's
warning, exactly as it skips an unknown block of the same `type`.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentscope_proto import PROVIDERS, MessageFormatError, format, from_dict, to_dict
from agentscope_proto.message import (
    Citation,
    ContentBlock,
    GroundingBlock,
    GroundingSource,
    OpaqueBlock,
    ServerToolResultBlock,
    ServerToolUseBlock,
    TextBlock,
    get_content_blocks,
)
from agentscope_proto.message._codec import block_from_dict, block_to_dict, unwrap

from strict import assert_same

SERVER_TOOL_USE = {
    "type": "server_tool_use",
    "id": "srvtoolu_01",
    "name": "web_search",
    "input": {"query": "weather in Paris"},
    "provider_type": "server_tool_use",
    "raw": {
        "type": "server_tool_use",
        "id": "srvtoolu_01",
        "name": "web_search",
        "input": {"query": "weather in Paris"},
    },
}
SERVER_TOOL_RESULT = {
    "type": "server_tool_result",
    "tool_use_id": "srvtoolu_01",
    "provider_type": "web_search_tool_result",
    "output": [{"type": "web_search_result", "url": "https://example.com/w", "title": "W"}],
    "is_error": False,
    "raw": {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": []},
}
GROUNDING = {
    "type": "grounding",
    "provider_type": "grounding_metadata",
    "sources": [{"url": "https://example.com/r", "title": "example.com"}],
    "queries": ["weather in Paris"],
    "raw": {"webSearchQueries": ["weather in Paris"], "groundingChunks": []},
}
NEW_KINDS = {"server_tool_use": SERVER_TOOL_USE, "server_tool_result": SERVER_TOOL_RESULT}
NEW_KINDS["grounding"] = GROUNDING


def _msg(content: list[dict[str, Any]], role: str = "assistant") -> dict[str, Any]:
    return {
        "id": "6hGaqqUXRucCDyXt4tbeDw",
        "name": "Friday",
        "role": role,
        "content": content,
        "metadata": {},
        "timestamp": "2025-03-14 09:26:53.589",
    }


@pytest.mark.parametrize("kind", sorted(NEW_KINDS))
def test_new_kinds_map_to_their_typed_blocks_and_back(kind: str) -> None:
    block = unwrap(block_from_dict(NEW_KINDS[kind]))
    assert not block.extra_json
    assert not block.key_order
    assert_same(block_to_dict(block), NEW_KINDS[kind])
    data = _msg([NEW_KINDS[kind]])
    assert_same(to_dict(from_dict(data)), data)
    assert len(get_content_blocks(from_dict(data), kind)) == 1


def test_typed_fields_of_the_new_kinds() -> None:
    use = unwrap(block_from_dict(SERVER_TOOL_USE))
    assert isinstance(use, ServerToolUseBlock)
    assert (use.id, use.name, use.provider_type) == ("srvtoolu_01", "web_search", "server_tool_use")
    assert use.input_json == '{"query":"weather in Paris"}'
    result = unwrap(block_from_dict(SERVER_TOOL_RESULT))
    assert isinstance(result, ServerToolResultBlock)
    assert result.tool_use_id == "srvtoolu_01"
    assert not result.is_error
    assert result.raw_json.startswith('{"type":"web_search_tool_result"')
    grounding = unwrap(block_from_dict(GROUNDING))
    assert isinstance(grounding, GroundingBlock)
    assert list(grounding.sources) == [
        GroundingSource(url="https://example.com/r", title="example.com")
    ]
    assert list(grounding.queries) == ["weather in Paris"]


CITATIONS = [
    (
        {
            "type": "url_citation",
            "start_index": 3,
            "end_index": 9,
            "url": "https://a",
            "title": "A",
        },
        Citation(
            citation_type="url_citation", url="https://a", title="A", start_index=3, end_index=9
        ),
    ),
    (
        # Chat Completions nests the fields under the type.
        {"type": "url_citation", "url_citation": {"url": "https://b", "start_index": 0}},
        Citation(citation_type="url_citation", url="https://b", start_index=0),
    ),
    (
        {"type": "file_citation", "file_id": "file-1", "filename": "a.pdf", "index": 4},
        Citation(citation_type="file_citation", file_id="file-1", title="a.pdf"),
    ),
    (
        {
            "type": "char_location",
            "cited_text": "The sky",
            "document_index": 0,
            "document_title": "Doc",
            "start_char_index": 0,
            "end_char_index": 7,
        },
        Citation(
            citation_type="char_location",
            cited_text="The sky",
            title="Doc",
            start_index=0,
            end_index=7,
        ),
    ),
    (
        {"type": "page_location", "cited_text": "p", "start_page_number": 1, "end_page_number": 2},
        Citation(citation_type="page_location", cited_text="p", start_index=1, end_index=2),
    ),
    (
        {
            "type": "web_search_result_location",
            "cited_text": "Sunny",
            "encrypted_index": "Eo8B",
            "title": "W",
            "url": "https://w",
        },
        Citation(
            citation_type="web_search_result_location",
            url="https://w",
            title="W",
            cited_text="Sunny",
        ),
    ),
    (
        {"type": "search_result_location", "source": "https://s", "start_block_index": 0},
        Citation(citation_type="search_result_location", url="https://s", start_index=0),
    ),
    (
        # Values of the wrong type fill no typed field; the object is kept as is.
        {"type": "url_citation", "url": 7, "start_index": True, "end_index": 2**70},
        Citation(citation_type="url_citation"),
    ),
]


@pytest.mark.parametrize(("raw", "typed"), CITATIONS)
def test_citation_typed_fields_are_read_from_the_provider_object(
    raw: dict[str, Any], typed: Citation
) -> None:
    data = {"type": "text", "text": "It is sunny.", "citations": [raw]}
    block = unwrap(block_from_dict(data))
    assert isinstance(block, TextBlock)
    (citation,) = block.citations
    raw_json = citation.raw_json
    citation.ClearField("raw_json")
    assert citation == typed
    assert raw_json
    assert_same(block_to_dict(unwrap(block_from_dict(data))), data)


def test_a_citation_without_its_provider_object_writes_its_typed_fields() -> None:
    """As a client in another language may build it."""
    block = TextBlock(
        text="x",
        citations=[
            Citation(citation_type="char_location", cited_text="c", title="D", start_index=1),
            Citation(url="https://u", end_index=4),
        ],
    )
    assert_same(
        block_to_dict(block)["citations"],
        [
            {
                "type": "char_location",
                "cited_text": "c",
                "document_title": "D",
                "start_char_index": 1,
            },
            {"url": "https://u", "end_index": 4},
        ],
    )


@pytest.mark.parametrize("value", [[], "x", [1], [{"type": "url_citation"}, None], None])
def test_citations_that_do_not_fit_stay_an_extra_key(value: Any) -> None:
    data = {"type": "text", "citations": value, "text": "hi"}
    block = unwrap(block_from_dict(data))
    assert not block.citations
    assert block.extra_json
    assert_same(block_to_dict(block), data)


def test_thinking_keeps_redacted_and_encrypted_reasoning() -> None:
    data = {
        "type": "thinking",
        "thinking": "",
        "redacted_data": "EmwKAhgB",
        "encrypted_content": "gAAAAB",
        "reasoning_id": "rs_1",
    }
    block = unwrap(block_from_dict(data))
    assert (block.redacted_data, block.encrypted_content, block.reasoning_id) == (
        "EmwKAhgB",
        "gAAAAB",
        "rs_1",
    )
    assert not block.extra_json
    assert not block.key_order
    assert_same(block_to_dict(block), data)


@pytest.mark.parametrize(
    "data",
    [
        {"type": "server_tool_use"},
        {"type": "server_tool_use", "name": "code_execution", "raw": {}},
        {"type": "server_tool_result", "tool_use_id": "x", "is_error": "no", "raw": [1]},
        {"type": "grounding", "sources": [{"uri": "u"}], "queries": [1], "provider_type": 2},
        {"type": "grounding", "raw": {}, "provider_type": ""},
    ],
)
def test_absent_and_misfit_keys_of_the_new_kinds_come_back_as_they_were(
    data: dict[str, Any],
) -> None:
    assert_same(block_to_dict(unwrap(block_from_dict(data))), data)


def test_a_block_built_elsewhere_writes_every_set_field_and_its_defaults() -> None:
    block = ServerToolResultBlock(tool_use_id="t", is_error=True)
    assert_same(
        block_to_dict(block),
        {"type": "server_tool_result", "tool_use_id": "t", "provider_type": "", "is_error": True},
    )
    # A key order may leave out a lenient key only while it holds its zero value.
    block.key_order.extend(["type", "is_error"])
    with pytest.raises(MessageFormatError, match="key_order"):
        block_to_dict(block)


def test_a_new_kind_cannot_be_opaque() -> None:
    opaque = OpaqueBlock(block_type="grounding", block_json='{"type":"grounding"}')
    with pytest.raises(MessageFormatError, match="cannot be opaque"):
        block_to_dict(opaque)


@pytest.mark.parametrize("kind", sorted(NEW_KINDS))
def test_the_java_dialect_refuses_the_new_kinds(kind: str) -> None:
    msg = from_dict(_msg([{"type": "text", "text": "a"}, NEW_KINDS[kind]]))
    with pytest.raises(MessageFormatError) as caught:
        to_dict(msg, dialect="java")
    assert caught.value.path == "content[1].type"
    assert caught.value.reason.startswith("agentscope-java refuses this: unknown block type")
    with pytest.raises(MessageFormatError, match=r"content\[0\]\.type"):
        from_dict({**_msg([NEW_KINDS[kind]]), "role": "ASSISTANT"}, dialect="java")


def test_the_java_dialect_leaves_out_the_new_keys() -> None:
    cited = {"type": "text", "text": "a", "citations": [CITATIONS[0][0]]}
    thinking = {"type": "thinking", "thinking": "", "encrypted_content": "E"}
    java = to_dict(from_dict(_msg([cited, thinking])), dialect="java")
    assert java["content"] == [
        {"type": "text", "text": "a"},
        {"type": "thinking", "thinking": "", "metadata": None},
    ]


def test_agentscope2_has_no_place_for_the_new_kinds() -> None:
    data = {
        "id": "0" * 32,
        "name": "Friday",
        "role": "assistant",
        "content": [SERVER_TOOL_USE],
        "metadata": {},
        "created_at": "2025-03-14 09:26:53.589",
    }
    # 2.x refuses a block type it does not know, on reading and on writing.
    with pytest.raises(MessageFormatError, match=r"^content\[0\]\.type: AgentScope 2\.x"):
        from_dict(data, dialect="agentscope2")
    data["timestamp"] = data.pop("created_at")
    msg = from_dict(data, dialect="agentscope")
    assert msg.blocks.items[0].WhichOneof("block") == "server_tool_use"
    with pytest.raises(MessageFormatError, match=r"^content\[0\]\.type: AgentScope 2\.x"):
        to_dict(msg, dialect="agentscope2")


def _as_opaque(msg_dict: dict[str, Any], kind: str) -> Any:
    """The message with the block of `kind` as an unknown block of type `other`."""
    msg = from_dict(msg_dict)
    for item in msg.blocks.items:
        if item.WhichOneof("block") == kind:
            body = {**NEW_KINDS[kind], "type": "other"}
            item.CopyFrom(
                ContentBlock(opaque=OpaqueBlock(block_type="other", block_json=_dumps(body)))
            )
    return msg


def _dumps(value: Any) -> str:
    from agentscope_proto._json import dumps

    return dumps(value)


@pytest.mark.parametrize(
    "provider", sorted(p for p in PROVIDERS if "agentscope" in PROVIDERS[p].variants)
)
@pytest.mark.parametrize("kind", sorted(NEW_KINDS))
def test_agentscope_fidelity_skips_the_new_kinds_as_unknown_blocks(
    provider: str, kind: str
) -> None:
    user = _msg([{"type": "text", "text": "Weather in Paris?"}], role="user")
    answer = _msg([{"type": "text", "text": "Sunny."}, NEW_KINDS[kind]])
    got = format(provider, [from_dict(user), from_dict(answer)])
    unknown = format(provider, [from_dict(user), _as_opaque(answer, kind)])
    assert_same(dict(got), dict(unknown))
    assert len(got.warnings) == 1
    (warning,) = got.warnings
    assert kind in warning.message
    assert [w.message.replace(kind, "other") for w in got.warnings] == [
        w.message for w in unknown.warnings
    ]
