"""A strict, eager walk of a JSON-like value against an SDK's type hints.

Why not pydantic's TypeAdapter on the SDK types: it validates `Iterable[...]`
fields lazily (a message list of `{"role": "bogus"}` passes), it ignores
unknown keys of TypedDicts, and under `from __future__ import annotations` the
SDKs' `__required_keys__` is empty. This walker resolves the hints itself
(`Required`/`NotRequired` and each class's own totality), checks every item of
every sequence, treats every TypedDict and pydantic model as closed (unknown
keys are violations of their own kind) unless the SDK itself declares extra
keys allowed, and reports every violation with its JSON path.

Unions pick the branch the value was meant for (the one whose `Literal`
fields, `type`/`role`, match) so a text part with one stray key reports that
key, not "matches none of 12 types".
"""

from __future__ import annotations

import base64
import binascii
import collections.abc
import enum
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import typing_extensions as tx

UNKNOWN_KEY = "unknown_key"
MISSING_KEY = "missing_key"
WRONG_TYPE = "wrong_type"
BAD_VALUE = "bad_value"
CONSTRAINT = "constraint"


@dataclass(frozen=True, slots=True)
class Violation:
    """One way a body departs from the provider's request schema."""

    path: str
    kind: str  # one of the constants above
    reason: str

    @property
    def unknown(self) -> bool:
        """Unknown keys are counted apart: many are dropped, not rejected."""
        return self.kind == UNKNOWN_KEY

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "kind": self.kind, "reason": self.reason}


# A refinement adds a documented API rule the SDK's types do not express.
Refinement = Callable[[Any, str], list[Violation]]


@dataclass(slots=True)
class Schema:
    """How one provider's SDK types are read.

    `type_overrides` swaps a type wherever it appears (a strict copy, an
    extended copy with documented extra fields, or the REST shape of an SDK
    convenience type); `field_overrides` swaps one field's hint;
    `refinements` run after a type's structural check.
    """

    type_overrides: Mapping[Any, Any] = field(default_factory=dict)
    field_overrides: Mapping[tuple[type, str], Any] = field(default_factory=dict)
    refinements: Mapping[Any, Refinement] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Key:
    name: str  # the key in the JSON body
    hint: Any
    required: bool


# typing's own Required/NotRequired exist from Python 3.11 on.
_REQUIRED = {tx.Required, getattr(typing, "Required", tx.Required)}
_NOT_REQUIRED = {tx.NotRequired, getattr(typing, "NotRequired", tx.NotRequired)}
_WRAPPERS = {*_REQUIRED, *_NOT_REQUIRED, tx.ReadOnly, getattr(typing, "ReadOnly", tx.ReadOnly)}
_UNIONS = (typing.Union, types.UnionType)
_SEQUENCES = (
    list,
    tuple,
    collections.abc.Sequence,
    collections.abc.Iterable,
    collections.abc.MutableSequence,
)
_MAPPINGS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)


def _strip(hint: Any) -> Any:
    """The hint without Annotated/Required/NotRequired/ReadOnly wrappers."""
    while True:
        origin = typing.get_origin(hint)
        if origin in (typing.Annotated, tx.Annotated) or origin in _WRAPPERS:
            hint = typing.get_args(hint)[0]
        elif isinstance(hint, tx.TypeAliasType):
            hint = hint.__value__
        else:
            return hint


def _wrapper(hint: Any) -> Any:
    """Required / NotRequired if the hint is (under Annotated) wrapped in one."""
    while True:
        origin = typing.get_origin(hint)
        if origin in (typing.Annotated, tx.Annotated):
            hint = typing.get_args(hint)[0]
        elif origin in _WRAPPERS:
            return origin
        else:
            return None


def _alias(hint: Any) -> str | None:
    """The JSON name the SDK gives a key with `Annotated[..., PropertyInfo(alias=...)]`."""
    if typing.get_origin(hint) in (typing.Annotated, tx.Annotated):
        for meta in getattr(hint, "__metadata__", ()):
            alias = getattr(meta, "alias", None)
            if isinstance(alias, str):
                return alias
        return _alias(typing.get_args(hint)[0])
    if typing.get_origin(hint) in _WRAPPERS:
        return _alias(typing.get_args(hint)[0])
    return None


def _is_model(hint: Any) -> bool:
    """A pydantic model class (the pydantic of the SDKs' venv, not imported here)."""
    return (
        isinstance(hint, type) and hasattr(hint, "model_fields") and hasattr(hint, "model_config")
    )


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


_QUALIFIER = re.compile(r"\b(?:[A-Za-z_]\w*\.)+(?=[A-Za-z_])")


def _describe(hint: Any) -> str:
    """A hint as a short type expression, without module paths."""
    hint = _strip(hint)
    if isinstance(hint, type):
        return hint.__name__
    return _QUALIFIER.sub("", str(hint))


class Walker:
    """Checks values against type hints under one provider's `Schema`."""

    def __init__(self, schema: Schema | None = None) -> None:
        self.schema = schema or Schema()
        self._keys: dict[type, dict[str, _Key]] = {}

    # -- entry point -------------------------------------------------------------

    def check(self, value: Any, hint: Any, path: str = "$") -> list[Violation]:
        """Every violation of `value` against `hint`, depth first."""
        hint = self._override(_strip(hint))
        origin = typing.get_origin(hint)
        if hint is Any or hint is object or isinstance(hint, typing.TypeVar):
            return []
        if hint is None or hint is type(None):
            return [] if value is None else [_type(path, "null", value)]
        if origin in _UNIONS:
            return self._union(value, typing.get_args(hint), path)
        if origin in (typing.Literal, tx.Literal):
            return self._literal(value, typing.get_args(hint), path)
        if typing.is_typeddict(hint) or tx.is_typeddict(hint):
            return self._refine(hint, value, path, self._typed_dict(value, hint, path))
        if _is_model(hint):
            return self._refine(hint, value, path, self._model(value, hint, path))
        if origin is not None:
            return self._generic(value, hint, origin, path)
        return self._refine(hint, value, path, self._scalar(value, hint, path))

    # -- helpers ------------------------------------------------------------------

    def _override(self, hint: Any) -> Any:
        try:
            replaced = self.schema.type_overrides.get(hint, hint)
        except TypeError:  # an unhashable hint (a Literal of lists, say)
            return hint
        return _strip(replaced)

    def _refine(self, hint: Any, value: Any, path: str, found: list[Violation]) -> list[Violation]:
        refinement = self.schema.refinements.get(hint)
        if refinement is None or not isinstance(value, dict):
            return found
        return found + refinement(value, path)

    def _generic(self, value: Any, hint: Any, origin: Any, path: str) -> list[Violation]:
        args = typing.get_args(hint)
        if origin in _MAPPINGS:
            if not isinstance(value, dict):
                return [_type(path, "object", value)]
            item_hint = args[1] if len(args) == 2 else Any
            found: list[Violation] = []
            for key, item in value.items():
                if not isinstance(key, str):
                    found.append(_type(f"{path}[{key!r}]", "string key", key))
                    continue
                found += self.check(item, item_hint, f"{path}.{key}")
            return found
        if origin in _SEQUENCES or getattr(origin, "__name__", "") == "SequenceNotStr":
            if not isinstance(value, list | tuple):
                return [_type(path, "array", value)]
            if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
                return [Violation(path, WRONG_TYPE, f"fixed-length tuple {_describe(hint)}")]
            item_hint = args[0] if args else Any
            found = []
            for index, item in enumerate(value):
                found += self.check(item, item_hint, f"{path}[{index}]")
            return found
        if origin is type:
            return [Violation(path, WRONG_TYPE, f"{_describe(hint)} has no JSON form")]
        return self._scalar(value, origin, path)

    def _scalar(self, value: Any, hint: Any, path: str) -> list[Violation]:
        if hint is str:
            return [] if isinstance(value, str) else [_type(path, "string", value)]
        if hint is bool:
            return [] if isinstance(value, bool) else [_type(path, "boolean", value)]
        if hint is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
            return [] if ok else [_type(path, "integer", value)]
        if hint is float:
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            return [] if ok else [_type(path, "number", value)]
        if hint is bytes:
            return _bytes(value, path)
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            return _enum(value, hint, path)
        if isinstance(hint, type) and isinstance(value, hint):
            return []
        # IO, PathLike, datetime...: SDK conveniences a JSON body cannot carry.
        return [Violation(path, WRONG_TYPE, f"expected {_describe(hint)}, got {_json_kind(value)}")]

    def _literal(self, value: Any, allowed: tuple[Any, ...], path: str) -> list[Violation]:
        # `True == 1` in Python, not in JSON: compare types too.
        if any(type(value) is type(option) and value == option for option in allowed):
            return []
        return [Violation(path, BAD_VALUE, f"{value!r} is not one of {list(allowed)}")]

    # -- objects ------------------------------------------------------------------

    def _typed_dict_keys(self, cls: type) -> dict[str, _Key]:
        """The JSON keys of a TypedDict, requiredness resolved from the hints."""
        cached = self._keys.get(cls)
        if cached is not None:
            return cached
        hints = typing.get_type_hints(cls, include_extras=True)
        inherited: dict[str, bool] = {}
        for base in getattr(cls, "__orig_bases__", ()):
            if typing.is_typeddict(base) or tx.is_typeddict(base):
                inherited.update({key.name: key.required for key in self._by_attr(base)})
        total = getattr(cls, "__total__", True)
        keys: dict[str, _Key] = {}
        for attr, hint in hints.items():
            hint = self.schema.field_overrides.get((cls, attr), hint)
            wrapper = _wrapper(hint)
            if wrapper in _REQUIRED:
                required = True
            elif wrapper in _NOT_REQUIRED:
                required = False
            else:
                required = inherited.get(attr, total)
            name = _alias(hint) or attr
            keys[name] = _Key(attr, hint, required)
        self._keys[cls] = keys
        return keys

    def _by_attr(self, cls: type) -> list[_Key]:
        return list(self._typed_dict_keys(cls).values())

    def _typed_dict(self, value: Any, cls: type, path: str) -> list[Violation]:
        if not isinstance(value, dict):
            return [_type(path, f"object ({cls.__name__})", value)]
        keys = self._typed_dict_keys(cls)
        config = getattr(cls, "__pydantic_config__", None) or {}
        open_ = config.get("extra") == "allow"
        return self._object(value, keys, path, cls.__name__, open_)

    def _model_keys(self, model: type) -> dict[str, _Key]:
        cached = self._keys.get(model)
        if cached is not None:
            return cached
        if not getattr(model, "__pydantic_complete__", True):
            model.model_rebuild()  # type: ignore[attr-defined]
        config = model.model_config  # type: ignore[attr-defined]
        generator = config.get("alias_generator")
        keys: dict[str, _Key] = {}
        for attr, info in model.model_fields.items():  # type: ignore[attr-defined]
            hint = self.schema.field_overrides.get((model, attr), info.annotation)
            key = _Key(attr, hint, info.is_required())
            alias = info.alias or (generator(attr) if callable(generator) else None)
            if alias is None or config.get("populate_by_name") or alias == attr:
                keys[attr] = key
            if alias is not None:
                keys[alias] = key
        self._keys[model] = keys
        return keys

    def _model(self, value: Any, model: type, path: str) -> list[Violation]:
        if not isinstance(value, dict):
            return [_type(path, f"object ({model.__name__})", value)]
        # Closed whatever the model's own `extra`: the SDKs' response models
        # (which their request types also accept) allow extra keys for
        # forward-compatible parsing, and would send them on to the API.
        return self._object(value, self._model_keys(model), path, model.__name__, False)

    def _object(
        self, value: dict[str, Any], keys: dict[str, _Key], path: str, name: str, open_: bool
    ) -> list[Violation]:
        found: list[Violation] = []
        present = {keys[key].name for key in value if key in keys}
        for key in keys.values():
            if key.required and key.name not in present:
                json_name = next(k for k, v in keys.items() if v is key)
                found.append(Violation(f"{path}.{json_name}", MISSING_KEY, f"{name} requires it"))
                present.add(key.name)
        for json_name, item in value.items():
            known = keys.get(json_name)
            if known is None:
                if not open_:
                    found.append(Violation(f"{path}.{json_name}", UNKNOWN_KEY, f"not in {name}"))
                continue
            found += self.check(item, known.hint, f"{path}.{json_name}")
        return found

    # -- unions -------------------------------------------------------------------

    def _shape(self, hint: Any) -> Any:
        """The branch type behind overrides and aliases."""
        return self._override(_strip(hint))

    def _literal_keys(self, hint: Any) -> dict[str, tuple[Any, ...]]:
        """A dict-like branch's Literal-typed keys: its discriminators."""
        if typing.is_typeddict(hint) or tx.is_typeddict(hint):
            keys = self._typed_dict_keys(hint)
        elif _is_model(hint):
            keys = self._model_keys(hint)
        else:
            return {}
        found = {}
        for name, key in keys.items():
            stripped = self._shape(key.hint)
            if typing.get_origin(stripped) in (typing.Literal, tx.Literal):
                found[name] = typing.get_args(stripped)
        return found

    def _accepts_kind(self, value: Any, hint: Any) -> bool:
        """Whether a branch could take a value of this JSON kind at all."""
        hint = self._shape(hint)
        origin = typing.get_origin(hint)
        if hint is Any or hint is object or isinstance(hint, typing.TypeVar):
            return True
        if origin in _UNIONS:
            return any(self._accepts_kind(value, arg) for arg in typing.get_args(hint))
        if origin in (typing.Literal, tx.Literal):
            return any(type(value) is type(option) for option in typing.get_args(hint))
        if typing.is_typeddict(hint) or tx.is_typeddict(hint) or _is_model(hint):
            return isinstance(value, dict)
        if origin in _MAPPINGS:
            return isinstance(value, dict)
        if origin in _SEQUENCES or getattr(origin, "__name__", "") == "SequenceNotStr":
            return isinstance(value, list | tuple)
        if hint is bytes:
            return isinstance(value, bytes | str)  # base64 text is checked by _bytes
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            return isinstance(value, str | int) and not isinstance(value, bool)
        return not self._scalar(value, hint, "$")

    def _union(self, value: Any, branches: tuple[Any, ...], path: str) -> list[Violation]:
        candidates = [branch for branch in branches if self._accepts_kind(value, branch)]
        if not candidates:
            names = " | ".join(_describe(branch) for branch in branches)
            return [Violation(path, WRONG_TYPE, f"expected {names}, got {_json_kind(value)}")]
        ranked: list[tuple[int, int, int, int, list[Violation]]] = []
        mismatched: list[dict[str, tuple[Any, ...]]] = []
        for order, branch in enumerate(candidates):
            literals = self._literal_keys(self._shape(branch)) if isinstance(value, dict) else {}
            misses = {
                key: allowed
                for key, allowed in literals.items()
                if key in value and self._literal(value[key], allowed, "$")
            }
            hits = sum(1 for key in literals if key in value and key not in misses)
            if misses:
                mismatched.append(misses)
            found = self.check(value, branch, path)
            if not found:
                return []
            ranked.append((len(misses), -hits, len(found), order, found))
        if len(mismatched) == len(candidates):
            # No branch takes this `type`/`role`: say so once, with the choices.
            common = set.intersection(*(set(misses) for misses in mismatched))
            for key in sorted(common):
                allowed = sorted({str(option) for misses in mismatched for option in misses[key]})
                reason = f"{value[key]!r} is not one of {allowed}"
                return [Violation(f"{path}.{key}", BAD_VALUE, reason)]
        return min(ranked, key=lambda entry: entry[:4])[4]


def _type(path: str, expected: str, value: Any) -> Violation:
    return Violation(path, WRONG_TYPE, f"expected {expected}, got {_json_kind(value)}")


def _bytes(value: Any, path: str) -> list[Violation]:
    """Bytes as Python passes them or as base64 text in a JSON body."""
    if isinstance(value, bytes):
        return []
    if isinstance(value, str):
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            try:
                base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
            except (binascii.Error, ValueError):
                return [Violation(path, BAD_VALUE, "not base64")]
        return []
    return [_type(path, "bytes (base64)", value)]


def _enum(value: Any, hint: type[enum.Enum], path: str) -> list[Violation]:
    """A member's value. Not `hint(value)`: google-genai's enums turn unknown
    values into new members (forward compatibility) where the API rejects them;
    they do match case-insensitively, as the API does."""
    allowed = [member.value for member in hint]
    if any(type(value) is type(option) and value == option for option in allowed):
        return []
    folds = any(base.__name__ == "CaseInSensitiveEnum" for base in hint.__mro__)
    if folds and isinstance(value, str) and value.lower() in {str(o).lower() for o in allowed}:
        return []
    return [Violation(path, BAD_VALUE, f"{value!r} is not one of {allowed}")]
