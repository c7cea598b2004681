"""Generate the golden request bodies of the message formatters.

The oracle is ``agentscope==1.0.21``.  The providers are those of the
registry, ``agentscope_proto.providers.PROVIDERS``, that AgentScope 1.0.21
has (each needs an entry in ``ORACLE_SPECS`` below, else the script stops).  It writes

* ``tests/golden/formatters/inputs.json``: each conversation (a list of
  AgentScope 1.x message dicts, ``Msg.to_dict()`` form) and each tool set
  once, by name, and every case input once, by case name: its conversation,
  the multi-agent switch, the formatter options, its tool set and tool_choice;
* ``tests/golden/formatters/<provider>.json``: per provider, in its case
  order, the input's name, the options whose value depends on the provider
  (a ``max_tokens`` fitted to its own output; added to the input's), and
  either ``expected``: the request-body fields that AgentScope's *model
  class* hands to the provider SDK (messages/contents/input plus tools, tool
  choice and the Anthropic ``system``), and ``warnings``: the messages
  AgentScope's logger emitted at WARNING level or above while formatting and
  building the request; or ``error``: ``{"type", "message"}`` when AgentScope
  raises.  A case exists for a provider when its formatter accepts the
  options and needs no download (see ``applicable``).

How a body is obtained: the messages go through ``<Provider>ChatFormatter`` or
``<Provider>MultiAgentFormatter``; then the provider's model class is called
with the formatted list, ``tools`` and ``tool_choice``.  The SDK method the
model class would call is replaced by a stub that records its keyword
arguments and stops, so the model's own ``_format_tools_json_schemas``,
``_format_tool_choice``, validation and system-prompt handling decide the
body.  The body keeps the order in which the model class builds its kwargs
(see ``ORACLE_SPECS`` and the ``encoding`` note written into each file).

The script also writes small media fixtures under ``tests/golden/media/`` when
they are missing; the cases refer to them with paths relative to
``tests/golden`` (it chdirs there).  It needs no network: every connection
attempt raises ``NetworkBlocked`` (a ``BaseException``, so no retry loop can
swallow it) and cases that would download http(s) media are never generated.

Rerun from the repository root (takes a few seconds)::

    make golden   # or: .venv-golden/bin/python tests/golden/make_formatters.py

It needs ``agentscope_proto`` importable (``make golden`` installs it into
``.venv-golden`` next to the oracle) only to read the registry.  The output is
deterministic: rerunning reproduces byte-identical files.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import hashlib
import inspect
import io
import json
import logging
import os
import socket
import struct
import tempfile
import warnings
import wave
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GOLDEN_DIR = Path(__file__).resolve().parent
OUT_DIR = GOLDEN_DIR / "formatters"
MEDIA_DIR = GOLDEN_DIR / "media"
ORACLE = "agentscope==1.0.21"
GENERATED_BY = "tests/golden/make_formatters.py"
MEDIA_ROOT = "tests/golden"
TMP_MEDIA_DIR = os.path.join(tempfile.gettempdir(), "agentscope_media")
TMP_TOKEN = "{TMP}/agentscope_media"
CWD_TOKEN = "{CWD}"


# ---------------------------------------------------------------------------
# Media fixtures (tiny, valid, byte-for-byte reproducible)
# ---------------------------------------------------------------------------


def _zlib_stored(data: bytes) -> bytes:
    """A zlib stream made of one uncompressed block (independent of the
    zlib implementation, unlike ``zlib.compress``)."""
    header = b"\x78\x01" + b"\x01"
    lengths = struct.pack("<HH", len(data), len(data) ^ 0xFFFF)
    return header + lengths + data + struct.pack(">I", zlib.adler32(data))


def make_png(pixels: list[list[tuple[int, int, int]]]) -> bytes:
    """An 8-bit RGB PNG of the given rows of pixels."""

    def chunk(tag: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(tag + data))
        return struct.pack(">I", len(data)) + tag + data + crc

    height, width = len(pixels), len(pixels[0])
    raw = b"".join(b"\x00" + b"".join(bytes(px) for px in row) for row in pixels)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", _zlib_stored(raw))
        + chunk(b"IEND", b"")
    )


def make_jpeg() -> bytes:
    """A 1x1 grey baseline JPEG (one-code Huffman tables, DC=0, EOB)."""

    def segment(marker: int, payload: bytes) -> bytes:
        size = struct.pack(">H", len(payload) + 2)
        return b"\xff" + bytes([marker]) + size + payload

    one_code_table = bytes([1] + [0] * 15) + b"\x00"
    return (
        b"\xff\xd8"
        + segment(0xE0, b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")
        + segment(0xDB, b"\x00" + b"\x01" * 64)
        + segment(0xC0, b"\x08\x00\x01\x00\x01\x01\x01\x11\x00")
        + segment(0xC4, b"\x00" + one_code_table)
        + segment(0xC4, b"\x10" + one_code_table)
        + segment(0xDA, b"\x01\x01\x00\x00\x3f\x00")
        + b"\x3f"
        + b"\xff\xd9"
    )


def make_webp(rgba: tuple[int, int, int, int]) -> bytes:
    """A 1x1 lossless (VP8L) WEBP with single-symbol prefix codes."""
    value, nbits = 0, 0

    def put(bits: int, width: int) -> None:
        nonlocal value, nbits
        value |= bits << nbits
        nbits += width

    put(0x2F, 8)  # VP8L signature
    put(0, 14)  # width - 1
    put(0, 14)  # height - 1
    put(1, 1)  # alpha is used
    put(0, 3)  # version
    put(0, 3)  # no transform, no colour cache, no meta prefix codes
    red, green, blue, alpha = rgba
    for symbol in (green, red, blue, alpha, 0):  # the 5 prefix codes
        put(1, 1)  # simple code
        put(0, 1)  # one symbol
        if symbol < 2:
            put(0, 1)
            put(symbol, 1)
        else:
            put(1, 1)
            put(symbol, 8)
    data = value.to_bytes((nbits + 7) // 8, "little")
    data += b"\x00" * (len(data) % 2)
    body = b"VP8L" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WEBP" + body


def make_gif() -> bytes:
    """The classic 1x1 transparent GIF89a."""
    return bytes.fromhex(
        "47494638396101000100800000ffffff00000021f90401000000002c00000000010001000002024401003b",
    )


def make_wav() -> bytes:
    """64 frames of an 8 kHz, 8-bit mono square wave."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(1)
        wav.setframerate(8000)
        wav.writeframes(bytes(([0x60] * 8 + [0xA0] * 8) * 4))
    return buffer.getvalue()


def make_mp3() -> bytes:
    """Two silent MPEG-1 layer III frames (32 kbps, 48 kHz, mono)."""
    frame = b"\xff\xfb\x14\xc4" + bytes(92)
    return frame * 2


def make_mp4() -> bytes:
    """An ``ftyp`` box and an empty ``mdat`` box: enough to be sniffed."""
    ftyp = b"ftyp" + b"isom" + struct.pack(">I", 0x200) + b"isommp41"
    mdat = struct.pack(">I", 8) + b"mdat"
    return struct.pack(">I", 8 + len(ftyp)) + ftyp + mdat


MEDIA_FILES: dict[str, Callable[[], bytes]] = {
    "cat.png": lambda: make_png(
        [[(255, 0, 0), (0, 255, 0)], [(0, 0, 255), (255, 255, 255)]],
    ),
    "LOUD.PNG": lambda: make_png([[(255, 200, 0), (0, 0, 0)]]),
    "snapshot": lambda: make_png([[(12, 34, 56)]]),
    "photo.jpg": make_jpeg,
    "sticker.webp": lambda: make_webp((255, 0, 0, 255)),
    "anim.gif": make_gif,
    "beep.wav": make_wav,
    "beep.mp3": make_mp3,
    "clip.mp4": make_mp4,
}


def ensure_media() -> dict[str, bytes]:
    """Write the fixtures that are missing and return all fixture bytes."""
    MEDIA_DIR.mkdir(parents=True, exist_ok=True)
    contents = {}
    for name, make in MEDIA_FILES.items():
        path = MEDIA_DIR / name
        if not path.exists():
            path.write_bytes(make())
        contents[name] = path.read_bytes()
    return contents


MEDIA = ensure_media()


def b64(name: str) -> str:
    """Standard base64 of a media fixture."""
    return base64.b64encode(MEDIA[name]).decode("ascii")


# ---------------------------------------------------------------------------
# Sandbox: no network, deterministic temp files, SDK calls captured
# ---------------------------------------------------------------------------


class NetworkBlocked(BaseException):
    """Raised on any network attempt.  A BaseException, so AgentScope's
    ``except Exception`` retry loops cannot swallow it."""


class SdkCall(Exception):
    """Raised by the SDK stubs; carries the kwargs the model class built."""

    def __init__(self, kwargs: dict[str, Any]) -> None:
        super().__init__("SDK call captured")
        self.kwargs = kwargs


def _refuse_network(*args: Any, **kwargs: Any) -> Any:
    raise NetworkBlocked(f"network access attempted: {args!r:.200}")


async def _refuse_network_async(*args: Any, **kwargs: Any) -> Any:
    _refuse_network(*args, **kwargs)


async def _capture_sdk_call(*args: Any, **kwargs: Any) -> Any:
    raise SdkCall(kwargs)


def save_base64_media(media_type: str, base64_data: str) -> str:
    """Stand-in for AgentScope's ``_save_base64_data``: a content-addressed
    path under ``{tempdir}/agentscope_media`` instead of a random name."""
    data = base64.b64decode(base64_data)
    os.makedirs(TMP_MEDIA_DIR, exist_ok=True)
    digest = hashlib.sha256(data).hexdigest()[:16]
    path = os.path.join(
        TMP_MEDIA_DIR,
        f"{digest}.{media_type.split('/')[-1]}",
    )
    with open(path, "wb") as file:
        file.write(data)
    return path


def install_sandbox() -> None:
    """Block the network, pin temp-file names, stub the SDK entry points."""
    import httpx
    import requests

    socket.socket.connect = _refuse_network  # type: ignore[method-assign]
    socket.create_connection = _refuse_network  # type: ignore[assignment]
    requests.get = _refuse_network  # type: ignore[assignment]
    requests.Session.request = _refuse_network  # type: ignore[method-assign]
    httpx.HTTPTransport.handle_request = _refuse_network  # type: ignore
    httpx.AsyncHTTPTransport.handle_async_request = (  # type: ignore
        _refuse_network_async
    )

    import agentscope._utils._common as common
    import agentscope.formatter._formatter_base as formatter_base

    common._save_base64_data = save_base64_media
    formatter_base._save_base64_data = save_base64_media

    import anthropic.resources.messages as anthropic_messages
    import dashscope
    import google.genai.models as genai_models
    import ollama
    import openai.resources.chat.completions as openai_chat
    import openai.resources.responses as openai_responses

    openai_chat.AsyncCompletions.create = _capture_sdk_call
    openai_responses.AsyncResponses.create = _capture_sdk_call
    anthropic_messages.AsyncMessages.create = _capture_sdk_call
    genai_models.AsyncModels.generate_content = _capture_sdk_call
    ollama.AsyncClient.chat = _capture_sdk_call
    dashscope.aigc.generation.AioGeneration.call = _capture_sdk_call
    dashscope.AioMultiModalConversation.call = _capture_sdk_call

    warnings.simplefilter("ignore")


class WarningCollector(logging.Handler):
    """Collects the messages of AgentScope's logger at WARNING and above."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def collect_warnings() -> WarningCollector:
    """Route AgentScope's logger to a fresh collector only (no stderr)."""
    from agentscope._logging import logger

    collector = WarningCollector()
    logger.handlers = [collector]
    return collector


# ---------------------------------------------------------------------------
# Providers: formatter classes, model classes, body fields
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Provider:
    """How AgentScope formats and sends a request for one provider."""

    name: str
    chat_formatter: str
    multi_agent_formatter: str
    make_model: Callable[[], Any]
    # Body fields in the order the model class builds its SDK kwargs.
    body_keys: tuple[str, ...]
    # Media block types it downloads when their URL is http(s).
    downloads: frozenset[str]
    # Whether it downloads a promoted http(s) tool-result image.
    downloads_promoted_images: bool


def _models() -> dict[str, Callable[[], Any]]:
    from agentscope import model

    return {
        "openai": lambda: model.OpenAIChatModel(
            "gpt-4o",
            api_key="sk-golden",
            stream=False,
        ),
        "deepseek": lambda: model.OpenAIChatModel(
            "deepseek-chat",
            api_key="sk-golden",
            stream=False,
            client_kwargs={"base_url": "https://api.deepseek.com"},
        ),
        "anthropic": lambda: model.AnthropicChatModel(
            "claude-sonnet-4-5",
            api_key="sk-golden",
            stream=False,
        ),
        "gemini": lambda: model.GeminiChatModel(
            "gemini-2.5-flash",
            api_key="golden",
            stream=False,
        ),
        "dashscope": lambda: model.DashScopeChatModel(
            "qwen-max",
            api_key="sk-golden",
            stream=False,
        ),
        "ollama": lambda: model.OllamaChatModel("qwen3", stream=False),
        "openai_responses": lambda: model.OpenAIResponseModel(
            "gpt-4o",
            api_key="sk-golden",
            stream=False,
        ),
    }


# name: (class-name prefix, body keys in build order, media types it downloads
# when their URL is http(s), whether it downloads a promoted http(s) image)
ORACLE_SPECS: dict[str, tuple[str, tuple[str, ...], set[str], bool]] = {
    "openai": ("OpenAI", ("messages", "tools", "tool_choice"), {"audio"}, False),
    "anthropic": ("Anthropic", ("tools", "tool_choice", "system", "messages"), set(), False),
    "gemini": ("Gemini", ("contents", "tools", "tool_config"), {"image", "audio", "video"}, True),
    "dashscope": ("DashScope", ("messages", "tools", "tool_choice"), set(), False),
    "ollama": ("Ollama", ("messages", "tools"), {"image"}, True),
    "deepseek": ("DeepSeek", ("messages", "tools", "tool_choice"), set(), False),
    "openai_responses": ("OpenAIResponse", ("input", "tools", "tool_choice"), {"audio"}, False),
}


def registry_providers() -> list[str]:
    """The names of the providers of agentscope_proto's registry that
    AgentScope 1.0.21 has (an "agentscope" variant), in its order."""
    from agentscope_proto.providers import PROVIDERS as REGISTRY

    return [name for name, provider in REGISTRY.items() if "agentscope" in provider.variants]


def _providers() -> dict[str, Provider]:
    """The registry's providers, each with how AgentScope handles it."""
    names = registry_providers()
    missing = [name for name in names if name not in ORACLE_SPECS]
    stale = sorted(set(ORACLE_SPECS) - set(names))
    if missing or stale:
        raise SystemExit(
            f"make_formatters.py: registry providers without an ORACLE_SPECS entry: {missing}; "
            f"ORACLE_SPECS entries not in the registry: {stale}"
        )
    models = _models()
    providers = {}
    for name in names:
        prefix, keys, downloads, promoted = ORACLE_SPECS[name]
        providers[name] = Provider(
            name=name,
            chat_formatter=f"{prefix}ChatFormatter",
            multi_agent_formatter=f"{prefix}MultiAgentFormatter",
            make_model=models[name],
            body_keys=keys,
            downloads=frozenset(downloads),
            downloads_promoted_images=promoted,
        )
    return providers


def extract_body(provider: Provider, sdk_kwargs: dict[str, Any]) -> dict:
    """Pick the request-body fields out of the captured SDK kwargs.  Gemini
    keeps tools / tool_config inside ``config``; they are hoisted."""
    fields = dict(sdk_kwargs)
    fields.update(sdk_kwargs.get("config") or {})
    return {key: fields[key] for key in provider.body_keys if key in fields}


def formatter_class(provider: Provider, multi_agent: bool) -> type:
    import agentscope.formatter as formatters

    name = provider.multi_agent_formatter if multi_agent else provider.chat_formatter
    return getattr(formatters, name)


def accepted_options(provider: Provider, multi_agent: bool) -> set[str]:
    """The constructor keywords of the formatter class."""
    cls = formatter_class(provider, multi_agent)
    return set(inspect.signature(cls.__init__).parameters) - {"self"}


def make_formatter(provider: Provider, multi_agent: bool, options: dict):
    """Instantiate the formatter; ``token_counter: "char"`` becomes a
    ``CharTokenCounter``."""
    from agentscope.token import CharTokenCounter

    kwargs = dict(options)
    if kwargs.get("token_counter") == "char":
        kwargs["token_counter"] = CharTokenCounter()
    return formatter_class(provider, multi_agent)(**kwargs)


# ---------------------------------------------------------------------------
# Building blocks: content blocks and messages (AgentScope 1.x dict form)
# ---------------------------------------------------------------------------


def text(value: str, **extra: Any) -> dict:
    return {"type": "text", "text": value, **extra}


def thinking(value: str, **extra: Any) -> dict:
    return {"type": "thinking", "thinking": value, **extra}


def url_source(url: str) -> dict:
    return {"type": "url", "url": url}


def base64_source(media_type: str, data: str) -> dict:
    return {"type": "base64", "media_type": media_type, "data": data}


def media(kind: str, source: dict) -> dict:
    return {"type": kind, "source": source}


def tool_use(call_id: str, name: str, tool_input: dict, **extra: Any) -> dict:
    return {
        "type": "tool_use",
        "id": call_id,
        "name": name,
        "input": tool_input,
        **extra,
    }


def tool_result(call_id: str, name: str, output: Any) -> dict:
    return {
        "type": "tool_result",
        "id": call_id,
        "name": name,
        "output": output,
    }


def msg(name: str, role: str, content: Any, metadata: dict | None = None):
    """An unstamped message; ``stamp`` adds the id and timestamp."""
    return {"name": name, "role": role, "content": content, "metadata": metadata or {}}


def user(content: Any, name: str = "user") -> dict:
    return msg(name, "user", content)


def assistant(content: Any, name: str = "Friday") -> dict:
    return msg(name, "assistant", content)


def system(content: Any, name: str = "system") -> dict:
    return msg(name, "system", content)


def stamp(msgs: list[dict]) -> list[dict]:
    """Give each message a fixed id and timestamp, in ``Msg.to_dict()`` key
    order."""
    return [
        {
            "id": f"msg-{index:02d}",
            "name": m["name"],
            "role": m["role"],
            "content": m["content"],
            "metadata": m["metadata"],
            "timestamp": f"2026-01-15 09:30:{index:02d}.{index * 7:03d}",
        }
        for index, m in enumerate(msgs)
    ]


SYSTEM_PROMPT = "You are Friday, a concise and helpful assistant."
WEATHER_CALL = tool_use("call_w1", "get_weather", {"city": "Paris"})


def weather_exchange(output: Any, result_role: str = "system") -> list[dict]:
    """user asks, assistant calls get_weather, the result comes back, the
    assistant answers."""
    return [
        user("What's the weather in Paris?"),
        assistant([text("Let me check."), WEATHER_CALL]),
        msg("system", result_role, [tool_result("call_w1", "get_weather", output)]),
        assistant("It is sunny in Paris."),
    ]


# ---------------------------------------------------------------------------
# Scenarios: named conversations built from the blocks above
# ---------------------------------------------------------------------------


IMG_URL = media("image", url_source("https://example.com/charts/plot.png"))
IMG_B64 = media("image", base64_source("image/png", b64("cat.png")))
IMG_LOCAL = media("image", url_source("media/sticker.webp"))
AUD_B64 = media("audio", base64_source("audio/wav", b64("beep.wav")))
AUD_MPEG = media("audio", base64_source("audio/mpeg", b64("beep.mp3")))
VID_URL = media("video", url_source("https://example.com/video/clip.mp4"))
VID_B64 = media("video", base64_source("video/mp4", b64("clip.mp4")))


@dataclass(frozen=True)
class Scenario:
    name: str
    msgs: list[dict]
    tags: frozenset[str] = field(default_factory=frozenset)


def conversation_scenarios() -> Iterator[Scenario]:
    """Plain conversations: system handling, empty content, names, text."""
    yield Scenario(
        "text_dialogue",
        [
            system(SYSTEM_PROMPT),
            user("Hi, who are you?"),
            assistant("I am Friday."),
            user("Nice to meet you."),
        ],
    )
    yield Scenario(
        "no_system",
        [
            user("Hello"),
            assistant("Hello! How can I help?"),
            user("Tell me a joke."),
        ],
    )
    yield Scenario("system_only", [system(SYSTEM_PROMPT)])
    yield Scenario(
        "system_two_text_blocks",
        [
            system([text("You are Friday."), text("Answer in one sentence.")]),
            user("Why is the sky blue?"),
        ],
    )
    yield Scenario(
        "system_text_block_cache_control",
        [
            system([text(SYSTEM_PROMPT, cache_control={"type": "ephemeral"})]),
            user("Hi"),
        ],
    )
    yield Scenario(
        "late_system",
        [
            user("Hi"),
            assistant("Hello!"),
            system("Reminder: keep answers short."),
            user("What is 2+2?"),
        ],
    )
    yield Scenario(
        "two_leading_systems",
        [
            system(SYSTEM_PROMPT),
            system("Today is Monday."),
            user("What day is it?"),
        ],
    )
    yield Scenario(
        "system_after_first_user",
        [
            user("Start"),
            system(SYSTEM_PROMPT),
        ],
    )
    yield Scenario("empty_conversation", [])
    yield Scenario(
        "empty_str_user",
        [
            system(SYSTEM_PROMPT),
            user(""),
            assistant("Did you mean to send something?"),
        ],
    )
    yield Scenario(
        "empty_list_user",
        [
            user([]),
            assistant("Nothing to answer."),
        ],
    )
    yield Scenario("empty_str_system", [system(""), user("Hi")])
    yield Scenario("empty_list_system", [system([]), user("Hi")])
    yield Scenario("only_empty_messages", [user(""), assistant([])])
    yield Scenario(
        "multi_text_blocks_with_empty",
        [
            user([text("First line."), text(""), text("Third line.")]),
            assistant([text("Got"), text("it.")]),
        ],
    )
    yield Scenario(
        "text_block_extra_keys",
        [
            user([text("Cache this question.", cache_control={"type": "ephemeral"})]),
            assistant(
                [
                    text(
                        "Answer with annotations.",
                        foo=1,
                        annotations=[{"kind": "cite", "index": 0}],
                    )
                ]
            ),
        ],
    )
    yield Scenario(
        "several_agents",
        [
            system("You are the moderator of a debate."),
            user("Cats are better than dogs.", name="Alice"),
            msg("Bob", "assistant", "Dogs are more loyal."),
            user("我觉得都很好。", name="小明"),
            assistant("Let us hear one more argument."),
            user("Goldfish, obviously.", name="Carol"),
        ],
    )
    yield Scenario(
        "unicode_and_escapes",
        [
            user("Emoji 😀, CJK 你好, RTL مرحبا, quotes \"x\" 'y', backslash \\ tab\tand\nnewline"),
            assistant("Ça marche — ½ ≠ ⅓ ✓"),
        ],
    )
    yield Scenario(
        "metadata_present",
        [
            msg("user", "user", "Summarise this.", metadata={"source": "cli", "n": 3}),
            msg("Friday", "assistant", "Done.", metadata={"structured": {"ok": True}}),
        ],
    )
    yield Scenario(
        "thinking_without_signature",
        [
            user("What is 17*3?"),
            assistant([thinking("17*3 = 51."), text("51")]),
            user("Thanks"),
        ],
    )
    yield Scenario(
        "thinking_with_signature",
        [
            user("What is 17*3?"),
            assistant([thinking("17*3 = 51.", signature="EqQBCkYIARgCKkBsig=="), text("51")]),
            user("Thanks"),
        ],
    )
    yield Scenario(
        "thinking_only_assistant",
        [
            user("Think about it."),
            assistant([thinking("Hmm, let me think.")]),
        ],
    )
    yield Scenario(
        "gemini_thought_signature_text",
        [
            user("Hello"),
            assistant(
                [
                    text(
                        "Hi there!",
                        thought_signature=base64.b64encode(b"\x01sig-text\xff").decode(),
                    )
                ]
            ),
            user("Bye"),
        ],
    )
    yield Scenario(
        "invalid_thought_signature",
        [
            user("Hello"),
            assistant([text("Hi!", thought_signature="not base64!")]),
        ],
    )
    yield Scenario(
        "assistant_with_image",
        [
            user("Draw a square."),
            assistant([text("Here it is:"), IMG_B64]),
        ],
    )
    yield Scenario(
        "assistant_with_audio",
        [
            user("Say hi."),
            assistant([text("Hi!"), AUD_B64]),
        ],
        frozenset({"audio"}),
    )
    yield Scenario(
        "user_text_image_audio_video",
        [
            user(
                [
                    text("Describe these."),
                    media("image", base64_source("image/png", b64("cat.png"))),
                    media("audio", base64_source("audio/mp3", b64("beep.mp3"))),
                    media("video", base64_source("video/mp4", b64("clip.mp4"))),
                    text("Thanks!"),
                ]
            ),
        ],
    )


IMAGE_SOURCES: dict[str, dict] = {
    "https_url": url_source("https://example.com/images/cat.png"),
    "base64_png": base64_source("image/png", b64("cat.png")),
    "base64_jpeg": base64_source("image/jpeg", b64("photo.jpg")),
    "local_png": url_source("media/cat.png"),
    "file_uri_png": url_source("file://media/cat.png"),
    "local_jpg": url_source("media/photo.jpg"),
    "local_webp": url_source("media/sticker.webp"),
    "local_gif": url_source("media/anim.gif"),
    "local_no_extension": url_source("media/snapshot"),
    "local_upper_ext": url_source("media/LOUD.PNG"),
    "missing_local_png": url_source("media/missing.png"),
    "local_wav_as_image": url_source("media/beep.wav"),
}

AUDIO_SOURCES: dict[str, dict] = {
    "base64_wav": base64_source("audio/wav", b64("beep.wav")),
    "base64_mp3": base64_source("audio/mp3", b64("beep.mp3")),
    "base64_mpeg": base64_source("audio/mpeg", b64("beep.mp3")),
    "local_wav": url_source("media/beep.wav"),
    "file_uri_mp3": url_source("file://media/beep.mp3"),
    "https_mp3": url_source("https://example.com/audio/beep.mp3"),
    "missing_local_ogg": url_source("media/voice.ogg"),
    "missing_local_wav": url_source("media/missing.wav"),
}

VIDEO_SOURCES: dict[str, dict] = {
    "https_mp4": url_source("https://example.com/video/clip.mp4"),
    "base64_mp4": base64_source("video/mp4", b64("clip.mp4")),
    "local_mp4": url_source("media/clip.mp4"),
}


def media_scenarios() -> Iterator[Scenario]:
    """One user turn with a text and one media block, per media source."""
    for kind, sources in (
        ("image", IMAGE_SOURCES),
        ("audio", AUDIO_SOURCES),
        ("video", VIDEO_SOURCES),
    ):
        for source_name, source in sources.items():
            yield Scenario(
                f"user_{kind}_{source_name}",
                [
                    system(SYSTEM_PROMPT),
                    user([text(f"What is in this {kind}?"), media(kind, source)]),
                ],
                frozenset({kind}),
            )


# name -> (tool output, media kinds it holds)
TOOL_OUTPUTS: dict[str, tuple[Any, set[str]]] = {
    "str": ("Sunny, 25°C", set()),
    "empty_str": ("", set()),
    "none": (None, set()),
    "empty_list": ([], set()),
    "one_text": ([text("Sunny")], set()),
    "two_texts": ([text("Sunny"), text("Wind 5 km/h")], set()),
    "text_extra_keys": ([text("Sunny", cache_control={"type": "ephemeral"})], set()),
    "text_and_image_url": ([text("Chart:"), IMG_URL], {"image"}),
    "text_and_image_base64": ([text("Radar:"), IMG_B64], {"image"}),
    "image_base64_only": ([IMG_B64], {"image"}),
    "image_local_file": ([text("Saved:"), IMG_LOCAL], {"image"}),
    "two_images": ([IMG_URL, IMG_B64], {"image"}),
    "audio_base64_wav": ([text("Recording:"), AUD_B64], {"audio"}),
    "audio_base64_mpeg": ([AUD_MPEG], {"audio"}),
    "video_url": ([text("Clip:"), VID_URL], {"video"}),
    "video_base64": ([VID_B64], {"video"}),
    "mixed_all": (
        [text("Everything:"), IMG_URL, IMG_B64, AUD_B64, VID_B64, text("Done.")],
        {"image", "audio", "video"},
    ),
}


def tool_result_scenarios() -> Iterator[Scenario]:
    """The weather exchange with each kind of tool output."""
    for name, (output, kinds) in TOOL_OUTPUTS.items():
        yield Scenario(
            f"tool_result_{name}",
            [system(SYSTEM_PROMPT), *weather_exchange(output)],
            frozenset({f"tool_{kind}" for kind in kinds}),
        )


TRICKY_INPUT = {
    "int": 1,
    "float_whole": 1.0,
    "float": 2.5,
    "negative": -7,
    "big_int": 123456789012345678901234567890,
    "tiny": 1e-07,
    "unicode": "东京 ☀️",
    "bool": True,
    "null": None,
    "nested": {"list": [1, 2.0, "three", {"four": [5]}], "empty": {}},
}


def tool_call_scenarios() -> Iterator[Scenario]:
    """Tool calls: parallel calls, odd inputs, odd placements."""
    yield Scenario(
        "tool_roundtrip",
        [
            system(SYSTEM_PROMPT),
            *weather_exchange("Sunny, 25°C"),
        ],
    )
    yield Scenario(
        "tool_use_without_text",
        [
            user("Weather in Oslo?"),
            assistant([tool_use("call_o", "get_weather", {"city": "Oslo"})]),
            system([tool_result("call_o", "get_weather", "Snow")]),
        ],
    )
    yield Scenario(
        "parallel_calls_results_in_one_msg",
        [
            system(SYSTEM_PROMPT),
            user("Weather in Paris and Rome?"),
            assistant(
                [
                    text("Checking both."),
                    tool_use("call_p", "get_weather", {"city": "Paris"}),
                    tool_use("call_r", "get_weather", {"city": "Rome"}),
                ]
            ),
            system(
                [
                    tool_result("call_p", "get_weather", "Sunny"),
                    tool_result("call_r", "get_weather", [text("Rain")]),
                ]
            ),
            assistant("Paris is sunny, Rome is rainy."),
        ],
    )
    yield Scenario(
        "parallel_calls_results_in_separate_msgs",
        [
            user("Weather in Paris and Rome?"),
            assistant(
                [
                    tool_use("call_p", "get_weather", {"city": "Paris"}),
                    tool_use("call_r", "get_weather", {"city": "Rome"}),
                ]
            ),
            system([tool_result("call_p", "get_weather", "Sunny")]),
            system([tool_result("call_r", "get_weather", "Rain")]),
        ],
    )
    yield Scenario(
        "tool_input_values",
        [
            user("Store these values."),
            assistant(
                [tool_use("call_v", "store", TRICKY_INPUT, raw_input=json.dumps(TRICKY_INPUT))]
            ),
            system([tool_result("call_v", "store", "stored")]),
        ],
    )
    yield Scenario(
        "tool_input_empty",
        [
            user("What time is it?"),
            assistant([tool_use("call_t", "now", {})]),
            system([tool_result("call_t", "now", "09:30")]),
            assistant("It is 09:30."),
        ],
    )
    yield Scenario(
        "tool_use_extra_keys",
        [
            user("Weather?"),
            assistant(
                [
                    tool_use(
                        "call_x",
                        "get_weather",
                        {"city": "Lima"},
                        raw_input='{"city": "Lima"}',
                        cache_control={"type": "ephemeral"},
                    )
                ]
            ),
            system([tool_result("call_x", "get_weather", "Fog")]),
        ],
    )
    yield Scenario(
        "gemini_thought_signature_tool_use",
        [
            user("Weather in Kyoto?"),
            assistant(
                [
                    thinking("I should call the tool."),
                    text(
                        "Checking.", thought_signature=base64.b64encode(b"text-signature").decode()
                    ),
                    tool_use(
                        "call_k",
                        "get_weather",
                        {"city": "Kyoto"},
                        thought_signature=base64.b64encode(b"\x00\x10call-signature\xfe").decode(),
                    ),
                ]
            ),
            system([tool_result("call_k", "get_weather", "Clear")]),
        ],
    )
    yield Scenario(
        "thinking_text_and_tool_use",
        [
            user("Weather in Cairo?"),
            assistant(
                [
                    thinking("Need the tool."),
                    thinking("Call it once."),
                    text("One moment."),
                    tool_use("call_c", "get_weather", {"city": "Cairo"}),
                ]
            ),
            system([tool_result("call_c", "get_weather", "Hot")]),
            assistant([thinking("Answer now."), text("It is hot.")]),
        ],
    )
    yield Scenario(
        "unpaired_tool_use",
        [
            user("Weather?"),
            assistant([tool_use("call_u", "get_weather", {"city": "Quito"})]),
        ],
    )
    yield Scenario("tool_result_in_user_msg", weather_exchange("Sunny", result_role="user"))
    yield Scenario(
        "tool_result_and_text_same_msg",
        [
            user("Weather?"),
            assistant([tool_use("call_s", "get_weather", {"city": "Seoul"})]),
            user(
                [
                    text("Here is the result."),
                    tool_result("call_s", "get_weather", "Cloudy"),
                    text("Please summarise."),
                ]
            ),
        ],
    )
    yield Scenario(
        "two_tool_rounds",
        [
            system(SYSTEM_PROMPT),
            user("Compare Paris and Rome."),
            assistant([tool_use("call_1", "get_weather", {"city": "Paris"})]),
            system([tool_result("call_1", "get_weather", "Sunny")]),
            assistant([text("Now Rome."), tool_use("call_2", "get_weather", {"city": "Rome"})]),
            system([tool_result("call_2", "get_weather", "Rain")]),
            assistant("Paris wins."),
        ],
    )


def multi_agent_scenarios() -> Iterator[Scenario]:
    """Conversations shaped for the multi-agent formatters (grouping,
    media inside history)."""
    yield Scenario(
        "agents_tools_agents",
        [
            system("You are Friday in a group chat."),
            user("Hi all", name="Alice"),
            msg("Bob", "assistant", "Hello Alice"),
            assistant([text("Let me look up the weather."), WEATHER_CALL]),
            system([tool_result("call_w1", "get_weather", "Sunny")]),
            assistant("It is sunny."),
            user("Great, thanks", name="Alice"),
            system("Reminder: be brief."),
        ],
    )
    yield Scenario(
        "agents_images_between_text",
        [
            system("You are Friday."),
            user("Look at this:", name="Alice"),
            msg("Bob", "user", [media("image", url_source("media/cat.png")), text("And mine.")]),
            user(
                [text("Two pictures:"), IMG_B64, media("image", url_source("media/sticker.webp"))],
                name="Carol",
            ),
        ],
        frozenset({"image"}),
    )
    yield Scenario(
        "agents_image_only",
        [
            user([IMG_B64], name="Alice"),
            user([media("image", url_source("media/cat.png"))], name="Bob"),
        ],
        frozenset({"image"}),
    )
    yield Scenario(
        "agents_media_at_end",
        [
            user("Listen and watch.", name="Alice"),
            user([AUD_B64, VID_B64, IMG_B64], name="Bob"),
        ],
        frozenset({"image", "audio", "video"}),
    )
    yield Scenario(
        "agents_thinking_ignored",
        [
            user("Question?", name="Alice"),
            assistant([thinking("secret"), text("Answer."), text("More.")]),
        ],
    )


def all_scenarios() -> list[Scenario]:
    scenarios = [
        *conversation_scenarios(),
        *media_scenarios(),
        *tool_result_scenarios(),
        *tool_call_scenarios(),
        *multi_agent_scenarios(),
    ]
    names = [s.name for s in scenarios]
    assert len(names) == len(set(names)), "scenario names must be unique"
    return scenarios


def find_scenario(name: str) -> Scenario:
    return next(s for s in all_scenarios() if s.name == name)


# ---------------------------------------------------------------------------
# Tools and tool choices
# ---------------------------------------------------------------------------


def function_tool(name: str, description: str | None, parameters: Any):
    function: dict[str, Any] = {"name": name}
    if description is not None:
        function["description"] = description
    if parameters is not None:
        function["parameters"] = parameters
    return {"type": "function", "function": function}


GET_WEATHER = function_tool(
    "get_weather",
    "Get the current weather for a city.",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
        },
        "required": ["city"],
    },
)
SEARCH_DOCS = function_tool(
    "search_docs",
    "Search the documentation.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "filters": {
                "type": "object",
                "properties": {
                    "date_range": {
                        "type": "object",
                        "properties": {
                            "start": {"type": "string", "format": "date"},
                            "end": {"type": "string", "format": "date"},
                        },
                    },
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "min_score": {"type": "number", "minimum": 0.5},
                },
            },
            "limit": {"type": "integer", "default": 10, "minimum": 1},
        },
        "required": ["query"],
    },
)
CREATE_ORDER = function_tool(
    "create_order",
    "Create an order.",
    {
        "type": "object",
        "$defs": {
            "Address": {
                "type": "object",
                "properties": {"street": {"type": "string"}, "zip": {"type": "string"}},
                "required": ["street"],
            },
            "LineItem": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
            },
        },
        "properties": {
            "shipping": {"$ref": "#/$defs/Address", "description": "Where to ship"},
            "billing": {"$ref": "#/$defs/Address"},
            "items": {"type": "array", "items": {"$ref": "#/$defs/LineItem"}},
        },
        "required": ["shipping", "items"],
    },
)
BUILD_TREE = function_tool(
    "build_tree",
    "Build a tree of nodes.",
    {
        "type": "object",
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "value": {"type": "integer"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
            },
        },
        "properties": {"root": {"$ref": "#/$defs/Node"}},
    },
)
PING = function_tool("ping", None, {"type": "object", "properties": {}})
NOW = function_tool("now", "Current time.", None)
BARE_SCHEMA = {
    "name": "bare",
    "description": "Not wrapped.",
    "parameters": {"type": "object", "properties": {}},
}

TOOL_SETS: dict[str, list[dict] | None] = {
    "none": None,
    "empty": [],
    "weather": [GET_WEATHER],
    "weather_search": [GET_WEATHER, SEARCH_DOCS],
    "nested": [SEARCH_DOCS],
    "defs": [CREATE_ORDER],
    "circular": [BUILD_TREE],
    "minimal": [PING, NOW],
    "bare_schema": [BARE_SCHEMA],
}

# (tool set, tool_choice) pairs run against every provider.
TOOL_VARIANTS: list[tuple[str, Any]] = [
    ("weather", None),
    ("weather", "auto"),
    ("weather", "none"),
    ("weather", "required"),
    ("weather", "get_weather"),
    ("weather", "any"),
    ("weather", ""),
    ("weather", "unknown_tool"),
    ("weather", ["get_weather"]),
    ("weather_search", "search_docs"),
    ("nested", "required"),
    ("defs", "auto"),
    ("circular", None),
    ("minimal", "ping"),
    ("bare_schema", None),
    ("empty", "auto"),
    ("none", "auto"),
    ("none", "get_weather"),
]

# A smaller set also run with the multi-agent formatters.
MULTI_AGENT_TOOL_VARIANTS = [("weather", "auto"), ("defs", "required"), ("weather", "get_weather")]


def choice_label(choice: Any) -> str:
    if choice is None:
        return "unset"
    if isinstance(choice, list):
        return "list:" + ",".join(choice)
    return choice or "empty_str"


# ---------------------------------------------------------------------------
# Case specs
# ---------------------------------------------------------------------------


@dataclass
class CaseSpec:
    name: str
    multi_agent: bool
    msgs: list[dict]
    options: dict = field(default_factory=dict)
    tools: list[dict] | None = None
    tool_choice: Any = None
    # Options whose value depends on the provider (stored with its expectations).
    provider_options: dict = field(default_factory=dict)
    # Names under which msgs and tools are stored once in inputs.json.
    conversation: str = ""
    tool_set: str | None = None

    def input_record(self) -> dict:
        """The case's input, the same for every provider that has the case."""
        return {
            "conversation": self.conversation,
            "multi_agent": self.multi_agent,
            "options": self.options,
            "tools": self.tool_set,
            "tool_choice": self.tool_choice,
        }

    def all_options(self) -> dict:
        return {**self.options, **self.provider_options}


def _iter_blocks(msgs: list[dict]) -> Iterator[dict]:
    for m in msgs:
        if isinstance(m["content"], list):
            yield from m["content"]


def _is_web(block: dict) -> bool:
    source = block.get("source", {})
    return source.get("type") == "url" and source["url"].startswith("http")


def needs_network(provider: Provider, spec: CaseSpec) -> bool:
    """Whether AgentScope would download http(s) media for this case."""
    for block in _iter_blocks(spec.msgs):
        if block.get("type") in provider.downloads and _is_web(block):
            return True
        if block.get("type") == "tool_result" and isinstance(
            block["output"],
            list,
        ):
            promoted_web_image = any(
                item["type"] == "image" and _is_web(item) for item in block["output"]
            )
            if (
                promoted_web_image
                and provider.downloads_promoted_images
                and spec.all_options().get("promote_tool_result_images")
            ):
                return True
    return False


def mode_label(multi_agent: bool) -> str:
    return "ma" if multi_agent else "chat"


def base_cases(scenarios: list[Scenario]) -> Iterator[CaseSpec]:
    """Every scenario, chat and multi-agent, default options, no tools."""
    for multi_agent in (False, True):
        for scenario in scenarios:
            yield CaseSpec(
                f"{mode_label(multi_agent)}/{scenario.name}",
                multi_agent,
                stamp(scenario.msgs),
                conversation=scenario.name,
            )


PROMOTION_OPTIONS: list[tuple[str, dict, str]] = [
    # (label, options, tag of the tool-result media it is about)
    ("promote_images", {"promote_tool_result_images": True}, "tool_image"),
    ("promote_audios", {"promote_tool_result_audios": True}, "tool_audio"),
    ("promote_videos", {"promote_tool_result_videos": True}, "tool_video"),
    (
        "promote_all",
        {
            "promote_tool_result_images": True,
            "promote_tool_result_audios": True,
            "promote_tool_result_videos": True,
        },
        "tool_",
    ),
]


def promotion_cases(scenarios: list[Scenario]) -> Iterator[CaseSpec]:
    """Tool results with media, with each promotion flag switched on."""
    for multi_agent in (False, True):
        for scenario in scenarios:
            for label, options, tag in PROMOTION_OPTIONS:
                if not any(t.startswith(tag) for t in scenario.tags):
                    continue
                yield CaseSpec(
                    f"{mode_label(multi_agent)}/{scenario.name}/{label}",
                    multi_agent,
                    stamp(scenario.msgs),
                    options=dict(options),
                    conversation=scenario.name,
                )


HISTORY_PROMPTS = {"empty_prompt": "", "custom_prompt": "## Transcript so far\n"}


def history_prompt_cases(scenarios: list[Scenario]) -> Iterator[CaseSpec]:
    """Multi-agent formatters with a non-default history prompt."""
    wanted = {"text_dialogue", "agents_tools_agents", "agents_images_between_text", "no_system"}
    for scenario in scenarios:
        if scenario.name not in wanted:
            continue
        for label, prompt in HISTORY_PROMPTS.items():
            yield CaseSpec(
                f"ma/{scenario.name}/{label}",
                True,
                stamp(scenario.msgs),
                options={"conversation_history_prompt": prompt},
                conversation=scenario.name,
            )


def tool_cases(scenarios: list[Scenario]) -> Iterator[CaseSpec]:
    """Tool sets x tool choices on a tool round trip (and a plain chat)."""
    by_name = {s.name: s for s in scenarios}
    runs = [
        (False, "tool_roundtrip", TOOL_VARIANTS),
        (False, "no_system", [("weather", "required"), ("circular", "auto")]),
        (True, "agents_tools_agents", MULTI_AGENT_TOOL_VARIANTS),
    ]
    for multi_agent, scenario_name, variants in runs:
        scenario = by_name[scenario_name]
        for tool_set, choice in variants:
            yield CaseSpec(
                f"{mode_label(multi_agent)}/{scenario_name}"
                f"/tools={tool_set}/choice={choice_label(choice)}",
                multi_agent,
                stamp(scenario.msgs),
                tools=copy.deepcopy(TOOL_SETS[tool_set]),
                tool_choice=copy.deepcopy(choice),
                conversation=scenario_name,
                tool_set=tool_set,
            )


# ---------------------------------------------------------------------------
# Truncation cases (CharTokenCounter)
# ---------------------------------------------------------------------------

LOREM = "The quick brown fox jumps over the lazy dog. "


def truncation_scenarios() -> list[Scenario]:
    long_dialogue = [system(SYSTEM_PROMPT)] + [
        (user if i % 2 == 0 else assistant)(f"Turn {i}: {LOREM}") for i in range(6)
    ]
    with_tools = [
        system(SYSTEM_PROMPT),
        user(f"Question one. {LOREM}"),
        assistant([text("Checking."), WEATHER_CALL]),
        system([tool_result("call_w1", "get_weather", f"Sunny. {LOREM}")]),
        assistant(f"Answer one. {LOREM}"),
        user("Question two?"),
    ]
    no_system = [(user if i % 2 == 0 else assistant)(f"Line {i}: {LOREM}") for i in range(4)]
    unpaired = [
        system(SYSTEM_PROMPT),
        assistant([WEATHER_CALL]),
        user(f"Still waiting. {LOREM}"),
    ]
    long_system = [system(LOREM * 4), user("Hi")]
    return [
        Scenario("trunc_long_dialogue", long_dialogue),
        Scenario("trunc_tool_pair", with_tools),
        Scenario("trunc_no_system", no_system),
        Scenario("trunc_unpaired_tool_use", unpaired),
        Scenario("trunc_long_system", long_system),
    ]


async def char_count(provider: Provider, multi_agent: bool, msgs: list[dict]) -> int:
    """Characters CharTokenCounter sees for these messages, untruncated."""
    from agentscope.message import Msg
    from agentscope.token import CharTokenCounter

    formatter = make_formatter(provider, multi_agent, {})
    formatted = await formatter.format(
        [Msg.from_dict(copy.deepcopy(m)) for m in msgs],
    )
    return await CharTokenCounter().count(formatted)


async def truncation_limits(
    provider: Provider, multi_agent: bool, msgs: list[dict]
) -> dict[str, int]:
    """Interesting max_tokens values: exactly fitting the system message
    plus the last two messages, one below that, one below fitting the
    system message plus the last message, and 1 (duplicates dropped)."""
    has_system = bool(msgs) and msgs[0]["role"] == "system"
    head = msgs[:1] if has_system else []
    rest = msgs[len(head) :]
    fit_last2 = await char_count(provider, multi_agent, head + rest[-2:])
    fit_last1 = await char_count(provider, multi_agent, head + rest[-1:])
    candidates = {
        "fit_last2": fit_last2,
        "fit_last2_minus1": fit_last2 - 1,
        "fit_last1_minus1": fit_last1 - 1,
        "one": 1,
    }
    limits: dict[str, int] = {}
    for label, limit in candidates.items():
        if limit > 0 and limit not in limits.values():
            limits[label] = limit
    return limits


async def truncation_cases(provider: Provider) -> list[CaseSpec]:
    specs = []
    for multi_agent in (False, True):
        for scenario in truncation_scenarios():
            msgs = stamp(scenario.msgs)
            limits = await truncation_limits(provider, multi_agent, msgs)
            for label, limit in limits.items():
                specs.append(
                    CaseSpec(
                        f"{mode_label(multi_agent)}/{scenario.name}/max_tokens={label}",
                        multi_agent,
                        msgs,
                        options={"token_counter": "char"},
                        provider_options={"max_tokens": limit},
                        conversation=scenario.name,
                    )
                )
        # The constructor rejects a non-positive limit.
        specs.append(
            CaseSpec(
                f"{mode_label(multi_agent)}/text_dialogue/max_tokens=zero",
                multi_agent,
                stamp(find_scenario("text_dialogue").msgs),
                options={"max_tokens": 0, "token_counter": "char"},
                conversation="text_dialogue",
            )
        )
    return specs


# ---------------------------------------------------------------------------
# Running a case against the oracle
# ---------------------------------------------------------------------------


async def request_body(
    provider: Provider, model: Any, formatted: list, tools: Any, tool_choice: Any
) -> dict:
    """Call the model class; its stubbed SDK call yields the body."""
    try:
        await model(formatted, tools=copy.deepcopy(tools), tool_choice=copy.deepcopy(tool_choice))
    except SdkCall as call:
        return extract_body(provider, call.kwargs)
    raise RuntimeError(f"{provider.name}: the model made no SDK call")


async def run_case(provider: Provider, model: Any, spec: CaseSpec) -> dict:
    from agentscope.message import Msg

    record: dict[str, Any] = {"name": spec.name}
    if spec.provider_options:
        record["options"] = spec.provider_options
    collector = collect_warnings()
    try:
        msgs = [Msg.from_dict(copy.deepcopy(m)) for m in spec.msgs]
        formatter = make_formatter(provider, spec.multi_agent, spec.all_options())
        formatted = await formatter.format(msgs)
        body = await request_body(provider, model, formatted, spec.tools, spec.tool_choice)
    except Exception as exc:  # the oracle's error is the expected outcome
        record["error"] = {"type": type(exc).__name__, "message": str(exc)}
        return record
    record["expected"] = body
    record["warnings"] = collector.messages
    return record


def applicable(provider: Provider, spec: CaseSpec) -> bool:
    """Options the formatter class accepts, and no network downloads."""
    if not set(spec.all_options()) <= accepted_options(provider, spec.multi_agent):
        return False
    return not needs_network(provider, spec)


async def provider_cases(
    provider: Provider, scenarios: list[Scenario]
) -> list[tuple[CaseSpec, dict]]:
    """The provider's applicable cases: each spec with its expectation record."""
    specs = [
        *base_cases(scenarios),
        *promotion_cases(scenarios),
        *history_prompt_cases(scenarios),
        *tool_cases(scenarios),
        *await truncation_cases(provider),
    ]
    model = provider.make_model()
    cases = []
    for spec in specs:
        if applicable(provider, spec):
            cases.append((spec, await run_case(provider, model, spec)))
    names = [spec.name for spec, _ in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    return cases


# ---------------------------------------------------------------------------
# JSON output
# ---------------------------------------------------------------------------

INPUTS_FILE = "inputs.json"

INPUTS_NOTE = (
    "JSON written with json.dumps(ensure_ascii=False, indent=1); ints and "
    "floats keep their Python type (1 vs 1.0), big ints keep all digits. "
    "conversations: each message list (AgentScope Msg.to_dict() form) once, "
    "by scenario name; tool_sets: each tools list once, by name; inputs: "
    "every case input once, by case name: conversation (a conversations "
    "name), multi_agent, options, tools (a tool_sets name or null), "
    "tool_choice. <provider>.json holds each provider's expectations for "
    "the inputs it has a case for. Relative media paths (media/..., "
    "file://media/...) resolve against media_root."
)


def expectations_note(provider: Provider) -> str:
    return (
        "JSON written with json.dumps(ensure_ascii=False, indent=1); ints and "
        "floats keep their Python type (1 vs 1.0), big ints keep all digits. "
        f"Each case names an input of {INPUTS_FILE}; options, when present, are "
        "added to that input's options (values that depend on the provider, "
        "e.g. a max_tokens fitted to its own output). "
        'Python bytes (e.g. Gemini thought_signature) are {"$bytes": '
        '"<standard base64>"}. Base64 media inside tool results are saved by '
        "a patched _save_base64_data to "
        "{TMP}/agentscope_media/<sha256(bytes) hex[:16]>.<media_type subtype>, "
        "where {TMP} stands for tempfile.gettempdir(). {CWD} stands for the "
        "absolute path of media_root (see inputs.json; only in error messages). Body keys "
        "follow the order in which the model class builds its SDK kwargs "
        "(present only when the model class sets them; Gemini's tools and "
        f"tool_config are hoisted out of its config): {', '.join(provider.body_keys)}. "
        "warnings: AgentScope logger messages at WARNING or above emitted "
        "while formatting and building the request."
    )


def to_jsonable(value: Any) -> Any:
    """bytes -> {"$bytes": ...}; temp and working-dir paths -> tokens."""
    if isinstance(value, dict):
        return {key: to_jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(item) for item in value]
    if isinstance(value, bytes):
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    if isinstance(value, str):
        return value.replace(TMP_MEDIA_DIR, TMP_TOKEN).replace(
            str(GOLDEN_DIR),
            CWD_TOKEN,
        )
    return value


def write_json(name: str, document: dict) -> Path:
    path = OUT_DIR / name
    path.write_text(
        json.dumps(to_jsonable(document), ensure_ascii=False, indent=1) + "\n",
        encoding="utf-8",
    )
    return path


def _store(table: dict[str, Any], name: str, value: Any, where: str) -> None:
    """Put `value` under `name` once; a name must always mean the same value."""
    if name not in table:
        table[name] = value
    elif json.dumps(table[name]) != json.dumps(value):
        raise SystemExit(f"{where}: {name!r} differs from its first use")


def shared_inputs(per_provider: dict[str, list[tuple[CaseSpec, dict]]]) -> dict[str, dict]:
    """The inputs.json tables: conversations, tool sets and case inputs, each
    stored once (first seen, in registry order)."""
    conversations: dict[str, Any] = {}
    tool_sets: dict[str, Any] = {}
    inputs: dict[str, Any] = {}
    for provider, cases in per_provider.items():
        for spec, _ in cases:
            where = f"{provider}: {spec.name}"
            if not spec.conversation:
                raise SystemExit(f"{where}: the case names no conversation")
            _store(conversations, spec.conversation, spec.msgs, where)
            if spec.tool_set is not None:
                _store(tool_sets, spec.tool_set, spec.tools, where)
            elif spec.tools is not None:
                raise SystemExit(f"{where}: tools without a tool set name")
            _store(inputs, spec.name, spec.input_record(), where)
    return {"conversations": conversations, "tool_sets": tool_sets, "inputs": inputs}


async def main() -> None:
    os.chdir(GOLDEN_DIR)
    install_sandbox()
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    scenarios = all_scenarios()
    providers = _providers()
    per_provider = {name: await provider_cases(p, scenarios) for name, p in providers.items()}
    tables = shared_inputs(per_provider)
    path = write_json(
        INPUTS_FILE,
        {
            "oracle": ORACLE,
            "generated_by": GENERATED_BY,
            "encoding": INPUTS_NOTE,
            "media_root": MEDIA_ROOT,
            **tables,
        },
    )
    counts = ", ".join(f"{len(table)} {name}" for name, table in tables.items())
    print(f"{'inputs':17s} {counts} -> {path}")
    written = {path}
    for name, cases in per_provider.items():
        records = [record for _, record in cases]
        document = {
            "oracle": ORACLE,
            "generated_by": GENERATED_BY,
            "provider": name,
            "inputs": INPUTS_FILE,
            "encoding": expectations_note(providers[name]),
            "cases": records,
        }
        path = write_json(f"{name}.json", document)
        written.add(path)
        errors = sum("error" in record for record in records)
        print(f"{name:17s} {len(records):4d} cases ({errors} errors) -> {path}")
    for stale in sorted(set(OUT_DIR.glob("*.json")) - written):
        stale.unlink()
        print(f"removed {stale} (no such provider in the registry)")


if __name__ == "__main__":
    asyncio.run(main())
