"""The adversarial suite's shared inputs: odd values, mutations of real data,
hand-built protos no reader would make, and the provider bugs still open.

Everything here is deterministic: mutations walk every path of a golden case in
order, and the catalogues are fixed lists.
"""

from __future__ import annotations

import copy
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

from golden_data import formatter_cases, parser_cases

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
PROVIDERS = sorted(REGISTRY)

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
