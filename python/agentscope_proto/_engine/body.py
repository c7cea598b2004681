"""A formatted body as the JSON that goes on the wire.

A chat turn the server's cache (or a `Conversation`) replays carries its
JSON (`EncodedMessage`), and a walk that goes on from an earlier one starts
from the JSON of the messages it made so far (`JsonRun`): `body_to_json`
splices those in instead of encoding the messages again.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import orjson

from .. import _json

__all__ = ["EncodedMessage", "JsonRun", "body_to_json", "encoded_turn", "without_first"]


class EncodedMessage(dict[str, Any]):
    """A provider message of a cached chat turn together with its JSON text.

    The server's body encoder (`body_to_json`) writes `json` for it as it is
    instead of encoding the dict again: a turn replayed from the cache costs a
    lookup, not its formatting nor its encoding. It is shared between
    requests, so it must never change; `format()` only makes these for the
    server's wire-keyed messages (`views.wire_views`), whose bodies are
    encoded and dropped.
    """

    __slots__ = ("json",)

    def __init__(self, message: dict[str, Any], json: bytes) -> None:
        super().__init__(message)
        self.json = json


class JsonRun(list[Any]):
    """A provider message list whose first `known` items are `EncodedMessage`s
    whose JSON, joined, is `json[start:]` (`json` begins with `[`; no closing
    bracket): what a resumed chat walk starts from, so that the body's list is
    written by appending to it instead of joining every item again. `json`
    may be a `bytearray` its owner appends to (a `Conversation`'s), never
    changed in what `start` and the items cover."""

    __slots__ = ("json", "known", "start")

    def __init__(self, items: tuple[Any, ...], json: bytes | bytearray, start: int = 1) -> None:
        super().__init__(items)
        self.known = len(items)
        self.json = json
        self.start = start

    def known_json(self) -> memoryview:
        """The joined JSON of the `known` items, without copying it."""
        return memoryview(self.json)[self.start :]


def without_first(messages: list[Any]) -> list[Any]:
    """`messages[1:]`, a `JsonRun` still one (its JSON starting after the first
    message's): Anthropic takes its system prompt out of the list."""
    if type(messages) is not JsonRun or not messages.known:
        return messages[1:]
    known = messages.known
    # Past the first message's JSON and the comma after it (if another follows).
    start = messages.start + len(messages[0].json) + (known > 1)
    rest = JsonRun(tuple(messages[1:known]), messages.json, start)
    rest.extend(messages[known:])
    return rest


def encoded_turn(messages: list[dict[str, Any]]) -> tuple[EncodedMessage, ...] | None:
    """`messages` with their JSON text, as `body_to_json` writes them (bytes
    as base64), or None when orjson cannot write one even with its wide
    integers spelled out (the turn is then not cached: the body takes the
    slow, checked path)."""
    try:
        return tuple(EncodedMessage(m, orjson.dumps(m, default=_base64)) for m in messages)
    except orjson.JSONEncodeError:
        pass
    try:
        return tuple(EncodedMessage(m, _wide_dumps(m)) for m in messages)
    except orjson.JSONEncodeError:
        return None


def _wide_dumps(value: Any) -> bytes:
    """orjson's text of `value` that it refused for an integer wider than 64
    bits (a tool input or a block's extra key may hold one; JSON allows it):
    the same text, with such an integer as Python writes it."""
    return orjson.dumps(_wide_ints(value), default=_base64)


def _wide_ints(value: Any) -> Any:
    """`value` with every integer orjson cannot write as a fragment of its
    digits (a copy of the dicts and lists holding one)."""
    if isinstance(value, dict):
        return {key: _wide_ints(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_wide_ints(item) for item in value]
    if isinstance(value, int) and not -(2**63) <= value < 2**64:
        return orjson.Fragment(int.__repr__(value))
    return value


def body_to_json(body: Mapping[str, Any]) -> bytes:
    """A formatted body as UTF-8 JSON; `bytes` values become base64 text
    (Gemini's `thought_signature`, as its REST API expects).

    The server's hot path: orjson writes the same compact UTF-8 text as `json`
    (in a tenth of the time). Integers beyond 64 bits, which orjson refuses,
    are written as Python writes them, within orjson's text (so that a
    message's JSON is the same alone as in any body: a `Conversation` and the
    server's cache splice it). What orjson refuses besides (non-string keys,
    lone surrogates, nesting past 255 levels) goes through `_json.dumps`,
    which accepts or reports it as before. orjson writes NaN and
    infinities as `null` where `_json` refuses them; no body the server makes
    holds one, because every JSON field of a request is decoded strictly.
    """
    replaced, runs = _with_fragments(body)
    try:
        try:
            rest = orjson.dumps(replaced, default=_base64)
        except orjson.JSONEncodeError:
            rest = _wide_dumps(replaced)
        if not runs:
            return rest
        # The runs' JSON is spliced in where their markers were written:
        # copied once, into the result.
        pieces: list[Any] = []
        for run in runs:
            before, rest = rest.split(_RUN_MARKER, 1)
            pieces += (before, *run)
        pieces.append(rest)
        return b"".join(pieces)
    except orjson.JSONEncodeError:
        return _json.dumps(_jsonable(body), "body").encode("utf-8")
    finally:
        # A view keeps a growing buffer (a `Conversation`'s) from growing.
        for run in runs:
            run[1].release()


# Where a run of encoded messages goes, in the JSON orjson writes around it: a
# string holding a raw NUL, which orjson always escapes, so it can only be this.
_RUN_MARKER = b'"\x00run"'


def _with_fragments(body: Mapping[str, Any]) -> tuple[Mapping[str, Any], list[list[Any]]]:
    """`body` with its message list written from the JSON of the turns the
    server's cache (or a `Conversation`) replayed (`EncodedMessage`s, at the
    top level where every provider puts its messages), and the pieces of each
    such list's JSON, in order: one join instead of encoding them again.
    Elsewhere an `EncodedMessage` is still a dict with the same content."""
    replaced: dict[str, Any] | None = None
    runs: list[list[Any]] = []
    for key, value in body.items():
        kind = type(value)
        if kind is JsonRun:
            start, head = value.known, value.known_json()
        elif kind is list and value and type(value[0]) is EncodedMessage:
            start, head = 0, memoryview(b"")
        else:
            continue
        if replaced is None:
            replaced = dict(body)
        try:
            # Only an EncodedMessage has `json`; the common case is all of them.
            rest = b",".join([item.json for item in value[start:]])
        except AttributeError:
            replaced[key] = [
                orjson.Fragment(item.json) if type(item) is EncodedMessage else item
                for item in value
            ]
            continue
        separator = b"," if rest and head else b""
        runs.append([b"[", head, separator, rest, b"]"])
        replaced[key] = orjson.Fragment(_RUN_MARKER)
    return (body, runs) if replaced is None else (replaced, runs)


def _base64(value: Any) -> str:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_jsonable(item) for item in value]
    return value
