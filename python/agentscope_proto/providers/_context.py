"""The context of one `format()` call as its formatters see it: the
settings, the block being formatted, the warnings so far, the media it may
reach (`MediaAccess`) and the cache its chat walk reads (`TurnCache`).

Formatters work on views of the messages (`_engine/views.py`: AgentScope-shaped
block dicts, the `to_dict` form of each block) because AgentScope's own output
copies those dicts, extra keys and all; working on the same shape is what
makes byte-for-byte parity straightforward.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from .._engine.views import MsgView
from .._engine.walk import TurnCache
from .._generated.agentscope.formatter.v1.formatter_service_pb2 import FormatWarning
from .._log import first_time, log_safe, warning_level
from ..options import FormatSettings
from ._media import MediaAccess

__all__ = ["FormatContext"]

logger = logging.getLogger("agentscope_proto.format")


@dataclass(slots=True)
class FormatContext(MediaAccess):
    """Options and permissions of one `format()` call, and what it reports back.

    Formatters never touch the file system or the network themselves: they ask
    the context (its `MediaAccess` part), which refuses unless the caller
    allowed it.
    """

    settings: FormatSettings = field(default_factory=FormatSettings)
    warnings: list[FormatWarning] = field(default_factory=list)
    # The model the request calls (`RequestParams.model`; None: not named): a
    # reasoning signature goes back only to the model that issued it.
    model: str | None = None
    # The block being formatted, for errors raised by the media helpers
    # (`location` spells it; kept as numbers, as most calls never need it).
    at_message: int = -1
    at_block: int | None = None
    at_paths: tuple[str, ...] | None = None
    # The cache as this call's chat walk sees it (where it resumes, the turns
    # it replays and keeps); None: a walk from the start, nothing cached.
    turns: TurnCache | None = None

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
        self.warn_at("" if msg is None else msg.path(block_index), block_type, text)

    def warn_at(self, path: str, block_type: str, text: str) -> None:
        """`warn`, the place given as its path."""
        self.warnings.append(FormatWarning(path=path, block_type=block_type, message=text))
        level = warning_level()
        if logger.isEnabledFor(level) and first_time(path, text):
            logger.log(level, "%s: %s", path or "format", log_safe(text))
