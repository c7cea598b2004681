"""Zhipu's GLM: its Chat Completions API (`POST /api/paas/v4/chat/completions`
at open.bigmodel.cn, or api.z.ai), as `zai-sdk` calls it. AgentScope 1.0.21
has no GLM formatter, so there is only the provider variant, `Zhipu`, the
family's `ChatCompletions` (openai.py) with GLM's quirks:

- thinking: a request parameter, `thinking: {"type": "enabled" | "disabled"}`
  (with `clear_thinking: false` to keep earlier turns' reasoning, through
  `extra_body`); GLM returns its reasoning as `reasoning_content` and wants
  it back with the tool results of a tool loop (interleaved and preserved
  thinking): it goes back there; another provider's thinking is dropped
  with a warning.
- messages as GLM's API reference has them: system, assistant and tool
  content is a string (text parts joined), user content a string or parts
  (text, images, videos, files); no `name` on any message (GLM's formatter
  writes none).
- video and documents (GLM-4.5V, GLM-4.6V): GLM's reference documents
  `video_url` and `file_url` parts by URL only (images alone as "URL or
  base64"), so a video or a document (`data` block: PDF, Word, Excel,
  PowerPoint, plain text) given by web URL goes as that part, and one given
  inline or as a local file is dropped with a warning (GLM reads files
  through its file API, not inline).
- tool choice: GLM takes only `"auto"`: `"required"` or a named tool becomes
  `"auto"`, `"none"` sends no tools, each with a warning.
- structured output: GLM's `response_format` is `{"type": "json_object"}`:
  a JSON Schema is not enforced (a warning says so).
- usage: cached prompt tokens and reasoning tokens where OpenAI reports them.
- audio is not GLM's chat's (dropped with a warning, or a text note in a
  multi-agent history); documents of other types are refused.

Request parameters: `max_tokens`, `temperature`, `top_p`, `stop`, `seed`,
`stream` as `zai-sdk`'s `chat.completions.create` takes them; GLM's own
(`thinking`, `tool_stream`, `do_sample`, ...) go in `extra_body`.
"""

from __future__ import annotations

from typing import Any

from .._generated.agentscope.formatter.v1.formatter_service_pb2 import PROVIDER_ZHIPU
from ..request import RequestFields
from ._adapt import Json, Notes
from ._provider import UNKNOWN_TO_AGENTSCOPE, Provider
from ._turns import Handler, Turn, TurnTable, skipped_block, tool_result_handler
from .openai import CHAT_OPTIONS, ChatCompletions

__all__ = ["PROVIDER", "Zhipu"]

Block = dict[str, Any]
_PARTS = frozenset({"text", "image_url", "video_url", "file_url"})
# The documents GLM's `file_url` reads, by its API reference.
DOCUMENT_TYPES = frozenset(
    {
        "application/pdf",
        "text/plain",
        "application/msword",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "application/vnd.ms-excel",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "application/vnd.ms-powerpoint",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    }
)
# Roles whose content GLM takes as a string only.
_STRING_ROLES = ("system", "assistant", "tool")


def _no_audio(turn: Turn, index: int, block: Block) -> None:
    turn.ctx.warn(turn.msg, index, "audio", skipped_block("audio") + " GLM takes no audio input.")


def _web_url(turn: Turn, block: Block) -> str | None:
    source = block["source"]
    if source["type"] == "url" and turn.ctx.is_web_url(source["url"]):
        url: str = source["url"]
        return url
    return None


def _by_url(part: str) -> Handler:
    """A handler sending a block given by web URL as GLM's `part`
    (`video_url`, `file_url`), and dropping inline or local ones with a warning."""

    def handle(turn: Turn, index: int, block: Block) -> None:
        url = _web_url(turn, block)
        if url is None:
            kind = block["type"]
            why = f" GLM's {part} takes a web URL, not inline or local data."
            turn.ctx.warn(turn.msg, index, kind, skipped_block(kind) + why)
            return
        turn.parts.append({"type": part, part: {"url": url}})

    return handle


def _finish(turn: Turn) -> None:
    start = len(turn.out)
    ChatCompletions.turns.finish(turn)
    for message in turn.out[start:]:
        message.pop("name", None)


def _tool_message(block: Block, text: str) -> Block:
    """GLM's tool message: the result for a call id, no name."""
    return {"role": "tool", "tool_call_id": block.get("id"), "content": text}


_TURNS = TurnTable(
    {
        **ChatCompletions.turns.handlers,
        "audio": _no_audio,
        "video": _by_url("video_url"),
        "data": _by_url("file_url"),
        "tool_result": tool_result_handler(_tool_message),
    },
    _finish,
)


def _string_content(messages: list[Any]) -> None:
    """System, assistant and tool content as one string (their parts are
    text by now: the family's pass turned anything else into a text note)."""
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in _STRING_ROLES:
            continue
        content = message.get("content")
        if isinstance(content, list):
            texts = [part.get("text", "") for part in content if isinstance(part, dict)]
            joined = "\n".join(texts)
            message["content"] = joined if joined or not message.get("tool_calls") else None


def _tool_choice(body: Json, note: Notes) -> None:
    choice = body.get("tool_choice")
    if choice is None or choice == "auto":
        return
    if choice == "none":
        body.pop("tools", None)
        del body["tool_choice"]
        note("tool_choice", "tool", 'GLM takes only "auto": tool_choice "none" sends no tools')
        return
    body["tool_choice"] = "auto"
    note("tool_choice", "tool", f'GLM takes only "auto": {choice!r} became "auto"')


def _response_format(body: Json, note: Notes) -> None:
    form = body.get("response_format")
    if isinstance(form, dict) and form.get("type") == "json_schema":
        body["response_format"] = {"type": "json_object"}
        note(
            "response_format",
            "response_format",
            "GLM takes json_object only: the JSON Schema is not enforced",
        )


class Zhipu(ChatCompletions):
    """GLM's Chat Completions (see the module's docstring)."""

    turns = _TURNS

    chat_parts = _PARTS

    def pass_messages(self, messages: list[Block], note: Notes, start: int = 0) -> list[Block]:
        kept = super().pass_messages(messages, note, start)
        _string_content(kept)
        return kept

    def pass_rest(self, body: Block, note: Notes) -> None:
        super().pass_rest(body, note)
        _tool_choice(body, note)
        _response_format(body, note)


# `zai-sdk`'s `create`: `max_tokens` and `seed`.
_REQUEST_FIELDS = RequestFields(
    model="model",
    max_output_tokens="max_tokens",
    temperature="temperature",
    top_p="top_p",
    stop="stop",
    seed="seed",
    stream="stream",
)

PROVIDER = Provider(
    enum=PROVIDER_ZHIPU,
    options=CHAT_OPTIONS,
    formatted_blocks=frozenset({"text", "thinking", "tool_use", "tool_result", "image", "video"}),
    dropped_blocks=frozenset({"audio", "opaque"}) | UNKNOWN_TO_AGENTSCOPE,
    framing="sse",
    request_fields=_REQUEST_FIELDS,
    # By URL (`file_url`) only: inline ones are dropped with a warning.
    document_types=DOCUMENT_TYPES,
    agentscope=None,
    provider=Zhipu,
)
