"""Format and parse settings: one typed form, built once per call.

`format()`, `parse()` and `StreamParser` build these from their keyword
arguments; the gRPC servicer builds them from the request's `FormatOptions` /
`ParseOptions` messages with `format_settings_from_proto` /
`parse_settings_from_proto`, and the clients write them back with the inverse
`*_to_proto`. Providers read the typed attributes. The names
differ from the proto messages on purpose: these are the Python-side shapes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from . import _json
from ._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from .errors import FormatError, MessageFormatError, ParseError

__all__ = [
    "DEFAULT_HISTORY_PROMPT",
    "FIDELITIES",
    "FormatSettings",
    "ParseSettings",
    "default_format_settings",
    "format_settings_from_proto",
    "format_settings_to_proto",
    "parse_settings_from_proto",
    "parse_settings_to_proto",
]

DEFAULT_HISTORY_PROMPT = (
    "# Conversation History\n"
    "The content between <history></history> tags contains your conversation history\n"
)
TOKEN_COUNTERS = ("char", "tiktoken")
_PROTO_COUNTERS = {pb.TOKEN_COUNTER_CHAR: "char", pb.TOKEN_COUNTER_TIKTOKEN: "tiktoken"}
_TO_PROTO_COUNTERS = {name: value for value, name in _PROTO_COUNTERS.items()}
# "agentscope": exact AgentScope 1.0.21; "provider": bodies the provider's
# request schema accepts. Not given (None, FIDELITY_UNSPECIFIED): the
# provider's default, "agentscope" where AgentScope 1.0.21 has the provider,
# else "provider" (`Provider.default_fidelity`).
FIDELITIES = ("agentscope", "provider")
_PROTO_FIDELITIES: dict[int, str] = {
    pb.FIDELITY_AGENTSCOPE: "agentscope",
    pb.FIDELITY_PROVIDER: "provider",
}
_TO_PROTO_FIDELITIES = {"agentscope": pb.FIDELITY_AGENTSCOPE, "provider": pb.FIDELITY_PROVIDER}
# Prompt caching: "auto" places the breakpoints each provider recommends.
PROMPT_CACHES = ("auto",)
_PROTO_PROMPT_CACHES: dict[int, str | None] = {
    pb.PROMPT_CACHE_UNSPECIFIED: None,
    pb.PROMPT_CACHE_AUTO: "auto",
}


class _OptionTypeError(FormatError, TypeError):
    """An option of the wrong type (AgentScope fails with TypeError on these)."""


@dataclass(frozen=True, slots=True)
class FormatSettings:
    """How `format()` formats: AgentScope's formatter options, typed.

    A field at its default is "not given"; a provider refuses a given option
    it does not take (e.g. `promote_tool_result_audios` outside DashScope).
    """

    # Format as AgentScope's `<Provider>MultiAgentFormatter`.
    multi_agent: bool = False
    # Move tool-result media of that kind into a following user message.
    promote_tool_result_images: bool = False
    promote_tool_result_audios: bool = False
    promote_tool_result_videos: bool = False
    # Text before the first `<history>` block (multi-agent); None: AgentScope's.
    conversation_history_prompt: str | None = None
    # Token budget: the oldest messages are dropped until the messages fit
    # (not the output budget: that is `RequestParams.max_output_tokens`).
    max_tokens: int | None = None
    # "char" (AgentScope's CharTokenCounter) or "tiktoken" (with `model`).
    token_counter: str | None = None
    # Format the conversation as seen by this agent (named turns).
    agent_name: str | None = None
    # Model name, for tiktoken's encoding (the model called is `RequestParams.model`).
    model: str | None = None
    # "agentscope" (exact 1.0.21) or "provider" (bodies the provider accepts);
    # None: the provider's default (`format()` resolves it before anything reads it).
    fidelity: str | None = None
    # Structured output: a JSON Schema object the provider sends as its own
    # field (OpenAI `response_format`, Responses `text.format`, Gemini
    # `responseSchema`). Kept as a copy; left out of the hash (a dict has
    # none), which only the turn cache's scope uses and the schema does not
    # change a turn.
    response_schema: dict[str, Any] | None = field(default=None, hash=False)
    # The name the schema goes by where the provider wants one (OpenAI);
    # None: the provider's default.
    response_schema_name: str | None = None
    # "auto": prompt cache breakpoints placed as the provider recommends
    # (Anthropic: the last turn, the system prompt, the tools); None: only
    # the cache markers the messages carry.
    prompt_cache: str | None = None

    def __post_init__(self) -> None:
        _check_fidelity(self.fidelity, FormatError)
        if self.prompt_cache is not None and self.prompt_cache not in PROMPT_CACHES:
            raise FormatError(
                "prompt_cache", f"unknown mode {self.prompt_cache!r}; expected 'auto' or None"
            )
        if self.response_schema is not None:
            object.__setattr__(self, "response_schema", _schema_copy(self.response_schema))
        name = self.response_schema_name
        if name is not None:
            if not isinstance(name, str) or not name:
                raise FormatError("response_schema_name", "must be a non-empty string")
            if self.response_schema is None:
                raise FormatError("response_schema_name", "only applies with response_schema")
        for name in (
            "multi_agent",
            "promote_tool_result_images",
            "promote_tool_result_audios",
            "promote_tool_result_videos",
        ):
            if not isinstance(getattr(self, name), bool):
                raise _OptionTypeError(name, f"expected a bool, got {_kind(getattr(self, name))}")
        prompt = self.conversation_history_prompt
        if prompt is not None and not isinstance(prompt, str):
            raise _OptionTypeError(
                "conversation_history_prompt", f"expected a string, got {_kind(prompt)}"
            )
        limit = self.max_tokens
        if limit is not None and (type(limit) is not int or limit <= 0):
            raise FormatError("max_tokens", "must be a positive integer")
        if self.token_counter is not None and self.token_counter not in TOKEN_COUNTERS:
            raise FormatError(
                "token_counter",
                f"unknown token counter {self.token_counter!r}; expected 'char' or 'tiktoken'",
            )
        if self.agent_name is not None and (
            not isinstance(self.agent_name, str) or not self.agent_name
        ):
            raise FormatError("agent_name", "must be the non-empty name of the current agent")
        if self.model is not None and not isinstance(self.model, str):
            raise _OptionTypeError("model", f"expected a string, got {_kind(self.model)}")

    @classmethod
    def from_kwargs(cls, multi_agent: bool, options: Mapping[str, Any]) -> FormatSettings:
        """From `format()`'s keyword options (AgentScope constructor names)."""
        unknown = set(options) - _OPTION_NAMES
        if unknown:
            raise FormatError(
                "options",
                f"unknown option(s) {sorted(unknown)}; expected {sorted(_OPTION_NAMES)}",
            )
        if options.get("token_counter", "char") is None:
            # The old spelling of "no counter given".
            options = {k: v for k, v in options.items() if k != "token_counter"}
        return cls(multi_agent=multi_agent, **options)

    @property
    def history_prompt(self) -> str:
        """The conversation history prompt in effect."""
        prompt = self.conversation_history_prompt
        return DEFAULT_HISTORY_PROMPT if prompt is None else prompt

    def promotes(self, kind: str) -> bool:
        """Whether tool-result media of `kind` ("image", "audio", "video") is promoted."""
        if kind == "image":
            return self.promote_tool_result_images
        if kind == "audio":
            return self.promote_tool_result_audios
        if kind == "video":
            return self.promote_tool_result_videos
        return False

    @property
    def chat_walk(self) -> bool:
        """Whether the messages are formatted by one chat walk, each message
        by itself and in order: not as a multi-agent history, nor as named
        turns (which rewrite the views), nor truncated (which re-walks them)."""
        return not self.multi_agent and self.agent_name is None and self.max_tokens is None

    @property
    def resumable(self) -> bool:
        """A `chat_walk` the server's wire cache or a `Conversation` can go on
        from where it stopped: without prompt cache breakpoints, placed over
        the whole list afterwards. (Provider fidelity's pass over the body
        works on a plain copy of it, leaving the walk's messages as they are.)"""
        return self.chat_walk and self.prompt_cache is None

    def given(self) -> frozenset[str]:
        """The options set to something other than their default (`multi_agent` aside)."""
        return frozenset(
            f.name
            for f in fields(self)
            if f.name != "multi_agent" and getattr(self, f.name) != f.default
        )


_OPTION_NAMES = frozenset(f.name for f in fields(FormatSettings)) - {"multi_agent"}


@dataclass(frozen=True, slots=True)
class ParseSettings:
    """How `parse()` and `StreamParser` parse."""

    split_think_tags: bool = False
    # AgentScope's `stream_tool_parsing`: repair partial tool arguments on every
    # event (True) or only in one extra final snapshot (False).
    stream_tool_parsing: bool = True
    # The request asked for structured output (AgentScope's `structured_model`):
    # fill the result's `structured_output` as AgentScope fills `metadata`.
    structured_output: bool = False
    # The audio format the request asked for (OpenAI `audio.format`), which
    # AgentScope uses as the media type of audio output; None = its default.
    audio_format: str | None = None
    # "agentscope" (exact 1.0.21) or "provider": also keep what AgentScope
    # drops (citations, server-tool blocks, encrypted/redacted reasoning,
    # grounding), as far as the provider's parser does; None: the provider's
    # default.
    fidelity: str | None = None

    def __post_init__(self) -> None:
        _check_fidelity(self.fidelity, ParseError)


def _schema_copy(schema: object) -> dict[str, Any]:
    """A JSON Schema option checked and copied (the caller's dict may change later)."""
    if not isinstance(schema, Mapping):
        raise _OptionTypeError(
            "response_schema", f"expected a JSON Schema object, got {_kind(schema)}"
        )
    try:
        copy: dict[str, Any] = _json.loads(_json.dumps(dict(schema)))
    except MessageFormatError as exc:
        raise FormatError("response_schema", exc.reason) from None
    return copy


def _schema_from_proto(text: str) -> dict[str, Any] | None:
    if not text:
        return None
    try:
        schema = _json.loads(text, "response_schema_json")
    except MessageFormatError as exc:
        raise FormatError("response_schema_json", exc.reason) from None
    if type(schema) is not dict:
        raise FormatError("response_schema_json", f"expected a JSON object, got {_kind(schema)}")
    return schema


def _check_fidelity(fidelity: object, error: type[FormatError | ParseError]) -> None:
    if fidelity is not None and fidelity not in FIDELITIES:
        raise error(
            "fidelity", f"unknown fidelity {fidelity!r}; expected 'agentscope' or 'provider'"
        )


def _fidelity_from_proto(value: int) -> Any:
    if value == pb.FIDELITY_UNSPECIFIED:
        return None  # the provider's default
    # An enum value this build does not know is reported by the check.
    return _PROTO_FIDELITIES.get(value, value)


_DEFAULTS = FormatSettings()
_MULTI_AGENT_DEFAULTS = FormatSettings(multi_agent=True)


def default_format_settings(multi_agent: bool) -> FormatSettings:
    """The settings of a call that gives no option: one of two shared
    (frozen) objects, made once."""
    return _MULTI_AGENT_DEFAULTS if multi_agent else _DEFAULTS


def format_settings_from_proto(options: pb.FormatOptions, *, multi_agent: bool) -> FormatSettings:
    """The settings a `FormatRequest` asks for (its `options` and `multi_agent`)."""
    if not options.ListFields():
        return default_format_settings(multi_agent)  # no options: most requests
    counter: Any = None
    if options.token_counter:
        # An enum value this build does not know is reported by the check.
        counter = _PROTO_COUNTERS.get(options.token_counter, options.token_counter)
    named = options.multi_agent_style == pb.MULTI_AGENT_STYLE_NAMED_TURNS
    return FormatSettings(
        multi_agent=multi_agent,
        promote_tool_result_images=options.promote_tool_result_images,
        promote_tool_result_audios=options.promote_tool_result_audios,
        promote_tool_result_videos=options.promote_tool_result_videos,
        conversation_history_prompt=(
            options.conversation_history_prompt
            if options.HasField("conversation_history_prompt")
            else None
        ),
        max_tokens=options.max_tokens if options.HasField("max_tokens") else None,
        token_counter=counter,
        agent_name=options.agent_name if named or options.agent_name else None,
        model=options.model or None,
        fidelity=_fidelity_from_proto(options.fidelity),
        response_schema=_schema_from_proto(options.response_schema_json),
        response_schema_name=options.response_schema_name or None,
        prompt_cache=_prompt_cache_from_proto(options.prompt_cache),
    )


def _prompt_cache_from_proto(value: int) -> Any:
    # An enum value this build does not know is reported by the check.
    return _PROTO_PROMPT_CACHES.get(value, value)


def parse_settings_from_proto(options: pb.ParseOptions) -> ParseSettings:
    """The settings a `ParseRequest` / first `ParseStreamRequest` asks for."""
    return ParseSettings(
        split_think_tags=options.split_think_tags,
        stream_tool_parsing=(
            options.stream_tool_parsing if options.HasField("stream_tool_parsing") else True
        ),
        structured_output=options.structured_output,
        audio_format=options.audio_format or None,
        fidelity=_fidelity_from_proto(options.fidelity),
    )


def format_settings_to_proto(settings: FormatSettings) -> pb.FormatOptions:
    """`settings` as the `FormatOptions` message (the inverse of
    `format_settings_from_proto`, `multi_agent` aside)."""
    options = pb.FormatOptions(
        promote_tool_result_images=settings.promote_tool_result_images,
        promote_tool_result_audios=settings.promote_tool_result_audios,
        promote_tool_result_videos=settings.promote_tool_result_videos,
        model=settings.model or "",
    )
    if settings.conversation_history_prompt is not None:
        options.conversation_history_prompt = settings.conversation_history_prompt
    if settings.max_tokens is not None:
        options.max_tokens = settings.max_tokens
    if settings.token_counter is not None:
        options.token_counter = _TO_PROTO_COUNTERS[settings.token_counter]
    if settings.agent_name is not None:
        options.agent_name = settings.agent_name
        options.multi_agent_style = pb.MULTI_AGENT_STYLE_NAMED_TURNS
    if settings.fidelity is not None:
        options.fidelity = _TO_PROTO_FIDELITIES[settings.fidelity]
    if settings.response_schema is not None:
        options.response_schema_json = _json.dumps(settings.response_schema)
    if settings.response_schema_name is not None:
        options.response_schema_name = settings.response_schema_name
    if settings.prompt_cache == "auto":
        options.prompt_cache = pb.PROMPT_CACHE_AUTO
    return options


def parse_settings_to_proto(settings: ParseSettings) -> pb.ParseOptions:
    """`settings` as the `ParseOptions` message (the inverse of
    `parse_settings_from_proto`)."""
    options = pb.ParseOptions(
        split_think_tags=settings.split_think_tags,
        structured_output=settings.structured_output,
        audio_format=settings.audio_format or "",
    )
    if not settings.stream_tool_parsing:
        options.stream_tool_parsing = False
    if settings.fidelity is not None:
        options.fidelity = _TO_PROTO_FIDELITIES[settings.fidelity]
    return options


def _kind(value: object) -> str:
    return type(value).__name__
