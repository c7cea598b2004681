"""Documents (`data` blocks of a PDF, plain text, ...) in provider fidelity.

AgentScope 1.0.21 has no document block; 2.x's `data` block carries any media
type, and `agent_turns` (`_turns.py`) hands a provider only the types it
declares in `document_types`. This reads a block's source the way the media
helpers do: base64 as given (checked), local files within `media_root`, web
URLs kept where the provider's API takes a URL, else downloaded when the
caller allows it.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from ..errors import FormatError
from ._context import FormatContext

__all__ = ["Document", "document"]


@dataclass(frozen=True, slots=True)
class Document:
    """One document, ready for a provider part: base64 data or a web URL."""

    media_type: str
    # The file name the block gives (2.x `name`), if any.
    name: str | None
    data: str | None = None
    url: str | None = None

    def data_url(self) -> str:
        return f"data:{self.media_type};base64,{self.data}"

    def text(self, ctx: FormatContext) -> str:
        """The document's bytes as UTF-8 text (a plain-text document)."""
        try:
            return base64.b64decode(self.data or "").decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FormatError(
                ctx.location, f"a {self.media_type} document is not UTF-8 text: {exc}"
            ) from None


def document(block: dict[str, Any], ctx: FormatContext, *, keep_url: bool) -> Document:
    """The document a `data` block holds (`ctx.location` names it in errors)."""
    source = block["source"]
    # The type without its parameters: what the providers' document parts take.
    media_type = (source.get("media_type") or "").split(";", 1)[0].strip().lower()
    name = block.get("name") if isinstance(block.get("name"), str) else None
    if source["type"] == "base64":
        data = source["data"]
        try:
            base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise FormatError(f"{ctx.location}.source.data", "not valid base64") from None
        return Document(media_type, name, data=data)
    url = source["url"]
    if ctx.is_web_url(url):
        if keep_url:
            return Document(media_type, name, url=url)
        try:
            body = ctx.download(url)
        except OSError as exc:
            raise FormatError(ctx.location, f"cannot download {url!r}: {exc}") from None
    else:
        body = ctx.read_file(url.removeprefix("file://"))
    return Document(media_type, name, data=base64.b64encode(body).decode("ascii"))
