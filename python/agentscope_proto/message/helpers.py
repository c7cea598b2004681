"""Constructors and accessors over the generated `Msg` types.

The accessors behave exactly like AgentScope 1.0.21's `Msg` methods, including
how plain-string content counts as one text block.
"""

from __future__ import annotations

import base64
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, overload

from .. import _core, _json
from .._generated.agentscope.message.v1.message_pb2 import (
    AudioBlock,
    ContentBlock,
    DataBlock,
    GroundingBlock,
    HintBlock,
    ImageBlock,
    MediaSource,
    Msg,
    Role,
    ServerToolResultBlock,
    ServerToolUseBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolResultState,
    ToolUseBlock,
    VideoBlock,
)
from ..errors import MessageFormatError
from ._codec import AnyBlock, block_kind, unwrap, wrap
from ._sniff import inline_media_type

__all__ = [
    "AnyBlock",
    "BlockType",
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
]

BlockType = Literal[
    "text",
    "thinking",
    "tool_use",
    "tool_result",
    "image",
    "audio",
    "video",
    "data",
    "hint",
    "server_tool_use",
    "server_tool_result",
    "grounding",
]
MediaBlock = ImageBlock | AudioBlock | VideoBlock

_ROLES = {"user": Role.ROLE_USER, "assistant": Role.ROLE_ASSISTANT, "system": Role.ROLE_SYSTEM}
# shortuuid's default alphabet: AgentScope ids are 22 of these characters.
_ID_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


# Base-57 digits two at a time, and uuid4's version and variant bits.
_ID_PAIRS = [a + b for a in _ID_ALPHABET for b in _ID_ALPHABET]
_ID_BASE2 = len(_ID_ALPHABET) ** 2
_ID_BASE4 = _ID_BASE2**2
_UUID4_CLEAR = ~(0xC000 << 48 | 0xF000 << 64)
_UUID4_SET = 0x8000 << 48 | 0x4000 << 64


def new_id() -> str:
    """A fresh message id in AgentScope's form (a 22-character shortuuid).

    What `shortuuid.uuid()` returns: a random UUID4 as 22 base-57 digits, most
    significant first, computed here four digits per big-integer division.
    """
    random = os.urandom(16)
    made = _core.shortuuid(random)  # the same digits, a quarter of the time
    if made is not None:
        return made
    number = int.from_bytes(random, "big") & _UUID4_CLEAR | _UUID4_SET
    parts = []
    # 57**22 > 2**128: five groups of four digits, then the last two.
    for _ in range(5):
        number, group = divmod(number, _ID_BASE4)
        high, low = divmod(group, _ID_BASE2)
        parts.append(_ID_PAIRS[high] + _ID_PAIRS[low])
    parts.append(_ID_PAIRS[number])
    return "".join(reversed(parts))


# The formatted local second of the last timestamp: every stream snapshot gets
# a timestamp, and formatting the date once per second is a quarter of the cost.
_last_second: tuple[int, str] = (-1, "")


def new_timestamp() -> str:
    """The current local time in AgentScope's form, `YYYY-MM-DD HH:MM:SS.mmm`."""
    global _last_second
    now = time.time()
    second = int(now)
    if second != _last_second[0]:
        _last_second = (second, time.strftime("%Y-%m-%d %H:%M:%S.", time.localtime(second)))
    return f"{_last_second[1]}{int((now - second) * 1000):03d}"


def _role(role: Role.ValueType | str) -> Role.ValueType:
    if isinstance(role, str):
        try:
            return _ROLES[role.lower()] if role.lower() != "tool" else Role.ROLE_TOOL
        except KeyError:
            raise MessageFormatError("role", f"unknown role {role!r}") from None
    return role


def new_msg(
    name: str,
    content: str | Iterable[ContentBlock | AnyBlock],
    role: Role.ValueType | str,
    *,
    metadata: Mapping[str, Any] | None = None,
    timestamp: str | None = None,
    invocation_id: str | None = None,
    id: str | None = None,
) -> Msg:
    """A message, like AgentScope's `Msg(name, content, role, ...)`.

    `content` is a string or blocks (typed blocks or `ContentBlock`s); `role` is
    a `Role` or `"user"`, `"assistant"`, `"system"`, `"tool"`. A missing id or
    timestamp is generated as AgentScope does.
    """
    msg = Msg(
        id=id or new_id(), name=name, role=_role(role), timestamp=timestamp or new_timestamp()
    )
    if isinstance(content, str):
        msg.text = content
    else:
        msg.blocks.SetInParent()
        msg.blocks.items.extend(b if isinstance(b, ContentBlock) else wrap(b) for b in content)
    if metadata:
        # Empty metadata is no metadata, as in AgentScope (`metadata or {}`).
        msg.metadata_json = _json.dumps(dict(metadata), "metadata")
    if invocation_id is not None:
        msg.invocation_id = invocation_id
    return msg


def new_text_block(text: str) -> TextBlock:
    """A text block."""
    return TextBlock(text=text)


def new_thinking_block(thinking: str, *, signature: str | None = None) -> ThinkingBlock:
    """A reasoning block, optionally with Anthropic's signature."""
    block = ThinkingBlock(thinking=thinking)
    if signature is not None:
        block.signature = signature
    return block


def new_tool_use_block(
    id: str, name: str, input: Mapping[str, Any], *, raw_input: str | None = None
) -> ToolUseBlock:
    """A tool call with its arguments as a dict."""
    block = ToolUseBlock(id=id, name=name, input_json=_json.dumps(dict(input), "input"))
    if raw_input is not None:
        block.raw_input = raw_input
    return block


def new_tool_result_block(
    id: str,
    name: str,
    output: str | Iterable[TextBlock | MediaBlock | DataBlock] | None,
    *,
    state: ToolResultState.ValueType = ToolResultState.TOOL_RESULT_STATE_UNSPECIFIED,
) -> ToolResultBlock:
    """A tool result whose output is a string, a list of text and media blocks, or None."""
    block = ToolResultBlock(id=id, name=name, state=state)
    if isinstance(output, str):
        block.text = output
    elif output is not None:
        block.blocks.SetInParent()
        block.blocks.items.extend(wrap(b) for b in output)
    return block


def _source(kind: str, url: str | None, data: bytes | None, media_type: str | None) -> MediaSource:
    if isinstance(url, (bytes, bytearray, memoryview)):
        raise TypeError(
            f"new_{kind}_block: url must be a str; pass the bytes as data= (and media_type=)"
        )
    if data is not None:
        if url is not None:
            raise MessageFormatError("source", "give either url or data, not both")
        if not media_type:
            media_type = inline_media_type(kind, data, "source.media_type")
        return MediaSource(data=data, media_type=media_type)
    if url is None:
        raise MessageFormatError("source", "give url or data")
    source = MediaSource(url=url)
    if media_type is not None:
        source.media_type = media_type
    return source


def new_image_block(
    url: str | None = None, *, data: bytes | None = None, media_type: str | None = None
) -> ImageBlock:
    """An image from a URL, or from bytes and their media type (found from the
    bytes when not given and they leave no doubt, else a `MessageFormatError`)."""
    return ImageBlock(source=_source("image", url, data, media_type))


def new_audio_block(
    url: str | None = None, *, data: bytes | None = None, media_type: str | None = None
) -> AudioBlock:
    """An audio clip from a URL, or from bytes and their media type (found as
    for `new_image_block`)."""
    return AudioBlock(source=_source("audio", url, data, media_type))


def new_video_block(
    url: str | None = None, *, data: bytes | None = None, media_type: str | None = None
) -> VideoBlock:
    """A video clip from a URL, or from bytes and their media type (found as
    for `new_image_block`)."""
    return VideoBlock(source=_source("video", url, data, media_type))


def new_data_block(
    url: str | None = None,
    *,
    data: bytes | None = None,
    media_type: str | None = None,
    name: str | None = None,
) -> DataBlock:
    """Media of any type (a PDF, say) from a URL, or from bytes plus their media type."""
    block = DataBlock(source=_source("data", url, data, media_type))
    if name is not None:
        block.name = name
    return block


def new_hint_block(
    hint: str | Iterable[TextBlock | MediaBlock | DataBlock], *, source: str | None = None
) -> HintBlock:
    """An instruction for the model inside an agent's loop: text, or text and media blocks."""
    block = HintBlock()
    if isinstance(hint, str):
        block.text = hint
    else:
        block.blocks.SetInParent()
        block.blocks.items.extend(wrap(b) for b in hint)
    if source is not None:
        block.source = source
    return block


def new_image_block_from_base64(data: str, media_type: str) -> ImageBlock:
    """An image from base64 text, as AgentScope's `Base64Source` holds it."""
    return new_image_block(data=base64.b64decode(data, validate=True), media_type=media_type)


def get_text_content(msg: Msg, separator: str = "\n") -> str | None:
    """The message's text: string content as is, else its text blocks joined.

    Returns None when block content has no text block. Thinking blocks and text
    inside tool results do not count.
    """
    if msg.WhichOneof("content") == "text":
        return msg.text
    texts = [b.text.text for b in msg.blocks.items if b.WhichOneof("block") == "text"]
    return separator.join(texts) if texts else None


def _content(msg: Msg) -> list[AnyBlock]:
    if msg.WhichOneof("content") == "text":
        return [TextBlock(text=msg.text)]
    return [unwrap(b) for b in msg.blocks.items]


@overload
def get_content_blocks(msg: Msg, block_type: Literal["text"]) -> list[TextBlock]: ...
@overload
def get_content_blocks(msg: Msg, block_type: Literal["thinking"]) -> list[ThinkingBlock]: ...
@overload
def get_content_blocks(msg: Msg, block_type: Literal["tool_use"]) -> list[ToolUseBlock]: ...
@overload
def get_content_blocks(msg: Msg, block_type: Literal["tool_result"]) -> list[ToolResultBlock]: ...
@overload
def get_content_blocks(msg: Msg, block_type: Literal["image"]) -> list[ImageBlock]: ...
@overload
def get_content_blocks(msg: Msg, block_type: Literal["audio"]) -> list[AudioBlock]: ...
@overload
def get_content_blocks(msg: Msg, block_type: Literal["video"]) -> list[VideoBlock]: ...
@overload
def get_content_blocks(msg: Msg, block_type: Literal["data"]) -> list[DataBlock]: ...
@overload
def get_content_blocks(msg: Msg, block_type: Literal["hint"]) -> list[HintBlock]: ...
@overload
def get_content_blocks(
    msg: Msg, block_type: Literal["server_tool_use"]
) -> list[ServerToolUseBlock]: ...
@overload
def get_content_blocks(
    msg: Msg, block_type: Literal["server_tool_result"]
) -> list[ServerToolResultBlock]: ...
@overload
def get_content_blocks(msg: Msg, block_type: Literal["grounding"]) -> list[GroundingBlock]: ...
@overload
def get_content_blocks(
    msg: Msg, block_type: str | Sequence[str] | None = None
) -> list[AnyBlock]: ...


def get_content_blocks(msg: Msg, block_type: str | Sequence[str] | None = None) -> list[Any]:
    """The message's blocks, optionally only those of one kind or of several kinds.

    String content counts as one text block (so `""` gives one empty text
    block). Blocks are returned by reference, as AgentScope does.
    """
    blocks = _content(msg)
    if block_type is None:
        return blocks
    wanted = {block_type} if isinstance(block_type, str) else set(block_type)
    return [b for b in blocks if block_kind(b) in wanted]


def has_content_blocks(msg: Msg, block_type: str | Sequence[str] | None = None) -> bool:
    """Whether `get_content_blocks(msg, block_type)` is non-empty."""
    return len(get_content_blocks(msg, block_type)) > 0


__all__ += ["MediaBlock"]
