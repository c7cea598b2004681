"""The media screen: what a caller's message may make a served agent's
server read or fetch.

AgentScope's formatters open whatever a media block names: they read local
paths and fetch URLs in the server's process, and send the bytes on to the
model provider. The callers of a served agent are untrusted, so no media
reference reaches the agent. Before any session sees a message (a Reply, an
Observe, an answer's tool results, a hub topic's message, an A2A message),
every media URL in it, in tool results and hints too, is replaced here by
its bytes, or the message is refused naming the block:

- a local path or `file:` URL is read only under the operator's media root,
  with the formatter's checks (percent-decoding, lexically, again after
  resolving symlinks); without one it is refused;
- an http(s) URL is fetched through the formatter's guarded fetcher
  (`_fetch.py`): only from public addresses or the networks the operator
  allows, connecting to the very address it checked (so DNS rebinding
  cannot switch it), every redirect checked again, within the size and time
  caps;
- a `data:` URL carries its bytes and passes as it is; any other scheme is
  refused.

So the agent's formatter never opens a file or a socket for a caller. The
screen of a small call (a few messages and blocks, no URL to read or fetch)
runs on the event loop; any other works in a worker thread
(`Sessions.read_inputs`) and stops between blocks once the call is gone. As
it walks every block (those of tool results
and hints too) it counts them: a request past `max_blocks` is refused before
any is converted for the agent.
"""

from __future__ import annotations

import mimetypes
import threading
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import filetype

from .._fetch import MediaLimits, fetch
from .._generated.agentscope.agent.v1 import agent_service_pb2 as service_pb
from .._generated.agentscope.message.v1.message_pb2 import ContentBlock, MediaSource, Msg
from ..errors import LimitExceededError, MediaAccessError
from ..providers._media import MediaAccess

__all__ = [
    "LOOP_BLOCKS",
    "MAX_MEDIA_URLS",
    "MediaPolicy",
    "OffLoop",
    "Stopped",
    "screen_msgs",
    "screen_request",
]

# Media URLs one request may make the server read or fetch: each may take
# `MediaLimits.timeout` and `max_bytes`, so their number bounds what one
# call holds a worker for.
MAX_MEDIA_URLS = 64
_MEDIA = ("image", "audio", "video", "data")
_NESTED = {"tool_result": "output", "hint": "hint"}


@dataclass(frozen=True)
class MediaPolicy:
    """What callers' media may make the server read (`media_root`) and
    fetch (`limits`: size and time caps, and the non-public networks
    downloads may reach)."""

    media_root: Path | None = None
    limits: MediaLimits = field(default_factory=MediaLimits)

    def describe(self) -> str:
        """The policy in a line, for the startup log."""
        local = f"under {self.media_root}" if self.media_root else "refused"
        reach = "public addresses" + (
            f" and {', '.join(self.limits.allow_networks)}" if self.limits.allow_networks else ""
        )
        return (
            f"callers' media: local files {local}; http(s) fetched by the server from "
            f"{reach} only, at most {self.limits.max_bytes // (1024 * 1024)} MB and "
            f"{self.limits.timeout:g} s each, and handed to the agent as bytes"
        )


class Stopped(Exception):
    """The call went away while its messages were screened."""


class OffLoop(Exception):
    """A screen on the event loop met what it may not do there: a media URL
    to read or download, or more than `LOOP_BLOCKS` content blocks. It
    changed nothing: the call is screened again in a worker thread."""


# Content blocks a call screened and read on the event loop may hold: each
# costs up to about 35 µs to read, so such a call holds the loop for about a
# millisecond at most.
LOOP_BLOCKS = 32


class _Screen:
    def __init__(
        self, policy: MediaPolicy, stop: threading.Event, max_blocks: int, on_loop: bool
    ) -> None:
        self._policy = policy
        self._stop = stop
        self._on_loop = on_loop
        self._fetched = 0
        self._blocks = 0
        self._max_blocks = max_blocks

    def msgs(self, msgs: Sequence[Msg], field: str) -> None:
        for index, msg in enumerate(msgs):
            if msg.WhichOneof("content") == "blocks":
                self.blocks(msg.blocks.items, f"{field}[{index}].content")

    def count(self, blocks: int) -> None:
        self._blocks += blocks
        if self._on_loop and self._blocks > LOOP_BLOCKS:
            raise OffLoop
        if self._blocks > self._max_blocks:
            raise LimitExceededError(
                "max_request_blocks",
                f"the request holds more than {self._max_blocks} content blocks",
            )

    def blocks(self, blocks: Sequence[ContentBlock], path: str) -> None:
        self.count(len(blocks))
        for index, block in enumerate(blocks):
            if self._stop.is_set():
                raise Stopped
            kind = block.WhichOneof("block")
            where = f"{path}[{index}]"
            if kind in _MEDIA:
                self.source(getattr(block, kind).source, f"{where}.source.url")
            elif kind in _NESTED:
                inner = getattr(block, kind)
                if inner.WhichOneof(_NESTED[kind]) == "blocks":
                    self.blocks(inner.blocks.items, f"{where}.{_NESTED[kind]}")

    def source(self, source: MediaSource, where: str) -> None:
        if source.WhichOneof("source") != "url":
            return
        url = source.url
        try:
            scheme = urllib.parse.urlsplit(url).scheme.lower()
        except ValueError as exc:
            raise MediaAccessError(where, f"{url!r} is not a valid URL ({exc})") from None
        if scheme == "data":
            return
        self._fetched += 1
        if self._fetched > MAX_MEDIA_URLS:
            raise LimitExceededError(
                "max_media_urls", f"a request may cite at most {MAX_MEDIA_URLS} media URLs"
            )
        if scheme in ("http", "https"):
            reader = self._download
        elif scheme in ("", "file") or len(scheme) == 1:  # a path, `file:`, a drive letter
            reader = self._read
        else:
            raise MediaAccessError(
                where, f"{url!r}: a served agent takes http(s), data: and local media only"
            )
        if self._on_loop:
            raise OffLoop
        data = reader(url, where)
        media_type = source.media_type if source.HasField("media_type") else _guess(url, data)
        source.data = data
        source.media_type = media_type

    def _download(self, url: str, where: str) -> bytes:
        try:
            return fetch(url, self._policy.limits, where)
        except OSError as exc:
            raise MediaAccessError(where, f"{url!r}: the download failed ({exc})") from None

    def _read(self, url: str, where: str) -> bytes:
        if self._policy.media_root is None:
            raise MediaAccessError(
                where,
                f"{url!r} is a local file; a served agent reads local media only under "
                "the server's media root (--media-root)",
            )
        # A `file:` URL's path is percent-encoded, as `read_file` decodes it.
        path = urllib.parse.urlsplit(url).path if url[:5].lower() == "file:" else url
        access = MediaAccess(media_root=self._policy.media_root, limits=self._policy.limits)
        try:
            return access.read_file(path)
        except MediaAccessError as exc:
            raise MediaAccessError(where, exc.reason) from None


def _guess(url: str, data: bytes) -> str:
    """The media type of bytes a URL named without one: by its extension, else
    by its content."""
    guessed, _ = mimetypes.guess_type(urllib.parse.urlsplit(url).path)
    if guessed:
        return guessed
    kind = filetype.guess(data)
    return str(kind.mime) if kind is not None else "application/octet-stream"


def screen_msgs(
    msgs: Sequence[Msg],
    field: str,
    policy: MediaPolicy,
    stop: threading.Event,
    max_blocks: int,
    *,
    on_loop: bool = False,
) -> None:
    """Replace every media URL of `msgs` by its bytes, in place, or raise
    `MediaAccessError` naming the block (`field[i].content[j].source.url`);
    `LimitExceededError` past `max_blocks` content blocks. `on_loop`: it
    runs on the event loop, and raises `OffLoop`, before any change, where
    it may not go on there."""
    _Screen(policy, stop, max_blocks, on_loop).msgs(msgs, field)


def screen_request(
    request: service_pb.ReplyRequest,
    policy: MediaPolicy,
    stop: threading.Event,
    max_blocks: int,
    *,
    on_loop: bool = False,
) -> None:
    """`screen_msgs` over a Reply's messages and the tool results its answer
    carries."""
    screen = _Screen(policy, stop, max_blocks, on_loop)
    screen.msgs(request.msgs, "msgs")
    if request.WhichOneof("answer") == "external_execution_result":
        field = "external_execution_result.execution_results"
        results = request.external_execution_result.execution_results
        screen.count(len(results))  # each a tool result block
        for index, result in enumerate(results):
            if result.WhichOneof("output") == "blocks":
                screen.blocks(result.blocks.items, f"{field}[{index}].output")
