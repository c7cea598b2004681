"""AG-UI message content as `Msg` content, and back (docs/agui.md).

A user message's (or tool message's) content is text or a list of parts:
text, image, audio, video, document. Each part is one block (a document is a
`DataBlock`), its inline base64 or URL source the block's `MediaSource`. A
provider file handle (`FileSource`) has no place in a `Msg`, and a block AG-UI
has no part for (thinking, tool use, ...) none in a user message: both raise
`MessageFormatError` naming where.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any, Final

from ag_ui.core import (
    AudioPart,
    DataSource,
    DocumentPart,
    ImagePart,
    TextPart,
    UrlSource,
    UserMessage,
    VideoPart,
)

from .._generated.agentscope.message.v1.message_pb2 import (
    AudioBlock,
    ContentBlock,
    ContentBlocks,
    DataBlock,
    ImageBlock,
    MediaSource,
    Msg,
    Role,
    TextBlock,
    VideoBlock,
)
from ..errors import MessageFormatError

__all__ = ["blocks_from_parts", "msg_from_user_message", "user_message_from_msg"]

MediaPart = ImagePart | AudioPart | VideoPart | DocumentPart
Part = TextPart | MediaPart
# AG-UI's media part kind -> the `ContentBlock` field and the block type it becomes.
_MEDIA: Final[dict[str, tuple[str, Any]]] = {
    "image": ("image", ImageBlock),
    "audio": ("audio", AudioBlock),
    "video": ("video", VideoBlock),
    "document": ("data", DataBlock),
}
# The `ContentBlock` media field -> its AG-UI part.
_PARTS: Final[dict[str, type[MediaPart]]] = {
    "image": ImagePart,
    "audio": AudioPart,
    "video": VideoPart,
    "data": DocumentPart,
}


def _source(part: Any, path: str) -> MediaSource:
    source = part.source
    if isinstance(source, UrlSource):
        media = MediaSource(url=source.value)
        if source.mime_type is not None:
            media.media_type = source.mime_type
        return media
    if isinstance(source, DataSource):
        media = MediaSource(media_type=source.mime_type)
        raw = _canonical_b64(source.value)
        if raw is None:
            media.base64_text = source.value
        else:
            media.data = raw
        return media
    raise MessageFormatError(f"{path}.source", f"a {source.type} source has no place in a message")


def _canonical_b64(text: str) -> bytes | None:
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if base64.b64encode(raw).decode("ascii") == text else None


def _block_from_part(part: Any, path: str) -> ContentBlock:
    if isinstance(part, TextPart):
        return ContentBlock(text=TextBlock(text=part.text))
    field, kind = _MEDIA[part.type]
    return ContentBlock(**{field: kind(source=_source(part, path))})


def blocks_from_parts(content: str | list[Any], path: str) -> str | ContentBlocks:
    """AG-UI content (text, or parts) as `Msg` content (text, or blocks)."""
    if isinstance(content, str):
        return content
    return ContentBlocks(
        items=[_block_from_part(part, f"{path}[{index}]") for index, part in enumerate(content)]
    )


def msg_from_user_message(message: UserMessage, path: str) -> Msg:
    """An AG-UI user message as a user `Msg` with the same id (and name)."""
    msg = Msg(id=message.id, role=Role.ROLE_USER, name=message.name or "user")
    content = blocks_from_parts(message.content, f"{path}.content")
    if isinstance(content, str):
        msg.text = content
    else:
        msg.blocks.CopyFrom(content)
    return msg


def _part_source(source: MediaSource, path: str) -> DataSource | UrlSource:
    which = source.WhichOneof("source")
    media_type = source.media_type if source.HasField("media_type") else None
    if which == "url":
        return UrlSource(value=source.url, mime_type=media_type)
    if media_type is None:
        raise MessageFormatError(f"{path}.media_type", "inline media needs its media type")
    if which == "data":
        return DataSource(value=base64.b64encode(source.data).decode("ascii"), mime_type=media_type)
    if which == "base64_text":
        return DataSource(value=source.base64_text, mime_type=media_type)
    raise MessageFormatError(path, "set url, data or base64_text")


def _text_part(block: ContentBlock, path: str) -> Part:
    return TextPart(text=block.text.text)


def _media_part(block: ContentBlock, path: str) -> Part:
    field = block.WhichOneof("block") or ""
    source = getattr(block, field).source
    return _PARTS[field](source=_part_source(source, f"{path}.{field}.source"))


# The `ContentBlock` field -> its AG-UI part.
_TO_PART: Final[dict[str, Callable[[ContentBlock, str], Part]]] = {
    "text": _text_part,
    **dict.fromkeys(_PARTS, _media_part),
}


def user_message_from_msg(msg: Msg, path: str = "msg") -> UserMessage:
    """A user `Msg` as an AG-UI user message (the way back of
    `msg_from_user_message`)."""
    if msg.role != Role.ROLE_USER:
        raise MessageFormatError(f"{path}.role", "only a user message goes to AG-UI as input")
    if msg.WhichOneof("content") == "text":
        content: str | list[Part] = msg.text
    else:
        content = []
        for index, block in enumerate(msg.blocks.items):
            where = f"{path}.blocks[{index}]"
            kind = block.WhichOneof("block") or ""
            if kind not in _TO_PART:
                raise MessageFormatError(where, f"AG-UI has no part for a {kind or 'empty'} block")
            content.append(_TO_PART[kind](block, where))
    return UserMessage(id=msg.id, name=msg.name, content=content)
