"""Media as AgentScope's OpenAI formatters send it (Chat Completions and
Responses share these helpers): images as URLs or data URLs, audio as
`input_audio` parts."""

from __future__ import annotations

import base64
from typing import Any

from ..errors import FormatError, UnsupportedMediaError
from ._context import FormatContext
from ._media import sniff_image

__all__ = ["audio_part", "image_block_url", "image_url"]

Block = dict[str, Any]

# Extensions `_to_openai_image_url` trusts (case-sensitively) before sniffing.
_IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".gif", ".webp")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _read(ctx: FormatContext, path: str) -> bytes:
    try:
        return ctx.read_file(path)
    except OSError as exc:
        raise FormatError(ctx.location, f"cannot read {path!r}: {exc.strerror}") from None


def image_url(url: str, ctx: FormatContext) -> str:
    """AgentScope's `_to_openai_image_url`: a local image becomes a data URL, a
    web URL stays as it is (errors name `ctx.location`)."""
    raw = url.removeprefix("file://")
    if ctx.exists(raw) and ctx.is_file(raw):
        if raw.endswith(_IMAGE_EXTENSIONS):
            # The mime comes from the lowered extension, so `.jpg` gives `image/jpg`.
            return f"data:image/{raw.lower().split('.')[-1]};base64,{_b64(_read(ctx, raw))}"
        data = _read(ctx, raw)
        mime = sniff_image(data)
        if mime is not None:
            return f"data:{mime};base64,{_b64(data)}"
    if ctx.is_web_url(raw):
        return url
    raise FormatError(
        ctx.location, f'Invalid image URL: "{url}". It should be a local file or a web URL.'
    )


def image_block_url(block: Block, ctx: FormatContext) -> str:
    """The URL an image block goes out as: `image_url` of its URL, or a data URL."""
    source = block["source"]
    if source["type"] == "url":
        return image_url(source["url"], ctx)
    if source["type"] == "base64":
        return f"data:{source['media_type']};base64,{source['data']}"
    raise FormatError(ctx.location, f"Unsupported image source type: {source['type']}")


def audio_part(block: Block, ctx: FormatContext) -> Block:
    """AgentScope's `_to_openai_audio_data` wrapped as an `input_audio` part: wav
    and mp3 only, local files read, web URLs downloaded."""
    source = block["source"]
    if source["type"] == "base64":
        media_type = source["media_type"]
        if media_type not in ("audio/wav", "audio/mp3"):
            raise UnsupportedMediaError(
                ctx.location,
                f"Unsupported audio media type: {media_type}, "
                "only audio/wav and audio/mp3 are supported.",
            )
        audio = {"data": source["data"], "format": media_type.split("/")[-1]}
        return {"type": "input_audio", "input_audio": audio}
    url = source["url"]
    raw = url.removeprefix("file://")
    extension = raw.split(".")[-1].lower()
    if extension not in ("wav", "mp3"):
        raise UnsupportedMediaError(
            ctx.location,
            f"Unsupported audio file extension: {extension}, wav and mp3 are supported.",
        )
    if ctx.exists(raw):
        data = _read(ctx, raw)
    elif ctx.is_web_url(raw):
        try:
            data = ctx.download(url)
        except OSError as exc:
            raise FormatError(ctx.location, f"cannot download {url!r}: {exc}") from None
    else:
        raise FormatError(
            ctx.location,
            f"Unsupported audio source: {url}, it should be a local file or a web URL.",
        )
    return {"type": "input_audio", "input_audio": {"data": _b64(data), "format": extension}}
