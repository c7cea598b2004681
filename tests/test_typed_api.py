"""One typed form per concept: settings, argument order, the body and the parse result."""

from __future__ import annotations

import copy
import json
import pickle
import warnings
from typing import Any

import pytest

from agentscope_proto import (
    FormatError,
    FormatSettings,
    FormatWarning,
    ParsedResponse,
    ParseSettings,
    TokenUsage,
    format,
    parse,
)
from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto.options import format_settings_from_proto, parse_settings_from_proto

CHAT: list[dict[str, Any]] = [
    {"name": "system", "role": "system", "content": "Be brief."},
    {"name": "user", "role": "user", "content": "Hi"},
    {
        "name": "Friday",
        "role": "assistant",
        "content": [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "Hello"}],
    },
]


# -- settings ---------------------------------------------------------------------------


def test_settings_from_keywords_equal_settings_from_proto() -> None:
    from_kwargs = FormatSettings.from_kwargs(
        True,
        {
            "promote_tool_result_images": True,
            "promote_tool_result_videos": True,
            "conversation_history_prompt": "",
            "max_tokens": 10,
            "token_counter": "tiktoken",
            "model": "gpt-4o",
        },
    )
    options = pb.FormatOptions(
        promote_tool_result_images=True,
        promote_tool_result_videos=True,
        conversation_history_prompt="",
        max_tokens=10,
        token_counter=pb.TOKEN_COUNTER_TIKTOKEN,
        model="gpt-4o",
    )
    assert format_settings_from_proto(options, multi_agent=True) == from_kwargs


def test_settings_from_an_empty_proto_are_the_defaults() -> None:
    assert format_settings_from_proto(pb.FormatOptions(), multi_agent=False) == FormatSettings()
    assert parse_settings_from_proto(pb.ParseOptions()) == ParseSettings()
    unset = parse_settings_from_proto(pb.ParseOptions(stream_tool_parsing=False, audio_format="x"))
    assert unset == ParseSettings(stream_tool_parsing=False, audio_format="x")


def test_named_turns_style_without_a_name_is_refused() -> None:
    options = pb.FormatOptions(multi_agent_style=pb.MULTI_AGENT_STYLE_NAMED_TURNS)
    with pytest.raises(FormatError) as caught:
        format_settings_from_proto(options, multi_agent=False)
    assert caught.value.path == "agent_name"


@pytest.mark.parametrize(
    ("options", "path"),
    [
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": True}, "max_tokens"),
        ({"token_counter": "words"}, "token_counter"),
        ({"agent_name": ""}, "agent_name"),
        ({"conversation_history_prompt": 5}, "conversation_history_prompt"),
        ({"promote_tool_result_images": "yes"}, "promote_tool_result_images"),
        ({"nonsense": 1}, "options"),
    ],
)
def test_bad_options_name_the_option(options: dict[str, Any], path: str) -> None:
    with pytest.raises(FormatError) as caught:
        format("openai", CHAT, multi_agent=True, **options)
    assert caught.value.path == path


def test_a_history_prompt_of_the_wrong_type_is_also_a_type_error() -> None:
    with pytest.raises(TypeError):
        format("gemini", CHAT, multi_agent=True, conversation_history_prompt=5)


def test_an_option_the_provider_does_not_take_is_refused_on_both_forms() -> None:
    with pytest.raises(FormatError, match="promote_tool_result_audios"):
        format("openai", CHAT, promote_tool_result_audios=True)
    settings = format_settings_from_proto(
        pb.FormatOptions(promote_tool_result_audios=True), multi_agent=False
    )
    with pytest.raises(FormatError, match="promote_tool_result_audios"):
        format("openai", CHAT, settings=settings)
    assert format("dashscope", CHAT, settings=settings)


def test_settings_and_keyword_options_do_not_mix() -> None:
    with pytest.raises(FormatError) as caught:
        format("openai", CHAT, settings=FormatSettings(), max_tokens=3)
    assert caught.value.path == "settings"


def test_settings_give_the_same_body_as_keywords() -> None:
    settings = FormatSettings(multi_agent=True, conversation_history_prompt="## Before\n")
    assert format("anthropic", CHAT, settings=settings) == format(
        "anthropic", CHAT, multi_agent=True, conversation_history_prompt="## Before\n"
    )


# -- argument order ---------------------------------------------------------------------


def test_the_old_argument_order_still_works_with_a_deprecation_warning() -> None:
    with pytest.warns(DeprecationWarning, match=r"format\(provider, msgs\)"):
        old = format(CHAT, "openai")  # type: ignore[arg-type]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = format("openai", CHAT)
    assert old == new
    assert old.warnings == new.warnings


# -- the formatted body -----------------------------------------------------------------


def test_body_is_exactly_the_providers_fields() -> None:
    body = format("openai", CHAT, token_counter="char")
    assert set(body) == {"messages"}
    assert body.warnings == [
        FormatWarning(
            path="messages[2].content[0]",
            block_type="thinking",
            message="Unsupported block type thinking in the message, skipped.",
        )
    ]
    assert isinstance(body.token_count, int)
    # By design, the plain-dict and JSON forms are the bare body (what is sent).
    assert json.loads(json.dumps(body)) == dict(body) == body.body


@pytest.mark.parametrize(
    "clone",
    [copy.copy, copy.deepcopy, lambda body: pickle.loads(pickle.dumps(body))],
    ids=["copy", "deepcopy", "pickle"],
)
def test_copies_keep_warnings_and_token_count(clone: Any) -> None:
    body = format("openai", CHAT, token_counter="char")
    cloned = clone(body)
    assert type(cloned) is type(body)
    assert cloned == body
    assert cloned.warnings == body.warnings
    assert cloned.token_count == body.token_count


def test_deepcopy_is_deep() -> None:
    body = format("openai", CHAT)
    cloned = copy.deepcopy(body)
    cloned["messages"][0]["content"] = "changed"
    cloned.warnings.clear()
    assert body["messages"][0]["content"] != "changed"
    assert body.warnings


# -- the parse result -------------------------------------------------------------------

RESPONSE = {
    "id": "chatcmpl-1",
    "choices": [{"message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 2},
}


def test_usage_is_typed() -> None:
    result = parse("openai", RESPONSE)
    assert isinstance(result.usage, TokenUsage)
    assert result.usage.input_tokens == 5
    assert result.usage.output_tokens == 2
    assert result.usage.reasoning_tokens is None
    # Mapping-style reads keep working for code written against the dict.
    assert result.usage["input_tokens"] == 5
    assert result.usage.to_proto().input_tokens == 5
    assert not result.usage.to_proto().HasField("reasoning_tokens")
    assert result.to_proto().usage == result.usage.to_proto()


def test_usage_from_the_dict_form() -> None:
    usage = TokenUsage.from_mapping({"input_tokens": 1, "time": 1.5})
    assert usage == TokenUsage(input_tokens=1, time_seconds=1.5)
    assert usage["time"] == 1.5
    assert usage.to_dict() == {"input_tokens": 1, "time": 1.5}
    with pytest.raises(KeyError):
        usage["nope"]


def test_msg_is_built_once_and_a_change_is_kept() -> None:
    result = parse("openai", RESPONSE)
    msg = result.msg
    assert result.msg is msg
    msg.name = "Friday"
    assert result.msg.name == "Friday"
    assert result.to_proto().msg.name == "Friday"


def test_assigning_content_rebuilds_msg() -> None:
    result = ParsedResponse(content=[{"type": "text", "text": "a"}])
    first = result.msg
    result.content = [{"type": "text", "text": "b"}]
    assert result.msg is not first
    assert result.msg.blocks.items[0].text.text == "b"
