"""What a formatter is handed: each input message as a view (`MsgView`), and
the context of the `format()` call (`FormatContext`): its settings, the
block being formatted, the warnings so far and the media it may reach.

Formatters work on AgentScope-shaped block dicts (the `to_dict` form of each
block) because AgentScope's own output copies those dicts, extra keys and all;
working on the same shape is what makes byte-for-byte parity straightforward.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .._generated.agentscope.formatter.v1.formatter_service_pb2 import FormatWarning
from .._log import log_safe, warning_level
from ..cache import FormatCache
from ..options import FormatSettings
from ._media import MediaAccess

__all__ = ["FormatContext", "MsgView"]

logger = logging.getLogger("agentscope_proto.format")


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
class FormatContext(MediaAccess):
    """Options and permissions of one `format()` call, and what it reports back.

    Formatters never touch the file system or the network themselves: they ask
    the context (its `MediaAccess` part), which refuses unless the caller
    allowed it.
    """

    settings: FormatSettings = field(default_factory=FormatSettings)
    warnings: list[FormatWarning] = field(default_factory=list)
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
        level = warning_level()
        if logger.isEnabledFor(level):
            logger.log(level, "%s: %s", path or "format", log_safe(text))
