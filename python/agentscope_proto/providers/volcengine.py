"""Volcengine Ark (Doubao and the models Ark hosts): its Chat Completions API
(`POST /api/v3/chat/completions` at ark.cn-beijing.volces.com), as the
`volcengine-python-sdk[ark]` runtime (`volcenginesdkarkruntime`) types it.
AgentScope 1.0.21 has no Ark formatter, so there is only the provider
variant, `Volcengine`, the family's `ChatCompletions` (openai.py) with Ark's
quirks:

- thinking: a request parameter, `thinking: {"type": "enabled" | "disabled" |
  "auto"}` (through `extra_body`); Ark returns the reasoning as
  `reasoning_content`, which goes back on the assistant turns it came with
  (Ark documents the field as optional there; another provider's thinking is
  dropped with a warning). Ark's response types also carry an
  `encrypted_content` (encrypted reasoning): kept on the thinking block as
  `ark_encrypted_content` (its own key, so that no other provider mistakes
  it for its own), and not sent back, with a warning: Ark's request messages
  have no field for it.
- usage: cached prompt tokens and reasoning tokens where OpenAI reports them.
- content: text, images (`image_url`), video (`video_url`: a web URL as it
  is, inline or local video as a data URL; a video block's `fps` key, Ark's
  sampling rate, goes as `video_url.fps`) and audio (`input_audio`: a web
  URL as Ark's `input_audio.url`, not downloaded; inline or local audio as
  data, wav or mp3, as OpenAI's); tool messages keep their `name` (Ark's
  type has it); documents are refused (Ark's chat messages have no file
  part).

Request parameters: `max_tokens`, `temperature`, `top_p`, `stop`, `stream`
as the SDK's `create` takes them, no `seed`; Ark's own (`thinking`,
`reasoning_effort`, `max_completion_tokens`, ...) go in `extra_body`.
"""

from __future__ import annotations

from typing import Any

from .._generated.agentscope.formatter.v1.formatter_service_pb2 import PROVIDER_VOLCENGINE
from ..errors import FormatError
from ..options import ParseSettings
from ..request import RequestFields
from ._parse import expect
from ._provider import UNKNOWN_TO_AGENTSCOPE, Provider
from ._turns import Turn, TurnTable
from .openai import (
    CHAT_OPTIONS,
    CHAT_TOOL_MESSAGE,
    ChatCompletions,
    KeptChatCompletionStream,
    audio_part,
    media_url,
)

__all__ = ["PROVIDER", "Volcengine"]

Block = dict[str, Any]
# Where a thinking block keeps Ark's encrypted reasoning.
ENCRYPTED = "ark_encrypted_content"
_PARTS = frozenset({"text", "image_url", "input_audio", "video_url"})
# The audio formats Ark is told of (as OpenAI's `input_audio.format`).
_AUDIO_FORMATS = ("wav", "mp3")
_TOOL_MESSAGE = CHAT_TOOL_MESSAGE | {"name"}
_FAMILY_THINKING = ChatCompletions.turns.handlers["thinking"]


def _thinking(turn: Turn, index: int, block: Block) -> None:
    _FAMILY_THINKING(turn, index, block)
    if block.get(ENCRYPTED):
        turn.ctx.warn(
            turn.msg,
            index,
            "thinking",
            "Ark's encrypted reasoning not sent back: its request messages have no field for it",
        )


def _video(turn: Turn, index: int, block: Block) -> None:
    video: Block = {"url": media_url(block, turn.ctx, "video/mp4")}
    fps = block.get("fps")
    if fps is not None:
        if isinstance(fps, bool) or not isinstance(fps, (int, float)) or fps <= 0:
            raise FormatError(
                f"{turn.ctx.location}.fps", f"expected a positive number, got {fps!r}"
            )
        video["fps"] = fps
    turn.parts.append({"type": "video_url", "video_url": video})


def _audio(turn: Turn, index: int, block: Block) -> None:
    # Assistant audio (a model's own output) is dropped, as the family does.
    if turn.msg.role == "assistant":
        return
    source = block["source"]
    if source["type"] == "url" and turn.ctx.is_web_url(source["url"]):
        # Ark's `input_audio` takes the URL: nothing to download.
        audio: Block = {"url": source["url"]}
        extension = source["url"].rsplit(".", 1)[-1].lower()
        if extension in _AUDIO_FORMATS:
            audio["format"] = extension
        turn.parts.append({"type": "input_audio", "input_audio": audio})
        return
    turn.parts.append(audio_part(block, turn.ctx))


_HANDLERS = {kind: h for kind, h in ChatCompletions.turns.handlers.items() if kind != "data"}
_TURNS = TurnTable(
    {**_HANDLERS, "thinking": _thinking, "video": _video, "audio": _audio},
    ChatCompletions.turns.finish,
)


def _keep_encrypted(content: list[Block], encrypted: str | None) -> None:
    """Ark's encrypted reasoning on the thinking block (one made if none came)."""
    if not encrypted:
        return
    thinking = next((block for block in content if block["type"] == "thinking"), None)
    if thinking is None:
        thinking = {"type": "thinking", "thinking": "", "reasoning_field": "reasoning_content"}
        content.insert(0, thinking)
    thinking[ENCRYPTED] = encrypted


class _VolcengineStream(KeptChatCompletionStream):
    def __init__(self, provider: str, options: ParseSettings) -> None:
        super().__init__(provider, options)
        self._encrypted = ""

    def _absorb(self, delta: Block, path: str) -> None:
        if delta.get("encrypted_content"):
            self._encrypted += expect(delta["encrypted_content"], str, f"{path}.encrypted_content")
        super()._absorb(delta, path)

    def _build(self) -> list[Block]:
        content = super()._build()
        _keep_encrypted(content, self._encrypted)
        return content


class Volcengine(ChatCompletions):
    """Ark's Chat Completions (see the module's docstring)."""

    turns = _TURNS
    stream_state = _VolcengineStream

    def _kept(
        self,
        choice: Block,
        path: str,
        content: list[Block],
        structured: Block | None,
        options: ParseSettings,
    ) -> Block | None:
        kept = super()._kept(choice, path, content, structured, options)
        encrypted = choice["message"].get("encrypted_content")
        if encrypted is not None:
            where = f"{path}.message.encrypted_content"
            _keep_encrypted(content, expect(encrypted, str, where))
        return kept

    chat_parts = _PARTS
    chat_tool_message = _TOOL_MESSAGE


# The SDK's `create`: `max_tokens` (and `max_completion_tokens`, in
# `extra_body`), no `seed`.
_REQUEST_FIELDS = RequestFields(
    model="model",
    max_output_tokens="max_tokens",
    temperature="temperature",
    top_p="top_p",
    stop="stop",
    seed=None,
    stream="stream",
)

PROVIDER = Provider(
    enum=PROVIDER_VOLCENGINE,
    options=CHAT_OPTIONS,
    formatted_blocks=frozenset(
        {"text", "thinking", "tool_use", "tool_result", "image", "audio", "video"}
    ),
    dropped_blocks=frozenset({"opaque"}) | UNKNOWN_TO_AGENTSCOPE,
    framing="sse",
    request_fields=_REQUEST_FIELDS,
    # Ark's chat messages take no documents.
    document_types=frozenset(),
    agentscope=None,
    provider=Volcengine,
)
