"""AgentScope agent messages as Protocol Buffers, provider formatters and parsers, and the
gRPC FormatterService's clients.

The generated message types are re-exported under their proto names; the rest is
a flat set of `new_*`/`get_*` helpers, `from_dict`/`to_dict`, `format` (and
`Conversation`, which formats an agent's growing history incrementally), `parse`
and `StreamParser`. The gRPC clients (`FormatterClient`, `AsyncFormatterClient`)
are imported on first use, so that `import agentscope_proto` does not load gRPC.
Agents across processes (serving, clients, `RemoteAgent`, events) are
`agentscope_proto.agents`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__
from .cache import FormatCache
from .conversation import Conversation, FormattedJson
from .dialects import Dialect, detect_dialect, from_dict, from_json, to_dict, to_json
from .errors import (
    AgentReplyError,
    AgentScopeProtoError,
    FormatError,
    HubError,
    HubUnavailableError,
    LimitExceededError,
    MediaAccessError,
    MessageFormatError,
    OffsetOutOfRangeError,
    ParseError,
    ProviderError,
    RemoteError,
    ReplyNotFoundError,
    SessionStateError,
    StateUnavailableError,
    StoredStateError,
    ToolChoiceError,
    UnknownProviderError,
    UnsupportedMediaError,
)
from .formatting import FormattedBody, FormatWarning, format
from .interop import from_agentscope, to_agentscope
from .message import (
    AnyBlock,
    AudioBlock,
    BlockType,
    Citation,
    ContentBlock,
    ContentBlocks,
    DataBlock,
    ErrorType,
    FinishedReason,
    GroundingBlock,
    GroundingSource,
    HintBlock,
    ImageBlock,
    MediaBlock,
    MediaSource,
    Msg,
    OpaqueBlock,
    PermissionBehavior,
    PermissionRule,
    ReplyError,
    Role,
    ServerToolResultBlock,
    ServerToolUseBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallState,
    ToolResultBlock,
    ToolResultState,
    ToolUseBlock,
    Usage,
    VideoBlock,
    get_content_blocks,
    get_text_content,
    has_content_blocks,
    new_audio_block,
    new_data_block,
    new_hint_block,
    new_id,
    new_image_block,
    new_msg,
    new_text_block,
    new_thinking_block,
    new_timestamp,
    new_tool_result_block,
    new_tool_use_block,
    new_video_block,
)
from .options import FormatSettings, ParseSettings
from .parsing import StreamParser, parse
from .providers import PROVIDERS
from .request import RequestParams
from .results import ContentDelta, ParsedResponse, TokenUsage

if TYPE_CHECKING:
    from .client import AsyncFormatterClient, FormatterClient

__all__ = [
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


_LAZY = {"AsyncFormatterClient": "client", "FormatterClient": "client"}
# The earlier names of the parse result types; `results` warns on access.
_DEPRECATED = ("ParseResult", "BlockDelta")


def __getattr__(name: str) -> Any:
    # PEP 562: the clients pull in grpc (~half the import time); load them on first use.
    if name in _DEPRECATED:
        from . import results

        return getattr(results, name)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
