"""`format()`: messages to the request body of a provider's API.

The message list equals AgentScope 1.0.21's `<Provider>ChatFormatter` (or
`<Provider>MultiAgentFormatter`) output, and tools / tool choice equal what the
matching AgentScope model class sends. The body holds only the provider's own
fields; warnings and the token count travel beside it as attributes of the
returned `FormattedBody` (a `dict`). Options arrive as one `FormatSettings`.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from ._core import Walked
from ._engine.body import body_to_json
from ._engine.entries import runs_key
from ._engine.views import (
    MsgView,
    cached_view,
    keyed_views,
    message_from_input,
    message_metadata,
    wire_views,
)
from ._engine.views import view as _view
from ._engine.walk import TurnCache, settings_scope
from ._generated.agentscope.formatter.v1.formatter_service_pb2 import FormatWarning
from ._generated.agentscope.message.v1.message_pb2 import Msg
from ._wire import WireMessages
from .cache import FormatCache
from .errors import FormatError
from .options import FormatSettings, default_format_settings
from .providers import get_provider
from .providers._context import FormatContext
from .providers._provider import ProviderFidelity, Variant
from .providers._runs import PassedRuns, body_in_runs
from .request import RequestParams, write_request

__all__ = [
    "FormatSettings",
    "FormatWarning",
    "FormattedBody",
    "body_to_json",
    "check_history_prompt",
    "check_tools",
    "count_chars",
    "counter_for",
    "format",
    "message_from_input",
    "resolve_settings",
]

# Options every provider takes (the rest are AgentScope formatter options a
# provider declares in `options`).
_COMMON_OPTIONS = frozenset(
    {"max_tokens", "token_counter", "agent_name", "model", "fidelity", "prompt_cache"}
)


class FormattedBody(dict[str, Any]):
    """The request body to send: exactly the provider's fields, nothing else.

    `warnings` (`FormatWarning` messages: the blocks dropped on the way) and
    `token_count` (of the formatted messages, when a token counter was given)
    travel beside the body as attributes, never as body keys. `copy`,
    `deepcopy` and `pickle` keep them; `dict(body)` and JSON give the bare
    body, by design: that is what goes on the wire.
    """

    warnings: list[FormatWarning]
    token_count: int | None

    def __init__(
        self,
        body: Mapping[str, Any],
        warnings: list[FormatWarning],
        token_count: int | None,
    ) -> None:
        super().__init__(body)
        self.warnings = warnings
        self.token_count = token_count

    @property
    def body(self) -> dict[str, Any]:
        """The body as a plain dict."""
        return dict(self)

    def __copy__(self) -> FormattedBody:
        return FormattedBody(self, list(self.warnings), self.token_count)

    def __deepcopy__(self, memo: dict[int, Any]) -> FormattedBody:
        return FormattedBody(
            copy.deepcopy(dict(self), memo), copy.deepcopy(self.warnings, memo), self.token_count
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # Warnings travel as their wire bytes: the generated classes' module
        # path is not importable under its proto name, which pickle needs.
        wire = [warning.SerializeToString() for warning in self.warnings]
        return (_unpickle_body, (dict(self), wire, self.token_count))


def _unpickle_body(
    body: dict[str, Any], wire: list[bytes], token_count: int | None
) -> FormattedBody:
    return FormattedBody(body, [FormatWarning.FromString(data) for data in wire], token_count)


def check_tools(tools: Any) -> list[dict[str, Any]] | None:
    """Tool schemas checked once, before any provider sees them.

    Each is an OpenAI-style function tool `{"type": "function", "function":
    {"name": <non-empty str>, ...}}`; a `FormatError` names `tools[i]...`
    otherwise. An unwrapped schema (neither `type` nor `function`) is left to
    the provider: AgentScope passes it through for some and rejects it for
    others, and the golden cases pin both.
    """
    if tools is None:
        return None
    if isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Sequence):
        raise FormatError("tools", f"expected a list of tool schemas, got {type(tools).__name__}")
    checked = []
    for index, tool in enumerate(tools):
        path = f"tools[{index}]"
        if not isinstance(tool, Mapping):
            raise FormatError(path, f"expected an object, got {type(tool).__name__}")
        if "type" in tool or "function" in tool:
            if tool.get("type") != "function":
                raise FormatError(f"{path}.type", 'must be "function"')
            function = tool.get("function")
            if not isinstance(function, Mapping):
                raise FormatError(f"{path}.function", "expected an object with a 'name'")
            name = function.get("name")
            if not isinstance(name, str) or not name:
                reason = "missing" if name is None else "must be a non-empty string"
                raise FormatError(f"{path}.function.name", reason)
        checked.append(dict(tool))
    return checked


def _named_turns(msgs: list[MsgView], agent_name: str) -> list[MsgView]:
    """The seeds' multi-agent style: `agent_name`'s messages stay assistant turns,
    every other agent's become user turns with text prefixed `[Name]: `."""
    out = []
    for msg in msgs:
        if msg.role == "system" or msg.has_tool_blocks():
            out.append(msg)
        elif msg.name == agent_name:
            out.append(MsgView(msg.name, "assistant", msg.content, msg.index))
        else:
            prefix = f"[{msg.name}]: "
            content: str | list[dict[str, Any]]
            if isinstance(msg.content, str):
                content = prefix + msg.content
            else:
                content = [
                    {**b, "text": prefix + b["text"]} if b.get("type") == "text" else b
                    for b in msg.content
                ]
            out.append(MsgView(msg.name, "user", content, msg.index))
    return out


def count_chars(messages: Sequence[Any]) -> int:
    """AgentScope's `CharTokenCounter`: the length of the messages' text form."""
    return len("\n".join(str(message) for message in messages))


def _truncate(msgs: list[MsgView], max_tokens: int) -> list[MsgView]:
    """AgentScope's `TruncatedFormatterBase._truncate`.

    Drops the oldest messages (after a leading system message) up to the first
    point where every tool call seen so far has its result.
    """
    start = 1 if msgs and msgs[0].role == "system" else 0
    if start and len(msgs) == 1:
        raise FormatError(
            "messages[0]",
            f"the system prompt message already exceeds the token limit ({max_tokens} tokens)",
        )
    pending: set[str] = set()
    for i in range(start, len(msgs)):
        for block in msgs[i].get_content_blocks("tool_use"):
            pending.add(block["id"])
        for block in msgs[i].get_content_blocks("tool_result"):
            pending.discard(block["id"])
        if not pending:
            return msgs[:start] + msgs[i + 1 :]
    if pending:
        raise FormatError(
            "messages",
            f"tool call(s) without a corresponding tool result: {sorted(pending)}; "
            "cannot truncate without splitting them",
        )
    return msgs[:start]


def counter_for(
    settings: FormatSettings, variant: Variant | None = None
) -> Callable[[list[Any]], int] | None:
    """The token counter `settings` names (called on the formatted
    messages, as `variant` has them counted), or None."""
    if settings.token_counter is None:
        return None
    counter: Callable[[list[Any]], int] = count_chars
    if settings.token_counter == "tiktoken":
        from ._tokens import tiktoken_counter

        counter = tiktoken_counter(settings.model)
    if variant is None or not variant.recounts:
        return counter
    counted = variant.counted
    return lambda messages: counter(counted(messages))


def provider_first(
    provider: str, msgs: Iterable[Msg | Mapping[str, Any]], call: str
) -> tuple[str, Iterable[Msg | Mapping[str, Any]]]:
    """`(provider, msgs)`, accepting the old `(msgs, provider)` order with a warning.

    The old order is recognised by its types: a provider name is a `str`,
    messages never are.
    """
    if not isinstance(provider, str) and isinstance(msgs, str):
        warnings.warn(
            f"{call}(msgs, provider) is deprecated; use {call}(provider, msgs)",
            DeprecationWarning,
            stacklevel=3,
        )
        return msgs, provider
    return provider, msgs


@functools.lru_cache(maxsize=256)
def _given(settings: FormatSettings) -> frozenset[str]:
    """`settings.given()`, remembered: a server sees the same few settings
    on every request (a pure function of frozen settings)."""
    return settings.given()


def resolve_settings(
    impl: Any, multi_agent: bool, settings: FormatSettings | None, options: Mapping[str, Any]
) -> FormatSettings:
    """The settings of one call: `settings`, or the keyword options as
    `FormatSettings`; a `FormatError` names an option `impl` does not take."""
    if settings is None:
        if options or type(multi_agent) is not bool:
            settings = FormatSettings.from_kwargs(multi_agent, options)
        else:
            settings = default_format_settings(multi_agent)
    elif options or multi_agent:
        raise FormatError("settings", "give either settings= or the keyword options, not both")
    unknown = _given(settings) - impl.options - _COMMON_OPTIONS
    if unknown:
        raise FormatError(
            "options",
            f"unknown option(s) {sorted(unknown)} for {impl.name}; "
            f"expected {sorted(impl.options | _COMMON_OPTIONS)}",
        )
    if settings.fidelity is None:
        settings = _with_fidelity(settings, impl.default_fidelity)
    return settings


@functools.lru_cache(maxsize=256)
def _with_fidelity(settings: FormatSettings, fidelity: str) -> FormatSettings:
    """`settings` with the provider's default fidelity in place of None (so the
    cache's scope and `resumable` see the fidelity the call runs in)."""
    return dataclasses.replace(settings, fidelity=fidelity)


def check_history_prompt(settings: FormatSettings) -> None:
    """Only multi-agent (history-style) formatters take a conversation
    history prompt, as in AgentScope (the named-turns style is a chat)."""
    multi_agent = settings.multi_agent and settings.agent_name is None
    if not multi_agent and settings.conversation_history_prompt is not None:
        raise FormatError("conversation_history_prompt", "only applies with multi_agent=True")


def format(
    provider: str,
    msgs: Iterable[Msg | Mapping[str, Any]],
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
    _wire: WireMessages | None = None,
    **options: Any,
) -> FormattedBody:
    """Format messages into the request body of `provider`'s API.

    Args:
        provider: A registered provider name (`PROVIDERS`, one per value of
            the proto enum `Provider`): `"openai"`, `"anthropic"`, `"zhipu"`...
        msgs: `Msg`s or AgentScope message dicts, oldest first.
        multi_agent: Format as AgentScope's `<Provider>MultiAgentFormatter`.
        tools: OpenAI-style function tool schemas.
        tool_choice: `"auto"`, `"none"`, `"required"` or a tool name.
        media_root: Allow reading local media files under this directory.
        allow_download: Allow downloading http(s) media (in-process only).
        write_media: Write base64 tool-result media to the cited temp paths.
        settings: `multi_agent` and the options below as one `FormatSettings`
            (what the gRPC servicer passes), instead of the keywords.
        cache: A `FormatCache` to reuse the work done on messages seen
            before (an agent re-sending its history); None: no caching. The
            output is the same either way.
        request: The model call's parameters (`RequestParams` or a dict of
            its names: `model`, `max_output_tokens`, `temperature`, `top_p`,
            `stop`, `seed`, `stream`, `extra_body`), written into the body
            where the provider's API takes them (docs/request-params.md); a
            parameter it does not take is a `FormatError`. None: the body
            is the formatted conversation alone, as AgentScope's.
        _wire: The server's: the messages' bytes as received (with
            `cache`), by which cached turns and runs of turns are found and
            whose JSON `body_to_json` reuses.
        **options: AgentScope formatter options (`promote_tool_result_images`,
            `conversation_history_prompt`, `max_tokens` with
            `token_counter="char"` or `"tiktoken"` (and `model=`), ...), and
            `agent_name=`: format the conversation as seen by that agent, its
            own messages as assistant turns and every other agent's as user
            turns `"[Name]: text"` (the seeds' multi-agent style), and
            `fidelity=`: `"agentscope"` (exact AgentScope 1.0.21) or
            `"provider"` (the provider API's own: what a provider-fidelity
            parse kept goes back, and the body is adapted so the provider's
            request schema accepts it; each change is a warning, see
            `ProviderFidelity` in providers/_provider.py); not given, the
            provider's `default_fidelity`: `"agentscope"` where AgentScope
            1.0.21 has the provider, else `"provider"`.

    `format(msgs, provider)`, the earlier argument order, still works and
    warns (`DeprecationWarning`).

    Raises:
        UnknownProviderError: `provider` is not known.
        FormatError: the messages cannot be formatted (the error names where).
        MediaAccessError: media would need file or network access not allowed.
    """
    provider, msgs = provider_first(provider, msgs, "format")
    impl = get_provider(provider)
    settings = resolve_settings(impl, multi_agent, settings, options)
    variant = impl.variant(settings.fidelity)
    if cache is not None and not isinstance(cache, FormatCache):
        raise FormatError("cache", f"expected a FormatCache or None, got {type(cache).__name__}")
    params = RequestParams.of(request)
    if type(msgs) is not list and not isinstance(msgs, Sequence):
        # Read twice in provider fidelity: for the views, then for what the
        # body takes from the messages' metadata.
        msgs = list(msgs)
    model = params.model if params is not None else None
    walked = _compiled(impl, variant, settings, msgs, cache, _wire)
    views: list[MsgView] = []
    turns = None
    if walked is None:
        views, turns = _views(msgs, impl.name, settings, cache, _wire, model)
    given = views
    multi_agent = settings.multi_agent and settings.agent_name is None
    if settings.agent_name is not None:
        # The named-turns style is a chat conversation seen from one agent.
        views = _named_turns(views, settings.agent_name)
    views = variant.arrange(views)
    check_history_prompt(settings)
    tool_list = check_tools(tools)
    ctx = FormatContext(
        settings=settings,
        model=model,
        media_root=Path(media_root) if media_root is not None else None,
        allow_download=allow_download,
        write_media=write_media,
        # Chat turns only: a multi-agent history turns runs of messages into one.
        turns=None if multi_agent else turns,
    )
    if walked is None:
        messages, count = _walk(variant, views, ctx, multi_agent)
    else:
        messages, count = walked[0], walked[2]
        for path, block_type, text in walked[1]:
            ctx.warn_at(path, block_type, text)
    body = None
    if _wire is not None and turns is not None and settings.resumable:
        turns.keep_walk(_wire, messages, ctx.warnings, ctx.at_message, ctx.at_block)
        if cache is not None and isinstance(variant, ProviderFidelity) and variant.segmented:
            where = (cache, turns, _wire)
            body = _passed_in_runs(
                variant, messages, msgs, given, ctx, where, tool_list, tool_choice
            )
    if body is None:
        body = variant.build_body(messages, tool_list, tool_choice, ctx)
        body = variant.finalize(body, ctx, msgs, given)
    if settings.prompt_cache is not None:
        body = variant.with_breakpoints(body, ctx)
    if params is not None:
        write_request(body, params, impl.request_fields, impl.name)
    return FormattedBody(body, list(ctx.warnings), count)


def _passed_in_runs(
    variant: ProviderFidelity,
    messages: list[dict[str, Any]],
    msgs: Sequence[Msg | Mapping[str, Any]],
    given: list[MsgView],
    ctx: FormatContext,
    where: tuple[FormatCache, TurnCache, WireMessages],
    tools: list[dict[str, Any]] | None,
    tool_choice: str | None,
) -> dict[str, Any] | None:
    """The server's body for a variant whose pass goes in runs: the runs the
    last request of the conversation passed (kept in `cache` beside its
    walk) taken as they are where this request's walk starts with the same
    messages, only what follows them passed. None where a message would
    have JSON only the slow encoder writes (then the whole body is passed).
    `where`: the cache, the walk's view of it, the request's messages."""
    cache, turns, wire = where
    if wire.first is None:
        return None
    key = runs_key(turns.scope, wire.first)
    record = cache.get(key)
    # A copy of its own: another request may be reading the one kept.
    runs = record.copy() if isinstance(record, PassedRuns) else PassedRuns()
    body = body_in_runs(
        variant,
        runs,
        messages,
        lambda walked: variant.build_body(walked, tools, tool_choice, ctx),
        lambda: runs.screened_from(
            lambda start: variant.screened(msgs, ctx.warnings, start, given, model=ctx.model),
            ctx.warnings,
            wire,
            len(msgs),
        ),
        ctx.warnings,
        message_metadata(msgs),
    )
    if body is not None:
        cache.put(key, runs, runs.size() + len(wire.first))
    return body


def _views(
    msgs: Sequence[Msg | Mapping[str, Any]],
    provider: str,
    settings: FormatSettings,
    cache: FormatCache | None,
    wire: WireMessages | None,
    model: str | None,
) -> tuple[list[MsgView], TurnCache | None]:
    """The views of `msgs`, and the cache as their chat walk sees it (its
    turns are the request's for `model`: a signature goes back to its model).

    Without a cache, each view is built. With one: the server's messages
    (`wire`, a resumable chat walk) are found by the bytes each arrived as,
    their turns stored with their JSON, and the walk goes on from where the
    last request of the same conversation ended (shared objects, safe because
    the server only encodes the body, and provider fidelity's pass edits a
    plain copy of it; truncation re-walks the list: it does not get them); a
    chat walk over `Msg`s
    looks each message's turn up by its content, all at once, and replays it
    without building its view; anything else reuses cached views.
    """
    if cache is None:
        return [_view(msg, index) for index, msg in enumerate(msgs)], None
    scope = settings_scope(cache, provider, settings, model)
    if wire is not None and settings.resumable:
        turns = TurnCache.for_wire(cache, scope, wire)
        if len(wire) != len(msgs):
            raise ValueError("_wire does not hold the messages given")  # a server bug
        return wire_views(msgs, wire, cache, scope), turns
    views: list[MsgView]
    if settings.chat_walk and all(type(msg) is Msg for msg in msgs):
        views = keyed_views(cast(Sequence[Msg], msgs), cache, scope)
    else:
        views = [cached_view(msg, index, cache) for index, msg in enumerate(msgs)]
    return views, TurnCache(cache, scope)


# Options that leave a chat walk as it is (they act on the body around it).
_WALK_NEUTRAL = frozenset(
    {
        "fidelity",
        "model",
        "response_schema",
        "response_schema_name",
        # Counted after the walk; a walk over the budget goes to Python (`_compiled`).
        "max_tokens",
        "token_counter",
        # Promotion acts on media in tool results, which every core walk leaves to Python.
        "promote_tool_result_images",
        "promote_tool_result_audios",
        "promote_tool_result_videos",
    }
)
# A multi-agent walk takes its history prompt (the core writes it as given).
_HISTORY_NEUTRAL = _WALK_NEUTRAL | {"conversation_history_prompt"}


def _compiled(
    impl: Any,
    variant: Variant,
    settings: FormatSettings,
    msgs: Sequence[Msg | Mapping[str, Any]],
    cache: FormatCache | None,
    wire: WireMessages | None,
) -> tuple[list[dict[str, Any]], list[tuple[str, str, str]], int | None] | None:
    """The compiled core's walk of `msgs` (`_core`) and its token count, where
    the provider has one for this variant and the call is a cold walk it
    takes; else None (the Python walk). A walk over the token budget is given
    back: truncating re-walks the views, the Python walk's own loop."""
    walk = impl.compiled
    if walk is None or cache is not None or wire is not None:
        return None
    if variant is not impl.variants.get("agentscope"):
        return None
    if settings.multi_agent:
        neutral, prompt = _HISTORY_NEUTRAL, settings.history_prompt
    else:
        neutral, prompt = _WALK_NEUTRAL, None
    walked: Walked | None = walk(impl.name, msgs, _given(settings) <= neutral, prompt)
    if walked is None:
        return None
    counter = counter_for(settings, variant)
    count = counter(walked[0]) if counter else None
    if count is not None and settings.max_tokens is not None and count > settings.max_tokens:
        walk.give_back(impl.name, "truncated")
        return None
    return walked[0], walked[1], count


def _walk(
    variant: Variant, views: list[MsgView], ctx: FormatContext, multi_agent: bool
) -> tuple[list[dict[str, Any]], int | None]:
    """The provider's message list and its token count (when counted): the
    oldest messages dropped until it fits the token budget."""
    max_tokens = ctx.settings.max_tokens
    counter = counter_for(ctx.settings, variant)
    while True:
        ctx.warnings.clear()
        messages = variant.format_messages(views, ctx, multi_agent=multi_agent)
        count = counter(messages) if counter else None
        if count is None or max_tokens is None or count <= max_tokens:
            return messages, count
        views = _truncate(views, max_tokens)
