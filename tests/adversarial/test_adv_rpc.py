"""Bad input over a real channel: every RPC answers with a typed status, keeps
serving health checks, and gives its memory back.

Requests go through a raw-bytes channel where the input is not a valid
protobuf at all. Bad input must never get UNKNOWN or INTERNAL (those mean a
server fault), and every status the servicer sends carries details.
"""

from __future__ import annotations

import gc
import json
import logging
import random
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto._generated.agentscope.formatter.v1 import (
    formatter_service_pb2_grpc as pb_grpc,
)
from agentscope_proto._generated.agentscope.message.v1.message_pb2 import (
    ContentBlock,
    Msg,
    Role,
    TextBlock,
)
from agentscope_proto.service import SERVICE_NAME, ServerConfig

from adversarial_inputs import GOLDEN_PROVIDERS, golden, msg_with, odd_blocks
from server_harness import RunningServer

METHOD = f"/{SERVICE_NAME}/"
MB = 1024 * 1024
# Codes that mean "your input" (or a limit, or a refusal); UNKNOWN and INTERNAL
# mean a server fault and never answer bad input.
INPUT_CODES = {
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
}


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    running = RunningServer(ServerConfig(port=0)).start()
    yield running
    running.stop()


# Small limits, so that crossing them is quick.
LIMITED = ServerConfig(
    port=0,
    max_message_mb=4,
    max_blocks=1000,
    max_stream_messages=500,
    max_stream_output_mb=1,
    stream_idle_seconds=0.5,
)


@pytest.fixture(scope="module")
def limited() -> Iterator[RunningServer]:
    running = RunningServer(LIMITED).start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def channel(server: RunningServer) -> Iterator[grpc.Channel]:
    options = [("grpc.max_send_message_length", 200 * MB)]
    with grpc.insecure_channel(server.target, options=options) as channel:
        yield channel


def _unary(channel: grpc.Channel, method: str, payload: bytes) -> Any:
    call = channel.unary_unary(METHOD + method)  # raw bytes in and out
    return call(payload, timeout=30)


def _stream(channel: grpc.Channel, payloads: list[bytes]) -> list[bytes]:
    call = channel.stream_stream(METHOD + "ParseStream")
    return list(call(iter(payloads), timeout=30))


def _status_of(error: grpc.RpcError) -> Any:
    return rpc_status.from_call(error)  # type: ignore[arg-type]


def _check_typed(error: grpc.RpcError, codes: set[grpc.StatusCode] = INPUT_CODES) -> None:
    assert error.code() in codes, (error.code(), error.details())
    status = _status_of(error)
    assert status is not None, f"no details: {error.code()} {error.details()}"
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    assert info.domain == "agentscope-proto"
    assert len(status.details) == 2  # plus BadRequest / PreconditionFailure / QuotaFailure


def _healthy(target: str) -> None:
    with grpc.insecure_channel(target) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(), timeout=5
        )
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def _ld(field: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field."""
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _deep_format_request(depth: int) -> bytes:
    """A FormatRequest whose tool results nest `depth` deep (past protobuf's limit)."""
    block = ContentBlock(text=TextBlock(text="x")).SerializeToString()
    for _ in range(depth):
        # ContentBlock.tool_result(4) > ToolResultBlock.blocks(4) > ContentBlocks.items(1)
        block = _ld(4, _ld(4, _ld(1, block)))
    msg = _varint(2 << 3) + _varint(Role.ROLE_USER) + _ld(5, _ld(1, block))  # Msg.role, Msg.blocks
    return _varint(1 << 3) + _varint(pb.PROVIDER_OPENAI) + _ld(3, msg)


def _random_payloads(seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(rng.randrange(1, 400)) for _ in range(count)]


# The `*_json` payloads are `string` fields, which the Python runtime will not
# set to invalid UTF-8; the helpers append them as raw wire bytes, so that the
# server sees exactly the bytes a hostile client sends.


def _format(msgs: list[Msg], tools_json: bytes = b"", **fields: Any) -> bytes:
    request = pb.FormatRequest(provider=pb.PROVIDER_OPENAI, messages=msgs, **fields)
    return request.SerializeToString() + (_ld(4, tools_json) if tools_json else b"")


def _parse(response: bytes, provider: int = pb.PROVIDER_OPENAI) -> bytes:
    return pb.ParseRequest(provider=provider).SerializeToString() + _ld(2, response)  # type: ignore[arg-type]


def _chunk(data: bytes, first: bool = True, raw: bool = False) -> bytes:
    request = pb.ParseStreamRequest(provider=pb.PROVIDER_OPENAI if first else None)
    return request.SerializeToString() + _ld(4 if raw else 3, data)


def _provider(name: str) -> int:
    return int(pb.Provider.Value(f"PROVIDER_{name.upper()}"))


def _options(**fields: Any) -> pb.FormatOptions:
    return pb.FormatOptions(**fields)


def _bad_unary_requests() -> list[tuple[str, str, bytes]]:
    user = Msg(name="u", role=Role.ROLE_USER, text="hi")
    cases: list[tuple[str, str, bytes]] = []
    for index, payload in enumerate(_random_payloads(8, 12)):
        cases += [
            ("Format", f"random bytes {index}", payload),
            ("Parse", f"random bytes {index}", payload),
        ]
    valid = _format([user])
    user_bytes = user.SerializeToString()
    named_turns = pb.FormatOptions(multi_agent_style=pb.MULTI_AGENT_STYLE_NAMED_TURNS)
    cases += [
        ("Format", "truncated", valid[:-3]),
        ("Format", "wrong wire type for messages", _varint(3 << 3) + _varint(1)),
        ("Format", "nested past protobuf's limit", _deep_format_request(200)),
        ("Format", "no provider", pb.FormatRequest(messages=[user]).SerializeToString()),
        ("Format", "unknown provider", _varint(1 << 3) + _varint(99) + _ld(3, user_bytes)),
        ("Format", "unknown role", _format([Msg(name="u", role=99, text="x")])),
        ("Format", "tools_json not JSON", _format([user], tools_json=b"[{")),
        ("Format", "tools_json NaN", _format([user], tools_json=b"[NaN]")),
        ("Format", "tools_json duplicate keys", _format([user], tools_json=b'[{"a":1,"a":2}]')),
        ("Format", "tools_json deep", _format([user], tools_json=b"[" * 10_000 + b"]" * 10_000)),
        ("Format", "tools_json an object", _format([user], tools_json=b"{}")),
        ("Format", "tools_json of numbers", _format([user], tools_json=b"[1, 2]")),
        ("Format", "tools_json invalid UTF-8", _format([user], tools_json=b'["\xff"]')),
        ("Format", "unknown token counter", _format([user], options=_options(token_counter=99))),
        ("Format", "zero max_tokens", _format([user], options=pb.FormatOptions(max_tokens=0))),
        ("Format", "named turns without a name", _format([user], options=named_turns)),
        ("Format", "unknown tool choice", _format([user], tool_choice="nope")),
    ]
    for label, block in odd_blocks():
        cases.append(("Format", label, _format([msg_with(block)])))
    for response, label in [
        (b"", "empty"),
        (b'{"x": "\xff"}', "invalid UTF-8"),
        (b'{"x": NaN}', "NaN"),
        (b'{"id": "a", "id": "b"}', "duplicate keys"),
        (b'{"choices": [{"message": {"content": "\\ud83e"}}]}', "a lone surrogate"),
        (b"[" * 100_000 + b"]" * 100_000, "nested 10^5 deep"),
        (b"\xef\xbb\xbf{}", "BOM"),
        (b"[" + b"1," * 100_000 + b"1]", "an array of 10^5 numbers"),
        (b'{"choices": "' + b"x" * 1_000_000 + b'"}', "a megabyte where a list belongs"),
        # Error texts echo input; the status must still fit in the trailers.
        (json.dumps({"error": {"message": "x" * 1_000_000}}).encode(), "a 1 MB error message"),
        (json.dumps({"error": {"type": "é" * 100_000}}, ensure_ascii=False).encode(), "non-ASCII"),
    ]:
        cases.append(("Parse", label, _parse(response)))
    cases.append(("Parse", "unknown provider", _parse(b"{}", provider=99)))
    cases.append(("Parse", "no provider", pb.ParseRequest(response_json="{}").SerializeToString()))
    for provider in GOLDEN_PROVIDERS:
        (case,) = [c for c in golden("parsers", provider) if not c["stream"]][:1]
        mangled = json.dumps(case["response"]).replace('"', "'", 3).encode()
        cases.append(("Parse", f"{provider} mangled quotes", _parse(mangled, _provider(provider))))
    return cases


BAD_UNARY = _bad_unary_requests()


@pytest.mark.parametrize(
    ("method", "payload"),
    [pytest.param(m, p, id=f"{m}:{label}") for m, label, p in BAD_UNARY],
)
def test_bad_unary_request_gets_a_typed_status(
    channel: grpc.Channel, server: RunningServer, method: str, payload: bytes
) -> None:
    try:
        _unary(channel, method, payload)
    except grpc.RpcError as error:
        _check_typed(error)
    # Some odd blocks are fine to format (dropped with a warning); either way
    # the server keeps serving.
    _healthy(server.target)


def _bad_streams() -> list[tuple[str, list[bytes]]]:
    ok = json.dumps({"id": "c", "choices": [{"index": 0, "delta": {"content": "x"}}]}).encode()
    streams = [(f"random bytes {i}", [payload]) for i, payload in enumerate(_random_payloads(9, 8))]
    unknown = _varint(1 << 3) + _varint(99) + _ld(3, ok)  # provider 99, chunk_json
    gemini = pb.ParseStreamRequest(provider=pb.PROVIDER_GEMINI, chunk_json=ok.decode())
    gemini_bytes = gemini.SerializeToString()
    unset = pb.ParseStreamRequest(provider=pb.PROVIDER_OPENAI).SerializeToString()
    noise = b"data: " + random.Random(11).randbytes(5000)
    streams += [
        ("random bytes after a good chunk", [_chunk(ok), *_random_payloads(10, 2)]),
        ("no messages", []),
        ("no provider", [_chunk(ok, first=False)]),
        ("unknown provider", [unknown]),
        ("provider switch", [_chunk(ok), gemini_bytes]),
        ("input unset", [unset, _chunk(ok, first=False)]),
        ("chunk not JSON", [_chunk(b"{nope")]),
        ("chunk invalid UTF-8", [_chunk(b'{"id": "\xff"}')]),
        ("chunk NaN", [_chunk(b'{"id": NaN}')]),
        ("chunk nested 10^4 deep", [_chunk(b"[" * 10_000 + b"]" * 10_000)]),
        ("raw body of garbage JSON", [_chunk(b"data: {nope\n\n", raw=True)]),
        ("raw body of random data", [_chunk(noise, raw=True)]),
        ("raw body one huge line", [_chunk(b"data: " + b"[" * 300_000 + b"\n\n", raw=True)]),
    ]
    return streams


@pytest.mark.parametrize(("payloads"), [pytest.param(p, id=label) for label, p in _bad_streams()])
def test_bad_stream_gets_a_typed_status(
    channel: grpc.Channel, server: RunningServer, payloads: list[bytes]
) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        _stream(channel, payloads)
    _check_typed(caught.value)
    _healthy(server.target)


def _violation(error: grpc.RpcError) -> str:
    bad = error_details_pb2.BadRequest()
    assert _status_of(error).details[1].Unpack(bad)
    return str(bad.field_violations[0].field)


@pytest.mark.parametrize(
    ("payloads", "field"),
    [
        pytest.param([_chunk(b'{"id": "\xff"}')], "requests[0].chunk_json", id="first chunk"),
        pytest.param(
            [_chunk(b"{}"), _chunk(b'"\xe2\x82"', first=False)],
            "requests[1].chunk_json",
            id="split sequence in a later chunk",
        ),
    ],
)
def test_invalid_utf8_in_a_stream_names_the_message_and_field(
    channel: grpc.Channel, payloads: list[bytes], field: str
) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        _stream(channel, payloads)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert _violation(caught.value) == field


def test_a_truncated_string_is_not_blamed_on_utf8(channel: grpc.Channel) -> None:
    # The declared length runs past the end, and the bytes present end inside
    # a UTF-8 sequence: the request is truncated, which is what the error says.
    payload = pb.ParseRequest(provider=pb.PROVIDER_OPENAI).SerializeToString()
    payload += _varint(2 << 3 | 2) + _varint(10) + b'"\xe2\x82'
    with pytest.raises(grpc.RpcError) as caught:
        _unary(channel, "Parse", payload)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert _violation(caught.value) == "request"


# -- size, count and time limits -------------------------------------------------


def _quota_subject(error: grpc.RpcError) -> str:
    quota = error_details_pb2.QuotaFailure()
    assert _status_of(error).details[1].Unpack(quota)
    return str(quota.violations[0].subject)


def test_a_hundred_megabyte_string_is_resource_exhausted(channel: grpc.Channel) -> None:
    # gRPC refuses it at the configured max_message_mb (64) before any work.
    huge = b'{"x": "' + b"a" * (100 * MB) + b'"}'
    with pytest.raises(grpc.RpcError) as caught:
        _unary(channel, "Parse", _parse(huge))
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_a_hundred_thousand_blocks_are_within_the_default_limit(channel: grpc.Channel) -> None:
    msg = Msg(name="u", role=Role.ROLE_USER)
    msg.blocks.items.extend([ContentBlock(text=TextBlock(text="a"))] * 100_000)
    reply = pb.FormatResponse.FromString(_unary(channel, "Format", _format([msg])))
    assert len(json.loads(reply.body_json)["messages"][0]["content"]) == 100_000


def test_blocks_past_max_blocks_are_resource_exhausted(limited: RunningServer) -> None:
    tool_result = ContentBlock()
    tool_result.tool_result.id = "1"
    tool_result.tool_result.blocks.items.extend([ContentBlock(text=TextBlock(text="a"))] * 600)
    msg = Msg(name="u", role=Role.ROLE_USER)
    # 500 + 1 + 600 nested: over 1000 only when tool result blocks count too.
    msg.blocks.items.extend([ContentBlock(text=TextBlock(text="a"))] * 500 + [tool_result])
    with grpc.insecure_channel(limited.target) as channel, pytest.raises(grpc.RpcError) as caught:
        _unary(channel, "Format", _format([msg]))
    _check_typed(caught.value, {grpc.StatusCode.RESOURCE_EXHAUSTED})
    assert _quota_subject(caught.value) == "max_blocks"
    _healthy(limited.target)


def _chunks(count: int) -> Iterator[bytes]:
    for index in range(count):
        text = json.dumps({"id": "c", "choices": [{"index": 0, "delta": {"content": "x"}}]})
        yield _chunk(text.encode(), first=index == 0)


def test_a_stream_of_a_hundred_thousand_chunks_meets_the_message_limit(
    limited: RunningServer,
) -> None:
    with grpc.insecure_channel(limited.target) as channel, pytest.raises(grpc.RpcError) as caught:
        list(channel.stream_stream(METHOD + "ParseStream")(_chunks(100_000), timeout=60))
    _check_typed(caught.value, {grpc.StatusCode.RESOURCE_EXHAUSTED})
    assert _quota_subject(caught.value) == "max_stream_messages"
    _healthy(limited.target)


def test_a_raw_body_of_many_events_meets_the_output_limit(limited: RunningServer) -> None:
    # 40,000 events in one message: every snapshot repeats the text so far.
    event = json.dumps({"id": "c", "choices": [{"index": 0, "delta": {"content": "x"}}]})
    body = (f"data: {event}\n\n" * 40_000).encode()
    with grpc.insecure_channel(limited.target) as channel, pytest.raises(grpc.RpcError) as caught:
        _stream(channel, [_chunk(body, raw=True)])
    _check_typed(caught.value, {grpc.StatusCode.RESOURCE_EXHAUSTED})
    assert _quota_subject(caught.value) == "max_stream_output_mb"
    _healthy(limited.target)


def test_an_idle_stream_is_ended(limited: RunningServer) -> None:
    import threading

    release = threading.Event()

    def requests() -> Iterator[bytes]:
        yield from _chunks(1)
        release.wait(10)  # send nothing more, and never half-close

    with grpc.insecure_channel(limited.target) as channel:
        call = channel.stream_stream(METHOD + "ParseStream")(requests(), timeout=10)
        with pytest.raises(grpc.RpcError) as caught:
            list(call)
        release.set()
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert "no stream message for 0.5s" in str(caught.value.details())


@pytest.mark.parametrize("provider", GOLDEN_PROVIDERS)
def test_a_stream_that_never_sends_its_final_event_still_gets_a_final_result(
    channel: grpc.Channel, provider: str
) -> None:
    case = next(c for c in golden("parsers", provider) if c["stream"])
    requests = [
        pb.ParseStreamRequest(chunk_json=json.dumps(chunk))
        for chunk in case["chunks"][: max(1, len(case["chunks"]) // 2)]
    ]
    requests[0].provider = pb.Provider.Value(f"PROVIDER_{provider.upper()}")
    stub = pb_grpc.FormatterServiceStub(channel)
    try:
        replies = list(stub.ParseStream(iter(requests), timeout=30))
    except grpc.RpcError as error:  # a provider may insist on a field it never got
        _check_typed(error)
    else:
        assert replies[-1].done


# -- the server stays healthy and gives memory back ---------------------------------


def _every_bad_request(channel: grpc.Channel) -> None:
    for method, _label, payload in BAD_UNARY:
        try:
            _unary(channel, method, payload)
        except grpc.RpcError as error:
            _check_typed(error)
    for _label, payloads in _bad_streams():
        with pytest.raises(grpc.RpcError):
            _stream(channel, payloads)


def test_bad_input_never_reaches_the_internal_error_path(
    channel: grpc.Channel, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="agentscope_proto.server"):
        _every_bad_request(channel)
    assert not [r for r in caplog.records if r.name == "agentscope_proto.server"]


def test_memory_returns_to_baseline_after_bad_input(
    channel: grpc.Channel, server: RunningServer
) -> None:
    # tracemalloc sees every Python allocation of the server (it runs in this
    # process); the first round warms caches, later rounds must not add up.
    _every_bad_request(channel)
    tracemalloc.start()
    try:
        gc.collect()
        baseline = tracemalloc.get_traced_memory()[0]
        for _ in range(2):
            _every_bad_request(channel)
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert after - baseline < 4 * MB, f"{(after - baseline) / MB:.1f} MB more"
    _healthy(server.target)


def test_every_rpc_of_the_schema_has_a_lenient_handler(channel: grpc.Channel) -> None:
    service = pb.DESCRIPTOR.services_by_name["FormatterService"]
    for method in service.methods:
        call: Callable[..., Any]
        if method.client_streaming:
            call = channel.stream_stream(METHOD + method.name)
            with pytest.raises(grpc.RpcError) as caught:
                list(call(iter([b"\xff\xff"]), timeout=10))
        else:
            call = channel.unary_unary(METHOD + method.name)
            with pytest.raises(grpc.RpcError) as caught:
                call(b"\xff\xff", timeout=10)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, method.name
