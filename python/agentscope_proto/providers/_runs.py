"""A provider-fidelity pass over a body's messages in runs.

A variant whose pass is `segmented` (the Chat Completions family) passes its
message list in runs cut before the messages `cuts_before` names, the pass of
one run reading no other. So a caller that formats the same conversation again
(a `Conversation` turn after turn, the server request after request) passes
each run before the last cut once and keeps it with its JSON (`PassedRuns`);
only the last run is passed again. The body is then `pass_rest`'s and
`settled`'s, as the whole pass would leave it.
"""

from __future__ import annotations

import marshal
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._engine.body import EncodedMessage, JsonRun, encoded_turn
from .._generated.agentscope.formatter.v1.formatter_service_pb2 import FormatWarning
from .._wire import WireMessages
from ._adapt import Notes
from ._provider import ProviderFidelity

__all__ = ["PassedRuns", "body_in_runs"]

Block = dict[str, Any]


@dataclass(slots=True)
class PassedRuns:
    """The pass's messages of the first `cut` messages of a body's list
    (`source`, the walk's own message objects), with their JSON from "[" on
    and the pass's warnings about them. Runs before a cut are final. Changed in place by
    `body_in_runs`; a record others may read is copied first (`copy`)."""

    source: list[Any] = field(default_factory=list)
    messages: list[EncodedMessage] = field(default_factory=list)
    json: bytearray = field(default_factory=lambda: bytearray(b"["))
    # Where the JSON of all the messages but the last ends.
    before_last: int = 1
    warnings: list[FormatWarning] = field(default_factory=list)
    # The last run passed after the cut (the walk's messages it was passed
    # from, the pass's messages and warnings): the run the next cut keeps,
    # when the walk holds those very messages up to the cut.
    tail: tuple[tuple[Any, ...], tuple[EncodedMessage, ...], list[FormatWarning]] | None = None
    # The screen's warnings about the caller's first messages (how many, their
    # bytes as they arrived, the paths of the walk's warnings about them,
    # which the screen leaves out, and the warnings), for the server
    # (`screened_from`).
    screen: tuple[int, bytes, tuple[str, ...], list[FormatWarning]] | None = None

    @property
    def cut(self) -> int:
        return len(self.source)

    def copy(self) -> PassedRuns:
        """A record of its own to extend (the JSON copied: one memcpy)."""
        return PassedRuns(
            list(self.source),
            list(self.messages),
            bytearray(self.json),
            self.before_last,
            list(self.warnings),
            self.tail,
            self.screen,
        )

    def clear(self) -> None:
        """Hold nothing (the runs kept were another walk's)."""
        self.source.clear()
        self.messages.clear()
        self.json[1:] = b""
        self.before_last = 1
        self.warnings.clear()
        self.tail = None

    def covers(self, walked: Sequence[Any]) -> bool:
        """Whether its runs are the first messages of `walked`, the very same
        objects (a walk that made a turn again made new ones)."""
        source = self.source
        return len(source) <= len(walked) and all(map(operator.is_, source, walked))

    def screened_from(
        self,
        screen: Callable[[int], list[FormatWarning]],
        walked: Sequence[FormatWarning],
        wire: WireMessages,
        count: int,
    ) -> list[FormatWarning]:
        """The screen's warnings about the `count` messages of a request
        (`wire`): those kept about its first ones, where they arrived as the
        same bytes and the walk (`walked`) named the same blocks of them as
        before, then `screen(start)` of the rest; kept for the next request
        when its messages are one run of bytes."""
        start, run, named, kept = self.screen or (0, b"", (), [])
        if start > count or not wire.known_run(run) or named != _named(walked, start):
            start, kept = 0, []
        found = [*kept, *screen(start)]
        run_now = wire.run()
        self.screen = None if run_now is None else (count, run_now, _named(walked, count), found)
        return found

    def size(self) -> int:
        """What it counts for in a cache's bound (its JSON and the dicts, and
        the bytes the screen's warnings were made of)."""
        return 3 * len(self.json) + (len(self.screen[1]) if self.screen is not None else 0)

    def _body_messages(self, tail: list[Any]) -> JsonRun:
        """The body's message list: the kept messages, then `tail`. Where
        `tail` is empty, the last kept message stands outside the JSON run:
        the rest of the pass may replace the body's last message."""
        if tail or not self.messages:
            messages = JsonRun(tuple(self.messages), self.json)
        else:
            messages = JsonRun(tuple(self.messages[:-1]), bytes(self.json[: self.before_last]))
            tail = [self.messages[-1]]
        messages += tail
        return messages

    def _reuse(self, walked: Sequence[Any], cut: int) -> bool:
        """Keep the last run passed after the cut, where it was passed from
        the walk's messages up to `cut`."""
        tail = self.tail
        if tail is None:
            return False
        source, encoded, warnings = tail
        start = self.cut
        if len(source) != cut - start or not all(map(operator.is_, source, walked[start:cut])):
            return False
        self._add(walked, encoded, warnings, cut)
        return True

    def _add(
        self,
        walked: Sequence[Any],
        encoded: Sequence[EncodedMessage],
        warnings: list[FormatWarning],
        cut: int,
    ) -> None:
        """Keep the passed messages of the run before `cut`."""
        json = self.json
        for message in encoded:
            self.before_last = len(json)
            if len(json) > 1:
                json += b","
            json += message.json
        self.messages += encoded
        self.warnings += warnings
        self.source += walked[self.cut : cut]


def body_in_runs(
    variant: ProviderFidelity,
    runs: PassedRuns,
    walked: list[Any],
    build: Callable[[list[Any]], Block],
    screened: Callable[[], list[FormatWarning]],
    warnings: list[FormatWarning],
    metadata: list[Any],
) -> Block | None:
    """The body the variant's whole pass makes of the walk's messages
    (`walked`), `runs` extended to the last cut of the body's message list
    (cleared first where it holds runs of other messages).
    `build` makes the body of the walk's messages (the variant's
    `build_body`: the list it holds is the walk's very messages, the system
    prompt taken out where the API takes it apart); `screened` gives the
    screen's warnings, which come after those `warnings` holds (the walk's,
    the body's) and before the pass's; `metadata` is each caller message's.
    None where a message would have JSON only the slow encoder writes, or
    the body holds no message list: `runs` and `warnings` then hold nothing
    they would not have held."""
    built = len(warnings)
    body = build(walked)
    listed = body.get(variant.conversation or "")
    if type(listed) is not list and type(listed) is not JsonRun:
        del warnings[built:]  # the caller builds the body again
        return None
    if not runs.covers(listed):
        runs.clear()
    last = cut = runs.cut
    for index in range(len(listed) - 1, cut, -1):
        if variant.cuts_before(listed[index]):
            last = index
            break
    if last > cut and not runs._reuse(listed, last):
        passed: list[FormatWarning] = []
        fresh = variant.pass_messages(_copies(listed[cut:last]), Notes(passed), cut)
        encoded = encoded_turn(fresh)
        if encoded is None:
            del warnings[built:]
            return None
        runs._add(listed, encoded, passed, last)
    tail_warnings: list[FormatWarning] = []
    tail: list[Any] = variant.pass_messages(_copies(listed[last:]), Notes(tail_warnings), last)
    # With their JSON before the rest of the pass: the run the next cut keeps
    # is these messages, whatever the rest does to the last one.
    encoded_tail = encoded_turn(tail)
    if encoded_tail is not None:
        runs.tail = (tuple(listed[last:]), encoded_tail, tail_warnings)
        tail = list(encoded_tail)
    messages = runs._body_messages(tail)
    body[variant.conversation or ""] = messages
    warnings += screened()
    warnings += runs.warnings
    warnings += tail_warnings
    variant.pass_rest(body, Notes(warnings))
    body = variant.settled(body, metadata)
    # A message the rest of the pass replaced, with its JSON: the body's list
    # is then written as one join.
    for index in range(messages.known, len(messages)):
        if type(messages[index]) is dict:
            replaced = encoded_turn([messages[index]])
            if replaced is not None:
                messages[index] = replaced[0]
    return body


def _copies(messages: Sequence[Any]) -> list[Block]:
    """Fresh copies of the walk's messages, for the pass to change."""
    return [marshal.loads(marshal.dumps(dict(message))) for message in messages]


def _named(walked: Sequence[FormatWarning], count: int) -> tuple[str, ...]:
    """The paths of the warnings about the first `count` caller messages."""
    found = []
    for warning in walked:
        path = warning.path
        if path.startswith("messages["):
            end = path.find("]")
            number = path[len("messages[") : end]
            if number.isdigit() and int(number) < count:
                found.append(path)
    return tuple(found)
