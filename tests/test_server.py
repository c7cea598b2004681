"""The FormatterService over a real channel: every RPC, standard services, errors, auth, TLS."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import grpc
import pytest
import trustme
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_status import rpc_status

from agentscope_proto import errors
from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto._generated.agentscope.formatter.v1 import (
    formatter_service_pb2_grpc as pb_grpc,
)
from agentscope_proto._generated.agentscope.message.v1.message_pb2 import (
    ContentBlock,
    Msg,
    OpaqueBlock,
    Role,
)
from agentscope_proto.client import AsyncFormatterClient, FormatterClient, format_request
from agentscope_proto.formatting import body_to_json, format
from agentscope_proto.options import (
    FormatSettings,
    ParseSettings,
    format_settings_from_proto,
    parse_settings_from_proto,
    parse_settings_to_proto,
)
from agentscope_proto.parsing import StreamParser, parse
from agentscope_proto.service import SERVICE_NAME, ServerConfig

from conftest import default_options, load_golden
from golden_data import formatter_cases
from server_harness import RunningServer
from strict import assert_same

PROVIDERS = ["openai", "anthropic", "gemini", "dashscope", "ollama", "deepseek", "openai_responses"]
TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    running = RunningServer(ServerConfig(port=0)).start()
    yield running
    running.stop()


@pytest.fixture
def client(server: RunningServer) -> Iterator[FormatterClient]:
    with FormatterClient(server.target) as c:
        yield c


@pytest.fixture
def stub(server: RunningServer) -> Iterator[pb_grpc.FormatterServiceStub]:
    with grpc.insecure_channel(server.target) as channel:
        yield pb_grpc.FormatterServiceStub(channel)


def _format_cases(per_provider: int = 6) -> list[Any]:
    params = []
    for provider in PROVIDERS:
        cases = [
            c for c in formatter_cases(provider) if "error" not in c and not _uses_local_media(c)
        ]
        params += [
            pytest.param(provider, c, id=f"{provider}:{c['name']}") for c in cases[:per_provider]
        ]
    return params


def _uses_local_media(case: dict[str, Any]) -> bool:
    return "media/" in json.dumps(case["msgs"])


def _parse_cases(stream: bool, per_provider: int = 4) -> list[Any]:
    params = []
    for provider in PROVIDERS:
        cases = [
            c
            for c in load_golden(f"parsers/{provider}.json")["cases"]
            if c["stream"] is stream and "error" not in c["expected"] and default_options(c)
        ]
        params += [
            pytest.param(provider, c, id=f"{provider}:{c['name']}") for c in cases[:per_provider]
        ]
    return params


# -- every RPC gives the in-process result -----------------------------------


@pytest.mark.parametrize(("provider", "case"), _format_cases())
def test_format_rpc_equals_in_process(
    client: FormatterClient, provider: str, case: dict[str, Any]
) -> None:
    kwargs = dict(
        multi_agent=case["multi_agent"],
        tools=case["tools"],
        tool_choice=case["tool_choice"],
        **case["options"],
    )
    local = format(provider, case["msgs"], **kwargs)
    remote = client.format(provider, case["msgs"], **kwargs)
    # Over the wire the body is JSON (bytes become base64 text).
    assert_same(dict(remote), json.loads(body_to_json(local)))
    assert remote.warnings == local.warnings
    assert remote.token_count == local.token_count


@pytest.mark.parametrize(("provider", "case"), _parse_cases(stream=False))
def test_parse_rpc_equals_in_process(
    client: FormatterClient, provider: str, case: dict[str, Any]
) -> None:
    local = parse(provider, case["response"])
    remote = client.parse(provider, case["response"])
    assert remote.content == local.content
    assert remote.usage == local.usage
    assert remote.response_id == local.response_id
    assert remote.finish_reason == local.finish_reason


@pytest.mark.parametrize(("provider", "case"), _parse_cases(stream=True))
def test_parse_stream_rpc_equals_in_process(
    client: FormatterClient, provider: str, case: dict[str, Any]
) -> None:
    parser = StreamParser(provider)
    local = [r for chunk in case["chunks"] if (r := parser.feed(chunk)) is not None]
    local.append(parser.finish())
    remote = list(client.parse_stream(provider, case["chunks"]))
    assert [r.content for r in remote] == [r.content for r in local]
    assert [r.usage for r in remote] == [r.usage for r in local]
    assert [[(d.index, d.block) for d in r.deltas] for r in remote] == [
        [(d.index, d.block) for d in r.deltas] for r in local
    ]


def test_parse_stream_accepts_raw_sse_split_anywhere(client: FormatterClient) -> None:
    case = _parse_cases(stream=True, per_provider=1)[0].values[1]
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in case["chunks"])
    body += b"data: [DONE]\n\n"
    slices = [body[i : i + 7] for i in range(0, len(body), 7)]
    remote = list(client.parse_stream("openai", slices, raw=True))
    parser = StreamParser("openai")
    for chunk in case["chunks"]:
        parser.feed(chunk)
    assert remote[-1].content == parser.finish().content


# -- deltas-only streams ---------------------------------------------------------


def _apply(content: list[dict[str, Any]], deltas: list[Any]) -> None:
    """Apply one response's deltas as a deltas-mode client does."""
    for delta in deltas:
        block = delta.block
        if delta.index >= len(content):
            content.append(dict(block))
            continue
        old, kind = content[delta.index], block["type"]
        if kind == old["type"] and kind in ("text", "thinking"):
            content[delta.index] = {**block, kind: old[kind] + block[kind]}
        elif kind == old["type"] == "tool_use" and block.get("raw_input") is not None:
            raw = (old.get("raw_input") or "") + block["raw_input"]
            content[delta.index] = {**block, "raw_input": raw}
        else:
            content[delta.index] = dict(block)


@pytest.mark.parametrize(("provider", "case"), _parse_cases(stream=True))
def test_deltas_mode_rebuilds_the_cumulative_result(
    client: FormatterClient, provider: str, case: dict[str, Any]
) -> None:
    cumulative = list(client.parse_stream(provider, case["chunks"]))
    deltas = list(client.parse_stream(provider, case["chunks"], mode="deltas"))
    *partial, final = deltas
    assert final.content == cumulative[-1].content
    assert final.usage == cumulative[-1].usage
    assert final.raw_finish_reason == cumulative[-1].raw_finish_reason
    rebuilt: list[dict[str, Any]] = []
    for result in partial:
        assert result.content == []  # no cumulative message before the last
        assert result.deltas or result.usage or result.response_id or result.raw_finish_reason
        _apply(rebuilt, result.deltas)
    _apply(rebuilt, final.deltas)
    assert rebuilt == final.content


def _long_openai_stream(deltas: int) -> list[str]:
    """An OpenAI stream of `deltas` text chunks as the API sends them, then the stop chunk."""
    head = {"id": "chatcmpl-9x7Yq", "object": "chat.completion.chunk", "created": 1732320000}
    head["model"] = "gpt-4o-mini-2024-07-18"
    words = ["the ", "quick ", "brown ", "fox ", "jumps ", "over ", "a ", "lazy ", "dog. "]
    chunks = [
        {**head, "choices": [{"index": 0, "delta": {"content": words[i % len(words)]}}]}
        for i in range(deltas)
    ]
    chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return [json.dumps(chunk, separators=(",", ":")) for chunk in chunks]


def _stream_bytes(stub: pb_grpc.FormatterServiceStub, chunks: list[str], mode: int) -> Any:
    requests = [pb.ParseStreamRequest(chunk_json=chunk) for chunk in chunks]
    requests[0].provider = pb.PROVIDER_OPENAI
    requests[0].stream_mode = mode  # type: ignore[assignment]
    replies = list(stub.ParseStream(iter(requests), timeout=60))
    return replies, sum(len(reply.SerializeToString()) for reply in replies)


def test_deltas_mode_sends_linear_bytes(stub: pb_grpc.FormatterServiceStub) -> None:
    chunks = _long_openai_stream(2000)
    provider_bytes = sum(len(chunk.encode()) for chunk in chunks)
    replies, sent = _stream_bytes(stub, chunks, pb.STREAM_MODE_DELTAS)
    assert sent <= 1.5 * provider_bytes, (sent, provider_bytes)
    assert replies[-1].done
    assert not any(reply.done for reply in replies[:-1])
    assert not any(reply.result.HasField("msg") for reply in replies[:-1])
    text = "".join(json.loads(chunk)["choices"][0]["delta"].get("content", "") for chunk in chunks)
    assert replies[-1].result.msg.blocks.items[0].text.text == text
    streamed = "".join(d.block.text.text for r in replies[:-1] for d in r.result.deltas)
    assert streamed == text
    # The same stream in the default (cumulative) mode repeats the text so far
    # in every response: quadratic, far beyond the provider's own bytes.
    cumulative, cumulative_sent = _stream_bytes(stub, chunks, pb.STREAM_MODE_UNSPECIFIED)
    assert cumulative[-1].result.msg.blocks == replies[-1].result.msg.blocks
    assert all(reply.result.HasField("msg") for reply in cumulative)
    assert cumulative_sent > 20 * provider_bytes


def test_unknown_stream_mode_is_invalid_argument(stub: pb_grpc.FormatterServiceStub) -> None:
    request = pb.ParseStreamRequest(provider=pb.PROVIDER_OPENAI, chunk_json="{}")
    request.stream_mode = 99  # type: ignore[assignment]
    with pytest.raises(grpc.RpcError) as caught:
        list(stub.ParseStream(iter([request]), timeout=5))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    _info, status = _details(caught.value)
    assert _field_violation(status) == "requests[0].stream_mode"


def test_async_client_streams_both_modes(server: RunningServer) -> None:
    chunks = _long_openai_stream(50)

    async def run(mode: Any) -> list[Any]:
        async with AsyncFormatterClient(server.target) as client:
            return [r async for r in client.parse_stream("openai", chunks, mode=mode)]

    cumulative = asyncio.run(run("cumulative"))
    deltas = asyncio.run(run("deltas"))
    assert deltas[-1].content == cumulative[-1].content
    assert all(r.content == [] for r in deltas[:-1])
    assert [r.content for r in cumulative[1:-1]] != [[]] * (len(cumulative) - 2)
    with pytest.raises(errors.ParseError, match="mode"):
        asyncio.run(run("sideways"))


# -- standard services --------------------------------------------------------


def test_health_reports_serving(server: RunningServer) -> None:
    with grpc.insecure_channel(server.target) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for name in ("", SERVICE_NAME):
            reply = health.Check(health_pb2.HealthCheckRequest(service=name), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_reflection_lists_services_and_resolves_the_schema(server: RunningServer) -> None:
    with grpc.insecure_channel(server.target) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        requests = [
            reflection_pb2.ServerReflectionRequest(list_services=""),
            reflection_pb2.ServerReflectionRequest(file_containing_symbol=SERVICE_NAME),
        ]
        listed, files = list(stub.ServerReflectionInfo(iter(requests), timeout=5))
    names = {s.name for s in listed.list_services_response.service}
    assert {SERVICE_NAME, "grpc.health.v1.Health"} <= names
    from google.protobuf import descriptor_pb2

    protos = [
        descriptor_pb2.FileDescriptorProto.FromString(raw)
        for raw in files.file_descriptor_response.file_descriptor_proto
    ]
    assert "agentscope/formatter/v1/formatter_service.proto" in {p.name for p in protos}


# -- errors: statuses with details ---------------------------------------------


def _details(error: grpc.RpcError) -> tuple[error_details_pb2.ErrorInfo, Any]:
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None, "no status details"
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    return info, status


def _field_violation(status: Any) -> str:
    bad = error_details_pb2.BadRequest()
    assert status.details[1].Unpack(bad)
    return str(bad.field_violations[0].field)


def test_missing_provider_is_invalid_argument(stub: pb_grpc.FormatterServiceStub) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        stub.Format(pb.FormatRequest(), timeout=5)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    _info, status = _details(caught.value)
    assert _field_violation(status) == "provider"


def test_bad_message_names_the_field(stub: pb_grpc.FormatterServiceStub) -> None:
    bad = Msg(name="u", role=Role.ROLE_USER)
    bad.blocks.items.append(
        ContentBlock(opaque=OpaqueBlock(block_type="x", block_json="{not json"))
    )
    request = pb.FormatRequest(provider=pb.PROVIDER_OPENAI, messages=[Msg(), bad])
    with pytest.raises(grpc.RpcError) as caught:
        stub.Format(request, timeout=5)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    _info, status = _details(caught.value)
    assert _field_violation(status).startswith("messages[")


def test_invalid_utf8_names_the_field(server: RunningServer) -> None:
    # `response_json` is a `string`: the Python runtime cannot even build such
    # a request, so send the wire bytes a hostile client would.
    request = pb.ParseRequest(provider=pb.PROVIDER_OPENAI).SerializeToString()
    payload = b'{"x": "\xff"}'
    raw = request + bytes([2 << 3 | 2, len(payload)]) + payload  # field 2, length-delimited
    with grpc.insecure_channel(server.target) as channel:
        call = channel.unary_unary(f"/{SERVICE_NAME}/Parse")
        with pytest.raises(grpc.RpcError) as caught:
            call(raw, timeout=5)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    _info, status = _details(caught.value)
    assert _field_violation(status) == "response_json"


def test_invalid_utf8_deep_in_a_message_names_its_path(server: RunningServer) -> None:
    msg = Msg(name="u", role=Role.ROLE_USER, text="PLACEHOLDER")
    raw = pb.FormatRequest(provider=pb.PROVIDER_OPENAI, messages=[Msg(), msg]).SerializeToString()
    raw = raw.replace(b"PLACEHOLDER", b"PLACEHOLDE\xff")
    with grpc.insecure_channel(server.target) as channel:
        call = channel.unary_unary(f"/{SERVICE_NAME}/Format")
        with pytest.raises(grpc.RpcError) as caught:
            call(raw, timeout=5)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    _info, status = _details(caught.value)
    assert _field_violation(status) == "messages[1].text"


def test_client_refuses_invalid_utf8_before_sending(client: FormatterClient) -> None:
    with pytest.raises(errors.ParseError, match="invalid UTF-8"):
        client.parse("openai", b'{"x": "\xff"}')


def test_local_media_is_failed_precondition(client: FormatterClient) -> None:
    msg = {
        "name": "u",
        "role": "user",
        "content": [{"type": "image", "source": {"type": "url", "url": "/etc/passwd.png"}}],
    }
    with pytest.raises(errors.MediaAccessError) as caught:
        client.format("openai", [msg])
    assert caught.value.path == "messages[0].content[0]"


def test_client_rebuilds_typed_errors(client: FormatterClient) -> None:
    with pytest.raises(errors.ParseError):
        client.parse("openai", b"[1, 2]")
    with pytest.raises(errors.UnknownProviderError):
        client.parse("nope", b"{}")


def test_oversize_request_is_resource_exhausted() -> None:
    running = RunningServer(ServerConfig(port=0, max_message_mb=1)).start()
    try:
        with FormatterClient(running.target) as client, pytest.raises(errors.RemoteError) as caught:
            client.parse("openai", b'{"x": "' + b"a" * (2 * 1024 * 1024) + b'"}')
        assert caught.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    finally:
        running.stop()


def test_status_codes_never_unknown_for_bad_input(stub: pb_grpc.FormatterServiceStub) -> None:
    bad_requests = [
        lambda: stub.Parse(pb.ParseRequest(provider=pb.PROVIDER_ANTHROPIC), timeout=5),
        lambda: stub.Parse(pb.ParseRequest(provider=99, response_json="{}"), timeout=5),
        lambda: stub.Format(
            pb.FormatRequest(provider=pb.PROVIDER_OPENAI, tools_json="{}"), timeout=5
        ),
    ]
    for send in bad_requests:
        with pytest.raises(grpc.RpcError) as caught:
            send()
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT


# -- deadlines and cancellation -------------------------------------------------


def _slow_chunks(count: int, delay: float) -> Iterator[pb.ParseStreamRequest]:
    chunk = {"id": "c1", "choices": [{"index": 0, "delta": {"content": "x"}}]}
    for i in range(count):
        request = pb.ParseStreamRequest(chunk_json=json.dumps(chunk))
        if i == 0:
            request.provider = pb.PROVIDER_OPENAI
        time.sleep(delay)
        yield request


def test_deadline_is_honoured_mid_stream(stub: pb_grpc.FormatterServiceStub) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        list(stub.ParseStream(_slow_chunks(50, 0.05), timeout=0.5))
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED


def test_cancel_mid_stream(stub: pb_grpc.FormatterServiceStub) -> None:
    call = stub.ParseStream(_slow_chunks(50, 0.02), timeout=10)
    next(call)
    call.cancel()
    with pytest.raises(grpc.RpcError) as caught:
        list(call)
    assert caught.value.code() == grpc.StatusCode.CANCELLED


# -- auth ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def auth_server() -> Iterator[RunningServer]:
    running = RunningServer(ServerConfig(port=0, auth_token=TOKEN)).start()
    yield running
    running.stop()


@pytest.mark.parametrize("token", [None, "wrong", TOKEN[:-1], TOKEN + "x"])
def test_auth_rejects_missing_or_wrong_tokens(
    auth_server: RunningServer, token: str | None
) -> None:
    with FormatterClient(auth_server.target, token=token) as client:
        with pytest.raises(errors.AgentScopeProtoError) as caught:
            client.parse("openai", b"{}")
        assert "UNAUTHENTICATED" in str(caught.value)
        assert TOKEN not in str(caught.value)
        with pytest.raises(errors.AgentScopeProtoError) as streamed:
            list(client.parse_stream("openai", [{"id": "x", "choices": []}]))
        assert "UNAUTHENTICATED" in str(streamed.value)


def test_auth_accepts_the_token_and_leaves_health_open(auth_server: RunningServer) -> None:
    with (
        FormatterClient(auth_server.target, token=TOKEN) as client,
        pytest.raises(errors.ParseError),
    ):
        client.parse("openai", b"[]")  # authenticated: reaches the parser
    with grpc.insecure_channel(auth_server.target) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(), timeout=5
        )
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_auth_uses_constant_time_comparison(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every verdict of the interceptor goes through hmac.compare_digest (a
    # timing test could not be deterministic; this one fails if a plain `==`
    # or a prefix check ever decides).
    from agentscope_proto.service import auth

    compared: list[tuple[bytes, bytes]] = []
    real = auth.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(auth, "compare_digest", spy)
    interceptor = auth.BearerTokenAuth(TOKEN)
    # A refusal looks the handler up for its kind: a real one.
    handler = grpc.unary_unary_rpc_method_handler(lambda request, context: None)

    async def continuation(details: Any) -> Any:
        return handler

    def verdict(value: str) -> Any:
        details = SimpleNamespace(
            method=f"/{SERVICE_NAME}/Format", invocation_metadata=(("authorization", value),)
        )
        return asyncio.run(interceptor.intercept_service(continuation, details))  # type: ignore[arg-type]

    assert verdict(f"Bearer {TOKEN}") is handler
    assert verdict(f"Bearer {TOKEN[:-1]}") is not handler
    assert verdict("") is not handler
    expected = f"Bearer {TOKEN}".encode()
    assert compared == [
        (f"Bearer {TOKEN}".encode(), expected),
        (f"Bearer {TOKEN[:-1]}".encode(), expected),
        (b"", expected),
    ]


# -- TLS ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def _tls_server(ca: trustme.CA, tmp: Any, mutual: bool) -> RunningServer:
    cert = ca.issue_cert("localhost", "127.0.0.1")
    key_path, cert_path, ca_path = tmp / "key.pem", tmp / "cert.pem", tmp / "ca.pem"
    cert.private_key_pem.write_to_path(str(key_path))
    cert.cert_chain_pems[0].write_to_path(str(cert_path))
    ca.cert_pem.write_to_path(str(ca_path))
    config = ServerConfig(
        port=0, tls_cert=cert_path, tls_key=key_path, tls_client_ca=ca_path if mutual else None
    )
    return RunningServer(config).start()


@pytest.mark.parametrize("mutual", [False, True], ids=["tls", "mtls"])
def test_tls(ca: trustme.CA, tmp_path: Any, mutual: bool) -> None:
    running = _tls_server(ca, tmp_path, mutual)
    try:
        client_cert = ca.issue_cert("client@example.com")
        credentials = grpc.ssl_channel_credentials(
            root_certificates=ca.cert_pem.bytes(),
            private_key=client_cert.private_key_pem.bytes() if mutual else None,
            certificate_chain=client_cert.cert_chain_pems[0].bytes() if mutual else None,
        )
        target = f"localhost:{running.port}"
        with (
            FormatterClient(target, credentials=credentials) as client,
            pytest.raises(errors.ParseError),
        ):
            client.parse("openai", b"[]")
        if mutual:
            anonymous = grpc.ssl_channel_credentials(root_certificates=ca.cert_pem.bytes())
            with FormatterClient(target, credentials=anonymous) as client:
                with pytest.raises(errors.AgentScopeProtoError) as caught:
                    client.parse("openai", b"[]", timeout=5)
                assert "UNAVAILABLE" in str(caught.value)
    finally:
        running.stop()


def test_clients_take_the_provider_first_and_deprecate_the_old_order(
    client: FormatterClient, server: RunningServer
) -> None:
    msgs = [{"id": "m1", "name": "u", "role": "user", "content": "hi", "timestamp": "t"}]
    body = client.format("openai", msgs)
    with pytest.warns(DeprecationWarning, match=r"format\(provider, msgs\)"):
        old = client.format(msgs, "openai")  # type: ignore[arg-type]
    assert dict(old) == dict(body)
    with pytest.warns(DeprecationWarning, match="format_request"):
        request = format_request(msgs, "openai")  # type: ignore[arg-type]
    assert request == format_request("openai", msgs)

    async def run() -> tuple[Any, Any]:
        async with AsyncFormatterClient(server.target) as remote:
            new = await remote.format("openai", msgs)
            with pytest.warns(DeprecationWarning, match="AsyncFormatterClient.format"):
                old = await remote.format(msgs, "openai")  # type: ignore[arg-type]
            return new, old

    new, old = asyncio.run(run())
    assert dict(new) == dict(old) == dict(body)


@pytest.mark.parametrize(
    "settings",
    [
        FormatSettings(),
        FormatSettings(multi_agent=True, conversation_history_prompt="", max_tokens=9),
        FormatSettings(promote_tool_result_audios=True, token_counter="tiktoken", model="gpt-4o"),
        FormatSettings(agent_name="Alice", token_counter="char"),
    ],
)
def test_client_and_servicer_convert_format_settings_both_ways(settings: FormatSettings) -> None:
    request = format_request("openai", [], settings=settings)
    assert format_settings_from_proto(request.options, multi_agent=request.multi_agent) == settings


@pytest.mark.parametrize(
    "settings",
    [ParseSettings(), ParseSettings(True, False, True, "wav"), ParseSettings(audio_format="mp3")],
)
def test_client_and_servicer_convert_parse_settings_both_ways(settings: ParseSettings) -> None:
    assert parse_settings_from_proto(parse_settings_to_proto(settings)) == settings


@pytest.mark.parametrize(
    "options",
    [{"max_tokens": 0}, {"token_counter": "words"}, {"agent_name": ""}, {"bogus": 1}],
)
def test_client_rejects_bad_options_as_format_does(options: dict[str, Any]) -> None:
    msgs = [{"name": "u", "role": "user", "content": "hi"}]
    with pytest.raises(errors.FormatError) as local:
        format("openai", msgs, **options)
    with pytest.raises(errors.FormatError) as remote:
        format_request("openai", msgs, **options)
    assert (remote.value.path, remote.value.reason) == (local.value.path, local.value.reason)


def test_format_request_round_trips_options() -> None:
    request = format_request(
        "gemini",
        [{"name": "u", "role": "user", "content": "hi"}],
        multi_agent=True,
        tools=[{"type": "function", "function": {"name": "f", "parameters": {}}}],
        tool_choice="auto",
        promote_tool_result_images=True,
        max_tokens=100,
        token_counter="char",
    )
    assert request.provider == pb.PROVIDER_GEMINI
    assert request.options.max_tokens == 100
    assert request.options.token_counter == pb.TOKEN_COUNTER_CHAR
    assert json.loads(request.tools_json)[0]["function"]["name"] == "f"
    with pytest.raises(errors.FormatError, match="unknown option"):
        format_request("openai", [], bogus=1)
