"""DashScope's native chat request (MultiModalConversation / Generation with
`result_format="message"`), as its API reference documents it.

The `dashscope` SDK takes plain dicts and defines no request types, so this
module writes the documented shape down as TypedDicts (closed, like every type
the walker reads). Tools and tool calls use the OpenAI function shapes, which
DashScope documents as its own. No `from __future__ import annotations`:
the hints are read at run time.
"""

from typing import Any, Literal

from typing_extensions import NotRequired, Required, TypedDict


class TextPart(TypedDict):
    """Text content."""

    text: str


class ImagePart(TypedDict):
    """An image: an http(s) URL, a `file://` path or a `data:` URI."""

    image: str


class AudioPart(TypedDict):
    """Audio for Qwen-Audio / Qwen-Omni models: URL, path or data URI."""

    audio: str


class VideoPart(TypedDict):
    """A video file, or a video as a list of frame images; `fps` for frame lists."""

    video: str | list[str]
    fps: NotRequired[float]


Part = TextPart | ImagePart | AudioPart | VideoPart
Content = str | list[Part]


class FunctionCall(TypedDict):
    """The function a tool call names, arguments as JSON text."""

    name: str
    arguments: str


class ToolCall(TypedDict, total=False):
    """A tool call of an assistant turn."""

    id: Required[str]
    type: Required[Literal["function"]]
    function: Required[FunctionCall]
    index: int


class SystemMessage(TypedDict):
    role: Literal["system"]
    content: Content


class UserMessage(TypedDict):
    role: Literal["user"]
    content: Content


class AssistantMessage(TypedDict, total=False):
    role: Required[Literal["assistant"]]
    content: Required[Content]
    tool_calls: list[ToolCall]
    # Partial mode: the model continues this message.
    partial: bool


class ToolMessage(TypedDict, total=False):
    role: Required[Literal["tool"]]
    content: Required[Content]
    tool_call_id: str
    name: str


Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage


class FunctionDefinition(TypedDict, total=False):
    name: Required[str]
    description: str
    # A JSON Schema object: open.
    parameters: dict[str, Any]


class FunctionTool(TypedDict):
    type: Literal["function"]
    function: FunctionDefinition


class NamedFunction(TypedDict):
    name: str


class ToolChoiceFunction(TypedDict):
    type: Literal["function"]
    function: NamedFunction


class SearchOptions(TypedDict, total=False):
    forced_search: bool
    enable_source: bool
    enable_citation: bool
    citation_format: str
    search_strategy: str


class ResponseFormat(TypedDict):
    type: Literal["text", "json_object"]


class DashScopeRequest(TypedDict, total=False):
    """The call's keyword arguments (the SDK moves them into `input`/`parameters`)."""

    model: Required[str]
    messages: Required[list[Message]]
    tools: list[FunctionTool]
    tool_choice: Literal["auto", "none"] | ToolChoiceFunction
    parallel_tool_calls: bool
    result_format: Literal["text", "message"]
    incremental_output: bool
    stream: bool
    temperature: float
    top_p: float
    top_k: int
    max_tokens: int
    seed: int
    stop: str | list[str]
    presence_penalty: float
    repetition_penalty: float
    response_format: ResponseFormat
    enable_thinking: bool
    thinking_budget: int
    enable_search: bool
    search_options: SearchOptions
    vl_high_resolution_images: bool
