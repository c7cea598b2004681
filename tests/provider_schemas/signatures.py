"""A request type read off an SDK's `create` method, for SDKs whose request
TypedDict leaves out parameters `create` takes (Volcengine Ark) or that type
the body only as `create`'s keyword arguments (Zhipu's zai-sdk).

The body is what `create` posts: its keyword arguments, minus the transport
ones; a parameter without a default is required.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any

from typing_extensions import NotRequired, Required, TypedDict

# `create`'s arguments that are the HTTP call's, not the body's.
_TRANSPORT = frozenset({"self", "extra_headers", "extra_query", "extra_body", "timeout"})


def _original(create: Callable[..., Any]) -> Callable[..., Any]:
    """`create` under decorators that do not keep its signature (Ark's)."""
    while "messages" not in inspect.signature(create).parameters:
        closure = create.__closure__ or ()
        create = next(cell.cell_contents for cell in closure if callable(cell.cell_contents))
    return create


def request_type(
    name: str, create: Callable[..., Any], overrides: Mapping[str, Any] | None = None
) -> Any:
    """A closed TypedDict of `create`'s body parameters (their hints, or
    `overrides` where the SDK's hint is `object`)."""
    create = _original(create)
    hints = typing.get_type_hints(create)
    overrides = overrides or {}
    fields: dict[str, Any] = {}
    for parameter in inspect.signature(create).parameters.values():
        if parameter.name in _TRANSPORT:
            continue
        hint = overrides.get(parameter.name, hints[parameter.name])
        required = parameter.default is inspect.Parameter.empty
        fields[parameter.name] = Required[hint] if required else NotRequired[hint]
    return TypedDict(name, fields)  # type: ignore[operator]
