"""The adversarial suite's shared inputs: odd values, mutations of real data,
hand-built protos no reader would make, and the provider bugs still open.

Everything here is deterministic: mutations walk every path of a golden case in
order, and the catalogues are fixed lists.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentscope_proto._generated.agentscope.message.v1.message_pb2 import (
    AudioBlock,
    ContentBlock,
    ImageBlock,
    MediaSource,
    Msg,
    OpaqueBlock,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    VideoBlock,
)
from agentscope_proto.errors import AgentScopeProtoError
from agentscope_proto.providers import PROVIDERS as REGISTRY

from golden_data import formatter_cases, golden_providers, parser_cases

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
PROVIDERS = sorted(REGISTRY)
# The providers with golden data (AgentScope 1.0.21's): the corpora built
# from golden responses and streams are theirs.
GOLDEN_PROVIDERS = golden_providers("parsers")


def fidelities(provider: str) -> list[str]:
    """The fidelities `provider` has, AgentScope 1.0.21's first where it has it."""
    return [f for f in ("agentscope", "provider") if f in REGISTRY[provider].variants]


# Values put in place of any JSON value: every JSON type, empty and not.
ODD: list[Any] = [None, 0, -1, 1.5, True, "", "x", [], {}, [None], [1], {"a": 1}, ["x"], [{}]]


def golden(kind: str, provider: str) -> list[dict[str, Any]]:
    """The golden cases of `kind` ("parsers" or "formatters") for `provider`."""
    return formatter_cases(provider) if kind == "formatters" else parser_cases(provider)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path into a JSON value, the root first."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, (*prefix, index))


def replaced(value: Any, path: tuple[Any, ...], new: Any, delete: bool = False) -> Any:
    """A copy of `value` with the value at `path` replaced by `new` (or deleted)."""
    if not path:
        return new
    value = copy.deepcopy(value)
    parent = value
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return value


def mutations(value: Any, odd: list[Any] = ODD) -> Iterator[tuple[str, Any]]:
    """`value` with each value anywhere replaced by each odd value, and each key
    or item removed, labelled by what changed."""
    for path in paths(value):
        for new in odd:
            yield f"{list(path)}={new!r}", replaced(value, path, new)
        if path:
            yield f"{list(path)} removed", replaced(value, path, None, delete=True)


@dataclass(frozen=True)
class KnownBug:
    """A bare exception a module still lets through on bad input, for its owner to fix.

    The tests that show it are `xfail(strict=True)`, so a fix makes them fail
    until this entry goes; the fuzz targets tolerate exactly these.
    """

    # The modules (file paths under python/agentscope_proto/) at fault; a stray
    # exception raised through any of them matches.
    modules: tuple[str, ...]
    exception: type[BaseException] | tuple[type[BaseException], ...]
    what: str

    @property
    def reason(self) -> str:
        return f"open bug in {', '.join(self.modules)}: {self.what}"


# Empty: every bug found so far is fixed, and its test now asserts the typed error.
KNOWN_BUGS: list[KnownBug] = []


def known_bug(exc: BaseException) -> KnownBug | None:
    """The `KnownBug` `exc` is an instance of, judged by type and raising module."""
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_filename.replace("\\", "/"))
        tb = tb.tb_next
    for bug in KNOWN_BUGS:
        if isinstance(exc, bug.exception) and any(
            frame.endswith(f"agentscope_proto/{module}")
            for frame in frames
            for module in bug.modules
        ):
            return bug
    return None


def typed_or_none(call: Callable[[], Any]) -> BaseException | None:
    """Run `call`; None if it returned or raised one of the package's errors,
    else the stray exception."""
    try:
        call()
    except AgentScopeProtoError:
        return None
    except Exception as exc:
        return exc
    return None


def _tool_result(*items: ContentBlock, **fields: Any) -> ContentBlock:
    result = ToolResultBlock(id="1", name="f", **fields)
    if items:
        result.blocks.SetInParent()
        result.blocks.items.extend(items)
    return ContentBlock(tool_result=result)


def _media_sources() -> list[MediaSource]:
    return [
        MediaSource(),
        MediaSource(url=""),
        MediaSource(url="a"),
        MediaSource(url="x.png"),
        MediaSource(url="a\x00b.png"),
        MediaSource(url="x" * 5000 + ".png"),
        MediaSource(url="file:///etc/passwd"),
        MediaSource(url="http://"),
        MediaSource(url="http://[::1/a.png"),
        MediaSource(url="ftp://example.invalid/a.png"),
        MediaSource(url="data:image/png;base64,AAAA"),
        MediaSource(data=b""),
        MediaSource(data=b"x"),
        MediaSource(data=b"x", media_type="image/png"),
        MediaSource(data=b"x", media_type="weird"),
        MediaSource(data=b"x", media_type="a/b/c"),
    ]


def _opaque(kind: str, block_json: str) -> ContentBlock:
    return ContentBlock(opaque=OpaqueBlock(block_type=kind, block_json=block_json))


def _text(**fields: Any) -> ContentBlock:
    return ContentBlock(text=TextBlock(text="a", **fields))


def _call(input_json: str, **fields: Any) -> ContentBlock:
    return ContentBlock(tool_use=ToolUseBlock(id="1", name="f", input_json=input_json, **fields))


def _image(**source: Any) -> ContentBlock:
    return ContentBlock(image=ImageBlock(source=MediaSource(**source)))


def odd_blocks() -> list[tuple[str, ContentBlock]]:
    """Content blocks a gRPC client can send that `from_dict` would never build."""
    deep = '{"a":' * 10_000 + "1" + "}" * 10_000
    blocks: list[tuple[str, ContentBlock]] = [
        ("empty ContentBlock (a kind from a newer schema)", ContentBlock()),
        ("opaque of a modelled kind", _opaque("text", '{"type":"text","text":"x"}')),
        ("opaque text without text", _opaque("text", '{"type":"text"}')),
        ("opaque image without source", _opaque("image", '{"type":"image"}')),
        ("opaque holding an array", _opaque("x", "[1]")),
        ("opaque with a numeric type", _opaque("x", '{"type": 5}')),
        ("opaque with another type", _opaque("x", '{"type": "y"}')),
        ("opaque with an empty type", _opaque("", "{}")),
        ("opaque not JSON", _opaque("x", "{nope")),
        ("unknown kind, kept opaque", _opaque("hint", '{"type":"hint","hint":"h"}')),
        ("extra_json an array", _text(extra_json="[1]")),
        ("extra_json overriding text", _text(extra_json='{"text": 5}')),
        ("extra_json overriding type", _text(extra_json='{"type": "image"}')),
        ("extra_json NaN", _text(extra_json='{"x": NaN}')),
        ("extra_json duplicate keys", _text(extra_json='{"x": 1, "x": 2}')),
        ("key_order naming an unknown key", _text(key_order=["nope"])),
        ("key_order missing a key", _text(key_order=["text"])),
        ("key_order repeating a key", _text(key_order=["type", "type"])),
        ("signature not UTF-8", _text(thought_signature=b"\xff")),
        ("thinking", ContentBlock(thinking=ThinkingBlock(thinking="t", signature="s"))),
        ("tool input an array", _call("[1]")),
        ("tool input empty", _call("")),
        ("tool input null", _call("null")),
        ("tool input a string", _call('"s"')),
        ("tool input nested 10^4 deep", _call(deep)),
        ("tool input Infinity", _call('{"a": Infinity}')),
        ("tool call without id or name", ContentBlock(tool_use=ToolUseBlock(input_json="{}"))),
        ("raw_input not JSON", _call("{}", raw_input="{")),
        ("unknown tool result state", _tool_result(text="r", state=99)),
        ("tool result without output", _tool_result()),
        ("tool call inside a tool result", _tool_result(_call("{}"))),
        ("image without source in a tool result", _tool_result(ContentBlock(image=ImageBlock()))),
        ("empty block in a tool result", _tool_result(ContentBlock())),
        ("bare bytes in a tool result", _tool_result(_image(data=b"abc"))),
        ("opaque image in a tool result", _tool_result(_opaque("image", '{"type":"image"}'))),
        ("hint in a tool result", _tool_result(_opaque("hint", '{"type":"hint"}'))),
        ("local image in a tool result", _tool_result(_image(url="x.png"))),
    ]
    for kind, cls in (("image", ImageBlock), ("audio", AudioBlock), ("video", VideoBlock)):
        for source in _media_sources():
            label = f"{kind} {str(source).strip()!r:.40}"
            blocks.append((label, ContentBlock(**{kind: cls(source=source)})))
            overridden = cls(source=source, extra_json='{"source": 1}')
            blocks.append((f"{label} + extra source", ContentBlock(**{kind: overridden})))
    return blocks


def msg_with(block: ContentBlock, role: int = Role.ROLE_USER, name: str | None = "u") -> Msg:
    """A message holding one block."""
    msg = Msg(role=role)  # type: ignore[arg-type]
    if name is not None:
        msg.name = name
    msg.blocks.SetInParent()
    msg.blocks.items.append(block)
    return msg


# -- the same-verdict corpus ------------------------------------------------------

# Inline media whose signature names its type, per kind, and bytes that name none.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d4944415478da63f8cfc0f01f0005000201a2c8e6b80000000049454e44ae426082"
)
SNIFFABLE = {
    "image": (PNG, "image/png"),
    "audio": (b"RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00" + bytes(20), "audio/wav"),
    "video": (b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom" + bytes(8), "video/mp4"),
}
UNSNIFFABLE = {"not a known format": b"xyz", "empty": b"", "two-byte MP3 frame sync": b"\xff\xfb"}


@dataclass(frozen=True)
class VerdictCase:
    """One input every path (Python, CLI, gRPC, Connect) must answer alike."""

    label: str
    provider: str
    msgs: tuple[Msg, ...]
    tools: Any = None  # a JSON value, or None for no tools
    tool_choice: str | None = None
    fidelity: str = "agentscope"
    multi_agent: bool = False

    @property
    def id(self) -> str:
        extra = "" if self.fidelity == "agentscope" else f" ({self.fidelity})"
        return f"{self.provider}:{self.label}{extra}"


def _named(msg: dict[str, Any]) -> Msg:
    from agentscope_proto.dialects import from_dict

    proto = from_dict({"name": "x", **msg})
    if "name" not in msg:
        proto.ClearField("name")
    return proto


def _media_block(kind: str, data: bytes, media_type: str | None = None) -> ContentBlock:
    source = MediaSource(data=data)
    if media_type is not None:
        source.media_type = media_type
    cls = {"image": ImageBlock, "audio": AudioBlock, "video": VideoBlock}[kind]
    return ContentBlock(**{kind: cls(source=source)})


def verdict_corpus() -> list[VerdictCase]:
    """The inputs of tests/adversarial/test_same_verdict.py, each with its provider.

    Messages are `Msg`s, which every path can carry (the CLI and Connect as
    ProtoJSON); inputs whose verdict may depend on the provider run on all of
    them, the rest on one each, in turn.
    """
    hi = {"name": "user", "role": "user", "content": "Hi"}
    nameless = {"role": "user", "content": "Hi"}
    function = {"type": "function", "function": {"name": "f"}}
    shared: list[tuple[str, list[Msg], dict[str, Any]]] = [
        ("first message without name", [_named(nameless)], {}),
        ("second message without name", [_named(hi), _named(nameless)], {}),
        ("tool not an object", [_named(hi)], {"tools": [1]}),
        ("tool of another type", [_named(hi)], {"tools": [{"type": "tool", **function}]}),
        ("tool without function", [_named(hi)], {"tools": [{"type": "function"}]}),
        (
            "tool function without name",
            [_named(hi)],
            {"tools": [{"type": "function", "function": {"parameters": {}}}]},
        ),
        (
            "tool function with an empty name",
            [_named(hi)],
            {"tools": [{"type": "function", "function": {"name": ""}}]},
        ),
        (
            "second tool malformed",
            [_named(hi)],
            {"tools": [function, {"type": "function", "function": {"name": 5}}]},
        ),
        ("tools an object", [_named(hi)], {"tools": {"a": 1}}),
        ("tool choice naming no tool", [_named(hi)], {"tools": [function], "tool_choice": "g"}),
        ("tool choice without tools", [_named(hi)], {"tool_choice": "f"}),
        ("role unset", [Msg(name="u", text="Hi")], {}),
    ]
    for kind, (data, _) in SNIFFABLE.items():
        shared.append((f"{kind} typed by its bytes", [msg_with(_media_block(kind, data))], {}))
        shared.append(
            (f"{kind} of an empty media type", [msg_with(_media_block(kind, data, ""))], {})
        )
        for label, junk in UNSNIFFABLE.items():
            shared.append(
                (f"{kind} without media type, {label}", [msg_with(_media_block(kind, junk))], {})
            )
    for label, data in (("PNG", PNG), ("not a known format", b"xyz")):
        result = ContentBlock(tool_result=ToolResultBlock(id="1", name="f"))
        result.tool_result.blocks.items.append(_media_block("image", data))
        label = f"image without media type in a tool result, {label}"
        shared.append((label, [msg_with(result)], {}))
    audio_as_image = msg_with(_media_block("image", SNIFFABLE["audio"][0]))
    shared.append(("audio bytes in an image block", [audio_as_image], {}))
    cases = [
        VerdictCase(label, provider, tuple(msgs), fidelity=fidelity, **extra)
        for label, msgs, extra in shared
        for provider in PROVIDERS
        for fidelity in fidelities(provider)
    ]
    for index, (label, block) in enumerate(odd_blocks()):
        for role in (Role.ROLE_USER, Role.ROLE_ASSISTANT):
            provider = PROVIDERS[(index + role) % len(PROVIDERS)]
            own = fidelities(provider)
            fidelity = own[index % len(own)]
            name = f"{label}, role {Role.Name(role)}"
            cases.append(VerdictCase(name, provider, (msg_with(block, role),), fidelity=fidelity))
    return cases


@dataclass(frozen=True)
class ParseCase:
    """One provider response every path (Python, CLI, gRPC, Connect) must parse alike."""

    label: str
    provider: str
    response: str  # the JSON text as the provider sent it (valid UTF-8: every path carries it)
    fidelity: str = "agentscope"

    @property
    def id(self) -> str:
        extra = "" if self.fidelity == "agentscope" else f" ({self.fidelity})"
        return f"{self.provider}:{self.label}{extra}"


# Responses that are wrong as a whole, for every provider.
BAD_RESPONSES = {
    "empty": "",
    "not JSON": "{nope",
    "JSON, not an object": "[1]",
    "a string": '"x"',
    "NaN": '{"x": NaN}',
    "duplicate keys": '{"id": "a", "id": "b"}',
    "a lone surrogate": '{"choices": [{"message": {"content": "\\ud83e"}}]}',
    "a BOM": "\ufeff{}",
    "nested 10^4 deep": "[" * 10_000 + "]" * 10_000,
    "an error body": '{"error": {"type": "overloaded", "message": "try later"}}',
    "an error body of 100 kB": json.dumps({"error": {"message": "é" * 100_000}}),
}


def parse_corpus() -> list[ParseCase]:
    """The responses of tests/adversarial/test_same_verdict.py's Parse half: the
    wholly bad ones on every provider, and for each provider its first golden
    response, whole and with each odd value put in turn at a few of its paths."""
    cases = [
        ParseCase(label, provider, text, REGISTRY[provider].default_fidelity)
        for label, text in BAD_RESPONSES.items()
        for provider in PROVIDERS
    ]
    for provider in GOLDEN_PROVIDERS:
        (case, *_) = [c for c in golden("parsers", provider) if not c["stream"]]
        response = case["response"]
        for fidelity in ("agentscope", "provider"):
            cases.append(ParseCase("golden", provider, json.dumps(response), fidelity))
        # Every 7th path, each odd value in turn: a spread, not every combination.
        for index, path in enumerate(list(paths(response))[1::7]):
            new = ODD[index % len(ODD)]
            label = f"{list(path)}={new!r}"
            cases.append(ParseCase(label, provider, json.dumps(replaced(response, path, new))))
    return cases


@dataclass(frozen=True)
class StreamCase:
    """One stream every path (Python, CLI, gRPC, Connect) must parse alike."""

    label: str
    provider: str
    chunks: tuple[str, ...]  # each event's JSON text, as the provider sent it
    fidelity: str = "agentscope"

    @property
    def id(self) -> str:
        extra = "" if self.fidelity == "agentscope" else f" ({self.fidelity})"
        return f"{self.provider}:{self.label}{extra}"


def stream_corpus() -> list[StreamCase]:
    """The streams of test_same_verdict.py's ParseStream half: for each provider
    its first golden stream, whole (in both fidelities), with an event that is
    not JSON, not an object, or an error body, and with odd values put in at
    a few paths of its first and last events."""
    cases = []
    for provider in GOLDEN_PROVIDERS:
        (case, *_) = [c for c in golden("parsers", provider) if c["stream"]]
        chunks = tuple(json.dumps(chunk) for chunk in case["chunks"])
        for fidelity in ("agentscope", "provider"):
            cases.append(StreamCase("golden", provider, chunks, fidelity))
        middle = len(chunks) // 2
        for label, text in (
            ("not JSON", "{nope"),
            ("JSON, not an object", "[1]"),
            ("an error body", BAD_RESPONSES["an error body"]),
            ("empty", ""),
        ):
            cases.append(
                StreamCase(f"event {middle} {label}", provider, _with(chunks, middle, text))
            )
        for at in (0, len(chunks) - 1):
            chunk = case["chunks"][at]
            for index, path in enumerate(list(paths(chunk))[1::5]):
                new = ODD[index % len(ODD)]
                changed = json.dumps(replaced(chunk, path, new))
                label = f"event {at} {list(path)}={new!r}"
                cases.append(StreamCase(label, provider, _with(chunks, at, changed)))
    return cases


def _with(chunks: tuple[str, ...], at: int, text: str) -> tuple[str, ...]:
    return (*chunks[:at], text, *chunks[at + 1 :])
