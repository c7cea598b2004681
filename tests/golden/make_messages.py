"""Generate golden data for the AgentScope 1.x message model (``Msg``).

The oracle is ``agentscope==1.0.21``. For every message dict built below (in
AgentScope's ``Msg.to_dict()`` form) this script calls ``Msg.from_dict`` and
records what AgentScope returns:

* ``to_dict``       -- ``Msg.from_dict(input).to_dict()``
* ``invocation_id`` -- the ``invocation_id`` attribute after ``from_dict``
* ``text``          -- ``get_text_content(separator)`` keyed by separator
* ``blocks``        -- ``get_content_blocks(query)`` keyed by query name
* ``has``           -- ``has_content_blocks(query)`` keyed by query name

Inputs are assembled from small hand-designed building blocks (text, thinking,
tool_use, tool_result, image, audio and video variants; metadata, name and
envelope variants) that are combined systematically: every variant alone,
every ordered pair of block kinds, every triple of kinds, realistic agent
turns, and so on. Every input carries an explicit ``id`` and ``timestamp`` so
the output is deterministic. A separate ``generated_fields`` list covers inputs
without ``id``/``timestamp`` and records only whether the generated values
have the right shape.

Rerun from the repository root (no network needed):

    make golden   # or: .venv-golden/bin/python tests/golden/make_messages.py

It writes ``tests/golden/messages.json``; rerunning reproduces the file
byte for byte.
"""

from __future__ import annotations

import base64
import copy
import itertools
import json
import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import shortuuid
from agentscope.message import Msg

OUTPUT_PATH = Path("tests/golden/messages.json")
ORACLE = "agentscope==1.0.21"
GENERATED_BY = "tests/golden/make_messages.py"

TIMESTAMP_REGEX = r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$"
BASE_TIME = datetime(2025, 3, 14, 9, 26, 53, 589000)

KINDS = ("text", "thinking", "tool_use", "tool_result", "image", "audio", "video")
ROLES = ("user", "assistant", "system")
NAMES = ("user", "assistant", "Friday", "用户", "Алиса", "🤖 helper", "José", "system")
SEPARATORS = ("\n", " | ", "")

# Query name -> argument passed to get_content_blocks / has_content_blocks.
BLOCK_QUERIES: dict[str, Any] = {
    "*": None,
    **{kind: kind for kind in KINDS},
    "text+tool_use": ["text", "tool_use"],
    "image+audio+video": ["image", "audio", "video"],
}

ABSENT = object()  # marks an envelope key that is left out of the input dict

ENCODING_NOTE = (
    "JSON written by json.dumps(..., ensure_ascii=False, indent=1) plus a "
    "trailing newline. Python ints and floats stay distinct (1 vs 1.0); big "
    "ints keep every digit; floats are written as Python writes them "
    "(-0.0, 1e+300, 5e-324). Python None is null. A Python bytes value would "
    'be written as {"$bytes": "<standard base64>"}; the Msg model emits none '
    "here, so no such value occurs in this file. Keys of 'text' are the "
    "separator strings passed to get_text_content; keys of 'blocks'/'has' are "
    "'*' (no argument), a block kind, or 'a+b' for a list argument [a, b]."
)


# --------------------------------------------------------------------------
# Small shared values
# --------------------------------------------------------------------------


def b64(raw: bytes) -> str:
    """Standard base64 text of ``raw``."""
    return base64.b64encode(raw).decode("ascii")


# A real 1x1 PNG and the first bytes of real files of the other media types.
PNG_1X1 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "YPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
JPEG_HEAD = b64(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xd9")
WAV_HEAD = b64(b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00")
MP3_HEAD = b64(b"ID3\x04\x00\x00\x00\x00\x00\x00\xff\xfb\x90d\x00")
MP4_HEAD = b64(b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom")
SIGNATURE = b64(bytes(range(7, 7 + 48)))  # stands in for a provider signature


def url_source(url: str) -> dict:
    return {"type": "url", "url": url}


def base64_source(media_type: str, data: str) -> dict:
    return {"type": "base64", "media_type": media_type, "data": data}


# --------------------------------------------------------------------------
# Building blocks: (label, block) variants per block kind
# --------------------------------------------------------------------------


def text_variants() -> list[tuple[str, dict]]:
    return [
        ("plain", {"type": "text", "text": "The weather today is sunny."}),
        ("empty", {"type": "text", "text": ""}),
        ("unicode", {"type": "text", "text": "Grüße 👋🏽 你好 — مرحبا ✨"}),
        ("multiline", {"type": "text", "text": "line one\nline two\n\n\tindented\r\nend"}),
        ("whitespace", {"type": "text", "text": "   "}),
        ("thought_sig", {"type": "text", "text": "Answer: 42.", "thought_signature": SIGNATURE}),
        (
            "cache_ctl",
            {
                "type": "text",
                "text": "You are a careful assistant.",
                "cache_control": {"type": "ephemeral"},
            },
        ),
        ("key_order", {"text": "keys in reverse order", "type": "text"}),
        ("json_like", {"type": "text", "text": '{"not": "parsed", "n": 1.0}'}),
    ]


def thinking_variants() -> list[tuple[str, dict]]:
    return [
        ("plain", {"type": "thinking", "thinking": "The user wants a forecast; call the tool."}),
        (
            "signature",
            {
                "type": "thinking",
                "thinking": "Check units before answering.",
                "signature": SIGNATURE,
            },
        ),
        ("empty_sig", {"type": "thinking", "thinking": "", "signature": ""}),
        ("unicode", {"type": "thinking", "thinking": "思考中… 🤔\nשלב 2"}),
        ("key_order", {"signature": "c2ln", "thinking": "reordered", "type": "thinking"}),
    ]


def deep_nested(depth: int) -> dict:
    """A dict nested ``depth`` levels deep, alternating dicts and lists."""
    node: Any = {"leaf": [0, 0.5, "end", None]}
    for level in range(depth, 0, -1):
        node = {f"level_{level}": node} if level % 2 else {"items": [level, node]}
    return node


def tool_inputs() -> list[tuple[str, dict]]:
    """Tool-call argument objects covering JSON value corner cases."""
    return [
        ("empty", {}),
        ("simple", {"city": "Paris", "unit": "celsius"}),
        (
            "numbers",
            {
                "one": 1,
                "one_float": 1.0,
                "tenth": 0.1,
                "neg_zero": -0.0,
                "huge": 1e300,
                "tiny": 5e-324,
                "negative": -42,
                "zero": 0,
            },
        ),
        ("big_ints", {"max_i64": 2**63 - 1, "u64_plus_2": 2**64 + 1, "neg_2_70": -(2**70)}),
        ("unicode", {"城市": "北京", "emoji 🚀": "✨", "ключ": "значение", "": "empty key"}),
        ("null_bool", {"none": None, "yes": True, "no": False}),
        ("empty_containers", {"d": {}, "l": [], "s": "", "nested": {"l": [[]], "d": [{}]}}),
        ("deep", deep_nested(8)),
        ("unsorted_keys", {"zeta": 1, "alpha": 2, "Mid": 3, "_x": 4, "10": 5, "2": 6}),
        ("mixed_list", {"items": [1, "two", 3.0, None, True, {"k": []}, [1.5, -2]]}),
    ]


def tool_use_block(call_id: str, name: str, tool_input: dict, **extra: Any) -> dict:
    return {"type": "tool_use", "id": call_id, "name": name, "input": tool_input, **extra}


def tool_use_variants() -> list[tuple[str, dict]]:
    variants = [
        (f"in_{label}", tool_use_block(f"call_{index:04d}", "get_weather", tool_input))
        for index, (label, tool_input) in enumerate(tool_inputs())
    ]
    simple = {"city": "Paris", "unit": "celsius"}
    variants += [
        (
            "raw_input",
            tool_use_block(
                "call_raw",
                "get_weather",
                simple,
                raw_input=json.dumps(simple, ensure_ascii=False),
            ),
        ),
        (
            "raw_input_partial",
            tool_use_block(
                "toolu_01A09q90qw90lq917835lq9",
                "get_weather",
                {"city": "Par"},
                raw_input='{"city": "Par',
            ),
        ),
        ("raw_input_empty", tool_use_block("call_empty_raw", "list_files", {}, raw_input="")),
        (
            "raw_input_ascii",
            tool_use_block(
                "0_translate",
                "translate",
                {"text": "你好"},
                raw_input=json.dumps({"text": "你好"}),
            ),
        ),
        (
            "thought_sig",
            tool_use_block(
                SIGNATURE,
                "search.web",
                {"q": "agentscope"},
                thought_signature=SIGNATURE,
            ),
        ),
        ("unicode_name", tool_use_block("call_ü", "查询_天气", {"城市": "上海"})),
        (
            "key_order",
            {
                "input": {"b": 2, "a": 1},
                "name": "sum",
                "id": "call_order",
                "type": "tool_use",
            },
        ),
    ]
    return variants


def media_block(kind: str, source: dict, **extra: Any) -> dict:
    return {"type": kind, "source": source, **extra}


def image_variants() -> list[tuple[str, dict]]:
    return [
        ("https", media_block("image", url_source("https://example.com/images/cat.png"))),
        (
            "http_query",
            media_block(
                "image",
                url_source("http://example.org/a/b/photo.jpeg?size=large&v=2"),
            ),
        ),
        ("file_url", media_block("image", url_source("file:///tmp/agentscope/sample.png"))),
        ("relative", media_block("image", url_source("assets/diagram.webp"))),
        ("unicode_url", media_block("image", url_source("https://例子.测试/图片/猫 1.png"))),
        ("b64_png", media_block("image", base64_source("image/png", PNG_1X1))),
        ("b64_jpeg", media_block("image", base64_source("image/jpeg", JPEG_HEAD))),
        (
            "key_order",
            {
                "source": {"data": PNG_1X1, "type": "base64", "media_type": "image/png"},
                "type": "image",
            },
        ),
        (
            "extra_key",
            media_block(
                "image",
                url_source("https://example.com/x.gif"),
                detail="low",
            ),
        ),
    ]


def audio_variants() -> list[tuple[str, dict]]:
    return [
        ("https", media_block("audio", url_source("https://cdn.example.com/audio/hello.mp3"))),
        ("file_url", media_block("audio", url_source("file:///home/user/recording.wav"))),
        ("relative", media_block("audio", url_source("./audio/greeting.wav"))),
        ("b64_wav", media_block("audio", base64_source("audio/wav", WAV_HEAD))),
        ("b64_mp3", media_block("audio", base64_source("audio/mp3", MP3_HEAD))),
    ]


def video_variants() -> list[tuple[str, dict]]:
    return [
        ("https", media_block("video", url_source("https://videos.example.com/clip.mp4"))),
        ("http", media_block("video", url_source("http://example.net/v?id=7&fmt=mp4"))),
        ("file_url", media_block("video", url_source("file:///var/data/movie.mp4"))),
        ("relative", media_block("video", url_source("media/demo.mp4"))),
        ("b64_mp4", media_block("video", base64_source("video/mp4", MP4_HEAD))),
    ]


def tool_result_block(call_id: str, name: str, output: Any, **extra: Any) -> dict:
    return {"type": "tool_result", "id": call_id, "name": name, "output": output, **extra}


def tool_result_variants() -> list[tuple[str, dict]]:
    image = dict(image_variants())
    audio = dict(audio_variants())
    video = dict(video_variants())
    text = dict(text_variants())
    outputs: list[tuple[str, Any]] = [
        ("str", "Sunny, 21°C"),
        ("str_multiline", "row 1\nrow 2\n"),
        ("str_empty", ""),
        ("none", None),
        ("list_empty", []),
        ("list_text", [text["plain"]]),
        ("list_two_texts", [text["plain"], text["unicode"]]),
        ("list_image_url", [image["https"]]),
        ("list_image_b64", [text["plain"], image["b64_png"]]),
        ("list_audio", [audio["b64_wav"], audio["relative"]]),
        ("list_video", [video["https"], video["b64_mp4"]]),
        (
            "list_all_media",
            [
                text["multiline"],
                image["file_url"],
                audio["b64_mp3"],
                video["relative"],
            ],
        ),
    ]
    variants = [
        (f"out_{label}", tool_result_block(f"call_{index:04d}", "get_weather", output))
        for index, (label, output) in enumerate(outputs)
    ]
    variants += [
        ("extra_key", tool_result_block("call_x", "run", "ok", is_error=False)),
        (
            "key_order",
            {
                "output": "done",
                "name": "write_file",
                "id": "call_order",
                "type": "tool_result",
            },
        ),
    ]
    return variants


VARIANTS: dict[str, list[tuple[str, dict]]] = {
    "text": text_variants(),
    "thinking": thinking_variants(),
    "tool_use": tool_use_variants(),
    "tool_result": tool_result_variants(),
    "image": image_variants(),
    "audio": audio_variants(),
    "video": video_variants(),
}


def variant(kind: str, index: int) -> tuple[str, dict]:
    """The ``index``-th variant of ``kind`` (wrapping around)."""
    options = VARIANTS[kind]
    return options[index % len(options)]


def pick(kind: str, label: str) -> dict:
    """The variant of ``kind`` called ``label``."""
    return dict(VARIANTS[kind])[label]


# --------------------------------------------------------------------------
# Envelope building blocks
# --------------------------------------------------------------------------


def metadata_variants() -> list[tuple[str, Any]]:
    return [
        ("empty", {}),
        ("null", None),
        ("absent", ABSENT),
        ("structured", {"structured_output": {"city": "Paris", "temp_c": 21.5, "ok": True}}),
        ("numbers", {"int": 1, "float": 1.0, "tenth": 0.1, "neg_zero": -0.0, "huge": 1e300}),
        ("big_ints", {"max_i64": 2**63 - 1, "u64_plus_2": 2**64 + 1, "neg_2_70": -(2**70)}),
        ("unicode", {"来源": "网页", "emoji": "🎉", "ключ": ["а", "б"]}),
        ("nested", {"trace": {"spans": [{"id": 1, "tags": {"a": None}}], "depth": deep_nested(4)}}),
        ("nulls_bools", {"missing": None, "flag": False, "on": True}),
        ("lists", {"scores": [0.25, 1, -3], "empty_list": [], "empty_dict": {}}),
        ("unsorted", {"z": 0, "a": 1, "B": 2, "": "empty key"}),
        ("string_only", {"note": "plain string value"}),
    ]


def message_id(case_name: str) -> str:
    """A fixed, shortuuid-shaped id derived from the case name."""
    return shortuuid.uuid(name=f"agentscope-proto.golden.messages/{case_name}")


def timestamp(index: int) -> str:
    """A fixed timestamp in AgentScope's format, distinct per case."""
    moment = BASE_TIME + timedelta(seconds=97 * index, milliseconds=13 * index)
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def envelope(
    name: str,
    role: str,
    content: Any,
    metadata: Any = ABSENT,
    **extra: Any,
) -> dict:
    """A message dict in canonical ``to_dict`` key order (id/timestamp added later)."""
    message = {"name": name, "role": role, "content": content}
    if metadata is not ABSENT:
        message["metadata"] = metadata
    message.update(extra)
    return message


# --------------------------------------------------------------------------
# Case generators: each yields (case name, partial message dict)
# --------------------------------------------------------------------------


def cycle_envelope(index: int, content: Any) -> dict:
    """Envelope whose role, name and metadata rotate with ``index``."""
    metadata = metadata_variants()[index % len(metadata_variants())][1]
    return envelope(NAMES[index % len(NAMES)], ROLES[index % len(ROLES)], content, metadata)


def string_content_cases() -> Iterator[tuple[str, dict]]:
    strings = [
        ("empty", ""),
        ("hi", "hi"),
        ("space", " "),
        ("emoji", "Done ✅ 🚀👩🏽‍💻"),
        ("cjk", "今日は良い天気です。你好，世界"),
        ("rtl", "مرحبا بالعالم שלום"),
        ("multiline", "first line\nsecond line\n\nfourth line\n"),
        ("crlf_tab", "a\r\nb\tc"),
        ("control_chars", "nul\u0000 bell\u0007 esc\u001b"),
        ("json_like", '[{"type": "text", "text": "not a block"}]'),
        ("long", "lorem ipsum " * 200),
        ("combining", "e\u0301 vs é, Å vs A\u030a"),
    ]
    for index, (label, text) in enumerate(strings):
        yield f"str/{label}", cycle_envelope(index, text)


def single_block_cases() -> Iterator[tuple[str, dict]]:
    index = 0
    for kind in KINDS:
        for label, block in VARIANTS[kind]:
            yield f"single/{kind}.{label}", cycle_envelope(index, [block])
            index += 1


def pair_cases() -> Iterator[tuple[str, dict]]:
    """Every ordered pair of block kinds, with rotating variants."""
    for index, (first, second) in enumerate(itertools.product(KINDS, KINDS)):
        label_a, block_a = variant(first, index)
        label_b, block_b = variant(second, index + 1)
        name = f"pair/{first}.{label_a}+{second}.{label_b}"
        yield name, cycle_envelope(index, [block_a, block_b])


def triple_cases() -> Iterator[tuple[str, dict]]:
    """Every combination of three kinds, in rotated orders."""
    for index, kinds in enumerate(itertools.combinations(KINDS, 3)):
        shift = index % 3
        ordered = kinds[shift:] + kinds[:shift]
        picked = [variant(kind, index + offset) for offset, kind in enumerate(ordered)]
        name = "triple/" + "+".join(
            f"{kind}.{label}" for kind, (label, _) in zip(ordered, picked, strict=True)
        )
        yield name, cycle_envelope(index, [block for _, block in picked])


def all_kinds_cases() -> Iterator[tuple[str, dict]]:
    orders = {
        "canonical": list(KINDS),
        "reversed": list(reversed(KINDS)),
        "interleaved_text": [k for kind in KINDS[1:] for k in ("text", kind)],
        "doubled": [kind for kind in KINDS for _ in range(2)],
    }
    for index, (label, kinds) in enumerate(orders.items()):
        blocks = [variant(kind, index + offset)[1] for offset, kind in enumerate(kinds)]
        yield f"all_kinds/{label}", cycle_envelope(index, blocks)


def multi_text_cases() -> Iterator[tuple[str, dict]]:
    """Several text blocks, to exercise the separator of get_text_content."""
    t = dict(text_variants())
    sequences = {
        "two": [t["plain"], t["unicode"]],
        "three": [t["plain"], t["multiline"], t["json_like"]],
        "empty_between": [t["plain"], t["empty"], t["plain"]],
        "all_empty": [t["empty"], t["empty"]],
        "around_image": [t["plain"], pick("image", "https"), t["unicode"]],
        "thinking_interleaved": [
            pick("thinking", "plain"),
            t["plain"],
            pick("thinking", "signature"),
            t["whitespace"],
        ],
        "with_tool_result_text": [
            t["plain"],
            pick("tool_result", "out_list_two_texts"),
            t["cache_ctl"],
        ],
        "extras_mixed": [t["thought_sig"], t["cache_ctl"], t["key_order"]],
        "separator_in_text": [{"type": "text", "text": "a | b"}, {"type": "text", "text": "c\nd"}],
        "five": [{"type": "text", "text": str(n)} for n in range(5)],
    }
    for index, (label, blocks) in enumerate(sequences.items()):
        yield f"multi_text/{label}", cycle_envelope(index, blocks)


def agent_turn_cases() -> Iterator[tuple[str, dict]]:
    """Messages shaped like real ReAct-agent turns."""
    weather_call = tool_use_block("call_w1", "get_weather", {"city": "Paris", "days": 3})
    turns = [
        (
            "assistant_think_text_call",
            "Friday",
            "assistant",
            [
                pick("thinking", "signature"),
                {"type": "text", "text": "Let me check the forecast."},
                weather_call,
            ],
            {"invocation_id": "chatcmpl-AbC123xyz"},
        ),
        (
            "system_tool_result",
            "system",
            "system",
            [
                tool_result_block(
                    "call_w1",
                    "get_weather",
                    [
                        {"type": "text", "text": "Mon 21°C, Tue 19.5°C, Wed 18°C"},
                    ],
                ),
            ],
            {},
        ),
        (
            "assistant_parallel_calls",
            "Friday",
            "assistant",
            [
                tool_use_block("call_a", "get_weather", {"city": "Oslo"}),
                tool_use_block(
                    "call_b", "get_time", {"tz": "Europe/Oslo"}, raw_input='{"tz": "Europe/Oslo"}'
                ),
            ],
            {"invocation_id": "msg_01XFDUDYJgAACzvnptvVoYEL"},
        ),
        (
            "system_two_results",
            "system",
            "system",
            [
                tool_result_block("call_a", "get_weather", "Snow, -3°C"),
                tool_result_block("call_b", "get_time", "14:05"),
            ],
            {},
        ),
        (
            "user_text_image",
            "user",
            "user",
            [
                {"type": "text", "text": "What is in this picture?"},
                pick("image", "b64_png"),
            ],
            {},
        ),
        (
            "user_audio_question",
            "user",
            "user",
            [
                pick("audio", "b64_wav"),
                {"type": "text", "text": "Transcribe this, please."},
            ],
            {},
        ),
        (
            "user_video_url",
            "Алиса",
            "user",
            [
                {"type": "text", "text": "Summarise the clip."},
                pick("video", "https"),
            ],
            {},
        ),
        (
            "gemini_style",
            "assistant",
            "assistant",
            [
                {"type": "text", "text": "Searching.", "thought_signature": SIGNATURE},
                pick("tool_use", "thought_sig"),
            ],
            {"invocation_id": "1741944413589_4f2a9c"},
        ),
        (
            "anthropic_cached_system",
            "system",
            "system",
            [
                pick("text", "cache_ctl"),
            ],
            {},
        ),
        (
            "final_answer",
            "Friday",
            "assistant",
            "It will be sunny in Paris.",
            {
                "metadata": {"structured_output": {"city": "Paris", "sunny": True}},
                "invocation_id": "chatcmpl-final",
            },
        ),
        (
            "tool_result_with_media",
            "system",
            "system",
            [
                tool_result_block(
                    "call_img",
                    "take_screenshot",
                    [
                        {"type": "text", "text": "Screenshot captured."},
                        pick("image", "b64_png"),
                    ],
                ),
            ],
            {},
        ),
        (
            "interrupted_empty_result",
            "system",
            "system",
            [
                tool_result_block("call_slow", "long_task", None),
            ],
            {},
        ),
        (
            "streaming_partial_call",
            "Friday",
            "assistant",
            [
                pick("thinking", "empty_sig"),
                pick("tool_use", "raw_input_partial"),
            ],
            {},
        ),
        (
            "multi_agent_named",
            "🤖 helper",
            "assistant",
            [
                {"type": "text", "text": "Bob: I agree with Alice."},
            ],
            {"metadata": {"speaker": "Bob", "round": 2}},
        ),
    ]
    for label, name, role, content, extra in turns:
        yield f"turn/{label}", envelope(name, role, content, **extra)


def unusual_block_cases() -> Iterator[tuple[str, dict]]:
    """Block types outside the seven 1.x kinds (kept verbatim by Msg)."""
    plain = pick("text", "plain")
    contents = {
        "file_block": [{"type": "file", "url": "https://example.com/report.pdf"}],
        "hint_block_with_text": [{"type": "hint", "hint": "be brief"}, plain],
        "data_block": [plain, {"type": "data", "source": url_source("https://example.com/d.bin")}],
        "uppercase_type": [{"type": "Text", "text": "not matched"}, plain],
        "tool_call_v2": [{"type": "tool_call", "id": "c1", "name": "f", "input": "{}"}],
    }
    for index, (label, blocks) in enumerate(contents.items()):
        yield f"unusual/{label}", cycle_envelope(index, blocks)
    yield "unusual/empty_list", envelope("user", "user", [], {})
    yield "unusual/empty_list_system", envelope("system", "system", [])


def metadata_cases() -> Iterator[tuple[str, dict]]:
    """Each metadata variant with string content and with block content."""
    contents = [
        ("str", "metadata carrier"),
        ("blocks", [pick("text", "plain"), pick("tool_use", "in_simple")]),
    ]
    for index, (label, metadata) in enumerate(metadata_variants()):
        for offset, (content_label, content) in enumerate(contents):
            role = ROLES[(index + offset) % len(ROLES)]
            yield (
                f"metadata/{label}.{content_label}",
                envelope(NAMES[index % len(NAMES)], role, content, metadata),
            )


def envelope_cases() -> Iterator[tuple[str, dict]]:
    """Variations of the fields around the content."""
    content = [pick("text", "plain")]
    for value in ("chatcmpl-9x8y7z", "msg_01XFDUDYJgAACzvnptvVoYEL", "", "调用-1", None):
        label = "null" if value is None else (value or "empty")
        yield (
            f"envelope/invocation_id.{label}",
            envelope(
                "assistant",
                "assistant",
                content,
                {},
                invocation_id=value,
            ),
        )
    names = {
        "empty": "",
        "cjk": "用户",
        "cyrillic": "Алиса",
        "emoji": "🤖 helper",
        "punctuation": 'name with spaces & <tags> "quotes"',
    }
    for label, name in names.items():
        yield f"envelope/name.{label}", envelope(name, "user", "hello", {})
    yield (
        "envelope/extra_top_level_key",
        envelope(
            "user",
            "user",
            "hi",
            {},
            url="https://example.com",
            echo=True,
        ),
    )


# Explicit id/timestamp values (the generic ones are added by finish_input).
SPECIAL_FIELD_CASES: list[tuple[str, dict]] = [
    ("envelope/id.null", {"id": None}),
    ("envelope/id.empty", {"id": ""}),
    ("envelope/id.custom", {"id": "custom-id-with-dashes_001"}),
    ("envelope/id.unicode", {"id": "消息-①"}),
    ("envelope/timestamp.leap_day", {"timestamp": "2024-02-29 23:59:59.999"}),
    ("envelope/timestamp.epoch", {"timestamp": "1970-01-01 00:00:00.000"}),
    ("envelope/timestamp.iso8601", {"timestamp": "2025-06-01T12:00:00Z"}),
    ("envelope/timestamp.free_text", {"timestamp": "not a timestamp"}),
]


def special_field_cases() -> Iterator[tuple[str, dict]]:
    for index, (label, fields) in enumerate(SPECIAL_FIELD_CASES):
        yield label, {**cycle_envelope(index, "fields"), **fields}


def key_order_cases() -> Iterator[tuple[str, dict]]:
    """Inputs whose top-level keys are not in to_dict order."""
    orders = {
        "metadata_first": ["metadata", "content", "role", "name", "id", "timestamp"],
        "reversed": ["invocation_id", "timestamp", "metadata", "content", "role", "name", "id"],
        "timestamp_first_id_last": ["timestamp", "name", "content", "metadata", "role", "id"],
        "content_last": ["id", "invocation_id", "role", "metadata", "name", "timestamp", "content"],
    }
    blocks = [pick("thinking", "key_order"), pick("image", "key_order"), pick("text", "key_order")]
    for index, (label, order) in enumerate(orders.items()):
        name = f"key_order/{label}"
        full = finish_input(
            1000 + index,
            name,
            envelope(
                "Friday",
                "assistant",
                blocks,
                {"z": 1, "a": 2},
                invocation_id=f"inv-{label}",
            ),
        )
        yield name, {key: full[key] for key in order if key in full}


CASE_GENERATORS = (
    string_content_cases,
    single_block_cases,
    pair_cases,
    triple_cases,
    all_kinds_cases,
    multi_text_cases,
    agent_turn_cases,
    unusual_block_cases,
    metadata_cases,
    envelope_cases,
    special_field_cases,
    key_order_cases,
)


# --------------------------------------------------------------------------
# Running the oracle
# --------------------------------------------------------------------------


def finish_input(index: int, case_name: str, message: dict) -> dict:
    """Put a fixed id first and a fixed timestamp last, unless the input has them."""
    body = {key: value for key, value in message.items() if key not in ("id", "timestamp")}
    finished = {"id": message.get("id", message_id(case_name)), **body}
    finished["timestamp"] = message.get("timestamp", timestamp(index))
    return finished


def record(case_name: str, message: dict) -> dict:
    """Run the oracle on one input and collect every observed value."""
    msg = Msg.from_dict(copy.deepcopy(message))
    return {
        "name": case_name,
        "input": message,
        "to_dict": copy.deepcopy(msg.to_dict()),
        "invocation_id": msg.invocation_id,
        "text": {sep: msg.get_text_content(separator=sep) for sep in SEPARATORS},
        "blocks": {
            key: copy.deepcopy(msg.get_content_blocks(query))
            for key, query in BLOCK_QUERIES.items()
        },
        "has": {key: msg.has_content_blocks(query) for key, query in BLOCK_QUERIES.items()},
    }


def build_cases() -> list[dict]:
    cases = []
    seen: set[str] = set()
    for generator in CASE_GENERATORS:
        for case_name, message in generator():
            assert case_name not in seen, f"duplicate case name {case_name!r}"
            seen.add(case_name)
            if "id" not in message or "timestamp" not in message:
                message = finish_input(len(cases), case_name, message)
            cases.append(record(case_name, message))
    return cases


# --------------------------------------------------------------------------
# Generated id / timestamp (values are random, so only their shape is kept)
# --------------------------------------------------------------------------


def generated_field_inputs() -> Iterator[tuple[str, dict]]:
    fixed_id = message_id("generated")
    fixed_ts = timestamp(0)
    yield "no_id", {"name": "user", "role": "user", "content": "hi", "timestamp": fixed_ts}
    yield "no_timestamp", {"id": fixed_id, "name": "user", "role": "user", "content": "hi"}
    yield "no_id_no_timestamp", {"name": "user", "role": "user", "content": "hi"}
    yield (
        "timestamp_null",
        {"id": fixed_id, "name": "a", "role": "assistant", "content": "x", "timestamp": None},
    )
    yield (
        "timestamp_empty",
        {"id": fixed_id, "name": "a", "role": "assistant", "content": "x", "timestamp": ""},
    )
    yield (
        "minimal_list_content",
        {"name": "Friday", "role": "assistant", "content": [pick("tool_use", "in_simple")]},
    )
    yield "minimal_empty_list", {"name": "system", "role": "system", "content": []}
    yield (
        "with_metadata_and_invocation",
        {
            "name": "用户",
            "role": "user",
            "content": "你好",
            "metadata": {"k": 1},
            "invocation_id": "inv-1",
        },
    )
    yield "metadata_null", {"name": "José", "role": "user", "content": "", "metadata": None}
    yield (
        "media_content",
        {
            "name": "🤖 helper",
            "role": "system",
            "content": [pick("image", "b64_png"), pick("audio", "https")],
        },
    )


def is_shortuuid(value: Any, alphabet: str) -> bool:
    return isinstance(value, str) and len(value) == 22 and set(value) <= set(alphabet)


def generated_fields() -> list[dict]:
    alphabet = shortuuid.get_alphabet()
    results = []
    for case_name, message in generated_field_inputs():
        msg = Msg.from_dict(copy.deepcopy(message))
        results.append(
            {
                "name": case_name,
                "input": message,
                "id_is_shortuuid": is_shortuuid(msg.id, alphabet),
                "timestamp_matches_format": bool(re.fullmatch(TIMESTAMP_REGEX, msg.timestamp)),
            }
        )
    return results


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------


def encode_extra(value: Any) -> Any:
    """json.dumps hook: bytes -> {"$bytes": base64}; anything else is an error."""
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    raise TypeError(f"cannot encode {type(value).__name__}")


def main() -> None:
    cases = build_cases()
    document = {
        "oracle": ORACLE,
        "generated_by": GENERATED_BY,
        "encoding": ENCODING_NOTE,
        "shortuuid_alphabet": shortuuid.get_alphabet(),
        "timestamp_regex": TIMESTAMP_REGEX,
        "cases": cases,
        "generated_fields": generated_fields(),
    }
    text = json.dumps(document, ensure_ascii=False, indent=1, default=encode_extra)
    OUTPUT_PATH.write_text(text + "\n", encoding="utf-8")
    print(
        f"wrote {OUTPUT_PATH}: {len(cases)} cases, "
        f"{len(document['generated_fields'])} generated_fields cases"
    )


if __name__ == "__main__":
    main()
