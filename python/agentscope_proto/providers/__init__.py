"""The provider registry: one module per provider, each holding both directions.

A provider module defines one object satisfying `Provider` (see `_base.py`):
`format_messages`/`build_body` for requests, `parse`/`stream` for responses.
Adding a provider takes one module and one line below.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ..errors import UnknownProviderError
from . import anthropic, dashscope, deepseek, gemini, ollama, openai, openai_responses
from ._base import Provider

__all__ = ["PROVIDERS", "Provider", "get_provider"]

PROVIDERS: Mapping[str, Provider] = MappingProxyType(
    {
        p.name: p
        for p in (
            openai.PROVIDER,
            anthropic.PROVIDER,
            gemini.PROVIDER,
            dashscope.PROVIDER,
            ollama.PROVIDER,
            deepseek.PROVIDER,
            openai_responses.PROVIDER,
        )
    }
)


def get_provider(name: str) -> Provider:
    """The provider registered as `name` (an `UnknownProviderError` lists the known ones)."""
    try:
        return PROVIDERS[name]
    except (KeyError, TypeError):
        raise UnknownProviderError(name, sorted(PROVIDERS)) from None
