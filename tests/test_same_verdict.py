"""One rule on every path: the same bad input gets the same verdict from Python
`format()`, the CLI and the gRPC service (error kind and path), on every provider.

The rule (checked once, in `format()`): a message without `name` is a
`FormatError` on `messages[i].name`; a tool schema that is not an OpenAI-style
function tool is a `FormatError` naming `tools[i]...`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from agentscope_proto import errors
from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto._generated.agentscope.formatter.v1 import (
    formatter_service_pb2_grpc as pb_grpc,
)
from agentscope_proto.dialects import from_dict
from agentscope_proto.formatting import format
from agentscope_proto.providers import PROVIDERS, provider_enum
from agentscope_proto.service import ServerConfig

from server_harness import RunningServer

PROVIDER_NAMES = sorted(PROVIDERS)
HI = {"name": "user", "role": "user", "content": "Hi"}
NAMELESS = {"role": "user", "content": "Hi"}

# label -> (AgentScope message dicts, tools, the expected (kind, path))
BAD_INPUTS: dict[str, tuple[list[dict[str, Any]], Any, tuple[str, str]]] = {
    "first message without name": ([NAMELESS], None, ("FormatError", "messages[0].name")),
    "second message without name": ([HI, NAMELESS], None, ("FormatError", "messages[1].name")),
    "tool not an object": ([HI], [1], ("FormatError", "tools[0]")),
    "tool of another type": (
        [HI],
        [{"type": "tool", "function": {"name": "f"}}],
        ("FormatError", "tools[0].type"),
    ),
    "tool without function": ([HI], [{"type": "function"}], ("FormatError", "tools[0].function")),
    "tool function without name": (
        [HI],
        [{"type": "function", "function": {"parameters": {}}}],
        ("FormatError", "tools[0].function.name"),
    ),
    "tool function with an empty name": (
        [HI],
        [{"type": "function", "function": {"name": ""}}],
        ("FormatError", "tools[0].function.name"),
    ),
    "second tool malformed": (
        [HI],
        [
            {"type": "function", "function": {"name": "f"}},
            {"type": "function", "function": {"name": 5}},
        ],
        ("FormatError", "tools[1].function.name"),
    ),
}
CASES = [
    pytest.param(label, provider, id=f"{provider}:{label}")
    for label in BAD_INPUTS
    for provider in PROVIDER_NAMES
]


def _protos(msgs: list[dict[str, Any]]) -> list[Any]:
    """The messages as `Msg`s (a nameless one stays nameless)."""
    out = []
    for msg in msgs:
        proto = from_dict({"name": "x", **msg})
        if "name" not in msg:
            proto.ClearField("name")
        out.append(proto)
    return out


def _python(provider: str, msgs: list[Any], tools: Any) -> tuple[str, str]:
    with pytest.raises(errors.AgentScopeProtoError) as caught:
        format(provider, msgs, tools=tools)
    return type(caught.value).__name__, getattr(caught.value, "path", "")


@pytest.fixture(scope="module")
def stub() -> Iterator[pb_grpc.FormatterServiceStub]:
    server = RunningServer(ServerConfig(port=0)).start()
    channel = grpc.insecure_channel(server.target)
    try:
        yield pb_grpc.FormatterServiceStub(channel)
    finally:
        channel.close()
        server.stop()


def _grpc(stub: pb_grpc.FormatterServiceStub, provider: str, msgs: list[Any], tools: Any) -> Any:
    request = pb.FormatRequest(provider=provider_enum(provider), messages=_protos(msgs))
    if tools is not None:
        text = json.dumps(tools)
        # `bytes` before the schema refresh, `string` after it.
        field = pb.FormatRequest.DESCRIPTOR.fields_by_name["tools_json"]
        payload: Any = text.encode() if field.type == field.TYPE_BYTES else text
        request.tools_json = payload
    with pytest.raises(grpc.RpcError) as caught:
        stub.Format(request, timeout=10)
    error: Any = caught.value
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    status = rpc_status.from_call(error)
    assert status is not None
    kind, fields = "", []
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        bad = error_details_pb2.BadRequest()
        if detail.Unpack(info):
            kind = info.reason
        elif detail.Unpack(bad):
            fields = [violation.field for violation in bad.field_violations]
    assert len(fields) == 1, fields
    return kind, fields[0]


@pytest.mark.parametrize(("label", "provider"), CASES)
def test_python_and_grpc_agree(
    label: str, provider: str, stub: pb_grpc.FormatterServiceStub
) -> None:
    msgs, tools, expected = BAD_INPUTS[label]
    assert _python(provider, msgs, tools) == expected
    assert _python(provider, _protos(msgs), tools) == expected
    assert _grpc(stub, provider, msgs, tools) == expected


def _cli(tmp_path: Path, provider: str, msgs: list[Any], tools: Any) -> tuple[int, list[str]]:
    conversation = tmp_path / "conversation.json"
    conversation.write_text(json.dumps(msgs), encoding="utf-8")
    command = [sys.executable, "-m", "agentscope_proto", "format", "--provider", provider]
    if tools is not None:
        (tmp_path / "tools.json").write_text(json.dumps(tools), encoding="utf-8")
        command += ["--tools", str(tmp_path / "tools.json")]
    result = subprocess.run(
        [*command, str(conversation)], capture_output=True, text=True, timeout=60
    )
    return result.returncode, result.stderr.strip().splitlines()


# One provider per input keeps the subprocess count down; the Python/gRPC test
# above covers every provider, and the CLI calls the same format().
@pytest.mark.parametrize(
    ("label", "provider"),
    [
        (label, PROVIDER_NAMES[index % len(PROVIDER_NAMES)])
        for index, label in enumerate(BAD_INPUTS)
    ],
)
def test_cli_agrees(label: str, provider: str, tmp_path: Path) -> None:
    msgs, tools, (_, path) = BAD_INPUTS[label]
    with pytest.raises(errors.FormatError) as caught:
        format(provider, msgs, tools=tools)
    code, lines = _cli(tmp_path, provider, msgs, tools)
    assert code != 0
    # One line, `agentscope-proto: error: <path>: <reason>`, as Python words it.
    assert len(lines) == 1, lines
    assert lines[0].endswith(f"error: {caught.value}")
    assert f"error: {path}: " in lines[0]


def test_cli_reads_a_nameless_protojson_message_the_same_way(tmp_path: Path) -> None:
    code, lines = _cli(tmp_path, "openai", [{"role": "ROLE_USER", "text": "Hi"}], None)
    assert code != 0
    assert len(lines) == 1, lines
    assert lines[0].endswith("error: messages[0].name: missing")
