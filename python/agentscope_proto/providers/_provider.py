"""What a provider is: its registry record (`Provider`: the enum value, the
options and block kinds it takes, where its request parameters go) and the
variants it formats and parses with, one per fidelity (`Variant`).

`format()` and `parse()` choose the variant once, by the call's fidelity:
`"agentscope"` (AgentScope 1.0.21's formatter and model class, exactly) or
`"provider"` (the provider's own API: `ProviderFidelity`, a subclass of the
parity variant that overrides what differs). No code below the choice asks
which fidelity it runs in.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import InitVar, dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Protocol

from .._core import CompiledWalk
from .._engine.views import MsgView, message_metadata
from .._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from .._generated.agentscope.message.v1.message_pb2 import Msg
from ..errors import FormatError, ParseError
from ..options import ParseSettings
from ..request import RequestFields
from ..results import ParsedResponse, copy_json
from ._adapt import Notes
from ._between import BOOKKEEPING, PORTABLE_IDS, SCREENED_KEYS, CallIds, Target, sign
from ._context import FormatContext
from ._turns import TurnTable, agent_turns

__all__ = [
    "UNKNOWN_TO_AGENTSCOPE",
    "Provider",
    "ProviderFidelity",
    "StreamState",
    "Variant",
    "nothing_to_send",
    "provider_name",
]

Block = dict[str, Any]

# Block kinds AgentScope 1.0.21's formatters do not know, so they drop them
# like any unknown kind: those only provider-fidelity parsing makes (server
# tools, grounding), and AgentScope 2.x's and agentscope-java's data and hint.
UNKNOWN_TO_AGENTSCOPE = frozenset(
    {"server_tool_use", "server_tool_result", "grounding", "data", "hint"}
)


def provider_name(value: pb.Provider.ValueType) -> str:
    """The registry name of a `Provider` enum value, from its proto name:
    `PROVIDER_OPENAI_RESPONSES` is "openai_responses"."""
    return pb.Provider.Name(value).removeprefix("PROVIDER_").lower()


def nothing_to_send(provider: str) -> str:
    """Why a body whose message list came out empty cannot go to `provider`."""
    return (
        "nothing to send: every message formatted to nothing, and the "
        f"{provider} API needs at least one message"
    )


class StreamState(Protocol):
    """The accumulating state of one streamed response."""

    def feed(self, event: dict[str, Any]) -> ParsedResponse | None:
        """Take one event's JSON; return a snapshot when AgentScope would
        yield one for it, else None."""
        ...

    def finish(self) -> ParsedResponse:
        """The final result after the stream ended."""
        ...


class Variant(ABC):
    """One fidelity of a provider's wire format, both directions. Made once,
    by its `Provider` record, whose name it gives in errors."""

    # Its chat turn (the block handlers `format_turns` dispatches to).
    turns: TurnTable

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.name = provider.name

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self.name!r}>"

    # -- requests -----------------------------------------------------------------------

    def arrange(self, views: list[MsgView]) -> list[MsgView]:
        """The views as this variant's formatter takes them (as they are)."""
        return views

    @abstractmethod
    def format_messages(
        self, msgs: list[MsgView], ctx: FormatContext, *, multi_agent: bool
    ) -> list[Block]:
        """The provider's message list (as AgentScope's (MultiAgent)Formatter
        returns it, in parity)."""

    @abstractmethod
    def build_body(
        self,
        messages: list[Block],
        tools: list[Block] | None,
        tool_choice: str | None,
        ctx: FormatContext,
    ) -> Block:
        """The request body: the message list plus tools and tool choice (as
        the AgentScope model class hands them to the SDK, in parity)."""

    # Whether `counted` changes the messages (the token counter then reads its
    # result, not the walk's messages).
    recounts: ClassVar[bool] = False

    def counted(self, messages: list[Block]) -> list[Block]:
        """The formatted messages as the token counter reads them (as they are:
        a variant that marks a turn for its body pass counts it unmarked,
        so the budget truncates the same conversation in both fidelities)."""
        return messages

    # Whether `finalize` passes over the whole body (`pass_body`): a caller that
    # formats incrementally hands that pass a body of its own on every call.
    body_pass: ClassVar[bool] = False

    def finalize(
        self,
        body: Block,
        ctx: FormatContext,
        msgs: Sequence[Msg | Mapping[str, Any]],
        views: Sequence[MsgView] = (),
    ) -> Block:
        """The body to send, given the one `build_body` made, the messages as
        the caller gave them and their views by position, as built before
        `arrange` (the body as it is)."""
        return body

    def screened(
        self,
        msgs: Sequence[Msg | Mapping[str, Any]],
        walked: Sequence[Any],
        start: int = 0,
        views: Sequence[MsgView | None] = (),
        model: str | None = None,
    ) -> list[Any]:
        """The warnings `finalize` adds about `msgs[start:]` before its pass
        over the body (a function of each message, the walk's warnings about
        it and the `model` the request calls; `views` as `finalize` takes
        them): none here."""
        return []

    def pass_body(self, body: Block, warnings: list[Any], metadata: list[Any]) -> Block:
        """`finalize`'s pass over a body the caller owns (changed in place),
        after `screened`'s warnings; `metadata` is each message's. As it is
        here."""
        return body

    def with_breakpoints(self, body: Block, ctx: FormatContext) -> Block:
        """The body with prompt cache breakpoints placed as the provider
        recommends (`prompt_cache="auto"`; a warning for each it cannot
        place). As it is here: the provider caches prompts by itself."""
        return body

    # -- responses ----------------------------------------------------------------------

    @abstractmethod
    def parse(self, response: Block, options: ParseSettings) -> ParsedResponse:
        """A complete response."""

    @abstractmethod
    def stream(self, options: ParseSettings) -> StreamState:
        """A fresh state for parsing one streamed response."""

    # Whether `signed` records the model that issued a signature (the parse
    # then reads the model the response names).
    signs_model: ClassVar[bool] = False

    def signed(self, result: ParsedResponse, model: str | None) -> ParsedResponse:
        """A parse result (a complete one, or a stream's snapshot) with who
        issued its blocks' signatures recorded: the provider where their keys
        do not say it, and the `model` the response named (as it is:
        AgentScope records none)."""
        return result


class ProviderFidelity(Variant):
    """Provider fidelity around the parity formatter (put first among the
    bases of a provider's parity variant): AgentScope 2.x's turns before the
    walk (`agent_turns`), and after it the body adapted so that the provider's
    own request schema accepts it (`adapt`).

    The walk screens every block first (`_between.Target.screen`): another
    provider's reasoning signatures, and cache markers where the API takes
    none, are taken out, and a tool-call id the API would refuse is replaced
    (a warning for each names the key, after the walk's). `adapt` drops the
    keys the provider does not define (`name` on tool messages, ...),
    replaces content a place cannot hold by a short text note (audio in an
    Anthropic tool result, an image in an OpenAI assistant turn, unsigned
    thinking for Anthropic becomes text), drops tool calls nothing answers and
    empty text and thinking, and narrows tool schemas to the keywords the
    provider takes.
    Every drop or move is a `FormatWarning` whose path points into the parity
    body (`messages[3].content[1]`), `block_type` the kind of thing changed
    and `message` what was done. The parity body is never changed: the pass
    works on a copy.
    """

    # The body key of the conversation, where the provider's API refuses an
    # empty one (OpenAI: "expected an array with minimum length 1"); None
    # where an empty one is fine.
    conversation: ClassVar[str | None] = None
    # The tool-call ids the provider's API takes (None: any string, or none
    # sent).
    call_ids: ClassVar[CallIds | None] = PORTABLE_IDS
    # Whether its API takes cache markers (`cache_control`) where blocks hold them.
    cache_markers: ClassVar[bool] = False

    def __init__(self, provider: Provider) -> None:
        super().__init__(provider)
        # Every block the walk hands a handler goes through the screen first:
        # other providers' signatures out, cache markers where the API takes
        # none, call ids the API takes.
        self.target = Target(self.name, self.call_ids, self.cache_markers)
        self.turns = dataclasses.replace(
            self.turns,
            screen=self.target.screen,
            screened_keys=SCREENED_KEYS | BOOKKEEPING,
            screened_kinds=self.target.screened_kinds,
        )

    signs_model = True

    def signed(self, result: ParsedResponse, model: str | None) -> ParsedResponse:
        sign(result.content, self.name, model)
        return result

    def arrange(self, views: list[MsgView]) -> list[MsgView]:
        """AgentScope 2.x's messages hold tool calls with their results, hints
        and documents: turned into the provider's turns as 2.x does."""
        return agent_turns(views, self.name, self.provider.document_types)

    body_pass = True

    def finalize(
        self,
        body: Block,
        ctx: FormatContext,
        msgs: Sequence[Msg | Mapping[str, Any]],
        views: Sequence[MsgView] = (),
    ) -> Block:
        ctx.warnings.extend(self.screened(msgs, ctx.warnings, views=views, model=ctx.model))
        return self.adapted(body, ctx.warnings, message_metadata(msgs))

    def screened(
        self,
        msgs: Sequence[Msg | Mapping[str, Any]],
        walked: Sequence[Any],
        start: int = 0,
        views: Sequence[MsgView | None] = (),
        model: str | None = None,
    ) -> list[Any]:
        return self.target.warnings(msgs, walked, views, model, start)

    def adapted(self, body: Block, warnings: list[Any], metadata: list[Any] | None = None) -> Block:
        """`body` (this provider's parity body) adapted so the provider accepts
        it, as a new body; a warning per change is appended to `warnings`.
        `metadata` is each message's, oldest first (see `carry_over`). A body
        left without a message where the API needs one is a `FormatError`."""
        return self.pass_body(copy_json(body), warnings, metadata or [])

    def pass_body(self, body: Block, warnings: list[Any], metadata: list[Any]) -> Block:
        self.adapt(body, Notes(warnings))
        return self.settled(body, metadata)

    def settled(self, body: Block, metadata: list[Any]) -> Block:
        """The passed body, checked (a body left without a message where the
        API needs one is a `FormatError`) and with what the messages'
        `metadata` carry over."""
        if self.conversation is not None and body.get(self.conversation) == []:
            raise FormatError(self.conversation, nothing_to_send(self.name))
        if metadata:
            self.carry_over(body, metadata)
        return body

    @abstractmethod
    def adapt(self, body: Block, note: Notes) -> None:
        """Adapt the (copied) parity body in place, noting each change."""

    # Whether `adapt` is `pass_messages` over the body's message list, then
    # `pass_rest` over the body, and the message list may be passed in runs
    # cut before each message `cuts_before` names (the pass of one run reads
    # no other): a caller formatting incrementally passes again only the run
    # after the last cut (`Conversation`).
    segmented: ClassVar[bool] = False

    def cuts_before(self, message: Block) -> bool:
        """Whether the message list may be cut before `message` (`segmented`)."""
        return False

    def pass_messages(self, messages: list[Block], note: Notes, start: int = 0) -> list[Block]:
        """The pass over a run of the body's messages, `messages[start]` on
        (the paths it notes): the run's messages as the API takes them
        (`segmented`; changed in place, or left out)."""
        raise NotImplementedError(f"{type(self).__name__} does not pass messages in runs")

    def pass_rest(self, body: Block, note: Notes) -> None:
        """The pass over the rest of a body whose messages `pass_messages`
        passed (`segmented`): its tools and options, and whatever reads the
        whole message list without changing a message in place."""

    def carry_over(self, body: Block, metadata: list[Any]) -> None:
        """Take into the body what the messages' metadata holds for the next
        request (what a provider-fidelity parse kept there): nothing here."""


@dataclass(frozen=True, eq=False)
class Provider:
    """One provider of the registry (`providers.PROVIDERS`): what it is, and
    its variants by fidelity. Its name is its enum value's (`provider_name`).

    A provider module makes one, with the variant classes: `agentscope` the
    one that is AgentScope 1.0.21's (None where AgentScope 1.0.21 has no
    such provider), `provider` the provider API's own. A call that gives no
    fidelity gets `default_fidelity`: AgentScope 1.0.21's variant where there
    is one (parity stays the default), else the provider's own.
    """

    # Its `agentscope.formatter.v1.Provider` enum value.
    enum: pb.Provider.ValueType
    # Format options it accepts beyond every provider's, by AgentScope
    # constructor name.
    options: frozenset[str]
    # Block kinds the formatter formats, and those it drops (with a warning).
    # Together they cover every `ContentBlock` kind ("opaque" included); a
    # test checks that.
    formatted_blocks: frozenset[str]
    dropped_blocks: frozenset[str]
    # How a streamed HTTP body is framed: "sse" or "ndjson".
    framing: str
    # Where the provider's API takes each request parameter (`format(...,
    # request=...)`), written into the finished body by `write_request`.
    request_fields: RequestFields
    # The media types of `data` blocks (AgentScope 2.x) it takes as documents
    # in provider fidelity (`agent_turns` refuses the others); images, audio
    # and video go as its media blocks.
    document_types: frozenset[str]
    agentscope: InitVar[type[Variant] | None]
    provider: InitVar[type[Variant]]
    # Its walks in the compiled core (`_core.CompiledWalk`: chat and
    # multi-agent), for AgentScope's fidelity: the messages' list and warnings,
    # or None where the core leaves the call to the Python walk. None: the
    # provider has none.
    compiled: CompiledWalk | None = None
    name: str = field(init=False)
    # The fidelity of a call that gives none: "agentscope" or "provider".
    default_fidelity: str = field(init=False)
    # Its variants by fidelity ("agentscope", "provider"), read-only.
    variants: Mapping[str, Variant] = field(init=False, repr=False)
    # The same, for `variant` (every call chooses through it).
    _by_fidelity: dict[str, Variant] = field(init=False, repr=False)

    def __post_init__(self, agentscope: type[Variant] | None, provider: type[Variant]) -> None:
        object.__setattr__(self, "name", provider_name(self.enum))
        default = "provider" if agentscope is None else "agentscope"
        object.__setattr__(self, "default_fidelity", default)
        made = {} if agentscope is None else {"agentscope": agentscope(self)}
        made["provider"] = provider(self)
        object.__setattr__(self, "_by_fidelity", made)
        object.__setattr__(self, "variants", MappingProxyType(made))

    def variant(
        self, fidelity: str | None, error: type[FormatError] | type[ParseError] = FormatError
    ) -> Variant:
        """The variant of `fidelity`, None its `default_fidelity` (an `error`
        on `fidelity` when it has none)."""
        found = self._by_fidelity.get(fidelity or self.default_fidelity)
        if found is None:
            raise error(
                "fidelity",
                f"AgentScope 1.0.21 has no {self.name} formatter or parser; "
                "use fidelity='provider'",
            )
        return found
