"""Helpers several provider modules share because AgentScope's formatters and
model classes share them: the same code there, one copy here.

Where AgentScope's providers differ on purpose, the difference stays in the
provider module (or is a parameter here, named for what it changes).
"""

from __future__ import annotations

import filetype

__all__ = ["sniff_image"]


def sniff_image(data: bytes) -> str | None:
    """The image MIME type `filetype.guess` finds in `data`, else None.

    AgentScope types local images without a known extension this way; a match
    that is not an image (DICOM sits among filetype's image matchers) is None.
    """
    kind = filetype.guess(data)
    if kind is None:
        return None
    mime: str = kind.mime
    return mime if mime.startswith("image/") else None
