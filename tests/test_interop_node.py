"""Cross-language proof: a Node.js client (tests/interop/node) gets the same answers as Python.

The Node client loads proto/ directly with @grpc/proto-loader; `make setup` (and
so `.ci/run`) installs its npm packages.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto._generated.agentscope.formatter.v1 import (
    formatter_service_pb2_grpc as pb_grpc,
)
from agentscope_proto.client import format_request
from agentscope_proto.service import ServerConfig

from conftest import default_options, load_golden
from server_harness import RunningServer

NODE_DIR = Path(__file__).resolve().parent / "interop" / "node"
PROVIDERS = ["openai", "anthropic", "gemini", "dashscope", "ollama", "deepseek", "openai_responses"]


def _enum(provider: str) -> pb.Provider.ValueType:
    return pb.Provider.Value("PROVIDER_" + provider.upper())


def _calls() -> list[tuple[str, str, Any]]:
    """(name, rpc, request) triples: format, parse and stream cases of every provider."""
    calls: list[tuple[str, str, Any]] = []
    for provider in PROVIDERS:
        format_cases = [
            c
            for c in load_golden(f"formatters/{provider}.json")["cases"]
            if "error" not in c and "media/" not in json.dumps(c["msgs"])
        ]
        for case in format_cases[:3] + [c for c in format_cases if c["tools"]][:1]:
            request = format_request(
                case["msgs"],
                provider,
                multi_agent=case["multi_agent"],
                tools=case["tools"],
                tool_choice=case["tool_choice"],
                **case["options"],
            )
            calls.append((f"format:{provider}:{case['name']}", "Format", request))
        parse_cases = [
            c
            for c in load_golden(f"parsers/{provider}.json")["cases"]
            if "error" not in c["expected"] and default_options(c)
        ]
        for case in [c for c in parse_cases if not c["stream"]][:2]:
            body = json.dumps(case["response"])
            request = pb.ParseRequest(provider=_enum(provider), response_json=body)
            calls.append((f"parse:{provider}:{case['name']}", "Parse", request))
        for case in [c for c in parse_cases if c["stream"]][:1]:
            requests = [
                pb.ParseStreamRequest(chunk_json=json.dumps(chunk)) for chunk in case["chunks"]
            ]
            requests[0].provider = _enum(provider)
            calls.append((f"stream:{provider}:{case['name']}", "ParseStream", requests))
    calls.append(("error:no-provider", "Parse", pb.ParseRequest(response_json="{}")))
    return calls


def _to_json(request: Any) -> Any:
    if isinstance(request, list):
        return [_to_json(r) for r in request]
    return json_format.MessageToDict(request, preserving_proto_field_name=True)


def _normalise(response: Message) -> Message:
    # Each parse result carries a fresh message id and timestamp.
    result = getattr(response, "result", None)
    if result is not None:
        result.msg.ClearField("id")
        result.msg.ClearField("timestamp")
    return response


def _python_outcome(stub: pb_grpc.FormatterServiceStub, rpc: str, request: Any) -> dict[str, Any]:
    try:
        if rpc == "ParseStream":
            responses = list(stub.ParseStream(iter(request), timeout=10))
        else:
            responses = [getattr(stub, rpc)(request, timeout=10)]
    except grpc.RpcError as error:
        return {"error": {"code": error.code().name, "details": error.details()}}
    return {"responses": [_normalise(r) for r in responses]}


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    running = RunningServer(ServerConfig(port=0)).start()
    yield running
    running.stop()


def test_node_client_gets_the_same_answers(server: RunningServer, tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None or not (NODE_DIR / "node_modules" / "@grpc" / "grpc-js").is_dir():
        pytest.fail("Node.js and tests/interop/node/node_modules are needed: run `make setup`")
    calls = _calls()
    calls_file = tmp_path / "calls.json"
    calls_file.write_text(
        json.dumps(
            [
                {
                    "name": name,
                    "rpc": rpc,
                    ("requests" if rpc == "ParseStream" else "request"): _to_json(r),
                }
                for name, rpc, r in calls
            ]
        )
    )
    completed = subprocess.run(
        [node, str(NODE_DIR / "client.js"), server.target, str(calls_file)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    node_results = json.loads(completed.stdout)
    assert [r["name"] for r in node_results] == [name for name, _, _ in calls]
    response_types = {
        "Format": pb.FormatResponse,
        "Parse": pb.ParseResponse,
        "ParseStream": pb.ParseStreamResponse,
    }
    with grpc.insecure_channel(server.target) as channel:
        stub = pb_grpc.FormatterServiceStub(channel)
        for (name, rpc, request), from_node in zip(calls, node_results, strict=True):
            expected = _python_outcome(stub, rpc, request)
            assert ("error" in expected) == name.startswith("error:"), (name, expected)
            if "error" in expected:
                assert from_node["error"] == expected["error"], name
                continue
            assert "responses" in from_node, (name, from_node)
            decoded = [
                _normalise(json_format.ParseDict(r, response_types[rpc]()))
                for r in from_node["responses"]
            ]
            assert decoded == expected["responses"], name
