"""Opt-in splitting of `<think>...</think>` spans in text into thinking blocks.

Some hosts of reasoning models (QwQ, DeepSeek-R1) put the reasoning inside the
text. AgentScope does not split it, so this is off by default.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ThinkSplitter", "split_think_blocks"]

_OPEN = "<think>"
_CLOSE = "</think>"


def _split(text: str, final: bool) -> tuple[str, str]:
    """(reasoning, remaining text) of one text; an unclosed tag runs to the end."""
    if not final:
        # Hold back a trailing piece that may become a tag with the next chunk,
        # so that no snapshot shows text that a later one takes back.
        for tag in (_OPEN, _CLOSE):
            for size in range(len(tag) - 1, 0, -1):
                if text.endswith(tag[:size]):
                    text = text[:-size]
                    break
    thoughts: list[str] = []
    outside: list[str] = []
    position = 0
    while position < len(text):
        start = text.find(_OPEN, position)
        if start < 0:
            outside.append(text[position:])
            break
        outside.append(text[position:start])
        end = text.find(_CLOSE, start + len(_OPEN))
        if end < 0:
            thoughts.append(text[start + len(_OPEN) :])
            break
        thoughts.append(text[start + len(_OPEN) : end])
        position = end + len(_CLOSE)
    reasoning = "\n".join(t.strip("\n") for t in thoughts)
    return reasoning, "".join(outside).lstrip() if thoughts else "".join(outside)


def split_think_blocks(content: list[dict[str, Any]], final: bool = True) -> list[dict[str, Any]]:
    """Content with each text block's `<think>` spans moved to a thinking block
    placed just before it."""
    out: list[dict[str, Any]] = []
    for block in content:
        if block.get("type") != "text" or _OPEN not in block.get("text", ""):
            if block.get("type") == "text" and not final:
                reasoning, text = _split(block["text"], final)
                out.append({**block, "text": text})
                continue
            out.append(block)
            continue
        reasoning, text = _split(block["text"], final)
        out.append({"type": "thinking", "thinking": reasoning})
        if text:
            out.append({**block, "text": text})
    return out


class ThinkSplitter:
    """Think-tag splitting for cumulative stream snapshots (never shrinking)."""

    def split(self, content: list[dict[str, Any]], final: bool = False) -> list[dict[str, Any]]:
        """Split one snapshot; `final` releases held-back partial tags."""
        return split_think_blocks(content, final)
