"""What every provider-fidelity body pass shares (`ProviderFidelity.adapt`):
the warnings it notes, key pruning, the text note that stands in for
content a place cannot hold."""

from __future__ import annotations

from typing import Any

from .._generated.agentscope.formatter.v1.formatter_service_pb2 import FormatWarning

__all__ = [
    "TEXT_MARKS",
    "Json",
    "Notes",
    "empty",
    "note_text",
    "prune",
    "without_text_marks",
    "wrap_bare_tools",
]

Json = dict[str, Any]

# What a parse marks on a text block about how the provider produced it (the
# Responses API's `phase`; `logprobs`, the Responses API's and Chat
# Completions'; `refusal`: the text is the model's
# refusal, OpenAI's): no other provider's request has a field for them and
# they are no content, so other bodies go without them, silently (the text
# goes; OpenAI's APIs take `phase` and refusals back: openai_responses.py,
# openai.py).
TEXT_MARKS = frozenset({"phase", "logprobs", "refusal"})


class Notes:
    """The warnings of one pass."""

    def __init__(self, warnings: list[FormatWarning]) -> None:
        self.warnings = warnings

    def __call__(self, path: str, kind: str, message: str) -> None:
        self.warnings.append(FormatWarning(path=path, block_type=kind, message=message))


def note_text(kind: str, where: str) -> str:
    """The text that stands in for content a place cannot hold."""
    return f"[{kind} omitted: {where} cannot hold it]"


def prune(item: Json, allowed: frozenset[str], path: str, kind: str, note: Notes) -> Json:
    """`item` without the keys the provider does not define, each dropped key noted."""
    extra = [key for key in item if key not in allowed]
    for key in extra:
        note(f"{path}.{key}", kind, f"dropped {key!r}: the provider does not define it here")
    return {key: value for key, value in item.items() if key in allowed} if extra else item


def without_text_marks(part: Json) -> Json:
    """A text part without `TEXT_MARKS` (`part` itself when it has none)."""
    if TEXT_MARKS.isdisjoint(part):
        return part
    return {key: value for key, value in part.items() if key not in TEXT_MARKS}


def empty(block: Json) -> bool:
    """A text or thinking block with nothing in it (no text, no signature)."""
    kind = block.get("type")
    if kind == "text":
        return not block.get("text")
    if kind == "thinking":
        return not block.get("thinking") and not block.get("signature")
    return False


def wrap_bare_tools(body: Json, note: Notes) -> None:
    """OpenAI-style bodies: an unwrapped schema becomes a function tool."""
    tools = body.get("tools")
    if not isinstance(tools, list):
        return
    wrapped = []
    for index, tool in enumerate(tools):
        if isinstance(tool, dict) and "type" not in tool and "function" not in tool:
            note(f"tools[{index}]", "tool", "wrapped a bare schema as a function tool")
            tool = {"type": "function", "function": tool}
        wrapped.append(tool)
    body["tools"] = wrapped
