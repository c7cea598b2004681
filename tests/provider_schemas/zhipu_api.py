"""Zhipu GLM's chat completion request, as its API reference documents it
(open.bigmodel.cn / docs.z.ai, "Chat Completion", as of 2026-11).

`zai-sdk`'s `chat.completions.create` names the body's parameters, and types
some (validators.py reads them off it), but types `messages`, `tools`,
`thinking` and `response_format` only as `object`: those are written here.

No `from __future__ import annotations`: the walker reads these hints at run
time.
"""

from typing import Literal

from typing_extensions import NotRequired, Required, TypedDict


class TextPart(TypedDict):
    type: Literal["text"]
    text: str


class MediaURL(TypedDict):
    url: str


class ImagePart(TypedDict):
    """An image by URL or base64 (GLM's vision models)."""

    type: Literal["image_url"]
    image_url: MediaURL


class VideoPart(TypedDict):
    type: Literal["video_url"]
    video_url: MediaURL


class FilePart(TypedDict):
    type: Literal["file_url"]
    file_url: MediaURL


UserPart = TextPart | ImagePart | VideoPart | FilePart


class SystemMessage(TypedDict):
    role: Literal["system"]
    content: str


class UserMessage(TypedDict):
    role: Literal["user"]
    content: str | list[UserPart]


class CalledFunction(TypedDict):
    name: str
    arguments: str


class ToolCall(TypedDict):
    id: str
    type: Literal["function"]
    function: CalledFunction


class AssistantMessage(TypedDict, total=False):
    """A model turn; `reasoning_content` is its thinking, given back in tool
    loops (interleaved and preserved thinking)."""

    role: Required[Literal["assistant"]]
    content: str | None
    reasoning_content: str
    tool_calls: list[ToolCall]


class ToolMessage(TypedDict):
    role: Literal["tool"]
    content: str
    tool_call_id: str


Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage


class FunctionDefinition(TypedDict):
    name: str
    description: NotRequired[str]
    parameters: NotRequired[dict[str, object]]


class FunctionTool(TypedDict):
    type: Literal["function"]
    function: FunctionDefinition


class WebSearchTool(TypedDict):
    type: Literal["web_search"]
    web_search: dict[str, object]


class RetrievalTool(TypedDict):
    type: Literal["retrieval"]
    retrieval: dict[str, object]


Tool = FunctionTool | WebSearchTool | RetrievalTool


class Thinking(TypedDict, total=False):
    type: Required[Literal["enabled", "disabled"]]
    # False keeps the reasoning of earlier turns in the context.
    clear_thinking: bool


class ResponseFormat(TypedDict):
    type: Literal["text", "json_object"]


OVERRIDES = {
    "messages": list[Message],
    "tools": list[Tool],
    "tool_choice": Literal["auto"],
    "thinking": Thinking,
    "response_format": ResponseFormat,
}
