"""A 2.x agent's state as a save stores it: its context's messages as `Msg`
bytes (the 2.x dialect, exact), each converted again only when it changed
since the session's last save, and the rest as 2.x dumps it.

Which messages changed is told, where the compiled core is built, without
dumping them: `_ccore`'s `refs` lists the objects a message's dump reads
(types, fields, leaves), and `unchanged` checks each message against the
list the last save kept of the message at its place, by identity: the same
objects, held by the list so none was freed and replaced, give the same
dump. By place, not by id: a context grows at its end, and a lookup by id
reads memory (the id, its hash, a table) that is cold under load; a message
that moved is found by its id once one did. That holds for models
whose dump is a function of their fields, which `_walked` admits class by
class (no serializer or computed field of their own: 2.x's `URLSource` has
one, so a message with a URL source is dumped each time); a message the
walk cannot judge is dumped. Only the changed and new messages are dumped
then (one `model_dump` of the state including those); a dump the same JSON
as the last one's is not converted again. Without the core every message is
dumped at every save, as the reference does (`forced("python")`); both ways
give the same bytes (tests/agentscope2/test_context.py). A reply's own
message, new to the save after it, was converted already for the reply's
caller (`Saver.reply_msg`): the save takes those bytes when it dumps the
message to the same JSON.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, NamedTuple

import orjson

from ... import _core
from ..._generated.agentscope.message.v1.message_pb2 import Msg
from ...dialects import from_dict

__all__ = ["Saver"]

# Leaves `refs` takes as they are (besides str, int, float, bool, bytes, None).
_LEAF_VALUES = (str, int, float, bool, type(None))
# How many replies' messages a `Saver` keeps for the saves that follow them
# (each is taken by its session's save as the reply's turn ends; the oldest
# go first where no save comes: sessions kept in memory alone).
_REPLIED = 256


class _Seen(NamedTuple):
    """A context message as the last save converted it (the core's
    `unchanged` reads `msg` and `refs` by their places)."""

    fingerprint: bytes | None  # its dump's JSON (orjson's); None: never reused
    msg: bytes  # the `Msg` bytes converted from the dump
    refs: tuple[Any, ...] | None  # what its dump read (`_ccore.refs`); None: not walked
    id: str | None  # its id, to find it where it moved


class _Last:
    """The last save's records, a message each in the context's order: the
    one at a message's place if it has the message's id, else (once a
    message moved) the one with its id."""

    __slots__ = ("_by_id", "_moved", "records")

    def __init__(self, records: list[_Seen], moved: bool) -> None:
        self.records = records
        self._moved = moved
        self._by_id: dict[str, _Seen] | None = None

    def of(self, index: int, key: Any) -> _Seen | None:
        if index < len(self.records) and self.records[index].id == key:
            return self.records[index]
        if not self._moved or not isinstance(key, str):
            return None
        if self._by_id is None:
            self._by_id = {seen.id: seen for seen in self.records if seen.id is not None}
        return self._by_id.get(key)


class Saver:
    """Converts 2.x agents' states for saving; one per hosting: it learns
    which model classes the core may walk through."""

    def __init__(self) -> None:
        # Types the walk meets: True a model walked through its fields, False
        # a leaf (an Enum's member); `_opaque`: neither (its message is dumped).
        self._models: dict[type, bool] = {}
        self._opaque: set[type] = set()
        # State classes judged by `_plain_state` (pydantic's `model_fields`
        # is a descriptor call: a dict probe is cheaper at every save).
        self._plain: dict[type, bool] = {}
        # Replies' messages as `reply_msg` converted them: id -> (dump, bytes).
        self._replied: dict[str, tuple[dict[str, Any], bytes]] = {}

    def reply_msg(self, msg: Any) -> Msg:
        """A reply's message as a `Msg` (what `interop.from_agentscope`
        gives), kept for the save that follows: it takes the bytes instead
        of converting the message again if its dump is still the same."""
        dump = msg.model_dump(mode="json")
        converted = from_dict(dump, dialect="agentscope2")
        key = dump.get("id")
        if isinstance(key, str):
            self._replied[key] = (dump, converted.SerializeToString())
            if len(self._replied) > _REPLIED:
                del self._replied[next(iter(self._replied))]
        return converted

    def save(self, state: Any, known: list[Any]) -> tuple[dict[str, Any], list[bytes]]:
        """`state`'s dump without its context, and its context's messages'
        bytes; `known` holds what the last save of the session converted, a
        record a message in the context's order, and is left holding this
        save's."""
        walk = _core.model_refs()
        context = getattr(state, "context", None)
        if walk is None or type(context) is not list or not self._plain_state(type(state)):
            dump: dict[str, Any] = state.model_dump(mode="json")
            last = _Last(known, moved=True)
            known[:] = [
                self._converted(msg, None, last.of(index, msg.get("id")))
                for index, msg in enumerate(dump.pop("context", []))
            ]
            return dump, [seen.msg for seen in known]
        refs, unchanged = walk
        # The last save's bytes of each message its walk finds the same as
        # the one at its place then (else None), and their indexes.
        out, kept = unchanged(context, known, self._models)
        # One dump: the rest, and the messages that changed (or are new).
        rest: dict[str, Any] = state.model_dump(
            mode="json", exclude={"context": kept} if len(kept) < len(out) else {"context"}
        )
        dumps = iter(rest.pop("context", ()))
        records: list[_Seen] = known[: len(out)]
        last = _Last(known, moved=len(kept) < len(records))
        for index, msg in enumerate(out):
            if msg is None:
                dumped = next(dumps)
                seen = self._converted(
                    dumped, self._refs(context[index], refs), last.of(index, dumped.get("id"))
                )
                if index < len(records):
                    records[index] = seen
                else:
                    records.append(seen)
                out[index] = seen.msg
        known[:] = records
        return rest, out

    def _converted(
        self, dumped: dict[str, Any], refs: tuple[Any, ...] | None, last: _Seen | None
    ) -> _Seen:
        """A context message's record: the last save's bytes if it dumps the
        same, or its reply's (`reply_msg`), else converted. The same is the
        same JSON (orjson's): `==` on the dumps would take an integer made
        the equal float (or a bool the equal integer) for no change; a dump
        orjson cannot write (an integer past 64 bits) is converted at every
        save."""
        key = dumped.get("id")
        key = key if isinstance(key, str) else None
        text = _fingerprint(dumped)
        made = self._replied.pop(key, None) if key is not None else None
        if last is not None and text is not None and last.fingerprint == text:
            msg: bytes = last.msg
        elif made is not None and text is not None and _fingerprint(made[0]) == text:
            msg = made[1]
        else:
            msg = from_dict(dumped, dialect="agentscope2").SerializeToString()
        return _Seen(text, msg, refs if text is not None else None, key)

    def _plain_state(self, kind: type) -> bool:
        """Whether a dump of `kind` including or excluding its `context` gives
        what its whole dump does there (a plain model with that field)."""
        plain = self._plain.get(kind)
        if plain is None:
            if kind not in self._models and kind not in self._opaque:
                self._admit(kind)
            fields = getattr(kind, "model_fields", {})
            plain = self._plain[kind] = self._models.get(kind) is True and "context" in fields
        return plain

    def _refs(self, msg: Any, refs: Any) -> tuple[Any, ...] | None:
        """What `msg`'s dump reads (None: the walk cannot tell), admitting
        each type the walk meets for the first time."""
        while True:
            found = refs(msg, self._models)
            if not isinstance(found, type):
                return found  # type: ignore[no-any-return]
            if found in self._opaque or found in self._models or not self._admit(found):
                return None  # (a type admitted already: the core gave up on it)

    def _admit(self, kind: type) -> bool:
        """Whether the walk may go through (or take as a leaf) a `kind` it met."""
        if issubclass(kind, enum.Enum):
            walked = all(type(member.value) in _LEAF_VALUES for member in kind)
            return self._decided(kind, False if walked else None)
        return self._decided(kind, True if self._walked(kind) else None)

    def _decided(self, kind: type, how: bool | None) -> bool:
        if how is None:
            self._opaque.add(kind)
            return False
        self._models[kind] = how
        return True

    @staticmethod
    def _walked(kind: type) -> bool:
        """Whether a pydantic model's dump is a function of its fields, and
        takes `include` and `exclude` as asked: no serializer, computed field
        or root of its own (nested models are judged apart)."""
        schema = getattr(kind, "__pydantic_core_schema__", None)
        decorators = getattr(kind, "__pydantic_decorators__", None)
        if not isinstance(schema, Mapping) or decorators is None:
            return False
        if decorators.field_serializers or decorators.model_serializers:
            return False
        if decorators.computed_fields or getattr(kind, "__pydantic_root_model__", False):
            return False
        return not _serializes_itself(schema, kind)


def _serializes_itself(schema: Mapping[str, Any], kind: type) -> bool:
    """Whether `kind`'s core schema has a serializer function or a computed
    field outside the models nested in it (each judged when met)."""
    definitions = {
        item["ref"]: item
        for item in schema.get("definitions", ())
        if isinstance(item, Mapping) and "ref" in item
    }
    seen: set[Any] = set()
    top = schema.get("schema", schema) if schema.get("type") == "definitions" else schema
    todo: list[Any] = [top]
    while todo:
        node = todo.pop()
        if isinstance(node, list | tuple):
            todo.extend(node)
            continue
        if not isinstance(node, Mapping):
            continue
        if node.get("type") == "model" and node.get("cls") is not kind:
            continue  # a nested model: the walk admits it or not when it meets it
        if node.get("type") == "definition-ref":
            ref = node.get("schema_ref")
            if ref in definitions and ref not in seen:
                seen.add(ref)
                todo.append(definitions[ref])
            continue
        serialization = node.get("serialization")
        if isinstance(serialization, Mapping) and str(serialization.get("type")).startswith(
            "function"
        ):
            return True
        if node.get("computed_fields") or node.get("root_model"):
            return True
        todo.extend(value for key, value in node.items() if key != "serialization")
    return False


def _fingerprint(dumped: dict[str, Any]) -> bytes | None:
    try:
        return orjson.dumps(dumped)
    except (TypeError, orjson.JSONEncodeError):
        return None
