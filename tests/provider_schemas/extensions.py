"""Documented request fields the SDK types leave out, as TypedDicts.

No `from __future__ import annotations`: the walker reads these hints at run
time. Imported only where the openai SDK is installed.
"""

from collections.abc import Iterable
from typing import Literal

from openai.types.chat import ChatCompletionAssistantMessageParam
from openai.types.chat import completion_create_params as params
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
