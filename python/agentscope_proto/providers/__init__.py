"""The provider registry: one module per provider API, each holding both
directions and both fidelities.

The registry is the proto enum `agentscope.formatter.v1.Provider`: each value
but `PROVIDER_UNSPECIFIED` is a provider, named after it (`PROVIDER_OPENAI` is
"openai"), whose module `providers/<name>.py` defines `PROVIDER`, its
`Provider` record (see `_provider.py`): what it takes and its variants, one
per fidelity. Adding a provider takes its enum value, its module and its
rows in the provider contract (`tests/providers/test_contract.py`); nothing
here changes.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType

from .._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from ..errors import FormatError, UnknownProviderError
from ._provider import Provider, provider_name

__all__ = [
    "PROVIDERS",
    "PROVIDERS_BY_ENUM",
    "Provider",
    "get_provider",
    "provider_enum",
    "provider_for",
]


def _registered() -> tuple[Provider, ...]:
    """The provider of each enum value, in the enum's order."""
    found = []
    for value in pb.Provider.values():
        if value == pb.PROVIDER_UNSPECIFIED:
            continue
        name = provider_name(value)
        provider = getattr(importlib.import_module(f"{__name__}.{name}"), "PROVIDER", None)
        if not isinstance(provider, Provider) or provider.enum != value:
            raise ImportError(f"providers/{name}.py must define PROVIDER, the Provider of {name}")
        found.append(provider)
    return tuple(found)


_ALL = _registered()

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
