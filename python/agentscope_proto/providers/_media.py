"""Media as the formatters may reach it: local files under the caller's
media root, downloads when the caller allows them, and the tool-result media
AgentScope "saves" to temp files; plus the media helpers several of
AgentScope's formatters share (image sniffing, its web download).

Formatters never touch the file system or the network themselves: they ask
the format context (`MediaAccess` is its base), which refuses unless the
caller allowed it.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import os
import tempfile
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import filetype

from .._fetch import MEDIA_LIMITS, MediaLimits, fetch
from ..errors import FormatError, MediaAccessError

__all__ = ["MEDIA_DIR", "MediaAccess", "sniff_image", "web_body"]

# Where AgentScope would have written base64 tool-result media. Resolved once at
# import: tempfile probes the file system the first time it is asked.
MEDIA_DIR = f"{tempfile.gettempdir()}/agentscope_media"
# AgentScope's `_get_bytes_from_web_url` tries a download this often.
_DOWNLOAD_ATTEMPTS = 3


@dataclass(slots=True)
class MediaAccess:
    """What one `format()` call may read and write of media, and what it saved.

    Errors name `location`, the block being formatted (the format context's).
    """

    media_root: Path | None = None
    allow_download: bool = False
    write_media: bool = False
    # Size and time caps of file reads and downloads, and the networks
    # downloads may reach besides public addresses (see _fetch.py).
    limits: MediaLimits = field(default_factory=MEDIA_LIMITS.get)
    # Tool-result media "saved" during this call, by path: AgentScope writes
    # them to temp files and may read them back when promoting them.
    saved_media: dict[str, bytes] = field(default_factory=dict)

    @property
    def location(self) -> str:
        """The path of the block being formatted ("" when none is)."""
        return ""

    def save_base64(self, media_type: str, data: str) -> str:
        """The path AgentScope would cite for base64 tool-result media.

        Content-addressed and deterministic; the file is written only when the
        caller passed `write_media=True`.
        """
        raw = base64.b64decode(data)
        path = f"{MEDIA_DIR}/{hashlib.sha256(raw).hexdigest()[:16]}.{media_type.split('/')[-1]}"
        self.saved_media[path] = raw
        if self.write_media:
            try:
                Path(MEDIA_DIR).mkdir(parents=True, exist_ok=True)
                Path(path).write_bytes(raw)
            except (OSError, ValueError) as exc:
                raise MediaAccessError(self.location, f"cannot write {path!r}: {exc}") from None
        return path

    def is_web_url(self, url: str) -> bool:
        """Whether `url` names a remote resource (scheme other than none/`file`)."""
        try:
            return urllib.parse.urlparse(url).scheme not in ("", "file")
        except ValueError as exc:  # e.g. an unclosed IPv6 bracket
            raise FormatError(self.location, f"{url!r} is not a valid URL ({exc})") from None

    def _local(self, raw_path: str) -> Path:
        if self.media_root is None:
            raise MediaAccessError(
                self.location,
                f"{raw_path!r} is a local file; reading it needs media_root= (file access)",
            )
        outside = MediaAccessError(self.location, f"{raw_path!r} is outside the media root")
        # Paths are percent-decoded (as in a URL), so "%2e%2e/" is "../" here and
        # is checked like it.
        candidate = urllib.parse.unquote(raw_path)
        if "\x00" in candidate:
            raise MediaAccessError(self.location, f"{raw_path!r} is not a valid path")
        root = self.media_root.resolve()
        # First lexically, so that a path outside the root is refused without
        # touching the file system out there; then after resolving symlinks.
        if not Path(os.path.normpath(root / candidate)).is_relative_to(root):
            raise outside
        try:
            resolved = (root / candidate).resolve()
        except (OSError, RuntimeError) as exc:  # symlink loops, overlong names
            raise MediaAccessError(self.location, f"{raw_path!r}: {exc}") from None
        if not resolved.is_relative_to(root):
            raise outside
        return resolved

    def is_file(self, raw_path: str) -> bool:
        """`os.path.isfile` for a local media path, within the caller's permission."""
        if raw_path in self.saved_media:
            return True
        if self.is_web_url(raw_path):
            return False
        local = self._local(raw_path)
        try:
            return local.is_file()
        except OSError:  # os.path.isfile's answer to an unreadable path
            return False

    def exists(self, raw_path: str) -> bool:
        """`os.path.exists` for a local media path, within the caller's permission."""
        if raw_path in self.saved_media:
            return True
        if self.is_web_url(raw_path):
            return False
        local = self._local(raw_path)
        try:
            return local.exists()
        except OSError:
            return False

    def read_file(self, raw_path: str) -> bytes:
        """The bytes of a local media file, within the caller's permission and size cap."""
        if raw_path in self.saved_media:
            return self.saved_media[raw_path]
        local = self._local(raw_path)
        cap = self.limits.max_bytes
        try:
            with local.open("rb") as file:
                data = file.read(cap + 1)
        except OSError as exc:
            # The client's path, not the resolved one: that would reveal where
            # the media root lives.
            raise MediaAccessError(
                self.location, f"cannot read {raw_path!r}: {exc.strerror or exc}"
            ) from None
        if len(data) > cap:
            raise MediaAccessError(self.location, f"{raw_path!r} is larger than {cap} bytes")
        return data

    def download(self, url: str) -> bytes:
        """The body of an http(s) URL, if the caller allowed downloads.

        Refuses non-public addresses unless `limits.allow_networks` lists them,
        and caps size and time (see _fetch.py). Raises `MediaAccessError` when
        refused, `OSError` when the transfer fails.
        """
        if not self.allow_download:
            raise MediaAccessError(
                self.location, f"{url!r} would need a download; pass allow_download=True"
            )
        return fetch(url, self.limits, self.location)


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


def web_body(url: str, media: MediaAccess) -> str:
    """AgentScope's `_get_bytes_from_web_url` (Gemini's and Ollama's formatters):
    up to three tries; a body that is valid UTF-8 comes back as that text, not
    as base64 (its bug, reproduced)."""
    reason = ""
    for _ in range(_DOWNLOAD_ATTEMPTS):
        try:
            body = media.download(url)
        except FormatError:
            raise  # not allowed, or too large: trying again changes nothing
        except (OSError, ValueError, http.client.HTTPException) as exc:
            reason = str(exc)
            continue
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(body).decode("ascii")
    raise MediaAccessError(
        media.location, f"{url!r}: download failed {_DOWNLOAD_ATTEMPTS} times ({reason})"
    )
