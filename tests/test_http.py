"""The FormatterService over plain HTTP (Connect): README's curl recipes, and the same
statuses, details, limits and auth as gRPC."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import trustme
from google.protobuf import json_format
from google.rpc import code_pb2, error_details_pb2
from grpc_status import rpc_status

from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto._generated.agentscope.formatter.v1 import (
    formatter_service_pb2_grpc as pb_grpc,
)
from agentscope_proto.formatting import body_to_json, format
from agentscope_proto.service import SERVICE_NAME as SERVICE
from agentscope_proto.service import ServerConfig, provider_name, set_serving

from readme_recipes import commands, request_data, run
from server_harness import RunningServer

connect = pytest.importorskip(
    "agentscope_proto.service.connect", reason="the http extra (connectrpc) is not installed"
)

FORMAT = "/agentscope.formatter.v1.FormatterService/Format"
PARSE_STREAM = "/agentscope.formatter.v1.FormatterService/ParseStream"
DETAIL_TYPES = {
    "google.rpc.ErrorInfo": error_details_pb2.ErrorInfo,
    "google.rpc.BadRequest": error_details_pb2.BadRequest,
    "google.rpc.QuotaFailure": error_details_pb2.QuotaFailure,
    "google.rpc.PreconditionFailure": error_details_pb2.PreconditionFailure,
}
TOKEN = "s3cret-token"


class Servers:
    """gRPC and HTTP on free ports, one event loop, one configuration."""

    def __init__(self, config: ServerConfig) -> None:
        self.grpc = RunningServer(config).start()
        self.http = self.grpc.call(connect.start_http(config, 0, health=self.grpc.health))
        self.http_target = f"{config.host}:{self.http.port}"
        self.scheme = "https" if config.tls_cert else "http"

    def post(
        self,
        path: str,
        body: bytes,
        content_type: str = "application/json",
        tls: ssl.SSLContext | None = None,
        **headers: str,
    ) -> tuple[int, bytes]:
        request = urllib.request.Request(
            f"{self.scheme}://{self.http_target}{path}",
            data=body,
            headers={"content-type": content_type, **headers},
        )
        try:
            with urllib.request.urlopen(request, timeout=30, context=tls) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def grpc_status(self, request: pb.FormatRequest, **metadata: str) -> Any:
        with grpc.insecure_channel(self.grpc.target) as channel:
            stub = pb_grpc.FormatterServiceStub(channel)
            with pytest.raises(grpc.RpcError) as caught:
                stub.Format(request, metadata=tuple(metadata.items()), timeout=30)
        return rpc_status.from_call(caught.value)

    def stop(self) -> None:
        self.grpc.call(self.http.stop(0))
        self.grpc.stop()


@pytest.fixture(scope="module")
def servers() -> Iterator[Servers]:
    running = Servers(ServerConfig(port=0, max_blocks=3, max_message_mb=1))
    yield running
    running.stop()


def _details(error: dict[str, Any]) -> list[Any]:
    """An error body's details, decoded from their base64 `value`; each `debug` must match."""
    decoded = []
    for detail in error.get("details", []):
        message = DETAIL_TYPES[detail["type"]]()
        message.ParseFromString(
            base64.b64decode(detail["value"] + "=" * (-len(detail["value"]) % 4))
        )
        assert detail["debug"] == json_format.MessageToDict(message)
        decoded.append(message)
    return decoded


def _same_as_grpc(servers: Servers, request: pb.FormatRequest, status: int, body: bytes) -> None:
    """The HTTP answer carries the code and details gRPC gives for the same request."""
    expected = servers.grpc_status(request)
    error = json.loads(body)
    assert error["code"] == code_pb2.Code.Name(expected.code).lower()
    assert error["message"] == expected.message
    assert _details(error) == [
        DETAIL_TYPES[d.TypeName()].FromString(d.value) for d in expected.details
    ]
    assert status in (400, 429)


def test_curl_recipe_formats(servers: Servers) -> None:
    command = commands("curl")[0]
    request = json_format.Parse(request_data(command), pb.FormatRequest())
    reply = json.loads(run(command, http_target=servers.http_target))
    expected = format(provider_name(request.provider), request.messages)
    assert json.loads(reply["bodyJson"]) == json.loads(body_to_json(expected))


def test_curl_recipe_error_has_details(servers: Servers) -> None:
    command = commands("curl")[1]
    request = json_format.Parse(request_data(command), pb.FormatRequest())
    error = json.loads(run(command, http_target=servers.http_target))
    assert error["code"] == "invalid_argument"
    info, bad_request = _details(error)
    assert info.reason == "FormatError"
    assert [v.field for v in bad_request.field_violations] == ["provider"]
    status, body = servers.post(FORMAT, json_format.MessageToJson(request).encode())
    _same_as_grpc(servers, request, status, body)


def test_limits_are_the_grpc_ones(servers: Servers) -> None:
    # max_blocks=3: four text blocks are RESOURCE_EXHAUSTED with a QuotaFailure.
    msg = {"name": "user", "role": "ROLE_USER", "blocks": {"items": [{"text": {"text": "x"}}] * 4}}
    request = json_format.ParseDict(
        {"provider": "PROVIDER_OPENAI", "messages": [msg]}, pb.FormatRequest()
    )
    status, body = servers.post(FORMAT, json_format.MessageToJson(request).encode())
    assert status == 429
    _same_as_grpc(servers, request, status, body)
    # max_message_mb=1: a bigger body is refused before it is decoded.
    status, body = servers.post(FORMAT, b" " * (1024 * 1024 + 1))
    assert (status, json.loads(body)["code"]) == (429, "resource_exhausted")


def test_undecodable_requests_name_the_request(servers: Servers) -> None:
    status, body = servers.post(FORMAT, b'{"provder": "PROVIDER_OPENAI"}')
    assert status == 400
    error = json.loads(body)
    assert error["code"] == "invalid_argument"
    _, bad_request = _details(error)
    (violation,) = bad_request.field_violations
    assert violation.field == "request"
    assert "provder" in violation.description
    status, body = servers.post(FORMAT, b"\xff\xff", content_type="application/proto")
    assert (status, json.loads(body)["code"]) == (400, "invalid_argument")


def _envelopes(messages: list[dict[str, Any]]) -> bytes:
    return b"".join(
        struct.pack(">BI", 0, len(data)) + data
        for data in (json.dumps(m).encode() for m in messages)
    )


def _read_envelopes(data: bytes) -> list[tuple[int, Any]]:
    frames, index = [], 0
    while index < len(data):
        flags, size = struct.unpack(">BI", data[index : index + 5])
        frames.append((flags, json.loads(data[index + 5 : index + 5 + size])))
        index += 5 + size
    return frames


def test_parse_stream_over_connect_streaming(servers: Servers) -> None:
    chunk = {"choices": [{"delta": {"content": "Hi"}}]}
    good = {"provider": "PROVIDER_OPENAI", "chunkJson": json.dumps(chunk)}
    status, body = servers.post(
        PARSE_STREAM, _envelopes([good, {}]), content_type="application/connect+json"
    )
    assert status == 200
    *responses, (end_flags, end) = _read_envelopes(body)
    assert end_flags == 2  # end of stream, with the error the servicer ended it with
    assert responses[0][1]["result"]["msg"]["blocks"]["items"][0]["text"]["text"] == "Hi"
    assert end["error"]["code"] == "invalid_argument"
    _, bad_request = _details(end["error"])
    assert [v.field for v in bad_request.field_violations] == ["requests[1].input"]
    # A stream message that does not decode is named by its index, as on gRPC.
    status, body = servers.post(
        PARSE_STREAM, _envelopes([good, {"bogus": 1}]), content_type="application/connect+json"
    )
    *_, (_, end) = _read_envelopes(body)
    _, bad_request = _details(end["error"])
    (violation,) = bad_request.field_violations
    assert violation.field == "requests[1]"
    assert violation.description.startswith(
        "not a valid agentscope.formatter.v1.ParseStreamRequest"
    )


@pytest.mark.parametrize(
    ("path", "content_type", "accepted"),
    [
        (PARSE_STREAM, "application/json", "application/connect+json, application/connect+proto"),
        (PARSE_STREAM, "", "application/connect+json, application/connect+proto"),
        (FORMAT, "", "application/json, application/proto"),
        (FORMAT, "text/plain", "application/json, application/proto"),
        (FORMAT, "application/connect+json", "application/json, application/proto"),
    ],
)
def test_a_content_type_no_protocol_reads_is_415_with_a_connect_error(
    servers: Servers, path: str, content_type: str, accepted: str
) -> None:
    request = urllib.request.Request(
        f"http://{servers.http_target}{path}", data=b"{}", method="POST"
    )
    if content_type:
        request.add_header("content-type", content_type)
    else:  # urllib would send application/x-www-form-urlencoded
        request.add_unredirected_header("Content-Type", "")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=30)
    assert caught.value.code == 415
    assert caught.value.headers["accept-post"] == accepted
    assert caught.value.headers["content-type"] == "application/json"
    error = json.loads(caught.value.read())
    assert error["code"] == "invalid_argument"
    info, bad_request = _details(error)
    assert info.reason == "MessageFormatError"
    (violation,) = bad_request.field_violations
    assert violation.field == "content-type"
    assert accepted.split(", ")[0] in violation.description
    assert error["message"] == f"content-type: {violation.description}"


HEALTH = "/grpc.health.v1.Health"


def test_curl_recipe_checks_health(servers: Servers) -> None:
    out = run(commands("curl")[2], http_target=servers.http_target)
    assert json.loads(out) == {"status": "SERVING"}


def test_health_is_served_over_http_too(servers: Servers) -> None:
    status, body = servers.post(f"{HEALTH}/Check", b"{}")
    assert (status, json.loads(body)) == (200, {"status": "SERVING"})
    status, body = servers.post(f"{HEALTH}/Check", b'{"service": "%s"}' % SERVICE.encode())
    assert (status, json.loads(body)) == (200, {"status": "SERVING"})
    status, body = servers.post(f"{HEALTH}/Check", b'{"service": "nope"}')
    assert (status, json.loads(body)["code"]) == (404, "not_found")
    # A GET, as a plain HTTP probe sends it (Check has no side effects).
    url = f"http://{servers.http_target}{HEALTH}/Check?encoding=json&message=%7B%7D"
    with urllib.request.urlopen(url, timeout=30) as response:
        assert json.loads(response.read()) == {"status": "SERVING"}


def test_health_over_http_follows_the_grpc_server() -> None:
    running = Servers(ServerConfig(port=0))
    try:
        watch = urllib.request.Request(
            f"http://{running.http_target}{HEALTH}/Watch",
            data=_envelopes([{}]),
            headers={"content-type": "application/connect+json"},
        )
        with urllib.request.urlopen(watch, timeout=30) as stream:
            assert _next_envelope(stream) == (0, {"status": "SERVING"})
            running.grpc.call(set_serving(running.grpc.health, False))
            assert _next_envelope(stream) == (0, {"status": "NOT_SERVING"})
        status, body = running.post(f"{HEALTH}/Check", b"{}")
        assert (status, json.loads(body)) == (200, {"status": "NOT_SERVING"})
    finally:
        running.stop()


def _next_envelope(stream: Any) -> tuple[int, Any]:
    flags, size = struct.unpack(">BI", stream.read(5))
    return flags, json.loads(stream.read(size))


def test_bearer_token_is_required() -> None:
    running = Servers(ServerConfig(port=0, auth_token=TOKEN))
    try:
        msg = {"name": "user", "role": "ROLE_USER", "text": "Hi"}
        body = json.dumps({"provider": "PROVIDER_OPENAI", "messages": [msg]}).encode()
        status, answer = running.post(FORMAT, body)
        assert (status, json.loads(answer)["code"]) == (401, "unauthenticated")
        status, answer = running.post(FORMAT, body, authorization=f"Bearer {TOKEN}x")
        assert status == 401
        status, answer = running.post(FORMAT, body, authorization=f"Bearer {TOKEN}")
        assert status == 200
        assert "bodyJson" in json.loads(answer)
        # Health checks need no token, as on the gRPC port (probes carry none).
        status, answer = running.post(f"{HEALTH}/Check", b"{}")
        assert (status, json.loads(answer)) == (200, {"status": "SERVING"})
    finally:
        running.stop()


def test_tls_with_client_certificates(tmp_path: Path) -> None:
    ca = trustme.CA()
    leaf = ca.issue_cert("127.0.0.1")
    files = {name: tmp_path / f"{name}.pem" for name in ("cert", "key", "ca")}
    leaf.cert_chain_pems[0].write_to_path(files["cert"])
    leaf.private_key_pem.write_to_path(files["key"])
    ca.cert_pem.write_to_path(files["ca"])
    config = ServerConfig(
        port=0, tls_cert=files["cert"], tls_key=files["key"], tls_client_ca=files["ca"]
    )
    running = Servers(config)
    try:
        msg = {"name": "user", "role": "ROLE_USER", "text": "Hi"}
        body = json.dumps({"provider": "PROVIDER_OPENAI", "messages": [msg]}).encode()
        trusting = ssl.create_default_context()
        ca.configure_trust(trusting)
        with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):
            running.post(FORMAT, body, tls=trusting)  # no client certificate
        ca.issue_cert("client@example.com").configure_cert(trusting)
        status, answer = running.post(FORMAT, body, tls=trusting)
        assert status == 200
        assert "bodyJson" in json.loads(answer)
    finally:
        running.stop()


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_serve_command_says_listening_once_every_port_accepts() -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "agentscope_proto", "serve", "--port", "0", "--http-port", "0"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert server.stderr is not None
        line = next((line for line in server.stderr if "listening" in line), "")
        # The first such line names both ports, and both accept right away.
        ports = re.findall(r"(\S+):(\d+) \((gRPC|Connect over HTTP)\)", line)
        assert [kind for *_, kind in ports] == ["gRPC", "Connect over HTTP"], line
        for host, port, _ in ports:
            socket.create_connection((host, int(port)), timeout=5).close()
        http_target = f"{ports[1][0]}:{ports[1][1]}"
        out = run(commands("curl")[0], http_target=http_target)
        assert "bodyJson" in json.loads(out)
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(30) == 0
