"""The media type of inline media that arrives without one.

A provider needs the type of every inline image, clip or video (`data:` URLs,
Anthropic's `media_type`, Gemini's `mime_type`); an empty one makes a body the
provider refuses. So where the bytes name their format beyond doubt, by a
signature `filetype` matches for the block's kind, that type is used; anything
else is refused. Not certain enough: BMP's two-byte `BM`, MP3 without an ID3
tag and AAC (two-byte frame syncs any binary may start with), and DICOM, which
filetype lists among images.
"""

from __future__ import annotations

import base64
import binascii

import filetype
from filetype.types import AUDIO, IMAGE, VIDEO, Type
from filetype.types import archive as _archive
from filetype.types import audio as _audio
from filetype.types import image as _image

from ..errors import MessageFormatError

__all__ = ["SNIFF_BYTES", "inline_media_type", "sniff_media_type"]

# How many leading bytes the matchers read (filetype's own limit).
SNIFF_BYTES = 8192

_WEAK = (_image.Bmp, _image.Dcm, _audio.Aac)
_MATCHERS: dict[str, tuple[Type, ...]] = {
    "image": tuple(m for m in IMAGE if not isinstance(m, _WEAK)),
    "audio": tuple(m for m in AUDIO if not isinstance(m, _WEAK)),
    "video": VIDEO,
}
# A data block (AgentScope 2.x) holds any media: those, or a PDF.
_MATCHERS["data"] = (*_MATCHERS["image"], *_MATCHERS["audio"], *VIDEO, _archive.Pdf())
# filetype's names where the provider APIs spell a type otherwise (OpenAI's
# input audio and Gemini take `audio/wav` and `audio/mp3`).
_NAMES = {
    "audio/x-wav": "audio/wav",
    "audio/mpeg": "audio/mp3",
    "audio/x-flac": "audio/flac",
    "audio/x-aiff": "audio/aiff",
    "image/apng": "image/png",
}


def sniff_media_type(kind: str, data: bytes) -> str | None:
    """The media type of `data`, an `image`, `audio`, `video` or `data` block's
    bytes, when their signature leaves no doubt; None otherwise."""
    matchers = _MATCHERS.get(kind)
    if not matchers:
        return None
    head = bytes(data[:SNIFF_BYTES])
    found = filetype.match(head, matchers)
    if found is None or (isinstance(found, _audio.Mp3) and not head.startswith(b"ID3")):
        return None
    mime: str = found.mime
    return _NAMES.get(mime, mime)


def inline_media_type(kind: str, data: bytes | str, path: str) -> str:
    """The media type of inline `kind` media given without one (`data` as
    bytes or as base64 text), or a `MessageFormatError` on `path`."""
    if isinstance(data, str):
        # Only the head is sniffed: decode no more base64 than it takes.
        text = data[: (SNIFF_BYTES + 2) // 3 * 4]
        try:
            data = base64.b64decode(text)
        except (binascii.Error, ValueError):
            data = b""
    found = sniff_media_type(kind, data)
    if found is None:
        raise MessageFormatError(
            path, f"required with inline data: the bytes are not recognisably {_KINDS[kind]}"
        )
    return found


_KINDS = {
    "data": "media its bytes name (a PDF, an image, audio or video)",
    "image": "an image (PNG, JPEG, GIF, WebP, TIFF, HEIC, AVIF, ...)",
    "audio": "audio (WAV, FLAC, Ogg, AIFF, M4A, AMR, MP3 with an ID3 tag, ...)",
    "video": "a video (MP4, WebM, Matroska, QuickTime, AVI, FLV, WMV, MPEG, 3GP)",
}
