"""`Conversation`: an agent's history, formatted incrementally.

An agent re-sends its whole history on every model call, and `format()` reads
every message again each time. A `Conversation` owns its messages (copies,
which nothing outside can change) and formats each of them once: a chat walk
goes on from where the previous call left it, and the body's message list is
written by appending the new messages' JSON to what was written before
(`format_json`), as the server's format cache does with the requests it sees.

Every result equals `format()` of the same messages with the same options:
the same body, warnings, token count or error. Where that cannot be had
incrementally (multi-agent histories, named turns, truncation, prompt cache
breakpoints, media read from files or the network), every call formats the
whole history, with `cache` if one was given. In provider fidelity the walk
goes on incrementally too, and the provider's pass over the body
(`Variant.pass_body`: a function of the body alone) runs over a copy of it on
every call: a walk over dicts, much cheaper than formatting every message.
Either way each warning is logged once, when the message it names is first
formatted, not on every call.
"""

from __future__ import annotations

import marshal
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

from ._engine.body import EncodedMessage, JsonRun, encoded_turn
from ._engine.entries import WalkState, reads_media
from ._engine.views import MsgView, build_view, message_from_input, message_metadata
from ._engine.walk import TurnCache
from ._generated.agentscope.formatter.v1.formatter_service_pb2 import FormatWarning
from ._generated.agentscope.message.v1.message_pb2 import Msg
from ._log import log_every, log_once
from .cache import FormatCache
from .errors import FormatError
from .formatting import (
    FormattedBody,
    body_to_json,
    check_history_prompt,
    check_tools,
    counter_for,
    format,
    resolve_settings,
)
from .options import FormatSettings
from .providers import get_provider
from .providers._context import FormatContext
from .providers._provider import ProviderFidelity
from .providers._runs import PassedRuns, body_in_runs
from .request import RequestParams, write_request
from .results import copy_json

__all__ = ["Conversation", "FormattedJson"]


class FormattedJson:
    """A request body as the UTF-8 JSON to send, with what travels beside it.

    `warnings` are made (copies of the conversation's own) when first read:
    an agent loop that never looks at them does not pay for them every turn.
    """

    __slots__ = ("_kept", "_warnings", "body_json", "token_count")

    def __init__(
        self, body_json: bytes, warnings: Sequence[FormatWarning], token_count: int | None
    ) -> None:
        # The body, as `body_to_json(format(...))` writes it.
        self.body_json = body_json
        # The formatted messages' token count, when a token counter was given.
        self.token_count = token_count
        self._kept = tuple(warnings)
        self._warnings: list[FormatWarning] | None = None

    @property
    def warnings(self) -> list[FormatWarning]:
        """The blocks dropped on the way (`FormattedBody.warnings`)."""
        if self._warnings is None:
            self._warnings = _copies(self._kept)
        return self._warnings

    def __repr__(self) -> str:
        return (
            f"FormattedJson(body_json=<{len(self.body_json)} bytes>, "
            f"warnings={len(self._kept)}, token_count={self.token_count})"
        )


def _owned(msg: Msg | Mapping[str, Any], index: int) -> Msg:
    """`messages[index]` checked, as a `Msg` of the conversation's own."""
    checked = message_from_input(msg, index)
    if checked is msg:
        # A copy through its bytes: a parsed message also reads faster than
        # one built field by field.
        checked = Msg.FromString(checked.SerializeToString())
    return checked


_M = TypeVar("_M", Msg, FormatWarning)


def _copies(messages: Iterable[_M]) -> list[_M]:
    """Fresh copies of protobuf messages (warnings, `Msg`s) for a caller."""
    copies = []
    for message in messages:
        copy = type(message)()
        copy.CopyFrom(message)
        copies.append(copy)
    return copies


def _start() -> WalkState:
    """Where a walk over no messages ended (its run a buffer of the
    conversation's own, which only grows; a new one after `pop`)."""
    return WalkState(JsonRun((), bytearray(b"[")), (), 0, -1, None)


class Conversation:
    """An agent's messages for one provider and one set of options, formatted
    incrementally: `format()` and `format_json()` after each new message cost
    the new message, not the whole history.

    Takes what `format()` takes (`multi_agent`, `tools`, `tool_choice`,
    `media_root`, `allow_download`, `write_media`, `settings` or the keyword
    options, `request`, and `cache`, used when the whole history has to be
    formatted); a request parameter the provider does not take is refused
    here, when the conversation is made.
    Messages are copied when added, so changing a `Msg` afterwards does not
    change the conversation; every result is the caller's to keep or change.
    Safe to share between threads.
    """

    def __init__(
        self,
        provider: str,
        msgs: Iterable[Msg | Mapping[str, Any]] = (),
        *,
        multi_agent: bool = False,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | None = None,
        media_root: str | Path | None = None,
        allow_download: bool = False,
        write_media: bool = False,
        settings: FormatSettings | None = None,
        cache: FormatCache | None = None,
        request: RequestParams | Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        self._impl = get_provider(provider)
        self._settings = resolve_settings(self._impl, multi_agent, settings, options)
        self._variant = self._impl.variant(self._settings.fidelity)
        self._request = RequestParams.of(request)
        # The model every request calls (a signature goes back to its model).
        self._model = self._request.model if self._request is not None else None
        if self._request is not None:
            # Refused now rather than at the first call: the table says it all.
            write_request({}, self._request, self._impl.request_fields, self._impl.name)
        if cache is not None and not isinstance(cache, FormatCache):
            kind = type(cache).__name__
            raise FormatError("cache", f"expected a FormatCache or None, got {kind}")
        check_history_prompt(self._settings)
        # Kept as given then, checked as `format()` checks them.
        self._tools = copy_json(tools) if tools is not None else None
        self._tool_list = check_tools(self._tools)
        self._tool_choice = tool_choice
        self._media_root = media_root
        self._allow_download = allow_download
        self._write_media = write_media
        self._cache = cache
        settings = self._settings
        # A chat walk formats each message by itself, in order; the other
        # styles group, rename, drop or rewrite messages across the list (so
        # do prompt cache breakpoints, placed over the whole body), and
        # writing media is a side effect every `format()` call repeats.
        self._chat = settings.resumable and not write_media
        # False once the messages hold what cannot be walked incrementally
        # (until they no longer do).
        self._incremental = self._chat
        # Without file or network access a turn reads nothing but its message;
        # with it, a turn that reads media by URL or path ends incremental
        # formatting (a file may change).
        self._io = media_root is not None or allow_download
        self._counter = counter_for(settings, self._variant)
        self._msgs: list[Msg] = []
        # Where the chat walk over the first `_walked_count` messages ended.
        self._walk = _start()
        self._walked_count = 0
        # The walk's messages as marshal bytes, made when `format()` first needs them.
        self._copies: list[bytes] = []
        # The views of the messages the last walk added, from the first's index.
        self._fresh_views: tuple[int, list[MsgView]] = (0, [])
        # Tool-result media the walk "saved" (AgentScope's temp files): a later
        # turn may cite and read one back, as within one `format()` call.
        self._saved: dict[str, bytes] = {}
        # For the variant's pass over the body (`body_pass`): the warnings
        # `screened` gave about the first `_screened_count` messages, the walk's
        # warnings they saw, and each message's metadata, read once.
        self._screened: list[FormatWarning] = []
        self._screened_count = 0
        self._screened_seen = 0
        self._metadata: list[Any] = []
        # The JSON of the items of the last passed body's lists, by their
        # marshal bytes (which tell 1 from True and 1.0): most come out of the
        # pass as they did the call before, and are not encoded again.
        self._json: dict[bytes, bytes] = {}
        # The passed runs of the walk's messages, where the variant's pass goes
        # in runs; None: not yet, or not possible for these messages.
        self._runs: PassedRuns | None = None
        self._segmented = isinstance(self._variant, ProviderFidelity) and self._variant.segmented
        # The warnings logged so far (path, text): each is logged once, not on
        # every call that formats its message again.
        self._logged: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        self.extend(msgs)

    @property
    def provider(self) -> str:
        """The provider's registry name."""
        name: str = self._impl.name
        return name

    @property
    def settings(self) -> FormatSettings:
        """The formatting options, as one `FormatSettings`."""
        return self._settings

    @property
    def request(self) -> RequestParams | None:
        """The request parameters written into every body, if any."""
        return self._request

    @property
    def messages(self) -> list[Msg]:
        """Copies of the messages, oldest first."""
        with self._lock:
            msgs = list(self._msgs)
        return _copies(msgs)

    def __len__(self) -> int:
        return len(self._msgs)

    def __repr__(self) -> str:
        return f"Conversation({self.provider!r}, messages={len(self._msgs)})"

    def append(self, msg: Msg | Mapping[str, Any]) -> None:
        """Add a message (a `Msg`, copied, or an AgentScope message dict).

        A message that cannot be read (a dict that is no message, a missing
        `name`) is refused with the error `format()` gives for it, naming
        `messages[i]`, and the conversation is left as it was."""
        with self._lock:
            self._msgs.append(_owned(msg, len(self._msgs)))

    def extend(self, msgs: Iterable[Msg | Mapping[str, Any]]) -> None:
        """`append` each of `msgs`; at the first one refused, none is added."""
        if isinstance(msgs, (str, bytes, Mapping, Msg)):
            raise FormatError("messages", f"expected a list of messages, got {type(msgs).__name__}")
        with self._lock:
            added: list[Msg] = []
            for msg in msgs:
                added.append(_owned(msg, len(self._msgs) + len(added)))
            self._msgs.extend(added)

    def pop(self) -> Msg:
        """Remove the newest message and return it (an `IndexError` when empty)."""
        with self._lock:
            msg = self._msgs.pop()
            if self._walked_count > len(self._msgs) or not self._incremental:
                # The walk covered it: start over (a later call re-walks).
                self._restart()
            del self._metadata[len(self._msgs) :]
            # A message added in its place is logged about anew.
            gone = f"messages[{len(self._msgs)}]"
            self._logged = {
                key
                for key in self._logged
                if not key[0].startswith(gone) or key[0][len(gone) : len(gone) + 1] not in ("", ".")
            }
            return msg

    def clear(self) -> None:
        """Remove every message."""
        with self._lock:
            self._msgs.clear()
            self._restart()
            self._logged.clear()

    def _restart(self) -> None:
        self._walk = _start()
        self._walked_count = 0
        self._copies = []
        self._fresh_views = (0, [])
        self._saved = {}
        self._incremental = self._chat
        self._screened = []
        self._screened_count = self._screened_seen = 0
        self._metadata = []
        self._json = {}
        self._runs = None
        self._segmented = isinstance(self._variant, ProviderFidelity) and self._variant.segmented

    def format(self) -> FormattedBody:
        """`format(provider, messages, ...)` of the conversation, as dicts of
        the caller's own."""
        with self._lock:
            logging = log_once(self._logged)
            try:
                return self._format()
            finally:
                log_every(logging)

    def format_json(self) -> FormattedJson:
        """The body `format()` gives, as the UTF-8 JSON `body_to_json` writes."""
        with self._lock:
            logging = log_once(self._logged)
            try:
                return self._format_json()
            finally:
                log_every(logging)

    def _format(self) -> FormattedBody:
        """`format()`, under the lock."""
        walked = self._walked()
        if walked is None:
            return self._format_all()
        walk, ctx = walked
        messages = self._copied(walk)
        count = self._counter(messages) if self._counter is not None else None
        tools = check_tools(copy_json(self._tools))
        body = self._passed(self._variant.build_body(messages, tools, self._tool_choice, ctx), ctx)
        return FormattedBody(self._with_request(body), _copies(ctx.warnings), count)

    def _copied(self, walk: WalkState, start: int = 0, end: int | None = None) -> list[Any]:
        """The walk's messages `start` to `end` as fresh dicts (a variant that
        passes over the body has them kept as marshal bytes by the walk)."""
        copies = self._copies
        for message in walk.messages[len(copies) :]:
            copies.append(marshal.dumps(dict(message)))
        return [marshal.loads(data) for data in copies[start:end]]

    def _format_json(self) -> FormattedJson:
        """`format_json()`, under the lock."""
        walked = self._walked()
        if walked is None:
            whole = self._format_all()
            return FormattedJson(body_to_json(whole), whole.warnings, whole.token_count)
        walk, ctx = walked
        run = walk.messages
        count = self._counter(run) if self._counter is not None else None
        if self._variant.body_pass:
            # The pass changes the body in place: it gets copies, not the walk's
            # messages (whose JSON is then written anew).
            tools = check_tools(copy_json(self._tools))
            passed = self._in_runs(walk, tools, ctx) if self._segmented else None
            if passed is None:
                body = self._variant.build_body(self._copied(walk), tools, self._tool_choice, ctx)
                passed = self._passed(body, ctx)
            body = self._encoded(passed)
        else:
            body = self._variant.build_body(run, self._tool_list, self._tool_choice, ctx)
        # The context's warnings are the walk's (shared, never handed out)
        # and whatever the body added.
        return FormattedJson(body_to_json(self._with_request(body)), ctx.warnings, count)

    def _passed(self, body: dict[str, Any], ctx: FormatContext) -> dict[str, Any]:
        """`body` (the conversation's own) after the variant's pass over it, as
        `finalize` does it in `format()`: the screen's warnings, then the pass's."""
        variant = self._variant
        if not variant.body_pass:
            return body
        ctx.warnings.extend(self._screen(ctx.warnings))
        return variant.pass_body(body, ctx.warnings, self._message_metadata())

    def _message_metadata(self) -> list[Any]:
        """Each message's metadata, read once per message (the list is the
        conversation's own: `carry_over` only reads it)."""
        msgs = self._msgs
        known = len(self._metadata)
        if known < len(msgs):
            self._metadata += message_metadata(msgs[known:], known)
        return self._metadata

    def _in_runs(
        self, walk: WalkState, tools: list[dict[str, Any]] | None, ctx: FormatContext
    ) -> dict[str, Any] | None:
        """`_passed` of the body, for a variant whose pass goes in runs: the
        runs before the last cut passed once and kept with their JSON, the
        last one passed again. None where a kept message would have JSON only
        the slow encoder writes (the conversation then passes whole bodies)."""
        runs = self._runs
        if runs is None:
            runs = self._runs = PassedRuns()
        body = body_in_runs(
            cast(ProviderFidelity, self._variant),
            runs,
            walk.messages,
            lambda messages: self._variant.build_body(messages, tools, self._tool_choice, ctx),
            lambda: self._screen(ctx.warnings),
            ctx.warnings,
            self._message_metadata(),
        )
        if body is None:
            self._segmented = False
            self._runs = None
        return body

    def _encoded(self, body: dict[str, Any]) -> dict[str, Any]:
        """`body` with the dicts of its lists (its messages, its tools) as
        `EncodedMessage`s, whose JSON `body_to_json` splices in: written
        before where the last call's body held the same item."""
        known, fresh = self._json, {}
        for key, value in body.items():
            if type(value) is not list or not value:
                continue
            items = []
            for item in value:
                if type(item) is not dict:
                    break
                try:
                    data = marshal.dumps(item)
                except ValueError:
                    break  # not plain data: left to `body_to_json`
                json = known.get(data)
                if json is None:
                    encoded = encoded_turn([item])
                    if encoded is None:
                        break
                    json = encoded[0].json
                fresh[data] = json
                items.append(EncodedMessage(item, json))
            else:
                body[key] = items
        self._json = fresh
        return body

    def _screen(self, warnings: list[FormatWarning]) -> list[FormatWarning]:
        """`variant.screened` of every message given the walk's `warnings` (it
        leaves out the blocks they name), each message screened once."""
        variant, msgs, seen = self._variant, self._msgs, self._walk.warnings
        if any(warning.path.startswith("messages[") for warning in warnings[len(seen) :]):
            # The body named a message too: not a function of the walk alone.
            return variant.screened(msgs, warnings, model=self._model)
        start = self._screened_count
        for warning in seen[self._screened_seen :]:
            index = _message_index(warning.path)
            if index is not None and index < start:
                # A later turn warned about a message screened already: again from there.
                start = index
        if start < self._screened_count:
            self._screened = [w for w in self._screened if (_message_index(w.path) or 0) < start]
        if start < len(msgs):
            first, fresh = self._fresh_views
            # The walk's views of the new messages, by position (their blocks
            # are dicts already); none for the messages before them.
            views = [None] * first + fresh if first + len(fresh) == len(msgs) else []
            self._screened += variant.screened(msgs, seen, start, views, model=self._model)
        self._screened_count, self._screened_seen = len(msgs), len(seen)
        return self._screened

    def _with_request(self, body: dict[str, Any]) -> dict[str, Any]:
        """`body` with the request parameters, as `format()` writes them."""
        if self._request is not None:
            write_request(body, self._request, self._impl.request_fields, self._impl.name)
        return body

    def _format_all(self) -> FormattedBody:
        return format(
            self._impl.name,
            self._msgs,
            tools=self._tools,
            tool_choice=self._tool_choice,
            media_root=self._media_root,
            allow_download=self._allow_download,
            write_media=self._write_media,
            settings=self._settings,
            cache=self._cache,
            request=self._request,
        )

    def _walked(self) -> tuple[WalkState, FormatContext] | None:
        """The chat walk over every message, and a context holding its
        warnings for the body; None when it cannot be had incrementally."""
        if not self._incremental:
            return None
        walk = self._walk
        msgs = self._msgs
        start = self._walked_count
        if start == len(msgs):
            ctx = FormatContext(
                settings=self._settings, warnings=list(walk.warnings), model=self._model
            )
            ctx.at_message, ctx.at_block = walk.at_message, walk.at_block
            return walk, ctx
        views = [build_view(msg, index) for index, msg in enumerate(msgs[start:], start)]
        # The screen reads the new messages' blocks there (`_screen`).
        self._fresh_views = (start, views)
        # Per message (AgentScope 2.x's messages as the provider's turns).
        views = self._variant.arrange(views)
        if self._io and any(reads_media(view.content) for view in views):
            # Media read from files or the network may change between calls.
            self._incremental = False
            return None
        turns = TurnCache(None, resume=walk)
        # A copy: a walk that fails leaves nothing behind.
        ctx = FormatContext(
            settings=self._settings, model=self._model, turns=turns, saved_media=dict(self._saved)
        )
        run = walk.messages
        known = len(run)
        # A variant that passes over the body writes it from its own copies:
        # the walk's messages need no JSON.
        passing = self._variant.body_pass
        try:
            # The walk appends the new messages to the run itself.
            self._variant.format_messages(views, ctx, multi_agent=False)
            made = run[known:]
            fresh = made if passing else encoded_turn(made)
        finally:
            # Taken back out: they go in below as `EncodedMessage`s, or not at all.
            del run[known:]
        if fresh is None:
            # JSON only the slow encoder writes (non-string keys and the like,
            # which no message read from JSON holds): format the whole history
            # every time.
            self._incremental = False
            return None
        if passing:
            run.extend(fresh)
            self._copies += [marshal.dumps(message) for message in fresh]
        else:
            json = run.json
            for message in fresh:
                if len(json) > 1:
                    json += b","
                json += message.json
            run.extend(fresh)
            run.known = len(run)
        walk = WalkState(run, tuple(ctx.warnings), turns.walked, ctx.at_message, ctx.at_block)
        self._walk, self._walked_count, self._saved = walk, len(msgs), ctx.saved_media
        return walk, ctx


def _message_index(path: str) -> int | None:
    """The `i` of a path `messages[i]...`, None for any other."""
    if not path.startswith("messages["):
        return None
    end = path.find("]")
    number = path[len("messages[") : end]
    return int(number) if end > 0 and number.isdigit() else None
