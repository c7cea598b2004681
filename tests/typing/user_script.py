"""A user's script, type-checked with `mypy --strict` by tests/typing/test_user_script.py.

It uses the public API the way an agent would, so a change that breaks the
helpers' typing (an overload of `get_content_blocks`, a constructor signature)
fails the test. It is checked, never run.
"""

from __future__ import annotations

import json

from agentscope_proto import (
    AudioBlock,
    ContentBlock,
    Conversation,
    ImageBlock,
    MessageFormatError,
    Msg,
    RequestParams,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolResultState,
    ToolUseBlock,
    VideoBlock,
    format,
    from_dict,
    from_json,
    get_content_blocks,
    get_text_content,
    has_content_blocks,
    new_audio_block,
    new_image_block,
    new_msg,
    new_text_block,
    new_thinking_block,
    new_tool_result_block,
    new_tool_use_block,
    new_video_block,
    to_dict,
    to_json,
)
from agentscope_proto.interop import from_agentscope, to_agentscope


def ask(question: str) -> Msg:
    return new_msg("user", question, "user")


def reply() -> Msg:
    return new_msg(
        "Friday",
        [
            new_thinking_block("The user wants the weather.", signature="sig"),
            new_text_block("Let me check."),
            new_tool_use_block("call_1", "get_weather", {"city": "Paris", "days": 3}),
        ],
        Role.ROLE_ASSISTANT,
        metadata={"model": "qwen-max"},
    )


def run_tools(msg: Msg) -> Msg:
    results: list[ToolResultBlock] = []
    for call in get_content_blocks(msg, "tool_use"):
        name: str = call.name
        arguments: dict[str, object] = json.loads(call.input_json)
        output = f"{name}({', '.join(sorted(arguments))}) = sunny"
        results.append(
            new_tool_result_block(
                call.id, name, output, state=ToolResultState.TOOL_RESULT_STATE_SUCCESS
            )
        )
    media: list[ImageBlock | AudioBlock | VideoBlock] = [
        new_image_block("https://example.com/cat.png"),
        new_audio_block(data=b"RIFF", media_type="audio/wav"),
        new_video_block("file:///tmp/clip.mp4", media_type="video/mp4"),
    ]
    results.append(new_tool_result_block("call_2", "snapshot", media))
    return new_msg("system", results, "system")


def summarize(msg: Msg) -> str:
    text: str | None = get_text_content(msg, separator=" ")
    texts: list[TextBlock] = get_content_blocks(msg, "text")
    thoughts: list[ThinkingBlock] = get_content_blocks(msg, "thinking")
    calls: list[ToolUseBlock] = get_content_blocks(msg, "tool_use")
    images: list[ImageBlock] = get_content_blocks(msg, "image")
    videos: list[VideoBlock] = get_content_blocks(msg, "video")
    audio: list[AudioBlock] = get_content_blocks(msg, "audio")
    mixed = get_content_blocks(msg, ["image", "audio"])
    every = get_content_blocks(msg)
    has_tools: bool = has_content_blocks(msg, ["tool_use", "tool_result"])
    first_call = calls[0].name if calls else "-"
    urls = [image.source.url for image in images if image.source.HasField("url")]
    signature = thoughts[0].signature if thoughts else ""
    counts = (len(texts), len(videos), len(audio), len(mixed), len(every))
    return f"{text!r} {first_call} {urls} {signature} {counts} {has_tools}"


def store_and_load(msg: Msg) -> Msg:
    as_python: dict[str, object] = to_dict(msg)
    as_java: dict[str, object] = to_dict(msg, dialect="java")
    wire: bytes = msg.SerializeToString()
    again = Msg.FromString(wire)
    assert from_dict(as_java, dialect="java").id == again.id
    assert from_json(to_json(msg)).id == from_dict(as_python).id
    return again


def read_untrusted(text: str) -> Msg | None:
    try:
        return from_json(text)
    except MessageFormatError as error:
        print(f"bad message at {error.path}: {error.reason}")
        return None


def blocks_of(msg: Msg) -> list[ContentBlock]:
    return list(msg.blocks.items)


def with_agentscope(msg: Msg) -> Msg:
    return from_agentscope(to_agentscope(msg))


def request_bodies(history: list[Msg]) -> tuple[str, bytes]:
    """Bodies to send: the model call's parameters typed, or as a dict."""
    params = RequestParams(model="gpt-4.1", max_output_tokens=1024, stop=["END"])
    body = format("openai", history, request=params)
    loop = Conversation(
        "anthropic", history, request={"model": "claude-sonnet-4-5", "max_output_tokens": 1024}
    )
    return str(body["model"]), loop.format_json().body_json


def main() -> None:
    history = [ask("What's the weather in Paris?"), reply()]
    history.append(run_tools(history[-1]))
    for msg in history:
        print(summarize(store_and_load(msg)), len(blocks_of(msg)))
    print(read_untrusted('{"name": "a", "role": "robot", "content": "x"}'))


if __name__ == "__main__":
    main()
