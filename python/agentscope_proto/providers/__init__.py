"""The provider registry: one module per provider, each holding both directions.

A provider module defines one object satisfying `Provider` (see `_provider.py`):
its registry `name`, its `agentscope.formatter.v1.Provider` enum value `enum`,
`format_messages`/`build_body` for requests, `parse`/`stream` for responses.
Adding a provider takes one module, one enum value and one line below; a test
checks that the proto enum and this table match exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from .._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from ..errors import FormatError, UnknownProviderError
from . import anthropic, dashscope, deepseek, gemini, ollama, openai, openai_responses
from ._provider import Provider

__all__ = [
    "PROVIDERS",
    "PROVIDERS_BY_ENUM",
    "Provider",
    "get_provider",
    "provider_enum",
    "provider_for",
]

_ALL: tuple[Provider, ...] = (
    openai.PROVIDER,
    anthropic.PROVIDER,
    gemini.PROVIDER,
    dashscope.PROVIDER,
    ollama.PROVIDER,
    deepseek.PROVIDER,
    openai_responses.PROVIDER,
)

# Both directions, explicitly: name -> provider and enum value -> provider.
PROVIDERS: Mapping[str, Provider] = MappingProxyType({p.name: p for p in _ALL})
PROVIDERS_BY_ENUM: Mapping[int, Provider] = MappingProxyType({int(p.enum): p for p in _ALL})


def get_provider(name: str) -> Provider:
    """The provider registered as `name` (an `UnknownProviderError` lists the known ones)."""
    try:
        return PROVIDERS[name]
    except (KeyError, TypeError):
        raise UnknownProviderError(name, sorted(PROVIDERS)) from None


def provider_for(value: int) -> Provider:
    """The provider of a `Provider` enum value (a `FormatError` on `provider`
    for `PROVIDER_UNSPECIFIED` or a value this build does not know)."""
    try:
        return PROVIDERS_BY_ENUM[value]
    except (KeyError, TypeError):
        raise FormatError("provider", f"required; got {value}") from None


def provider_enum(name: str) -> pb.Provider.ValueType:
    """The `Provider` enum value of a registered provider name."""
    return get_provider(name).enum
