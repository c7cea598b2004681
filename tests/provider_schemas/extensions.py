"""Documented request fields the SDK types leave out, as TypedDicts.

No `from __future__ import annotations`: the walker reads these hints at run
time. Imported only where the openai SDK is installed.
"""

from collections.abc import Iterable
from typing import Literal

from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionContentPartImageParam,
    ChatCompletionContentPartParam,
    ChatCompletionContentPartTextParam,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionToolMessageParam,
)
from openai.types.chat import completion_create_params as params
from openai.types.chat.chat_completion_message_function_tool_call_param import (
    Function as CalledFunction,
)
from openai.types.responses import ResponseOutputRefusalParam
from openai.types.responses import response_output_text_param as output_text
from openai.types.responses.response_input_message_content_list_param import (
    ResponseInputContentParam,
)
from typing_extensions import Required, TypedDict

# -- DeepSeek (OpenAI-compatible chat) ------------------------------------------------


class DeepSeekAssistantMessageParam(ChatCompletionAssistantMessageParam, total=False):
    """An assistant turn: thinking mode wants the reasoning of tool-calling turns back."""

    reasoning_content: str | None
    # Chat prefix completion (beta): the model continues this message.
    prefix: bool


class DeepSeekThinking(TypedDict):
    """Thinking mode on or off."""

    type: Literal["enabled", "disabled"]


class DeepSeekParams(params.CompletionCreateParamsNonStreaming, total=False):
    thinking: DeepSeekThinking


class DeepSeekStreamingParams(params.CompletionCreateParamsStreaming, total=False):
    thinking: DeepSeekThinking


# -- DashScope, OpenAI-compatible mode ------------------------------------------------


class DashScopeCacheControl(TypedDict):
    """Explicit context caching: a cache breakpoint at this part."""

    type: Literal["ephemeral"]


class DashScopeTextPart(ChatCompletionContentPartTextParam, total=False):
    cache_control: DashScopeCacheControl


class DashScopeVideoFramesPart(TypedDict):
    """A video as a list of frame image URLs (Qwen-VL)."""

    type: Literal["video"]
    video: list[str]


class DashScopeVideoURL(TypedDict):
    url: str


class DashScopeVideoURLPart(TypedDict):
    """A video file by URL (Qwen-VL, Qwen-Omni)."""

    type: Literal["video_url"]
    video_url: DashScopeVideoURL


DashScopeContentPart = (
    ChatCompletionContentPartParam | DashScopeVideoFramesPart | DashScopeVideoURLPart
)


class DashScopeAssistantMessageParam(ChatCompletionAssistantMessageParam, total=False):
    # Partial mode: the model continues this message.
    partial: bool


class DashScopeSearchOptions(TypedDict, total=False):
    forced_search: bool
    enable_source: bool
    enable_citation: bool
    citation_format: str
    search_strategy: str


class _DashScopeExtras(TypedDict, total=False):
    """The parameters DashScope's compatible mode takes beyond OpenAI's (`extra_body`)."""

    enable_thinking: bool
    thinking_budget: int
    enable_search: bool
    search_options: DashScopeSearchOptions
    top_k: int
    repetition_penalty: float
    vl_high_resolution_images: bool
    translation_options: dict[str, object]


class DashScopeParams(params.CompletionCreateParamsNonStreaming, _DashScopeExtras, total=False):
    pass


class DashScopeStreamingParams(
    params.CompletionCreateParamsStreaming, _DashScopeExtras, total=False
):
    pass


# -- OpenAI Responses ----------------------------------------------------------------


class AssistantOutputTextParam(TypedDict, total=False):
    """Earlier assistant text in an easy input message. The SDK types the
    content as input parts only, but documents that it "can also contain
    previous assistant responses", and the API takes only `output_text` and
    `refusal` parts for the assistant role; `annotations` is optional there."""

    type: Required[Literal["output_text"]]
    text: Required[str]
    annotations: Iterable[output_text.Annotation]
    logprobs: Iterable[output_text.Logprob]


EasyInputContent = Required[
    str
    | Iterable[ResponseInputContentParam | AssistantOutputTextParam | ResponseOutputRefusalParam]
]


# -- Moonshot AI's Kimi (OpenAI-compatible chat) ---------------------------------------
# Kimi's API reference and guides (platform.moonshot.ai, "Chat Completion",
# "Partial Mode", "Use the Web Search Tool", "Thinking"), as of 2026-11.


class MoonshotAssistantMessageParam(ChatCompletionAssistantMessageParam, total=False):
    """An assistant turn: thinking models want their reasoning back; partial
    mode continues the last one."""

    reasoning_content: str | None
    partial: bool


class MoonshotToolMessageParam(ChatCompletionToolMessageParam, total=False):
    """A tool result, naming the function (Kimi's docs do, builtin ones included)."""

    name: str


class MoonshotBuiltinFunction(TypedDict):
    name: str


class MoonshotBuiltinTool(TypedDict):
    """A builtin function (`$web_search`): a name, no schema."""

    type: Literal["builtin_function"]
    function: MoonshotBuiltinFunction


class MoonshotBuiltinToolCall(TypedDict):
    """The model's call of a builtin function, given back as it came."""

    id: str
    type: Literal["builtin_function"]
    function: CalledFunction


class MoonshotThinking(TypedDict):
    type: Literal["enabled", "disabled"]


MoonshotContentPart = ChatCompletionContentPartTextParam | ChatCompletionContentPartImageParam
MoonshotTool = ChatCompletionFunctionToolParam | MoonshotBuiltinTool
MoonshotToolCall = ChatCompletionMessageFunctionToolCallParam | MoonshotBuiltinToolCall


class _MoonshotExtras(TypedDict, total=False):
    thinking: MoonshotThinking


class MoonshotParams(params.CompletionCreateParamsNonStreaming, _MoonshotExtras, total=False):
    pass


class MoonshotStreamingParams(params.CompletionCreateParamsStreaming, _MoonshotExtras, total=False):
    pass


# -- xAI's REST Chat Completions ----------------------------------------------------------
# xAI's API reference ("Chat completions", docs.x.ai), as of 2026-11: OpenAI's
# request with content parts text and images only, and its own parameters.

XAIContentPart = ChatCompletionContentPartTextParam | ChatCompletionContentPartImageParam


class _XAIExtras(TypedDict, total=False):
    """xAI's parameters beyond OpenAI's (live search, deprecated but accepted)."""

    search_parameters: dict[str, object]


class XAIParams(params.CompletionCreateParamsNonStreaming, _XAIExtras, total=False):
    pass


class XAIStreamingParams(params.CompletionCreateParamsStreaming, _XAIExtras, total=False):
    pass


# -- Volcengine Ark ------------------------------------------------------------------------
# The SDK's assistant message lacks `reasoning_content`, which Ark's API
# reference documents (optional) for the reasoning of earlier turns.


def ark_assistant_message() -> type:
    from volcenginesdkarkruntime.types.chat import ChatCompletionAssistantMessageParam

    class ArkAssistantMessageParam(ChatCompletionAssistantMessageParam, total=False):
        reasoning_content: str | None

    return ArkAssistantMessageParam


# -- MiniMax (OpenAI-compatible chat) --------------------------------------------------
# MiniMax's API reference ("Chat Completions API (OpenAI-compatible)", "Tool
# use & interleaved thinking", platform.minimax.io), as of 2026-11.


class MiniMaxReasoningDetail(TypedDict, total=False):
    """One item of the reasoning split, given back as it came."""

    type: Required[str]
    text: str
    id: str
    format: str
    index: int


class MiniMaxAssistantMessageParam(ChatCompletionAssistantMessageParam, total=False):
    reasoning_details: list[MiniMaxReasoningDetail]


class MiniMaxThinking(TypedDict):
    type: Literal["adaptive", "disabled"]


MiniMaxContentPart = ChatCompletionContentPartTextParam | ChatCompletionContentPartImageParam


class _MiniMaxExtras(TypedDict, total=False):
    reasoning_split: bool
    thinking: MiniMaxThinking


class MiniMaxParams(params.CompletionCreateParamsNonStreaming, _MiniMaxExtras, total=False):
    pass


class MiniMaxStreamingParams(params.CompletionCreateParamsStreaming, _MiniMaxExtras, total=False):
    pass
