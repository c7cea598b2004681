"""The public API, frozen: any change to `agentscope_proto.__all__` shows up here in review.

Adding a name is a feature, removing or renaming one breaks users; either way
update EXPECTED in the same change.
"""

from __future__ import annotations

import agentscope_proto

EXPECTED = [
    "PROVIDERS",
    "AgentReplyError",
    "AgentScopeProtoError",
    "AnyBlock",
    "AsyncFormatterClient",
    "AudioBlock",
    "BlockType",
    "Citation",
    "ContentBlock",
    "ContentBlocks",
    "ContentDelta",
    "Conversation",
    "DataBlock",
    "Dialect",
    "ErrorType",
    "FinishedReason",
    "FormatCache",
    "FormatError",
    "FormatSettings",
    "FormatWarning",
    "FormattedBody",
    "FormattedJson",
    "FormatterClient",
    "GroundingBlock",
    "GroundingSource",
    "HintBlock",
    "HubError",
    "HubUnavailableError",
    "ImageBlock",
    "LimitExceededError",
    "MediaAccessError",
    "MediaBlock",
    "MediaSource",
    "MessageFormatError",
    "Msg",
    "OffsetOutOfRangeError",
    "OpaqueBlock",
    "ParseError",
    "ParseSettings",
    "ParsedResponse",
    "PermissionBehavior",
    "PermissionRule",
    "ProviderError",
    "RemoteError",
    "ReplyError",
    "ReplyNotFoundError",
    "RequestParams",
    "Role",
    "ServerToolResultBlock",
    "ServerToolUseBlock",
    "SessionStateError",
    "StateUnavailableError",
    "StoredStateError",
    "StreamParser",
    "TextBlock",
    "ThinkingBlock",
    "TokenUsage",
    "ToolCallState",
    "ToolChoiceError",
    "ToolResultBlock",
    "ToolResultState",
    "ToolUseBlock",
    "UnknownProviderError",
    "UnsupportedMediaError",
    "Usage",
    "VideoBlock",
    "detect_dialect",
    "format",
    "from_agentscope",
    "from_dict",
    "from_json",
    "get_content_blocks",
    "get_text_content",
    "has_content_blocks",
    "new_audio_block",
    "new_data_block",
    "new_hint_block",
    "new_id",
    "new_image_block",
    "new_msg",
    "new_text_block",
    "new_thinking_block",
    "new_timestamp",
    "new_tool_result_block",
    "new_tool_use_block",
    "new_video_block",
    "parse",
    "to_agentscope",
    "to_dict",
    "to_json",
]


def _isort_key(name: str) -> tuple[int, str]:
    """ruff's RUF022 order: CONSTANTS, then Classes, then functions."""
    group = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return group, name


def test_all_is_frozen() -> None:
    assert agentscope_proto.__all__ == EXPECTED


def test_all_is_sorted_and_unique() -> None:
    assert sorted(EXPECTED, key=_isort_key) == EXPECTED
    assert len(set(EXPECTED)) == len(EXPECTED)
    assert not [name for name in EXPECTED if name.startswith("_")]


def test_every_name_resolves() -> None:
    for name in EXPECTED:
        assert getattr(agentscope_proto, name) is not None, name


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from agentscope_proto import *", namespace)
    assert sorted(k for k in namespace if k != "__builtins__") == sorted(EXPECTED)


def test_deprecated_names_still_resolve_with_a_warning() -> None:
    import warnings

    from agentscope_proto import parsing, results

    for module in (agentscope_proto, results, parsing):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert module.ParseResult is agentscope_proto.ParsedResponse
            assert module.BlockDelta is agentscope_proto.ContentDelta
        assert [w.category for w in caught] == [DeprecationWarning, DeprecationWarning]
