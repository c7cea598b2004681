"""The clients' channel target: one target, several replicas' IP
`host:port`s in one channel, or several with host names, a channel each
(`_channel.channel_targets`) that calls leave for the next when they fail;
over TLS, an IP list's channel checks the name given (`tls_server_name`) on
a real server's certificate, named replicas their own names; a closed
client refuses its calls, saying so; an asyncio client's channel is made in
the loop of its first call."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import grpc
import pytest
import trustme

from agentscope_proto._channel import aio_channel, channel_targets, sync_channel
from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto._generated.agentscope.formatter.v1 import (
    formatter_service_pb2_grpc as pb_grpc,
)
from agentscope_proto.agents import AgentClient, AsyncAgentClient
from agentscope_proto.client import AsyncFormatterClient, FormatterClient
from agentscope_proto.errors import RemoteError
from agentscope_proto.hub import AsyncHubClient, HubClient
from agentscope_proto.service.config import ServerConfig

from server_harness import RunningServer


def test_one_target_is_as_given() -> None:
    assert channel_targets("dns:///agents.internal:50052") == ["dns:///agents.internal:50052"]


def test_several_ip_targets_are_one_channel_and_named_ones_a_channel_each() -> None:
    assert channel_targets(["127.0.0.1:1", "10.0.0.2:2"]) == ["ipv4:127.0.0.1:1,10.0.0.2:2"]
    assert channel_targets(["[::1]:1", "[fe80::1]:2"]) == ["ipv6:[::1]:1,[fe80::1]:2"]
    named = ["agent-1.internal:50052", "10.0.0.2:50052"]
    assert channel_targets(named) == named
    assert channel_targets(["127.0.0.1:1", "[::1]:2"]) == ["127.0.0.1:1", "[::1]:2"]


@pytest.mark.parametrize(
    ("targets", "named"),
    [
        ([], "at least one"),
        (["agents.internal:50052", "agents.internal"], "'agents.internal'"),
        (["127.0.0.1"], "'127.0.0.1'"),
        ([":50052"], "':50052'"),
    ],
)
def test_bad_target_lists_are_refused_naming_why(targets: list[str], named: str) -> None:
    with pytest.raises(ValueError, match="target") as info:
        channel_targets(targets)
    assert named in str(info.value)


def _parse_status(channel: grpc.Channel) -> grpc.StatusCode:
    """The status of a Parse the server refuses (INVALID_ARGUMENT: it was reached)."""
    request = pb.ParseRequest(provider=pb.PROVIDER_OPENAI, response_json="[]")
    try:
        pb_grpc.FormatterServiceStub(channel).Parse(request, timeout=10)
    except grpc.RpcError as error:
        return error.code()  # type: ignore[no-any-return]
    finally:
        channel.close()
    raise AssertionError("the server took a list for a response")


def _tls_server(tmp_path: Path, name: str) -> tuple[RunningServer, grpc.ChannelCredentials]:
    """A server over TLS, its certificate `name`'s, and a client's credentials
    that trust it."""
    ca = trustme.CA()
    cert = ca.issue_cert(name)
    key_path, cert_path = tmp_path / "key.pem", tmp_path / "cert.pem"
    cert.private_key_pem.write_to_path(str(key_path))
    cert.cert_chain_pems[0].write_to_path(str(cert_path))
    running = RunningServer(ServerConfig(port=0, tls_cert=cert_path, tls_key=key_path)).start()
    return running, grpc.ssl_channel_credentials(root_certificates=ca.cert_pem.bytes())


def test_several_targets_over_tls_check_the_name_given_on_each_certificate(
    tmp_path: Path,
) -> None:
    """A replica down and one up, over TLS: with the name the certificate
    holds the call reaches the live one; with another name the check fails;
    with none the channel is refused when made (gRPC would check the list
    itself, which no certificate names)."""
    running, credentials = _tls_server(tmp_path, "agents.internal")
    try:
        targets = ["127.0.0.1:1", f"127.0.0.1:{running.port}"]
        reached = sync_channel(targets, credentials, 4, "agents.internal")
        assert _parse_status(reached) is grpc.StatusCode.INVALID_ARGUMENT
        checked = sync_channel(targets, credentials, 4, "other.internal")
        assert _parse_status(checked) is grpc.StatusCode.UNAVAILABLE
        with pytest.raises(ValueError, match=r"^tls_server_name: several IP targets over TLS"):
            sync_channel(targets, credentials, 4)
        with pytest.raises(ValueError, match=r"^tls_server_name: several IP targets over TLS"):
            AgentClient(targets, credentials=credentials)
        one = sync_channel(targets[1:], credentials, 4, "agents.internal")  # one target: any name
        assert _parse_status(one) is grpc.StatusCode.INVALID_ARGUMENT
    finally:
        running.stop()


def test_a_name_to_check_needs_credentials_and_text() -> None:
    credentials = grpc.ssl_channel_credentials()
    with pytest.raises(ValueError, match=r"^tls_server_name"):
        sync_channel("127.0.0.1:1", None, 4, "agents.internal")
    with pytest.raises(ValueError, match=r"^tls_server_name"):
        sync_channel("127.0.0.1:1", credentials, 4, "")

    async def made() -> None:
        with pytest.raises(ValueError, match=r"^tls_server_name: several IP targets over TLS"):
            aio_channel(["127.0.0.1:1", "127.0.0.1:2"], credentials, 4)
        channel = aio_channel(["127.0.0.1:1", "127.0.0.1:2"], credentials, 4, "agents.internal")
        await channel.close()

    asyncio.run(made())


_MSG = {"role": "user", "name": "u", "content": "hi"}


def test_every_client_refuses_its_calls_once_closed_saying_so() -> None:
    """Not grpc's `ValueError` or `UsageError` for a call on a closed channel:
    the package's `RemoteError(CANCELLED)`, as a call the close cut off ends."""
    calls: list[Any] = []
    formatter, hub, agent = (
        FormatterClient("127.0.0.1:1"),
        HubClient("127.0.0.1:1"),
        AgentClient("127.0.0.1:1"),
    )
    for client in (formatter, hub, agent):
        client.close()
    calls += [
        lambda: formatter.format("openai", [_MSG]),
        lambda: formatter.parse("openai", b"{}"),
        lambda: list(formatter.parse_stream("openai", [b"{}"])),
        lambda: hub.publish("t", _MSG),
        lambda: hub.publish_many("t", [_MSG]),
        lambda: hub.subscribe("t"),
        lambda: hub.ack("t", "g", "m", ["1-0"]),
        lambda: agent.describe(),
        lambda: agent.observe(_MSG),
        lambda: list(agent.reply_stream(_MSG)),
        lambda: list(agent.resume("s", "r")),
    ]

    async def closed() -> list[Any]:
        aformatter, ahub, aagent = (
            AsyncFormatterClient("127.0.0.1:1"),
            AsyncHubClient("127.0.0.1:1"),
            AsyncAgentClient("127.0.0.1:1"),
        )
        for client in (aformatter, ahub, aagent):
            await client.close()
        outcomes = []
        for call in (
            lambda: aformatter.format("openai", [_MSG]),
            lambda: aformatter.parse("openai", b"{}"),
            lambda: ahub.publish("t", _MSG),
            lambda: ahub.publish_many("t", [_MSG]),
            lambda: ahub.subscribe("t"),
            lambda: ahub.ack("t", "g", "m", ["1-0"]),
            lambda: aagent.describe(),
            lambda: aagent.observe(_MSG),
            lambda: aagent.reply(_MSG),
        ):
            try:
                await call()
            except RemoteError as exc:
                outcomes.append(exc)
        return outcomes

    outcomes: list[Any] = []
    for call in calls:
        try:
            call()
        except RemoteError as exc:
            outcomes.append(exc)
    outcomes += asyncio.run(closed())
    assert [(e.code, e.message) for e in outcomes] == [
        (grpc.StatusCode.CANCELLED, "the client was closed")
    ] * (len(calls) + 9)


def test_an_asyncio_client_made_outside_its_loop_works_in_it_and_refuses_another() -> None:
    """An asyncio client made before `asyncio.run` (at import time, say)
    makes its channel in the loop of its first call and works there (grpc
    would have bound the channel to the loop of the moment, and the call
    failed as "attached to a different loop"); a call from another loop is a
    `RuntimeError` saying so, and closing it from there does not fail."""
    running = RunningServer(ServerConfig(port=0)).start()
    try:
        client = AsyncFormatterClient(running.target)

        async def format_once() -> Any:
            return await client.format("openai", [_MSG])

        assert asyncio.run(format_once()).body["messages"][0]["content"][0]["text"] == "hi"
        with pytest.raises(RuntimeError, match="first used in another event loop"):
            asyncio.run(format_once())
        asyncio.run(client.close())
        with pytest.raises(RemoteError, match="the client was closed"):
            asyncio.run(format_once())
    finally:
        running.stop()


def _formatted(client: FormatterClient) -> str:
    return str(client.format("openai", [_MSG]).body["messages"][0]["content"][0]["text"])


def test_named_replicas_calls_go_on_to_one_that_answers() -> None:
    """Replicas by host name, a channel each: a call no connection took goes
    on to the next (the first replica down, and later the one in use); a
    stream cut off ends UNAVAILABLE and the next call goes on the next; with
    every replica down a call ends UNAVAILABLE."""
    first, second = (RunningServer(ServerConfig(port=0)).start() for _ in range(2))
    targets = ["localhost:1", f"localhost:{first.port}", f"localhost:{second.port}"]
    try:
        with FormatterClient(targets) as client:
            assert _formatted(client) == "hi"
            first.stop()
            assert _formatted(client) == "hi"

        async def calls() -> None:
            async with AsyncFormatterClient(targets[:1] + targets[2:]) as client:
                assert (await client.format("openai", [_MSG])).body["messages"]
                second.stop()
                with pytest.raises(RemoteError) as info:
                    await client.format("openai", [_MSG])
                assert info.value.code is grpc.StatusCode.UNAVAILABLE

        asyncio.run(calls())
    finally:
        first.stop()
        second.stop()
    with FormatterClient(targets) as client, pytest.raises(RemoteError) as info:
        _formatted(client)
    assert info.value.code is grpc.StatusCode.UNAVAILABLE


def test_a_stream_cut_off_moves_the_next_call_to_the_next_replica() -> None:
    """A stream is not sent again (its requests may be read): it ends
    UNAVAILABLE, and the next call goes on the next replica."""
    chunk = b'{"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
    chunk += b'"choices":[{"index":0,"delta":{"content":"hi"}}]}'
    servers = [RunningServer(ServerConfig(port=0)).start() for _ in range(4)]
    targets = [f"localhost:{server.port}" for server in servers]
    try:
        with FormatterClient(targets[:2]) as client:
            assert list(client.parse_stream("openai", [chunk]))
            servers[0].stop()
            with pytest.raises(RemoteError) as info:
                list(client.parse_stream("openai", [chunk]))
            assert info.value.code is grpc.StatusCode.UNAVAILABLE
            assert list(client.parse_stream("openai", [chunk]))

        async def calls() -> None:
            async with AsyncFormatterClient(targets[2:]) as client:
                assert [c async for c in client.parse_stream("openai", [chunk])]
                servers[2].stop()
                with pytest.raises(RemoteError) as info:
                    [c async for c in client.parse_stream("openai", [chunk])]
                assert info.value.code is grpc.StatusCode.UNAVAILABLE
                assert [c async for c in client.parse_stream("openai", [chunk])]

        asyncio.run(calls())
    finally:
        for server in servers:
            server.stop()


def test_named_replicas_over_tls_each_check_their_own_name(tmp_path: Path) -> None:
    running, credentials = _tls_server(tmp_path, "localhost")
    try:
        named = sync_channel(["localhost:1", f"localhost:{running.port}"], credentials, 4)
        assert _parse_status(named) is grpc.StatusCode.INVALID_ARGUMENT
    finally:
        running.stop()
