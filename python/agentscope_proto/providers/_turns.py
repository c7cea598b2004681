"""The one chat-formatter skeleton every provider shares.

AgentScope's chat formatters all walk the messages in order, dispatch each
content block on its type (warning about and skipping the kinds they do not
take), and assemble one API message per input message; tool results go out
at once, ahead of the message holding them, and promoted tool-result media
follow it as a user message of their own. A provider module declares only
what differs, as a `TurnTable`: its block handlers (one signature: `(turn,
index, block)`) and how a turn becomes its API message(s) (`finish`).

Also here: tool results as AgentScope's formatters read them, and (provider
fidelity) AgentScope 2.x's messages turned into the provider's turns
(`agent_turns`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._engine.entries import TurnRecord
from .._engine.views import MsgView
from .._engine.walk import TurnCache
from ..errors import FormatError, UnsupportedMediaError
from ..message._sniff import inline_media_type
from ._context import FormatContext

__all__ = [
    "Handler",
    "PieceView",
    "Screen",
    "Turn",
    "TurnTable",
    "agent_turns",
    "foreign_block_handler",
    "format_turns",
    "promoted_message",
    "skipped_block",
    "tool_result_handler",
    "tool_result_to_text",
]

Block = dict[str, Any]


@dataclass(slots=True)
class Turn:
    """One input message on its way through a chat formatter."""

    msg: MsgView
    ctx: FormatContext
    # The provider's message list so far (tool results are appended at once).
    out: list[Block]
    # The message's position in the list being formatted (promoted messages
    # count, as they sit in AgentScope's list).
    position: int
    # What the handlers collect; each provider uses the ones it needs.
    parts: list[Any] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    tool_calls: list[Block] = field(default_factory=list)
    trailing: list[Block] = field(default_factory=list)
    # Messages to format right after this one (promoted tool-result media).
    promoted: list[MsgView] = field(default_factory=list)


Handler = Callable[[Turn, int, Block], None]
# What a block becomes before its handler sees it, in a request calling the
# model given (provider fidelity: see `_between.Target.screen`); the block
# itself, or a changed copy.
Screen = Callable[[Block, str | None], Block]


def skipped_block(kind: object) -> str:
    """AgentScope's warning text for a block a chat formatter skips."""
    return f"Unsupported block type {kind} in the message, skipped."


def foreign_block_handler(api: str) -> Handler:
    """The provider-fidelity handler of blocks another provider returned that
    `api` cannot take back: grounding silently (the provider's reading of its
    own answer, nothing the conversation said), anything else with a warning."""

    def drop(turn: Turn, index: int, block: Block) -> None:
        kind = str(block.get("type"))
        if kind == "grounding":
            return
        origin = block.get("provider_type")
        turn.ctx.warn(turn.msg, index, kind, f"dropped a {origin} block: {api} cannot take it back")

    return drop


@dataclass(frozen=True, slots=True)
class TurnTable:
    """A provider's chat turn: the handler of each block kind it takes, how
    the turn becomes its API message(s) (`finish`), the warning text of a
    kind it skips, and what a block goes through before its handler
    (`screen`: set by `ProviderFidelity` on its variant's table)."""

    handlers: Mapping[str, Handler]
    finish: Callable[[Turn], None]
    skipped: Callable[[object], str] = skipped_block
    screen: Screen | None = None
    # What `screen` acts on, block keys and kinds: a block with none of the
    # keys, of none of the kinds, passes it by (most do; the walk runs for
    # every block).
    screened_keys: frozenset[str] = frozenset()
    screened_kinds: frozenset[str] = frozenset()


@dataclass(slots=True)
class PieceView(MsgView):
    """One of the turns `agent_turns` made of one message (`origin`), its
    `part`th of `parts`: a cache keeps the turns of all the parts as the
    message's one record."""

    origin: MsgView | None = None
    part: int = 0
    parts: int = 1


@dataclass(slots=True)
class _Parts:
    """The walk over the parts of one message so far (with a cache): where
    its output and warnings start, its position, its last block handed a
    handler (as a `content[i]` of the message), and whether it may be kept."""

    start: int
    warned: int
    position: int
    last: int | None = None
    keepable: bool = True


def format_turns(msgs: Sequence[MsgView], ctx: FormatContext, table: TurnTable) -> list[Block]:
    """Walk `msgs`: each block to its handler, then `table.finish(turn)`
    assembles the turn's API message into `turn.out`. Promoted messages are formatted right
    after the message that promoted them, the last promoted first (AgentScope
    inserts each at the same position). `msgs` itself is never changed.

    With `ctx.turns`, the walk goes on from where an earlier walk over the
    messages before `msgs` ended, and a turn the cache holds is replayed
    (`TurnCache.find`); that is exact because a turn only appends to `out`
    and never changes what earlier turns put there."""
    out: list[Block] = []
    position = 0
    turns = ctx.turns
    if turns is not None and turns.resume is not None:
        # The walk so far (a `Conversation` hands over its own run, to be
        # continued in place).
        state, turns.resume = turns.resume, None
        out, position = state.messages, state.position
        ctx.at_message, ctx.at_block = state.at_message, state.at_block
        ctx.warnings.extend(state.warnings)
    cached = turns if turns is not None and turns.caching else None
    handlers, finish, skipped = table.handlers, table.finish, table.skipped
    screen, screened_keys, screened_kinds = table.screen, table.screened_keys, table.screened_kinds
    model = ctx.model
    # A work stack, next message on top.
    pending = list(reversed(msgs))
    parts: _Parts | None = None
    while pending:
        msg = pending.pop()
        if cached is not None:
            whole, turns_of = msg, 1
            if isinstance(msg, PieceView) and not msg.part and msg.origin is not None:
                whole, turns_of = msg.origin, msg.parts
            record = cached.find(whole, position)
            if record is not None and record.turns == turns_of:
                if whole is not msg:
                    # Its other parts are next on the stack: the record made them too.
                    del pending[len(pending) - record.turns + 1 :]
                _replay(record, whole, ctx, out)
                position += record.turns
                continue
        start, warned = len(out), len(ctx.warnings)
        turn = Turn(msg, ctx, out, position)
        content = msg.content
        if isinstance(content, str):
            # A text message's one block has nothing to screen.
            blocks, screening = [{"type": "text", "text": content}], None
        else:
            blocks, screening = content, screen
        last = None
        at = msg.index
        ctx.at_paths = msg.paths
        for index, block in enumerate(blocks):
            kind = block.get("type")
            handler = handlers.get(kind) if isinstance(kind, str) else None
            if handler is None:
                ctx.warn(msg, index, str(kind), skipped(kind))
                continue
            # `ctx.at(msg, index)`, inline: this loop runs for every block.
            ctx.at_message = at
            ctx.at_block = last = index
            if screening is not None and (
                kind in screened_kinds or not screened_keys.isdisjoint(block)
            ):
                block = screening(block, model)
            handler(turn, index, block)
        finish(turn)
        if cached is not None:
            promoted = bool(turn.promoted)
            if isinstance(msg, PieceView):
                parts = _walked_part(cached, msg, parts, (start, warned, position), last, ctx)
                parts.keepable = parts.keepable and not promoted
                if msg.part == msg.parts - 1:
                    _keep_parts(cached, msg, parts, out, ctx)
            else:
                cached.keep(msg, position, out, start, ctx.warnings[warned:], last, promoted)
        pending.extend(turn.promoted)
        position += 1
    if turns is not None:
        turns.walked = position
    return out


def _replay(record: TurnRecord, msg: MsgView, ctx: FormatContext, out: list[Block]) -> None:
    """Do what the cached turn(s) of `msg` did: its messages, warnings and `ctx.at`."""
    out.extend(record.replayed())
    for block_index, block_type, text in record.warnings:
        ctx.warn(msg, block_index, block_type, text)
    if record.last_block is not None:
        # `ctx.at(msg, ...)`, inline: this runs for every cached turn.
        ctx.at_message, ctx.at_block = msg.index, record.last_block
        ctx.at_paths = msg.paths


def _walked_part(
    cached: TurnCache,
    piece: PieceView,
    parts: _Parts | None,
    began: tuple[int, int, int],
    last: int | None,
    ctx: FormatContext,
) -> _Parts:
    """The walk over `piece`'s message after `piece` (`began`: where its
    turn's output and warnings started, and its position)."""
    if not piece.part or parts is None:
        parts = _Parts(*began)
    if last is not None:
        place = piece.paths[last] if piece.paths is not None else f"content[{last}]"
        number = place[len("content[") : -1] if place.startswith("content[") else ""
        if number.isdigit():
            parts.last = int(number)
        else:
            # A block inside another (a hint's part): `ctx.at` is the part's.
            parts.keepable = False
    return parts


def _keep_parts(
    cached: TurnCache, piece: PieceView, parts: _Parts, out: list[Block], ctx: FormatContext
) -> None:
    """Keep the turns of `piece`'s message (its last part just walked) as
    its one record, when each part's turn was a function of the message."""
    origin = piece.origin
    if origin is None or not parts.keepable:
        cached.uncached += 1
        return
    warned = ctx.warnings[parts.warned :]
    cached.keep(origin, parts.position, out, parts.start, warned, parts.last, False, piece.parts)


def tool_result_to_text(
    output: str | list[dict[str, Any]] | None, ctx: FormatContext
) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    """AgentScope's `convert_tool_result_to_string`.

    Returns the textual output (items `- `-bulleted when there are several) and
    the media items as `(url_or_path, block)` pairs for promotion.
    """
    if output is None:
        return "", []
    if isinstance(output, str):
        return output, []
    texts: list[str] = []
    media: list[tuple[str, dict[str, Any]]] = []
    for index, block in enumerate(output):
        kind = block["type"]
        if kind == "text":
            texts.append(block["text"])
            continue
        if kind not in ("image", "audio", "video"):
            # AgentScope raises ValueError here; agentscope-java tool results
            # may hold any block kind.
            raise FormatError(
                f"{ctx.location}.output[{index}]".lstrip("."),
                f"Unsupported block type: {kind}, expected 'text', 'image', 'audio', or 'video'.",
            )
        source = block["source"]
        if source["type"] == "url":
            where = source["url"]
        else:
            where = ctx.save_base64(source["media_type"], source["data"])
        texts.append(f"The returned {kind} can be found at: {where}")
        media.append((where, block))
    if len(texts) == 1:
        return texts[0], media
    return "\n".join("- " + text for text in texts), media


def promoted_message(
    source: MsgView,
    tool_name: str,
    media: list[tuple[str, Block]],
    ctx: FormatContext,
    *,
    kinds: tuple[str, ...] = ("image",),
    noun: str = "image",
) -> MsgView | None:
    """AgentScope's promotion of a tool result's media (`tool_result_to_text`'s
    pairs): the items of `kinds` whose `promote_tool_result_<kind>s` option is on,
    as the user message that follows `source` (None when nothing is promoted).

    Only DashScope promotes audio and video (and says "media" in the opening line).
    """
    promoted = [
        (where, item["type"])
        for where, item in media
        if item["type"] in kinds and ctx.settings.promotes(item["type"])
    ]
    if not promoted:
        return None
    content: list[Block] = [
        {
            "type": "text",
            "text": f"<system-info>The following are the {noun} contents from the tool "
            f"result of '{tool_name}':",
        }
    ]
    for where, kind in promoted:
        content.append({"type": "text", "text": f"\n- The {kind} from '{where}': "})
        content.append({"type": kind, "source": {"type": "url", "url": where}})
    content.append({"type": "text", "text": "</system-info>"})
    return MsgView("user", "user", content, source.index)


def tool_result_handler(
    result_message: Callable[[Block, str], Block],
    *,
    kinds: tuple[str, ...] = ("image",),
    noun: str = "image",
) -> Handler:
    """The tool-result handler: the result's text goes out at once as
    `result_message(block, text)`, and its media of `kinds` whose promotion
    option is on follow the current message (see `promoted_message`)."""

    def handle(turn: Turn, index: int, block: Block) -> None:
        text, media = tool_result_to_text(block.get("output"), turn.ctx)
        turn.out.append(result_message(block, text))
        if kinds and media:
            promoted = promoted_message(
                turn.msg, block["name"], media, turn.ctx, kinds=kinds, noun=noun
            )
            if promoted is not None:
                turn.promoted.append(promoted)

    return handle


# -- AgentScope 2.x's turns, in provider fidelity ------------------------------

_MEDIA = ("image", "audio", "video")


def _media_type(block: Block) -> str:
    source = block.get("source")
    media_type = source.get("media_type") if isinstance(source, dict) else None
    return media_type if isinstance(media_type, str) else ""


def _as_media(block: Block, path: str, provider: str, documents: frozenset[str]) -> Block:
    """A `data` block of an image, audio or video as that media block (how the
    provider's formatter takes media); any other media type stays `data` if
    the provider takes it as a document, and is refused otherwise."""
    media_type = _media_type(block)
    source = block.get("source")
    if not media_type and isinstance(source, dict) and source.get("type") == "base64":
        # What every path does with inline media given without a type.
        media_type = inline_media_type("data", source.get("data", ""), f"{path}.source.media_type")
        block = {**block, "source": {**source, "media_type": media_type}}
    kind = media_type.split("/", 1)[0].strip().lower()
    if kind in _MEDIA:
        return {**block, "type": kind}
    # Parameters (`; charset=utf-8`) do not change what the document is.
    if media_type.split(";", 1)[0].strip().lower() not in documents:
        takes = ", ".join(sorted(documents)) or "no documents"
        raise UnsupportedMediaError(
            path, f"{provider} cannot take {media_type or 'untyped'} data (it takes {takes})"
        )
    return block


def _parts(items: Any, path: str, key: str, provider: str, documents: frozenset[str]) -> Any:
    """A tool result's output or a hint's blocks with their data blocks checked
    (the same list when it holds none)."""
    if not isinstance(items, list) or not any(item.get("type") == "data" for item in items):
        return items
    return [
        _as_media(item, f"{path}.{key}[{i}]", provider, documents)
        if item.get("type") == "data"
        else item
        for i, item in enumerate(items)
    ]


def agent_turns(msgs: list[MsgView], provider: str, documents: frozenset[str]) -> list[MsgView]:
    """The views as AgentScope 2.x's formatters turn its messages into the
    provider's turns (provider fidelity): an agent's message holds its tool
    calls and their results together, so the content up to the calls goes
    out first, then the results, then what follows them; a hint is a user
    turn of its own where it stands; `data` blocks are media or the
    provider's documents (else refused, naming `provider`). A view it leaves
    whole is returned as it was (its cache id kept)."""
    out: list[MsgView] = []
    for msg in msgs:
        content = msg.content
        if isinstance(content, str) or not any(
            block.get("type") in ("data", "hint", "tool_result") for block in content
        ):
            out.append(msg)
            continue
        pieces = _split(msg, content, provider, documents)
        whole = (
            len(pieces) == 1
            and len(pieces[0].content) == len(content)
            and all(mine is theirs for mine, theirs in zip(pieces[0].content, content, strict=True))
        )
        if whole:
            out.append(msg)
            continue
        out += [
            PieceView(p.name, p.role, p.content, p.index, p.paths, msg, part, len(pieces))
            for part, p in enumerate(pieces)
        ]
    return out


def _split(
    msg: MsgView, content: list[Block], provider: str, documents: frozenset[str]
) -> list[MsgView]:
    pieces: list[MsgView] = []
    run: list[Block] = []
    places: list[str] = []
    # Whether `run` is results answering calls made earlier in this message.
    answering = False
    calls: set[Any] = set()

    def flush() -> None:
        if run:
            pieces.append(MsgView(msg.name, msg.role, list(run), msg.index, paths=tuple(places)))
            run.clear()
            places.clear()

    for index, block in enumerate(content):
        kind = block.get("type")
        place = msg.paths[index] if msg.paths else f"content[{index}]"
        path = f"messages[{msg.index}].{place}"
        if kind == "hint":
            flush()
            answering = False
            pieces.extend(_hint(msg, block, place, provider, documents))
            continue
        if kind == "data":
            block = _as_media(block, path, provider, documents)
        if kind == "tool_result":
            output = _parts(block.get("output"), path, "output", provider, documents)
            if output is not block.get("output"):
                block = {**block, "output": output}
            # Results of calls this message made go out after those calls (a
            # result answering an earlier message's call keeps AgentScope's
            # place, ahead of its message).
            if not answering and block.get("id") in calls:
                flush()
                answering = True
        else:
            if answering:
                flush()
                answering = False
            if kind == "tool_use":
                calls.add(block.get("id"))
        run.append(block)
        places.append(place)
    flush()
    return pieces


def _hint(
    msg: MsgView, block: Block, place: str, provider: str, documents: frozenset[str]
) -> list[MsgView]:
    """A hint as 2.x sends it: a user turn of its text and media (none if
    empty), named after its source where it has one."""
    hint = block.get("hint")
    source = block.get("source")
    name = source if isinstance(source, str) else None
    if isinstance(hint, str):
        if not hint:
            return []
        return [MsgView(name, "user", [{"type": "text", "text": hint}], msg.index, paths=(place,))]
    path = f"messages[{msg.index}].{place}"
    kept = [
        (f"{place}.hint[{i}]", item)
        for i, item in enumerate(_parts(hint, path, "hint", provider, documents))
        if item.get("type") != "text" or item.get("text")
    ]
    if not kept:
        return []
    places, parts = zip(*kept, strict=True)
    return [MsgView(name, "user", list(parts), msg.index, paths=tuple(places))]
