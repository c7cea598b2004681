"""What every provider module shares: the message view, the format context and
the few pure helpers AgentScope's formatters have in common.

Formatters work on AgentScope-shaped block dicts (the `to_dict` form of each
block) because AgentScope's own output copies those dicts, extra keys and all;
working on the same shape is what makes byte-for-byte parity straightforward.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import logging
import os
import tempfile
import urllib.parse
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, NoReturn, Protocol

from .._fetch import MEDIA_LIMITS, MediaLimits, fetch
from .._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from .._generated.agentscope.formatter.v1.formatter_service_pb2 import FormatWarning
from ..cache import FormatCache
from ..errors import FormatError, MediaAccessError, ParseError, ProviderError
from ..options import DEFAULT_HISTORY_PROMPT, FormatSettings, ParseSettings
from ..request import RequestFields

__all__ = [
    "DEFAULT_HISTORY_PROMPT",
    "MEDIA_DIR",
    "UNKNOWN_TO_AGENTSCOPE",
    "FormatContext",
    "MsgView",
    "ParseSettings",
    "Provider",
    "StreamState",
    "expect",
    "group_messages",
    "nothing_to_send",
    "raise_for_error_body",
    "tool_result_to_text",
    "warning_log_level",
]

logger = logging.getLogger("agentscope_proto.format")

# The level `FormatContext.warn` logs dropped blocks at: WARNING in process,
# where the log line is how a caller notices; the server sets DEBUG, as it
# returns every warning in the response and would otherwise log a line per
# dropped block of every request.
_WARNING_LOG_LEVEL: ContextVar[int] = ContextVar("warning_log_level", default=logging.WARNING)


@contextlib.contextmanager
def warning_log_level(level: int) -> Iterator[None]:
    """Log dropped-block warnings at `level` within the block."""
    token = _WARNING_LOG_LEVEL.set(level)
    try:
        yield
    finally:
        _WARNING_LOG_LEVEL.reset(token)


# Control characters in logged text would let a client forge log lines.
_LOG_ESCAPES = {code: f"\\x{code:02x}" for code in (*range(32), 127)}
_LOG_ESCAPES.update({0x85: "\\x85", 0x2028: "\\u2028", 0x2029: "\\u2029"})


def log_safe(text: str) -> str:
    """`text` with control characters escaped, for log messages."""
    return text.translate(_LOG_ESCAPES)


# Block kinds AgentScope 1.0.21's formatters do not know, so they drop them
# like any unknown kind: those only provider-fidelity parsing makes (server
# tools, grounding), and AgentScope 2.x's and agentscope-java's data and hint.
UNKNOWN_TO_AGENTSCOPE = frozenset(
    {"server_tool_use", "server_tool_result", "grounding", "data", "hint"}
)

# Where AgentScope would have written base64 tool-result media. Resolved once at
# import: tempfile probes the file system the first time it is asked.
MEDIA_DIR = f"{tempfile.gettempdir()}/agentscope_media"


@dataclass(slots=True)
class MsgView:
    """One input message as AgentScope's formatters see it.

    `index` is the message's position in the caller's list (a promoted message
    shares the index of the message it was promoted from), for error paths.
    `paths`, when set, names each block's place in that message (a view made
    of part of a message, see `_turns.agent_turns`); else block `i` is
    `content[i]`.
    """

    name: str | None
    role: str
    content: str | list[dict[str, Any]]
    index: int
    # What names the message's content in a `FormatCache` when `format()` was
    # given one and the message's chat turn may be cached; None otherwise.
    cache_id: tuple[Any, ...] | None = None
    # Its chat turn as the cache held it when `format()` looked it up ahead
    # (the server's messages, `PREFETCHED`), for the message's own position.
    turn: Any = None
    # Whether its cached chat turn is stored as shared `EncodedMessage`s
    # (the server's wire-keyed messages) rather than as a copy.
    SHARED: ClassVar[bool] = False
    # Whether `turn` is the cache's answer (looked up ahead for the message's
    # position) rather than still to be asked.
    PREFETCHED: ClassVar[bool] = False
    paths: tuple[str, ...] | None = None

    def path(self, block_index: int | None = None) -> str:
        """The path of the message, or of one of its blocks, in the caller's list."""
        if block_index is None:
            return f"messages[{self.index}]"
        if self.paths is None:
            return f"messages[{self.index}].content[{block_index}]"
        return f"messages[{self.index}].{self.paths[block_index]}"

    def cacheable(self) -> bool:
        """Whether the turn of a view with a `cache_id` may be stored: views
        get one only when they are plain (see `cache.plain_content`)."""
        return True

    def get_content_blocks(self, block_type: str | None = None) -> list[dict[str, Any]]:
        """AgentScope's `Msg.get_content_blocks`: string content is one text block."""
        if isinstance(self.content, str):
            blocks = [{"type": "text", "text": self.content}]
        else:
            blocks = self.content
        if block_type is None:
            return blocks
        return [b for b in blocks if b.get("type") == block_type]

    def has_content_blocks(self, block_type: str | None = None) -> bool:
        """AgentScope's `Msg.has_content_blocks`."""
        return len(self.get_content_blocks(block_type)) > 0

    def get_text_content(self, separator: str = "\n") -> str | None:
        """AgentScope's `Msg.get_text_content`."""
        if isinstance(self.content, str):
            return self.content
        texts = [b["text"] for b in self.content if b.get("type") == "text"]
        return separator.join(texts) if texts else None

    def has_tool_blocks(self) -> bool:
        """Whether the message holds a tool call or a tool result."""
        return self.has_content_blocks("tool_use") or self.has_content_blocks("tool_result")


@dataclass(slots=True)
class FormatContext:
    """Options and permissions of one `format()` call, and what it reports back.

    Formatters never touch the file system or the network themselves: they ask
    the context, which refuses unless the caller allowed it.
    """

    settings: FormatSettings = field(default_factory=FormatSettings)
    media_root: Path | None = None
    allow_download: bool = False
    write_media: bool = False
    # Size and time caps of file reads and downloads, and the networks
    # downloads may reach besides public addresses (see _fetch.py).
    limits: MediaLimits = field(default_factory=MEDIA_LIMITS.get)
    warnings: list[FormatWarning] = field(default_factory=list)
    # Tool-result media "saved" during this call, by path: AgentScope writes
    # them to temp files and may read them back when promoting them.
    saved_media: dict[str, bytes] = field(default_factory=dict)
    # The block being formatted, for errors raised by the media helpers
    # (`location` spells it; kept as numbers, as most calls never need it).
    at_message: int = -1
    at_block: int | None = None
    at_paths: tuple[str, ...] | None = None
    # Where chat turns of plain messages are cached (`format(..., cache=)`,
    # chat mode only); None: no caching.
    turn_cache: FormatCache | None = None
    # The number naming this call's chat turns in `turn_cache`, when `format()`
    # chose it (the server's prefetched turns); else the skeleton's own.
    turn_scope: int | None = None
    # Where the chat walk starts (`cache.PrefixEntry` minus its bytes: the
    # messages, warnings and `at` after the run of messages before `msgs`),
    # taken by the walk once; None: from the beginning.
    resume: Any = None
    # Chat turns formatted but not cached (media, promotions, warnings about
    # more than their message): a walk with any is not kept as a prefix.
    uncached_turns: int = 0
    # Where the chat walk ended (its position after the last message,
    # promoted messages counting): where a walk resumed from it goes on.
    walked: int = 0

    def at(self, msg: MsgView, block_index: int | None = None) -> None:
        """Note which block is being formatted (names it in media errors)."""
        self.at_message = msg.index
        self.at_block = block_index
        self.at_paths = msg.paths

    @property
    def location(self) -> str:
        """The path of the block being formatted ("" before the first)."""
        if self.at_message < 0:
            return ""
        if self.at_block is None:
            return f"messages[{self.at_message}]"
        if self.at_paths is not None:
            return f"messages[{self.at_message}].{self.at_paths[self.at_block]}"
        return f"messages[{self.at_message}].content[{self.at_block}]"

    def warn(
        self, msg: MsgView | None, block_index: int | None, block_type: str, text: str
    ) -> None:
        """Record (and log) that a block was dropped."""
        path = "" if msg is None else msg.path(block_index)
        self.warnings.append(FormatWarning(path=path, block_type=block_type, message=text))
        level = _WARNING_LOG_LEVEL.get()
        if logger.isEnabledFor(level):
            logger.log(level, "%s: %s", path or "format", log_safe(text))

    # -- media ------------------------------------------------------------

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


def tool_result_to_text(
    output: str | list[dict[str, Any]] | None, ctx: FormatContext
) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    """AgentScope's `convert_tool_result_to_string`.

    Returns the textual output (items `- `-bulleted when there are several) and
    the media items as `(url_or_path, block)` pairs for promotion.
    """
    if output is None:
        return "", []
    if isinstance(output, str):
        return output, []
    texts: list[str] = []
    media: list[tuple[str, dict[str, Any]]] = []
    for index, block in enumerate(output):
        kind = block["type"]
        if kind == "text":
            texts.append(block["text"])
            continue
        if kind not in ("image", "audio", "video"):
            # AgentScope raises ValueError here; agentscope-java tool results
            # may hold any block kind.
            raise FormatError(
                f"{ctx.location}.output[{index}]".lstrip("."),
                f"Unsupported block type: {kind}, expected 'text', 'image', 'audio', or 'video'.",
            )
        source = block["source"]
        if source["type"] == "url":
            where = source["url"]
        else:
            where = ctx.save_base64(source["media_type"], source["data"])
        texts.append(f"The returned {kind} can be found at: {where}")
        media.append((where, block))
    if len(texts) == 1:
        return texts[0], media
    return "\n".join("- " + text for text in texts), media


GroupKind = Literal["tool_sequence", "agent_message"]


def group_messages(msgs: Sequence[MsgView]) -> Iterator[tuple[GroupKind, list[MsgView]]]:
    """AgentScope's `_group_messages`: runs of tool messages and of agent messages."""
    group: list[MsgView] = []
    kind: GroupKind | None = None
    for msg in msgs:
        this: GroupKind = "tool_sequence" if msg.has_tool_blocks() else "agent_message"
        if kind is not None and this != kind:
            yield kind, group
            group = []
        kind = this
        group.append(msg)
    if kind is not None:
        yield kind, group


class StreamState(Protocol):
    """The accumulating state of one streamed response."""

    def feed(self, event: dict[str, Any]) -> Any:
        """Take one event's JSON; return a `ParsedResponse` snapshot when AgentScope
        would yield one for it, else None."""
        ...

    def finish(self) -> Any:
        """The final `ParsedResponse` after the stream ended."""
        ...


class Provider(Protocol):
    """One LLM provider's wire format, both directions (see providers/__init__.py)."""

    name: str
    # Its `agentscope.formatter.v1.Provider` enum value (the registry maps both ways).
    enum: pb.Provider.ValueType
    # Format options this provider accepts, by AgentScope constructor name.
    options: frozenset[str]
    # Block kinds the formatter drops (with a warning) instead of formatting.
    dropped_blocks: frozenset[str]
    # Block kinds the formatter formats. With `dropped_blocks` it must cover
    # every `ContentBlock` kind ("opaque" included); a test checks that.
    formatted_blocks: frozenset[str]
    # How a streamed HTTP body is framed: "sse" or "ndjson".
    framing: str
    # Where the provider's API takes each request parameter (`format(...,
    # request=...)`), written into the finished body by `write_request`.
    request_fields: RequestFields
    # The media types of `data` blocks (AgentScope 2.x) it takes as documents
    # in provider fidelity (`agent_turns` refuses the others); images, audio
    # and video go as its media blocks.
    document_types: frozenset[str]

    def format_messages(
        self, msgs: list[MsgView], ctx: FormatContext, *, multi_agent: bool
    ) -> list[dict[str, Any]]:
        """The provider's message list, as AgentScope's (MultiAgent)Formatter returns it."""
        ...

    def build_body(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        tool_choice: str | None,
        ctx: FormatContext,
    ) -> dict[str, Any]:
        """The request body: the message list plus tools and tool choice, as the
        AgentScope model class hands them to the SDK."""
        ...

    def parse(self, response: dict[str, Any], options: ParseSettings) -> Any:
        """A complete response as a `ParsedResponse` (see parsing.py)."""
        ...

    def stream(self, options: ParseSettings) -> StreamState:
        """A fresh state for parsing one streamed response."""
        ...


def nothing_to_send(provider: str) -> str:
    """Why a body whose message list came out empty cannot go to `provider`."""
    return (
        "nothing to send: every message formatted to nothing, and the "
        f"{provider} API needs at least one message"
    )


def raise_format(
    msg: MsgView, block_index: int | None, exc: type[FormatError], reason: str
) -> NoReturn:
    """Raise `exc` with the path of a message's block."""
    raise exc(msg.path(block_index), reason)


def expect(value: Any, kind: type | tuple[type, ...], path: str) -> Any:
    """`value` if it is of `kind`, else a `ParseError` naming `path`."""
    if not isinstance(value, kind):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise ParseError(path, f"expected {names}, got {type(value).__name__}")
    return value


def raise_for_error_body(provider: str, response: dict[str, Any]) -> None:
    """Raise `ProviderError` if `response` is the provider's error body.

    Covers `{"error": {"type"/"code", "message"}}` (OpenAI-style and Anthropic's
    `{"type": "error", "error": {...}}`) and `{"error": "text"}`.
    """
    error = response.get("error")
    if error is None or error == {}:
        return
    if isinstance(error, dict):
        # Gemini sends both `code: 400` and `status: "INVALID_ARGUMENT"`; the
        # status says more.
        kind = error.get("type") or error.get("status") or error.get("code") or "error"
        raise ProviderError(provider, str(kind), str(error.get("message", error)))
    raise ProviderError(provider, "error", str(error))
