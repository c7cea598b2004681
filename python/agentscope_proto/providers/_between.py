"""Between providers (provider fidelity): what one provider issued for itself
goes back to it alone, cache markers go where the API documents them, and
tool-call ids are ones the target's API takes. Each provider-fidelity variant
holds its `Target` (its name, the ids its API takes, whether it takes cache
markers); the walk hands every block through `Target.screen` before the
block's handler sees it, and `Target.warnings` reports each change after the
walk's own warnings, at the key's path in the caller's messages.

Reasoning signatures. Each block key that holds one belongs to the provider
whose API defines it (`SIGNED`: an Anthropic thinking `signature` and
`redacted_data`, a Gemini `thought_signature`, an OpenAI Responses
`encrypted_content` and `reasoning_id`), and that provider issued it, unless
the block says otherwise in `signed_by` (a provider that fills another API's
key, e.g. an OpenAI-compatible server's encrypted reasoning: the parse of that
provider writes its name there, see `sign`). A signature is also bound to
the model that issued it: the parse records the model its response names in
`signed_model`, and a request that calls another model (`RequestParams.model`)
gets the block without it, as a model switch mid-conversation needs (Gemini
documents another model's trace as one without valid signatures, and Claude
checks a thinking signature against the model). A model's dated snapshots and
its `-latest` alias are that model (`same_model`); where the block or the
request names no model, the provider alone decides. A signature reaches only
its issuer; any other target gets the block without it. The reasoning text
itself is left to the target's formatter.

Cache markers. A block's `cache_control` (its TTL included) goes as it is to
a target that takes them (Claude), and out of the block for any other.

Bookkeeping. AgentScope 2.x gives every block an `id` and its times
(`created_at`, `finished_at`), which its own formatters never send: they are
left out of every content block without a word (`BOOKKEEPING`); a tool call's
and its result's `id` is the call id, and stays.

Tool-call ids. A call id must suit the target's API (`CallIds`): Claude takes
`^[a-zA-Z0-9_-]+$`, Chat Completions at most 40 characters, Responses at most
64, and AgentScope names a Gemini call after its base64 thought signature. An
id the target would refuse (a provider that documents no rule takes
`PORTABLE_IDS`, so that no signature travels as an id either) becomes `call_`
and 32 hex digits of its SHA-256: a pure function of the id, so a call and
its result (and every request of the conversation) get the same one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .._engine.views import MsgView
from .._generated.agentscope.formatter.v1.formatter_service_pb2 import FormatWarning
from .._generated.agentscope.message.v1.message_pb2 import ContentBlock, Msg
from ..message._codec import block_to_dict

__all__ = [
    "BOOKKEEPING",
    "PORTABLE_IDS",
    "SCREENED_KEYS",
    "SIGNED",
    "SIGNED_BY",
    "SIGNED_MODEL",
    "CallIds",
    "Target",
    "issuers",
    "mapped_id",
    "response_model",
    "same_model",
    "sign",
]

Block = dict[str, Any]

# The block key that names a signature's issuer where it is not the key's owner.
SIGNED_BY = "signed_by"
# The block key that names the model that issued its signatures (as the
# response named it).
SIGNED_MODEL = "signed_model"

# By block kind, each key holding what a provider issued for itself, and
# that provider (the registry name of the API defining the key).
SIGNED: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "thinking": MappingProxyType(
            {
                "signature": "anthropic",
                "redacted_data": "anthropic",
                "thought_signature": "gemini",
                "encrypted_content": "openai_responses",
                "reasoning_id": "openai_responses",
            }
        ),
        "text": MappingProxyType({"thought_signature": "gemini"}),
        "tool_use": MappingProxyType({"thought_signature": "gemini"}),
    }
)

_NAMES = {
    "signature": "thinking signature",
    "redacted_data": "redacted thinking",
    "thought_signature": "thought signature",
    "encrypted_content": "encrypted reasoning",
    "reasoning_id": "reasoning item id",
}


def issuers(block: Mapping[str, Any]) -> dict[str, str]:
    """The signatures a block holds (non-empty), each key with its issuer."""
    keys = SIGNED.get(block.get("type"))  # type: ignore[arg-type]
    if keys is None:
        return {}
    signer = block.get(SIGNED_BY)
    return {
        key: signer if isinstance(signer, str) and signer else owner
        for key, owner in keys.items()
        if block.get(key)
    }


def sign(content: list[Block], provider: str, model: str | None = None) -> None:
    """Record who issued the signatures in a parse result's blocks (in place):
    `provider` where they sit under another API's key (a block it issued
    under its own keys needs no name), and the `model` the response named."""
    for block in content:
        found = issuers(block)
        if not found:
            continue
        if any(owner != provider for owner in found.values()) and SIGNED_BY not in block:
            block[SIGNED_BY] = provider
        if model and SIGNED_MODEL not in block:
            block[SIGNED_MODEL] = model


def response_model(response: Mapping[str, Any]) -> str | None:
    """The model a response, or a stream event, names: `model` (Gemini:
    `modelVersion`) at its top, or in the `response` (OpenAI Responses) or
    `message` (Anthropic's `message_start`) it wraps; None where none does."""
    for holder in (response, response.get("response"), response.get("message")):
        if type(holder) is dict:
            for key in ("model", "modelVersion"):
                value = holder.get(key)
                if isinstance(value, str) and value:
                    return value
    return None


# A model name's snapshot suffix: a date (`-20250929`, `-2025-08-07`, `@20250929`,
# `-250615`, `-0709`, `-09-2025`), a version number (`-002`) or `-latest`.
_SNAPSHOT = re.compile(r"(?:[-@](?:\d{8}|\d{4}-\d{2}-\d{2}|\d{2}-\d{4}|\d{3,6})|-latest)$")


def _model_name(model: str) -> str:
    name = model.strip().lower().removeprefix("models/")
    return _SNAPSHOT.sub("", name)


def same_model(issued: str, called: str) -> bool:
    """Whether a request calling `called` may take back what `issued` signed:
    the same model, any of its dated snapshots or its `-latest` alias
    (`claude-sonnet-4-5` takes `claude-sonnet-4-5-20250929`'s, Gemini's
    `models/` prefix aside), never another model or generation."""
    return issued == called or _model_name(issued) == _model_name(called)


@dataclass(frozen=True, slots=True)
class CallIds:
    """The tool-call ids a target's API takes: a `pattern` they match and a
    `max_length`, as its documentation (or its API's error) states them
    (`source`, for the warning)."""

    source: str
    pattern: str | None = None
    max_length: int | None = None
    # `pattern`, compiled once (every call id of every request is checked).
    _match: Callable[[str], object] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        match = None if self.pattern is None else re.compile(self.pattern).fullmatch
        object.__setattr__(self, "_match", match)

    def valid(self, call_id: str) -> bool:
        if self.max_length is not None and len(call_id) > self.max_length:
            return False
        return self._match is None or self._match(call_id) is not None


# Where a provider documents no rule: an id of the length and characters
# every API above takes.
PORTABLE_IDS = CallIds(
    "a provider that documents no rule gets a portable one "
    "(at most 64 letters, digits, '_', '-', '.' or ':')",
    pattern=r"[A-Za-z0-9_.:-]+",
    max_length=64,
)


def mapped_id(call_id: str) -> str:
    """The id that stands in for one a target refuses (fits every rule above)."""
    return "call_" + hashlib.sha256(call_id.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Target:
    """What a provider takes from another provider's messages: its own
    signatures (those it issued: `name`), the call ids its API takes (`ids`,
    None: any), and whether it takes cache markers (`cache_control`, with
    its TTL: Anthropic)."""

    name: str
    ids: CallIds | None
    cache_markers: bool

    @property
    def screened_kinds(self) -> frozenset[str]:
        """The block kinds `screen` checks whatever their keys (a call id)."""
        return _CALL_KINDS if self.ids is not None else frozenset()

    def screen(self, block: Block, model: str | None = None) -> Block:
        """`block` as this target may receive it in a request calling `model`:
        another provider's or model's signatures, and cache markers where it
        takes none, taken out; a call id it would refuse replaced. The block
        is never changed: a changed one is a copy. Silent: `warnings` says
        what changed (but for 2.x's bookkeeping, which is never content)."""
        kind = block.get("type")
        if kind in _KEPT_BOOKS and not block.keys().isdisjoint(BOOKKEEPING):
            block = _without_books(block)
        elif kind == "tool_result":
            output = block.get("output")
            if type(output) is list and any(
                type(item) is dict and not item.keys().isdisjoint(BOOKKEEPING) for item in output
            ):
                block = {**block, "output": [_without_books(item) for item in output]}
        if block.keys().isdisjoint(SCREENED_KEYS):
            # The common case: no signature, cache marker or issuer; at most
            # a call id to check.
            if self.ids is None or kind not in _CALL_KINDS:
                return block
            call_id = block.get("id")
            if isinstance(call_id, str) and not self.ids.valid(call_id):
                return {**block, "id": mapped_id(call_id)}
            return block
        out = [_CACHE] if not self.cache_markers and _CACHE in block else []
        if kind in SIGNED:
            out += _foreign(block, self.name, model)
            out += [key for key in _ISSUER_KEYS if key in block]
        if out:
            block = {key: value for key, value in block.items() if key not in out}
        if self.ids is not None and kind in _CALL_KINDS:
            call_id = block.get("id")
            if isinstance(call_id, str) and not self.ids.valid(call_id):
                block = {**block, "id": mapped_id(call_id)}
        return block

    def warnings(
        self,
        msgs: Sequence[Msg | Mapping[str, Any]],
        walked: Sequence[FormatWarning],
        views: Sequence[MsgView | None] = (),
        model: str | None = None,
        start: int = 0,
    ) -> list[FormatWarning]:
        """A warning for each key `screen` takes out of the blocks of
        `msgs[start:]` (in a request calling `model`) and each call id it
        replaces, at the key's path in the caller's
        messages; none for a block the walk warned about (`walked`: it
        dropped the block, and all it held). They come after the walk's own
        warnings, so that those stay AgentScope's, in order. `views` are the
        messages' views where the format built them, by position: a `Msg`'s
        blocks are read there, already dicts, rather than again from its
        fields."""
        found: list[FormatWarning] = []
        dropped: set[str] | None = None
        for index, number, block in _candidates(msgs, self.ids, views, start):
            if dropped is None:
                dropped = {warning.path for warning in walked}
            at = f"messages[{index}].content[{number}]"
            if at not in dropped:
                found += self._block_warnings(block, at, model)
        return found

    def _block_warnings(self, block: Block, at: str, model: str | None) -> list[FormatWarning]:
        kind = str(block.get("type"))
        found = []
        if not self.cache_markers and _CACHE in block:
            text = f"dropped the cache marker: {self.name} takes none (Anthropic does)"
            found.append(FormatWarning(path=f"{at}.{_CACHE}", block_type=kind, message=text))
        signed = issuers(block)
        for key in _foreign(block, self.name, model):
            issuer = signed[key]
            if issuer == self.name:
                issued = block[SIGNED_MODEL]
                text = (
                    f"dropped the {_NAMES[key]} {issued} issued: this request calls {model},"
                    " and only the model that issued a signature takes it back"
                )
            else:
                text = f"dropped the {_NAMES[key]} {issuer} issued: only {issuer} takes it back"
            found.append(FormatWarning(path=f"{at}.{key}", block_type=kind, message=text))
        call_id = block.get("id")
        ids = self.ids if kind in _CALL_KINDS else None
        if ids is not None and isinstance(call_id, str) and not ids.valid(call_id):
            text = f"replaced by {mapped_id(call_id)!r}: {ids.source}"
            found.append(FormatWarning(path=f"{at}.id", block_type=kind, message=text))
        return found


_CACHE = "cache_control"
_CALL_KINDS = frozenset({"tool_use", "tool_result"})
# AgentScope 2.x's bookkeeping of a block, and the content kinds it is left out
# of (a call's `id` is its call id; a provider's own block keeps what it holds).
BOOKKEEPING = frozenset({"id", "created_at", "finished_at"})
_KEPT_BOOKS = frozenset({"text", "thinking", "image", "audio", "video", "data", "hint"})
# What a parse recorded about the issuer: never sent.
_ISSUER_KEYS = (SIGNED_BY, SIGNED_MODEL)
# Every block key `screen` may take out: a block with none of them (and no call
# id) goes through unchanged.
SCREENED_KEYS = frozenset(
    {_CACHE, *_ISSUER_KEYS, *(key for keys in SIGNED.values() for key in keys)}
)


def _without_books(item: Any) -> Any:
    """A content block (a tool result's item too) without 2.x's bookkeeping."""
    if type(item) is not dict or item.get("type") not in _KEPT_BOOKS:
        return item
    return {key: value for key, value in item.items() if key not in BOOKKEEPING}


def _foreign(block: Mapping[str, Any], target: str, model: str | None) -> list[str]:
    """The keys of `block`'s signatures a request for `target` calling
    `model` may not take: another provider's, or all of them where another
    model issued them."""
    found = issuers(block)
    if model is not None and found:
        issued = block.get(SIGNED_MODEL)
        if isinstance(issued, str) and issued and not same_model(issued, model):
            return list(found)
    return [key for key, issuer in found.items() if issuer != target]


def _candidates(
    msgs: Sequence[Msg | Mapping[str, Any]],
    ids: CallIds | None,
    views: Sequence[MsgView | None],
    start: int = 0,
) -> Iterator[tuple[int, int, Block]]:
    """The blocks `screen` may change (a signature, a cache marker or an
    issuer among their keys, a call id `ids` refuses), each with its message's
    and its own position, as dicts; every other block is passed over without
    being converted."""
    built = len(views) == len(msgs)
    for index in range(start, len(msgs)):
        msg = msgs[index]
        content: object
        if type(msg) is Msg or isinstance(msg, Msg):
            view = views[index] if built else None
            # A view whose content is built holds the message's blocks as
            # the codec writes them (a cached view would load them first).
            if type(view) is MsgView and view.index == index:
                content = view.content
            else:
                if msg.WhichOneof("content") == "blocks":
                    yield from _typed_candidates(index, msg.blocks.items, ids)
                continue
        else:
            # `type() is` first: the ABC check of `Mapping` is slow.
            content = msg.get("content") if type(msg) is dict or isinstance(msg, Mapping) else None
        if type(content) is not list and not isinstance(content, list):
            continue
        number = 0
        for block in content:
            if type(block) is not dict and not isinstance(block, dict):
                continue
            if not block.keys().isdisjoint(SCREENED_KEYS) or (
                ids is not None and block.get("type") in _CALL_KINDS and _refused(block, ids)
            ):
                yield index, number, block
            number += 1


def _refused(block: Mapping[str, Any], ids: CallIds) -> bool:
    """Whether the id of a call or result `block` is one `ids` refuses."""
    call_id = block.get("id")
    return isinstance(call_id, str) and not ids.valid(call_id)


# The typed fields that hold a signature, by kind (`SIGNED`'s keys).
_SIGNED_FIELDS = {kind: tuple(keys) for kind, keys in SIGNED.items()}


def _typed_candidates(
    index: int, items: Iterable[ContentBlock], ids: CallIds | None
) -> Iterator[tuple[int, int, Block]]:
    """`_candidates` of a `Msg`'s typed blocks, read from their typed fields
    first: most blocks hold none of these."""
    for number, item in enumerate(items):
        which = item.WhichOneof("block")
        if which is None:
            continue
        inner = getattr(item, which)
        extra = getattr(inner, "extra_json", "")
        # A signature its typed field could not hold (not base64) is an extra key.
        if (extra and (_CACHE in extra or SIGNED_BY in extra or SIGNED_MODEL in extra)) or any(
            inner.HasField(name) or (extra and name in extra)
            for name in _SIGNED_FIELDS.get(which, ())
        ):
            yield index, number, block_to_dict(inner)
        elif which in _CALL_KINDS and ids is not None and not ids.valid(inner.id):
            # The id is all a call id check reads.
            yield index, number, {"type": which, "id": inner.id}
