"""Request parameters: the model call's own settings, in one typed form.

`format(..., request=...)` takes a `RequestParams` or a dict of the same
names, checked here once; the gRPC servicer reads the `RequestParams`
message with `request_from_proto` and the clients write it with
`request_to_proto`. Each provider module says where its API takes each
parameter (its `RequestFields`), and `write_request` writes them into the
finished body, then merges `extra_body`. The placement table per provider is
docs/request-params.md.

The names keep apart from the formatter options `model` (the tokenizer's
model) and `max_tokens` (the truncation budget): the output budget here is
`max_output_tokens`, whatever the provider calls it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from . import _json
from ._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from .errors import FormatError, MessageFormatError
from .results import copy_json

__all__ = [
    "BESIDE_BODY",
    "RequestFields",
    "RequestParams",
    "request_from_proto",
    "request_to_proto",
    "write_request",
]

_INT64 = (-(2**63), 2**63 - 1)


@dataclass(frozen=True, slots=True)
class RequestParams:
    """The model call's parameters; a field left None is not written.

    `extra_body` holds the provider's own parameters (Ollama `keep_alive`,
    Gemini `{"generation_config": {"thinking_config": ...}}`, OpenAI `user`,
    ...), merged into the body last: an object merges key by key into an
    object the body has; any other key the body already has is refused,
    never replaced.
    """

    # The model to call.
    model: str | None = None
    # The most tokens to generate (OpenAI `max_completion_tokens`, Anthropic
    # `max_tokens`, Ollama `options.num_predict`, ...).
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    # Sequences that end generation (any sequence; kept as a tuple).
    stop: Sequence[str] | None = None
    seed: int | None = None
    stream: bool | None = None
    # Kept as a JSON copy (a dict); left out of the hash (a dict has none).
    extra_body: Mapping[str, Any] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        model = self.model
        if model is not None and not isinstance(model, str):
            raise FormatError("request.model", f"expected a string, got {_kind(model)}")
        if model == "":
            raise FormatError("request.model", "must be a non-empty string")
        _check_int("max_output_tokens", self.max_output_tokens, minimum=1)
        _check_int("seed", self.seed, minimum=_INT64[0])
        self._set("temperature", _number("temperature", self.temperature, 0.0, math.inf))
        self._set("top_p", _number("top_p", self.top_p, 0.0, 1.0))
        self._set("stop", _stop(self.stop))
        if self.stream is not None and not isinstance(self.stream, bool):
            raise FormatError("request.stream", f"expected a bool, got {_kind(self.stream)}")
        self._set("extra_body", _extra_body(self.extra_body))

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    @classmethod
    def of(cls, value: RequestParams | Mapping[str, Any] | None) -> RequestParams | None:
        """`value` as `RequestParams`: the typed form as it is, a dict of its
        field names checked; None stays None."""
        if value is None or isinstance(value, RequestParams):
            return value
        if not isinstance(value, Mapping):
            raise FormatError("request", f"expected a dict or RequestParams, got {_kind(value)}")
        unknown = sorted(set(value) - _NAMES)
        if unknown:
            hint = ""
            if "max_tokens" in unknown:
                hint = (
                    " (the output budget is max_output_tokens; format()'s own"
                    " max_tokens= is the truncation budget)"
                )
            raise FormatError(
                "request", f"unknown parameter(s) {unknown}; expected {sorted(_NAMES)}{hint}"
            )
        return cls(**value)

    def given(self) -> list[tuple[str, Any]]:
        """The parameters given (`extra_body` aside), as (name, value)."""
        return [
            (f.name, getattr(self, f.name))
            for f in fields(self)
            if f.name != "extra_body" and getattr(self, f.name) is not None
        ]


_NAMES = frozenset(f.name for f in fields(RequestParams))


def _kind(value: object) -> str:
    return type(value).__name__


def _check_int(name: str, value: Any, minimum: int) -> None:
    if value is None:
        return
    if type(value) is not int:
        raise FormatError(f"request.{name}", f"expected an integer, got {_kind(value)}")
    if not minimum <= value <= _INT64[1]:
        if minimum == 1:
            raise FormatError(f"request.{name}", "must be a positive 64-bit integer")
        raise FormatError(f"request.{name}", "must be a 64-bit integer")


def _number(name: str, value: Any, low: float, high: float) -> float | None:
    """`value` as a float (1 and 1.0 write the same JSON on every path)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FormatError(f"request.{name}", f"expected a number, got {_kind(value)}")
    number = float(value)
    if not math.isfinite(number):
        raise FormatError(f"request.{name}", "must be a finite number")
    if not low <= number <= high:
        bounds = f"at least {low:g}" if high == math.inf else f"between {low:g} and {high:g}"
        raise FormatError(f"request.{name}", f"must be {bounds}")
    return number


def _stop(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise FormatError("request.stop", f"expected a list of strings, got {_kind(value)}")
    if not value:
        raise FormatError("request.stop", "give at least one stop sequence, or leave stop out")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise FormatError(f"request.stop[{index}]", f"expected a string, got {_kind(item)}")
        if not item:
            raise FormatError(f"request.stop[{index}]", "must be a non-empty string")
    return tuple(value)


def _extra_body(value: Any) -> dict[str, Any] | None:
    """A checked JSON copy (the caller's dict may change later); {} is None."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise FormatError("request.extra_body", f"expected a JSON object, got {_kind(value)}")
    try:
        copy: dict[str, Any] = _json.loads(_json.dumps(dict(value)))
    except MessageFormatError as exc:
        raise FormatError("request.extra_body", f"not JSON: {exc.reason}") from None
    return copy or None


# -- the proto form ----------------------------------------------------------------------


def request_from_proto(message: pb.RequestParams) -> RequestParams:
    """The parameters a `FormatRequest.request` carries, checked as in Python."""
    extra: dict[str, Any] | None = None
    if message.extra_body_json:
        try:
            extra = _json.loads(message.extra_body_json, "request.extra_body_json")
        except MessageFormatError as exc:
            raise FormatError("request.extra_body_json", exc.reason) from None
        if type(extra) is not dict:
            raise FormatError(
                "request.extra_body_json", f"expected a JSON object, got {_kind(extra)}"
            )
    present = {f.name for f, _ in message.ListFields()}
    return RequestParams(
        model=message.model if "model" in present else None,
        max_output_tokens=(message.max_output_tokens if "max_output_tokens" in present else None),
        temperature=message.temperature if "temperature" in present else None,
        top_p=message.top_p if "top_p" in present else None,
        stop=tuple(message.stop) or None,
        seed=message.seed if "seed" in present else None,
        stream=message.stream if "stream" in present else None,
        extra_body=extra,
    )


def request_to_proto(params: RequestParams) -> pb.RequestParams:
    """`params` as the `RequestParams` message (the inverse of `request_from_proto`)."""
    message = pb.RequestParams(stop=params.stop or ())
    for name, value in params.given():
        if name != "stop":
            setattr(message, name, value)
    if params.extra_body:
        message.extra_body_json = _json.dumps(params.extra_body)
    return message


# -- where a provider takes them ----------------------------------------------------------

# One or more dotted paths in the body; None: the provider's API takes no such
# parameter (giving it is a `FormatError`); `BESIDE_BODY`: the API takes it,
# but not in the body (Gemini's model is in the URL), so nothing is written.
Place = str | tuple[str, ...] | None
BESIDE_BODY: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RequestFields:
    """Where one provider's API takes each parameter (a provider module's table)."""

    model: Place
    max_output_tokens: Place
    temperature: Place
    top_p: Place
    stop: Place
    seed: Place
    stream: Place
    # What makes the finished body the API's request body before the
    # parameters go in, in place (Gemini: AgentScope's hoisted config fields
    # into `generation_config`); None: the body is that already. Only a body
    # given a parameter changes: without one (no `request=`, or an empty
    # one) the body stays AgentScope's.
    to_request: Callable[[dict[str, Any]], None] | None = None

    def paths(self, name: str) -> tuple[str, ...] | None:
        place: Place = getattr(self, name)
        return (place,) if isinstance(place, str) else place


def write_request(
    body: dict[str, Any], params: RequestParams, where: RequestFields, provider: str
) -> None:
    """Write `params` into the finished `body` where `provider`'s API takes
    them, then merge `extra_body`. Objects the body already had are copied
    before a key goes in (the body may share them); nothing is replaced."""
    if where.to_request is not None and (params.given() or params.extra_body):
        where.to_request(body)
    for name, value in params.given():
        paths = where.paths(name)
        if paths is None:
            raise FormatError(
                f"request.{name}",
                f"the {provider} API takes no {name} in its request body: leave it out "
                "(docs/request-params.md says why)",
            )
        for path in paths:
            _put(body, path.split("."), list(value) if name == "stop" else value, name)
    if params.extra_body:
        _merge(body, params.extra_body, "request.extra_body")


def _put(body: dict[str, Any], keys: list[str], value: Any, name: str) -> None:
    *parents, last = keys
    target = body
    for key in parents:
        inner = target.get(key)
        if inner is None:
            inner = {}
        elif not isinstance(inner, dict):
            raise FormatError(f"request.{name}", f"the body's {key!r} is not an object")
        else:
            inner = dict(inner)
        target[key] = inner
        target = inner
    if last in target:
        raise FormatError(f"request.{name}", f"the body already has {'.'.join(keys)!r}")
    target[last] = value


def _merge(body: dict[str, Any], extra: Mapping[str, Any], path: str) -> None:
    for key, value in extra.items():
        at = f"{path}.{key}"
        if key not in body:
            body[key] = copy_json(value)  # the body's own
        elif isinstance(body[key], dict) and isinstance(value, dict):
            merged = dict(body[key])
            _merge(merged, value, at)
            body[key] = merged
        else:
            raise FormatError(
                at,
                f"the body already has {key!r} (written by the formatter or a "
                "parameter); extra_body adds keys and merges objects, it never "
                "replaces a value",
            )
