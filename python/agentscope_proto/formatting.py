"""`format()`: messages to the request body of a provider's API.

The message list equals AgentScope 1.0.21's `<Provider>ChatFormatter` (or
`<Provider>MultiAgentFormatter`) output, and tools / tool choice equal what the
matching AgentScope model class sends. The body holds only the provider's own
fields; warnings and the token count travel beside it as attributes of the
returned `FormattedBody` (a `dict`).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from . import _json
from ._generated.agentscope.message.v1.message_pb2 import Msg, Role
from .dialects import from_dict
from .errors import FormatError, MessageFormatError
from .message._codec import blocks_to_list
from .providers import get_provider
from .providers._base import FormatContext, FormatWarning, MsgView

__all__ = ["FormattedBody", "count_chars", "format"]

_ROLE_NAMES = {
    Role.ROLE_USER: "user",
    Role.ROLE_ASSISTANT: "assistant",
    Role.ROLE_SYSTEM: "system",
    # AgentScope 1.x carries tool results in system messages.
    Role.ROLE_TOOL: "system",
}
_COMMON_OPTIONS = frozenset({"max_tokens", "token_counter", "agent_name", "model"})


class FormattedBody(dict[str, Any]):
    """The request body to send (a plain `dict` of the provider's fields).

    `warnings` lists the blocks dropped on the way; `token_count` is the count
    of the formatted messages when a token counter was given.
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


def _view(msg: Msg | Mapping[str, Any], index: int) -> MsgView:
    try:
        # `type() is` first: the ABC check of `Mapping` is slow, and protobuf
        # `Msg`s are the common input.
        if type(msg) is not Msg:
            if isinstance(msg, Mapping):
                msg = from_dict(msg)
            elif not isinstance(msg, Msg):
                raise FormatError(
                    f"messages[{index}]",
                    f"expected a Msg or a message dict, got {type(msg).__name__}",
                )
        content: str | list[dict[str, Any]]
        if msg.WhichOneof("content") == "text":
            content = msg.text
        else:
            content = blocks_to_list(msg.blocks.items)
    except MessageFormatError as exc:
        raise MessageFormatError(f"messages[{index}].{exc.path}".rstrip("."), exc.reason) from None
    role = _ROLE_NAMES.get(msg.role)
    if role is None:
        raise FormatError(f"messages[{index}].role", "unset")
    name = msg.name if msg.HasField("name") else None
    return MsgView(name, role, content, index)


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


def _counter(name: Any, model: str | None) -> Any:
    if name in (None, "char"):
        return count_chars
    if name == "tiktoken":
        from ._tokens import tiktoken_counter

        return tiktoken_counter(model)
    raise FormatError(
        "token_counter", f"unknown token counter {name!r}; expected 'char' or 'tiktoken'"
    )


def format(
    msgs: Iterable[Msg | Mapping[str, Any]],
    provider: str,
    *,
    multi_agent: bool = False,
    tools: Sequence[Mapping[str, Any]] | None = None,
    tool_choice: str | None = None,
    media_root: str | Path | None = None,
    allow_download: bool = False,
    write_media: bool = False,
    **options: Any,
) -> FormattedBody:
    """Format messages into the request body of `provider`'s API.

    Args:
        msgs: `Msg`s or AgentScope message dicts, oldest first.
        provider: `"openai"`, `"anthropic"`, `"gemini"`, `"dashscope"`,
            `"ollama"`, `"deepseek"` or `"openai_responses"`.
        multi_agent: Format as AgentScope's `<Provider>MultiAgentFormatter`.
        tools: OpenAI-style function tool schemas.
        tool_choice: `"auto"`, `"none"`, `"required"` or a tool name.
        media_root: Allow reading local media files under this directory.
        allow_download: Allow downloading http(s) media (in-process only).
        write_media: Write base64 tool-result media to the cited temp paths.
        **options: AgentScope formatter options (`promote_tool_result_images`,
            `conversation_history_prompt`, `max_tokens` with
            `token_counter="char"` or `"tiktoken"` (and `model=`), ...), and
            `agent_name=`: format the conversation as seen by that agent, its
            own messages as assistant turns and every other agent's as user
            turns `"[Name]: text"` (the seeds' multi-agent style).

    Raises:
        UnknownProviderError: `provider` is not known.
        FormatError: the messages cannot be formatted (the error names where).
        MediaAccessError: media would need file or network access not allowed.
    """
    impl = get_provider(provider)
    unknown = set(options) - impl.options - _COMMON_OPTIONS
    if unknown:
        raise FormatError(
            "options",
            f"unknown option(s) {sorted(unknown)} for {impl.name}; "
            f"expected {sorted(impl.options | _COMMON_OPTIONS)}",
        )
    views = [_view(msg, index) for index, msg in enumerate(msgs)]
    agent_name = options.get("agent_name")
    if agent_name is not None:
        if not isinstance(agent_name, str) or not agent_name:
            raise FormatError("agent_name", "must be the non-empty name of the current agent")
        # The named-turns style is a chat conversation seen from one agent.
        views = _named_turns(views, agent_name)
        multi_agent = False
    if not multi_agent and "conversation_history_prompt" in options:
        # Only multi-agent (history-style) formatters take it, as in AgentScope;
        # checked here once for every provider.
        raise FormatError("conversation_history_prompt", "only applies with multi_agent=True")
    ctx = FormatContext(
        options=options,
        media_root=Path(media_root) if media_root is not None else None,
        allow_download=allow_download,
        write_media=write_media,
    )
    max_tokens = options.get("max_tokens")
    if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens <= 0):
        raise FormatError("max_tokens", "must be a positive integer")
    counter = (
        _counter(options["token_counter"], options.get("model"))
        if "token_counter" in options
        else None
    )
    while True:
        ctx.warnings.clear()
        messages = impl.format_messages(views, ctx, multi_agent=multi_agent)
        count = counter(messages) if counter else None
        if count is None or max_tokens is None or count <= max_tokens:
            break
        views = _truncate(views, max_tokens)
    tool_list = None
    if tools is not None:
        if isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Sequence):
            raise FormatError(
                "tools", f"expected a list of tool schemas, got {type(tools).__name__}"
            )
        for index, tool in enumerate(tools):
            if not isinstance(tool, Mapping):
                raise FormatError(
                    f"tools[{index}]", f"expected an object, got {type(tool).__name__}"
                )
        tool_list = [dict(tool) for tool in tools]
    body = impl.build_body(messages, tool_list, tool_choice, ctx)
    return FormattedBody(body, list(ctx.warnings), count)


def body_to_json(body: Mapping[str, Any]) -> bytes:
    """A formatted body as UTF-8 JSON; `bytes` values become base64 text
    (Gemini's `thought_signature`, as its REST API expects).

    The server's hot path: orjson writes the same compact UTF-8 text as `json`
    (in a tenth of the time). What orjson refuses (integers beyond 64 bits,
    non-string keys, lone surrogates, nesting past 255 levels) goes through
    `_json.dumps`, which accepts or reports it as before. orjson writes NaN and
    infinities as `null` where `_json` refuses them; no body the server makes
    holds one, because every JSON field of a request is decoded strictly.
    """
    try:
        return orjson.dumps(body, default=_base64)
    except orjson.JSONEncodeError:
        return _json.dumps(_jsonable(body), "body").encode("utf-8")


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
