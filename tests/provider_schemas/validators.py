"""One validator per provider API, on the providers' own SDK request types.

Runs only where the SDKs are installed (`make schemas-venv`, .venv-schemas;
the versions are pinned in requirements.txt beside this file). Each validator
takes a request body as the package's formatter builds it and returns every
`Violation` (path, kind, reason); unknown keys have their own kind.

A body is checked as it is, nothing added: a request without its model (or,
for Anthropic, its `max_tokens`) is missing a required key, as the API would
say. `format(..., request=...)` writes them.

Where a provider's documented API differs from its SDK types, the difference
is stated below and kept as small as the documentation allows:

- DeepSeek (OpenAI-compatible chat): the OpenAI chat types, plus
  `reasoning_content` and `prefix` on assistant messages and a top-level
  `thinking: {"type": "enabled" | "disabled"}`; content parts are text only
  (DeepSeek's chat models take no images, audio or files).
- DashScope: the package sends DashScope's native (MultiModalConversation)
  messages, not the OpenAI-compatible ones, and the `dashscope` SDK has no
  request types: see dashscope_native.py for the documented shape. Its
  OpenAI-compatible mode (`dashscope_compatible`, for a provider fidelity that
  moves there) is the OpenAI chat types plus `enable_thinking`,
  `thinking_budget`, `enable_search`, `search_options`, `top_k`,
  `repetition_penalty`, `vl_high_resolution_images`, `translation_options`;
  `video` (frame list) and `video_url` parts; `cache_control` on text parts;
  `partial` on assistant messages.
- OpenAI Responses: an assistant easy input message may hold `output_text`
  (annotations optional) and `refusal` parts, and only those; other roles
  hold input parts only.
- Moonshot (Kimi, OpenAI-compatible chat; its API reference and guides as
  of 2026-11, no SDK of its own): the OpenAI chat types, content parts text
  and images only, `reasoning_content` and `partial` on assistant turns,
  `name` on tool messages, builtin functions (`{"type": "builtin_function",
  "function": {"name": "$web_search"}}`) among the tools and tool calls, and
  a top-level `thinking: {"type": "enabled" | "disabled"}`; `partial` only
  on the last message.
- xAI (Grok through its REST chat completions; xAI's API reference as of
  2026-11): the OpenAI chat types with text and image parts only, plus
  `search_parameters`. `xai-sdk` types xAI's gRPC API (protobuf
  `GetCompletionsRequest`), a different body, so it is not installed.
- Volcengine Ark: the `volcengine-ark-runtime` SDK (the `ark` part of
  volcengine-python-sdk): the parameters of `chat.completions.create` (its
  `CompletionCreateParams` TypedDict lacks several; signatures.py reads the
  method), its message types, plus `reasoning_content` on assistant turns,
  which Ark's API reference documents.
- MiniMax (OpenAI-compatible chat; its API reference as of 2026-11, no
  SDK of its own): the OpenAI chat types, text and image parts only,
  `reasoning_details` on assistant turns, `reasoning_split` and `thinking`
  (`adaptive` or `disabled`), `tool_choice` "none" or "auto", no `stop` nor
  `seed`.
- Zhipu GLM: `zai-sdk`'s `chat.completions.create` parameters as the SDK
  types them; it types messages, tools, thinking and the response format
  only as `object`, so those follow GLM's API reference (zhipu_api.py):
  string content but for user turns (text, image, video, file parts),
  `reasoning_content` on assistant turns, no `name`, `tool_choice` "auto"
  only, `response_format` text or json_object.
- Across messages (sequences.py): tool calls answered where each API looks for
  the answers; DeepSeek's thinking mode wants `reasoning_content` back.
- Gemini: the REST body of `models/{model}:generateContent`
  (`GenerateContentRequest`: `contents`, `tools`, `tool_config`,
  `safety_settings`, `system_instruction`, `generation_config`,
  `cached_content`), snake_case or camelCase, each field as the SDK's type
  of it; the model is the URL's, so a `model` key is unknown, as are
  generation settings at the top level. The API's own rules the types do not
  carry: `role` is "user" or "model"; a content has at least one part; a part
  carries exactly one kind of data (text, inline data, a function call...).
- Ollama: `ChatRequest` with `messages` as `Message` (the SDK also takes plain
  mappings, which it turns into `Message`s, dropping unknown keys), images as
  the base64 strings the REST API takes, and `role` one of the four roles the
  API documents.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import sequences
from ._walk import (
    BAD_VALUE,
    CONSTRAINT,
    UNKNOWN_KEY,
    WRONG_TYPE,
    Schema,
    Violation,
    Walker,
)
from .dashscope_native import DashScopeRequest

Validator = Callable[[dict[str, Any]], list[Violation]]


def _top_level(body: Any) -> list[Violation]:
    if isinstance(body, dict):
        return []
    return [Violation("$", WRONG_TYPE, f"expected an object, got {type(body).__name__}")]


# -- OpenAI chat, DeepSeek ----------------------------------------------------------


def _openai_chat_params(body: dict[str, Any]) -> Any:
    from openai.types.chat import completion_create_params as params

    if body.get("stream") is True:
        return params.CompletionCreateParamsStreaming
    return params.CompletionCreateParamsNonStreaming


def openai_chat(body: dict[str, Any]) -> list[Violation]:
    """OpenAI Chat Completions: `openai.types.chat.CompletionCreateParams`."""
    if _top_level(body):
        return _top_level(body)
    found = _OPENAI_CHAT.check(body, _openai_chat_params(body))
    return found + sequences.openai_tool_messages(body)


_OPENAI_CHAT = Walker()


def _deepseek_walker() -> Walker:
    from openai.types.chat import (
        ChatCompletionAssistantMessageParam,
        ChatCompletionContentPartParam,
        ChatCompletionContentPartTextParam,
    )
    from openai.types.chat import completion_create_params as params

    from . import extensions as ext

    return Walker(
        Schema(
            type_overrides={
                ChatCompletionAssistantMessageParam: ext.DeepSeekAssistantMessageParam,
                ChatCompletionContentPartParam: ChatCompletionContentPartTextParam,
                params.CompletionCreateParamsNonStreaming: ext.DeepSeekParams,
                params.CompletionCreateParamsStreaming: ext.DeepSeekStreamingParams,
            }
        )
    )


def deepseek(body: dict[str, Any]) -> list[Violation]:
    """DeepSeek chat: the OpenAI chat types plus DeepSeek's documented fields."""
    if _top_level(body):
        return _top_level(body)
    found = _cached("deepseek", _deepseek_walker).check(body, _openai_chat_params(body))
    return found + sequences.openai_tool_messages(body) + sequences.deepseek_reasoning(body)


def _dashscope_compatible_walker() -> Walker:
    from openai.types.chat import (
        ChatCompletionAssistantMessageParam,
        ChatCompletionContentPartParam,
        ChatCompletionContentPartTextParam,
    )
    from openai.types.chat import completion_create_params as params

    from . import extensions as ext

    return Walker(
        Schema(
            type_overrides={
                ChatCompletionAssistantMessageParam: ext.DashScopeAssistantMessageParam,
                ChatCompletionContentPartParam: ext.DashScopeContentPart,
                ChatCompletionContentPartTextParam: ext.DashScopeTextPart,
                params.CompletionCreateParamsNonStreaming: ext.DashScopeParams,
                params.CompletionCreateParamsStreaming: ext.DashScopeStreamingParams,
            }
        )
    )


def dashscope_compatible(body: dict[str, Any]) -> list[Violation]:
    """DashScope's OpenAI-compatible mode: the OpenAI chat types plus its
    documented parameters, video parts, cache breakpoints and partial mode."""
    if _top_level(body):
        return _top_level(body)
    found = _cached("dashscope_compatible", _dashscope_compatible_walker).check(
        body, _openai_chat_params(body)
    )
    return found + sequences.openai_tool_messages(body)


def _moonshot_walker() -> Walker:
    from openai.types.chat import (
        ChatCompletionAssistantMessageParam,
        ChatCompletionContentPartParam,
        ChatCompletionToolMessageParam,
    )
    from openai.types.chat import completion_create_params as params
    from openai.types.chat.chat_completion_message_tool_call_union_param import (
        ChatCompletionMessageToolCallUnionParam,
    )
    from openai.types.chat.chat_completion_tool_union_param import ChatCompletionToolUnionParam

    from . import extensions as ext

    return Walker(
        Schema(
            type_overrides={
                ChatCompletionAssistantMessageParam: ext.MoonshotAssistantMessageParam,
                ChatCompletionToolMessageParam: ext.MoonshotToolMessageParam,
                ChatCompletionContentPartParam: ext.MoonshotContentPart,
                ChatCompletionToolUnionParam: ext.MoonshotTool,
                ChatCompletionMessageToolCallUnionParam: ext.MoonshotToolCall,
                params.CompletionCreateParamsNonStreaming: ext.MoonshotParams,
                params.CompletionCreateParamsStreaming: ext.MoonshotStreamingParams,
            }
        )
    )


def moonshot(body: dict[str, Any]) -> list[Violation]:
    """Kimi's chat: the OpenAI chat types with Kimi's documented differences
    (extensions.py): text and image parts, `reasoning_content` and `partial`
    on assistant turns, named tool messages, builtin functions, `thinking`."""
    if _top_level(body):
        return _top_level(body)
    found = _cached("moonshot", _moonshot_walker).check(body, _openai_chat_params(body))
    return found + sequences.openai_tool_messages(body) + sequences.moonshot_partial(body)


def _xai_walker() -> Walker:
    from openai.types.chat import ChatCompletionContentPartParam
    from openai.types.chat import completion_create_params as params

    from . import extensions as ext

    return Walker(
        Schema(
            type_overrides={
                ChatCompletionContentPartParam: ext.XAIContentPart,
                params.CompletionCreateParamsNonStreaming: ext.XAIParams,
                params.CompletionCreateParamsStreaming: ext.XAIStreamingParams,
            }
        )
    )


def xai(body: dict[str, Any]) -> list[Violation]:
    """xAI's REST chat completions: the OpenAI chat types, text and image parts
    only, plus `search_parameters` (xai-sdk's request types are its gRPC API's,
    not this body's)."""
    if _top_level(body):
        return _top_level(body)
    found = _cached("xai", _xai_walker).check(body, _openai_chat_params(body))
    return found + sequences.openai_tool_messages(body)


# -- Volcengine Ark -----------------------------------------------------------------------


def _ark_request() -> tuple[Walker, Any]:
    from volcenginesdkarkruntime.resources.chat.completions import Completions
    from volcenginesdkarkruntime.types.chat import ChatCompletionAssistantMessageParam

    from . import extensions as ext
    from .signatures import request_type

    walker = Walker(
        Schema(type_overrides={ChatCompletionAssistantMessageParam: ext.ark_assistant_message()})
    )
    return walker, request_type("ArkChatCompletionRequest", Completions.create)


_ARK: list[tuple[Walker, Any]] = []


def volcengine(body: dict[str, Any]) -> list[Violation]:
    """Volcengine Ark's chat: the `volcenginesdkarkruntime` SDK's
    `chat.completions.create` parameters (its `CompletionCreateParams` leaves
    out `thinking`, `max_completion_tokens`, `reasoning_effort`...), with its
    message types plus the documented `reasoning_content` of assistant turns."""
    if _top_level(body):
        return _top_level(body)
    if not _ARK:
        _ARK.append(_ark_request())
    walker, request = _ARK[0]
    return walker.check(body, request) + sequences.openai_tool_messages(body)


# -- MiniMax ------------------------------------------------------------------------------


def _minimax_walker() -> Walker:
    from openai.types.chat import (
        ChatCompletionAssistantMessageParam,
        ChatCompletionContentPartParam,
    )
    from openai.types.chat import completion_create_params as params

    from . import extensions as ext

    return Walker(
        Schema(
            type_overrides={
                ChatCompletionAssistantMessageParam: ext.MiniMaxAssistantMessageParam,
                ChatCompletionContentPartParam: ext.MiniMaxContentPart,
                params.CompletionCreateParamsNonStreaming: ext.MiniMaxParams,
                params.CompletionCreateParamsStreaming: ext.MiniMaxStreamingParams,
            }
        )
    )


def minimax(body: dict[str, Any]) -> list[Violation]:
    """MiniMax's chat: the OpenAI chat types with MiniMax's documented
    differences (extensions.py): text and image parts, `reasoning_details` on
    assistant turns, `reasoning_split` and `thinking`; `tool_choice` "none"
    or "auto" only, no `stop` nor `seed`."""
    if _top_level(body):
        return _top_level(body)
    found = _cached("minimax", _minimax_walker).check(body, _openai_chat_params(body))
    for key in ("stop", "seed"):
        if key in body:
            found.append(Violation(f"$.{key}", UNKNOWN_KEY, "not in MiniMax's API reference"))
    choice = body.get("tool_choice")
    if choice is not None and choice not in ("none", "auto"):
        found.append(Violation("$.tool_choice", BAD_VALUE, f"{choice!r} is not 'none' or 'auto'"))
    return found + sequences.openai_tool_messages(body)


# -- Zhipu GLM ----------------------------------------------------------------------------


def _zhipu_request() -> Any:
    from zai.api_resource.chat.completions import Completions

    from .signatures import request_type
    from .zhipu_api import OVERRIDES

    return request_type("GLMChatCompletionRequest", Completions.create, OVERRIDES)


_ZHIPU: list[Any] = []


def zhipu(body: dict[str, Any]) -> list[Violation]:
    """Zhipu GLM's chat: `zai-sdk`'s `chat.completions.create` parameters, with
    what the SDK types only as `object` (messages, tools, thinking, response
    format) from GLM's API reference (zhipu_api.py)."""
    if _top_level(body):
        return _top_level(body)
    if not _ZHIPU:
        _ZHIPU.append(_zhipu_request())
    return _ZHIPU_WALKER.check(body, _ZHIPU[0]) + sequences.openai_tool_messages(body)


_ZHIPU_WALKER = Walker()


# -- OpenAI Responses ------------------------------------------------------------------


_ASSISTANT_PARTS = ("output_text", "refusal")


def _easy_input_message(value: Any, path: str) -> list[Violation]:
    """The API's rule: assistant turns hold output parts, the others input parts."""
    content = value.get("content")
    if not isinstance(content, list):
        return []
    assistant = value.get("role") == "assistant"
    found = []
    for index, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if isinstance(kind, str) and (kind in _ASSISTANT_PARTS) != assistant:
            reason = f"{kind!r} part in a message with role {value.get('role')!r}"
            found.append(Violation(f"{path}.content[{index}].type", CONSTRAINT, reason))
    return found


def _responses_walker() -> Walker:
    from openai.types.responses import EasyInputMessageParam

    from . import extensions as ext

    return Walker(
        Schema(
            field_overrides={(EasyInputMessageParam, "content"): ext.EasyInputContent},
            refinements={EasyInputMessageParam: _easy_input_message},
        )
    )


def openai_responses(body: dict[str, Any]) -> list[Violation]:
    """OpenAI Responses: `openai.types.responses.ResponseCreateParams`; an
    assistant easy input message may hold `output_text`/`refusal` parts."""
    from openai.types.responses import response_create_params as params

    if _top_level(body):
        return _top_level(body)
    kind = (
        params.ResponseCreateParamsStreaming
        if body.get("stream") is True
        else params.ResponseCreateParamsNonStreaming
    )
    walker = _cached("openai_responses", _responses_walker)
    found = walker.check(body, kind)
    return found + sequences.responses_function_calls(body)


# -- Anthropic -------------------------------------------------------------------------


def anthropic(body: dict[str, Any]) -> list[Violation]:
    """Anthropic Messages: `anthropic.types.MessageCreateParams`."""
    from anthropic.types import message_create_params as params

    if _top_level(body):
        return _top_level(body)
    kind = (
        params.MessageCreateParamsStreaming
        if body.get("stream") is True
        else params.MessageCreateParamsNonStreaming
    )
    return _ANTHROPIC.check(body, kind) + sequences.anthropic_tool_results(body)


_ANTHROPIC = Walker()


# -- Gemini ----------------------------------------------------------------------------

_GEMINI_ROLES = ("user", "model")


def _gemini_content(value: Any, path: str) -> list[Violation]:
    found = []
    role = value.get("role")
    if role is not None and role not in _GEMINI_ROLES:
        found.append(Violation(f"{path}.role", CONSTRAINT, f"{role!r} is not 'user' or 'model'"))
    if not value.get("parts"):
        found.append(Violation(f"{path}.parts", CONSTRAINT, "a content needs at least one part"))
    return found


# Fields that go beside a part's data, not in place of it.
_GEMINI_PART_METADATA = frozenset(
    {"thought", "thought_signature", "video_metadata", "media_resolution", "part_metadata"}
)


def _gemini_part(value: Any, path: str) -> list[Violation]:
    """The API's `data` oneof: exactly one of text, inline_data, function_call..."""
    from google.genai import types

    data = [
        name
        for name, info in types.Part.model_fields.items()
        if name not in _GEMINI_PART_METADATA
        and any(value.get(key) is not None for key in (name, info.alias or name))
    ]
    if len(data) == 1:
        return []
    if not data:
        reason = "a part carries no data (text, inline_data, function_call...)"
    else:
        reason = f"a part carries one kind of data, this one {data}"
    return [Violation(path, CONSTRAINT, reason)]


def _gemini_request() -> type:
    """The REST `GenerateContentRequest` body: the SDK has no type of it (its
    REST layer builds the dict from `generate_content`'s arguments), so one
    is made of the SDK's types of its fields, with their JSON names (camelCase
    or snake_case) and closed to other keys. `model` is not among them: the
    URL carries it."""
    from google.genai import _common, types
    from pydantic import create_model

    return create_model(
        "GenerateContentRequest",
        __base__=_common.BaseModel,
        contents=(list[types.Content], ...),
        tools=(list[types.Tool] | None, None),
        tool_config=(types.ToolConfig | None, None),
        safety_settings=(list[types.SafetySetting] | None, None),
        system_instruction=(types.Content | None, None),
        generation_config=(types.GenerationConfig | None, None),
        cached_content=(str | None, None),
    )


def _gemini_walker() -> Walker:
    from google.genai import types

    return Walker(Schema(refinements={types.Content: _gemini_content, types.Part: _gemini_part}))


_GEMINI_REQUEST: list[type] = []


def gemini(body: dict[str, Any]) -> list[Violation]:
    """Gemini: the REST `generateContent` request body (`_gemini_request`)."""
    if _top_level(body):
        return _top_level(body)
    if not _GEMINI_REQUEST:
        _GEMINI_REQUEST.append(_gemini_request())
    return _cached("gemini", _gemini_walker).check(body, _GEMINI_REQUEST[0], "$")


# -- Ollama ----------------------------------------------------------------------------

_OLLAMA_ROLES = ("system", "user", "assistant", "tool")


def _ollama_message(value: Any, path: str) -> list[Violation]:
    role = value.get("role")
    if role in _OLLAMA_ROLES:
        return []
    return [Violation(f"{path}.role", CONSTRAINT, f"{role!r} is not one of {list(_OLLAMA_ROLES)}")]


def _ollama_walker() -> Walker:
    from ollama import _types as types

    return Walker(
        Schema(
            type_overrides={types.Image: str},
            field_overrides={
                (types.ChatRequest, "messages"): list[types.Message] | None,
            },
            refinements={types.Message: _ollama_message},
        )
    )


def ollama(body: dict[str, Any]) -> list[Violation]:
    """Ollama `/api/chat`: `ollama.ChatRequest`, messages as `ollama.Message`."""
    from ollama import _types as types

    if _top_level(body):
        return _top_level(body)
    walker = _cached("ollama", _ollama_walker)
    return walker.check(body, types.ChatRequest)


# -- DashScope -------------------------------------------------------------------------


def dashscope(body: dict[str, Any]) -> list[Violation]:
    """DashScope's native MultiModalConversation request (see dashscope_native.py)."""
    if _top_level(body):
        return _top_level(body)
    return _DASHSCOPE.check(body, DashScopeRequest)


_DASHSCOPE = Walker()


# -- registry --------------------------------------------------------------------------

_WALKERS: dict[str, Walker] = {}


def _cached(name: str, build: Callable[[], Walker]) -> Walker:
    walker = _WALKERS.get(name)
    if walker is None:
        walker = _WALKERS[name] = build()
    return walker


VALIDATORS: dict[str, Validator] = {
    "openai": openai_chat,
    "openai_responses": openai_responses,
    "anthropic": anthropic,
    "gemini": gemini,
    "ollama": ollama,
    "deepseek": deepseek,
    "dashscope": dashscope,
    "moonshot": moonshot,
    "xai": xai,
    "volcengine": volcengine,
    "zhipu": zhipu,
    "minimax": minimax,
    # Not what the package sends today (that is DashScope's native request),
    # but where a provider-fidelity DashScope may go.
    "dashscope_compatible": dashscope_compatible,
}


def validate(provider: str, body: Any) -> list[Violation]:
    """Every violation of `body` against `provider`'s request schema."""
    validator = VALIDATORS.get(provider)
    if validator is None:
        raise ValueError(f"unknown provider {provider!r}; expected one of {sorted(VALIDATORS)}")
    return validator(body)


__all__ = ["VALIDATORS", "Violation", "validate"]
