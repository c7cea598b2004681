"""URLs as AgentScope 2.x holds them (pydantic's `AnyUrl`). Interim: the helper's module replaces this."""

from __future__ import annotations

import re

__all__ = ["normalize_url"]

_SIMPLE = re.compile(r"^(https?|file)://[a-z0-9.-]*(:[0-9]+)?/[A-Za-z0-9._~/%!$&'()*+,;=:@?#-]*$")


def normalize_url(text: str) -> str:
    if _SIMPLE.match(text):
        return text
    raise ValueError(f"not a URL in the form AgentScope 2.x writes: {text!r}")
