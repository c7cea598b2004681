"""The compiled core of `format()` (`_ccore`, C, built with the package when
a C compiler is there): a chat walk from the messages' wire bytes straight to
the provider's message dicts, for the providers that declare one
(`Provider.compiled`); beside it, JSON reading and copying, stream deltas,
and which of a saved agent context's messages changed (`model_refs`).

The Python walk stays the reference and the fallback: the core takes a call
only when every message is a `Msg` and every block one it knows exactly, and
gives the whole call back otherwise (None), never half of it. Both paths give
the same body and warnings (tests/test_core.py runs both).

`AGENTSCOPE_PROTO_CORE` chooses, read at import: `auto` (the default: the
core where it is built), `python` (never), `compiled` (the core must be
built: importing the package fails without it). `forced(mode)` does the
same for a block of code (tests, benchmarks). `counts()` says how many calls
each path took, by provider and, for the Python path, why.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from types import ModuleType
from typing import Any

from ._generated.agentscope.message.v1.message_pb2 import Msg

__all__ = [
    "ANTHROPIC",
    "DASHSCOPE",
    "DEEPSEEK",
    "GEMINI",
    "MODES",
    "OLLAMA",
    "OPENAI_CHAT",
    "OPENAI_RESPONSES",
    "CompiledWalk",
    "Walked",
    "available",
    "counts",
    "deltas",
    "forced",
    "json_copier",
    "loads",
    "mode",
    "model_refs",
    "shortuuid",
]

logger = logging.getLogger("agentscope_proto.core")

MODES = ("auto", "python", "compiled")
_VARIABLE = "AGENTSCOPE_PROTO_CORE"

# A walk's messages and its warnings as (path, block type, text).
Walked = tuple[list[dict[str, Any]], list[tuple[str, str, str]]]


def _load() -> ModuleType | None:
    try:
        return importlib.import_module(f"{__package__}._ccore")
    except ImportError as exc:
        logger.debug("compiled core not built (%s): format() runs in Python", exc)
        return None


def _mode_of(value: str, where: str) -> str:
    if value not in MODES:
        raise ValueError(f"{where}: expected one of {', '.join(MODES)}, got {value!r}")
    if value == "compiled" and _CCORE is None:
        raise ImportError(
            f"{where}=compiled, but the compiled core is not built "
            "(a C compiler at install time builds it: README, Installing the package elsewhere)"
        )
    return value


_CCORE = _load()
_mode = _mode_of(os.environ.get(_VARIABLE, "auto"), _VARIABLE)
_counts: Counter[tuple[str, str]] = Counter()


def _engaged() -> Any:
    """The extension where it is built and the mode lets it run, else None."""
    return None if _mode == "python" else _CCORE


def available() -> bool:
    """Whether the compiled core is built (importable)."""
    return _CCORE is not None


def mode() -> str:
    """The mode in force: `auto`, `python` or `compiled`."""
    return _mode


@contextlib.contextmanager
def forced(value: str) -> Iterator[None]:
    """Run the block in `value`'s mode (`python`: the reference path only)."""
    global _mode
    previous, _mode = _mode, _mode_of(value, "forced")
    try:
        yield
    finally:
        _mode = previous


def counts() -> dict[str, int]:
    """Calls per path since the process started (or `reset_counts`):
    `<provider>:compiled`, and `<provider>:python:<why>` where a provider
    with a core formatted in Python (`options`: an option the core does not
    take; `input`: a message dict; `blocks`: a block or key it does not
    know)."""
    return {f"{provider}:{path}": n for (provider, path), n in sorted(_counts.items())}


def reset_counts() -> None:
    """Start `counts` again from zero."""
    _counts.clear()


def loads(text: str | bytes) -> tuple[Any] | None:
    """`json.loads(text)` by the core's reader, as a 1-tuple, where it
    decides exactly as Python's strict reader would; None: not built, forced
    to Python, or a text Python's reader must judge (`_json.loads`)."""
    core = _engaged()
    if core is None:
        return None
    decided: tuple[Any] | None = core.loads(text)
    return decided


def json_copier() -> Callable[[Any, Callable[[Any], Any]], Any] | None:
    """The core's `copy_json(value, fallback)` (`results.copy_json`); None: not
    built or forced to Python."""
    core = _engaged()
    if core is None:
        return None
    copier: Callable[[Any, Callable[[Any], Any]], Any] = core.copy_json
    return copier


def deltas(before: Any, after: Any, make: Callable[[int, Any], Any]) -> list[Any] | None:
    """`parsing._delta` by the core (`make(index, block)` each delta); None:
    not built, forced to Python, or a snapshot Python must judge."""
    core = _engaged()
    if core is None:
        return None
    made: list[Any] | None = core.deltas(before, after, make)
    return made


# The core's `refs(obj, models)` and `unchanged(context, last, models)`
# (_ccore/refs.h): what a pydantic model's dump reads, and which of a list of
# models read the same objects still as the records at their places.
ModelRefs = tuple[
    Callable[[Any, dict[type, bool]], Any],
    Callable[[list[Any], list[Any], dict[type, bool]], tuple[list[Any], set[int]]],
]


def model_refs() -> ModelRefs | None:
    """The core's `refs` and `unchanged` (which of a saved context's messages
    changed, `agents/hosting/context.py`); None: not built or forced to
    Python (every message is dumped)."""
    core = _engaged()
    if core is None:
        return None
    return core.refs, core.unchanged


def shortuuid(random: bytes) -> str | None:
    """The message id `message.helpers.new_id` makes of 16 random bytes, by
    the core; None: not built or forced to Python."""
    core = _engaged()
    if core is None:
        return None
    made: str = core.shortuuid(random)
    return made


class CompiledWalk:
    """A provider's walks in the compiled core: the extension's functions
    `chat` (`chat(msgs, Msg)`) and `history` (its multi-agent formatter,
    `history(msgs, Msg, prompt)`), each `-> (messages, warnings) | None`.
    Called as a provider declares it (`Provider.compiled`): (provider name,
    messages, whether the call's options leave the walk plain, the history
    prompt of a multi-agent call or None for a chat) -> the walk, or None:
    format in Python (and why, counted)."""

    __slots__ = ("chat", "history")

    def __init__(self, chat: str, history: str) -> None:
        self.chat = chat
        self.history = history

    def __repr__(self) -> str:
        return f"CompiledWalk({self.chat!r}, {self.history!r})"

    def __call__(
        self, provider: str, msgs: Sequence[Any], plain: bool, prompt: str | None
    ) -> Walked | None:
        core = _engaged()
        if core is None:
            return None
        if not plain:
            _counts[provider, "python:options"] += 1
            return None
        if prompt is None:
            walked: Walked | None = getattr(core, self.chat)(msgs, Msg)
        else:
            walked = getattr(core, self.history)(msgs, Msg, prompt)
        if walked is not None:
            _counts[provider, "compiled"] += 1
        elif any(type(msg) is not Msg for msg in msgs):
            _counts[provider, "python:input"] += 1
        else:
            _counts[provider, "python:blocks"] += 1
        return walked

    def give_back(self, provider: str, why: str) -> None:
        """Count a walk the caller could not use (`why`: what the Python walk
        does with the call that the core does not) as a Python call."""
        _counts[provider, "compiled"] -= 1
        _counts[provider, f"python:{why}"] += 1


# OpenAI Chat Completions (`ChatCompletionsParity` with `_CHAT`): _ccore/openai.h.
OPENAI_CHAT = CompiledWalk("openai_chat", "openai_multi_agent")

# OpenAI Responses (`ResponsesParity` with `_CHAT`): _ccore/responses.h.
OPENAI_RESPONSES = CompiledWalk("responses_chat", "responses_multi_agent")

# DeepSeek (`DeepSeekParity`: one string of content, reasoning_content): _ccore/deepseek.h.
DEEPSEEK = CompiledWalk("deepseek_chat", "deepseek_multi_agent")

# Gemini generateContent (`GeminiParity` with `_CHAT`): _ccore/gemini.h.
GEMINI = CompiledWalk("gemini_chat", "gemini_multi_agent")

# Ollama /api/chat (`OllamaParity` with `_CHAT`, `_format_history`): _ccore/ollama.h.
OLLAMA = CompiledWalk("ollama_chat", "ollama_multi_agent")

# Anthropic Messages (`AnthropicParity`, `_CHAT`): _ccore/anthropic.h.
ANTHROPIC = CompiledWalk("anthropic_chat", "anthropic_multi_agent")
# DashScope (`DashScopeParity`): _ccore/dashscope.h.
DASHSCOPE = CompiledWalk("dashscope_chat", "dashscope_multi_agent")
