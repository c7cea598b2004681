"""The A2A client (`AsyncA2AClient`, what `RemoteAgent` and `agentscope-proto
a2a` use for an A2A agent) against minimal agents written with a2a-sdk's own
server API (tests/a2a_peers.py), over JSON-RPC and gRPC: one that ignores the
extension, one that reads it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from agentscope_proto import Msg, get_text_content, new_msg
from agentscope_proto._generated.agentscope.agent.v1.events_pb2 import AgentEvent
from agentscope_proto.a2a.client import AsyncA2AClient, fetch_card
from agentscope_proto.errors import AgentReplyError, MessageFormatError, RemoteError

from a2a_peers import ExtensionPeer, PeerServer, PlainPeer, heard

BINDINGS = ["JSONRPC", "GRPC"]
HISTORY = [
    new_msg("Alice", "Rain tomorrow?", "user"),
    new_msg("Bob", "Take an umbrella.", "assistant"),
]


@pytest.fixture(scope="module")
def plain() -> Iterator[PeerServer]:
    with PeerServer(PlainPeer()) as server:
        yield server


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


async def _reply(url: str, msgs: Any, **kwargs: Any) -> list[Any]:
    bindings = kwargs.pop("bindings", ())
    async with AsyncA2AClient(url, bindings=bindings) as client:
        return [item async for item in client.reply_stream(msgs, **kwargs)]


def _kinds(items: list[Any]) -> list[str]:
    return [item.WhichOneof("event") if isinstance(item, AgentEvent) else "msg" for item in items]


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_peer_without_the_extension_hears_who_spoke_and_its_chunks_stream(
    plain: PeerServer, binding: str
) -> None:
    items = _run(_reply(plain.url, HISTORY, bindings=[binding], session_id=f"ctx-{binding}"))
    sent = plain.executor.received[-1]
    texts = [part.text for part in sent.parts]
    assert texts == ["[Alice]: Rain tomorrow?", "[Bob]: Take an umbrella."]
    answer = heard(texts)
    assert _kinds(items) == [
        "reply_start",
        "text_block_start",
        *["text_block_delta"] * 3,
        "text_block_end",
        "reply_end",
        "msg",
    ]
    deltas = [item.text_block_delta.delta for item in items[2:-3]]
    assert "".join(deltas) == answer
    assert items[0].reply_start.session_id == f"ctx-{binding}"
    reply = items[-1]
    assert isinstance(reply, Msg)
    assert (reply.name, reply.role, get_text_content(reply)) == ("Peer", 2, answer)
    assert reply.id == items[0].reply_start.reply_id
    assert '"context_id":"ctx-' in reply.metadata_json


def test_one_speaker_goes_without_names(plain: PeerServer) -> None:
    _run(_reply(plain.url, new_msg("user", "hi", "user")))
    assert [part.text for part in plain.executor.received[-1].parts] == ["hi"]


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_peer_that_reads_the_extension_gets_the_messages_exactly(binding: str) -> None:
    with PeerServer(ExtensionPeer()) as server:
        items = _run(_reply(server.url, HISTORY, bindings=[binding]))
        sent = server.executor.received[-1]
    assert sent.parts[0].text == "Rain tomorrow?"  # no prefix: the names ride the extension
    assert get_text_content(items[-1]) == "Alice: Rain tomorrow? / Bob: Take an umbrella."


def test_a_question_is_answered_by_the_next_reply_on_its_task(plain: PeerServer) -> None:
    async def main() -> tuple[list[Any], list[Any], str | None]:
        async with AsyncA2AClient(plain.url) as client:
            asked = [item async for item in client.reply_stream(new_msg("u", "ask", "user"))]
            context = asked[0].reply_start.session_id
            waiting = client.waiting_task(context)
            answered = [
                item
                async for item in client.reply_stream(
                    new_msg("u", "Paris", "user"), session_id=context
                )
            ]
            assert client.waiting_task(context) is None
            return asked, answered, waiting

    asked, answered, waiting = _run(main())
    assert get_text_content(asked[-1]) == "Which city?"
    assert asked[-1].finished_reason == 1  # completed: the caller answers with its next reply
    question, answer = plain.executor.received[-2:]
    assert waiting is not None
    assert question.task_id == answer.task_id == waiting  # the answer went on the same task
    assert get_text_content(answered[-1]) == heard(["Paris"])


def test_a_failed_task_raises_after_its_message(plain: PeerServer) -> None:
    async def main() -> list[Any]:
        seen: list[Any] = []
        async with AsyncA2AClient(plain.url) as client:
            async for item in client.reply_stream(new_msg("u", "fail", "user")):
                seen.append(item)
        return seen

    with pytest.raises(AgentReplyError) as info:
        _run(main())
    assert info.value.error_type == "upstream"
    assert info.value.message == "It broke."
    assert get_text_content(info.value.msg) == "It broke."


def test_a_peer_that_does_not_stream_is_read_from_its_task() -> None:
    with PeerServer(PlainPeer(), streaming=False) as server:
        items = _run(_reply(server.url, new_msg("u", "hello", "user")))
    assert get_text_content(items[-1]) == heard(["hello"])
    assert _kinds(items)[0] == "reply_start"


def test_observed_messages_go_ahead_of_the_next_reply(plain: PeerServer) -> None:
    async def main() -> None:
        async with AsyncA2AClient(plain.url) as client:
            session = await client.observe(HISTORY[0])
            await client.reply(HISTORY[1], session_id=session)

    _run(main())
    texts = [part.text for part in plain.executor.received[-1].parts]
    assert texts == ["[Alice]: Rain tomorrow?", "[Bob]: Take an umbrella."]


def test_leaving_a_reply_early_cancels_its_task(plain: PeerServer) -> None:
    async def leave() -> None:
        async with AsyncA2AClient(plain.url) as client:
            stream = client.reply_stream(new_msg("u", "wait", "user"))
            async with contextlib.aclosing(stream):
                async for item in stream:
                    assert item.WhichOneof("event") == "reply_start"
                    break

    async def cancel() -> None:
        async with AsyncA2AClient(plain.url) as client:
            started = asyncio.Event()

            async def consume() -> None:
                async for _ in client.reply_stream(new_msg("u", "wait", "user")):
                    started.set()

            task = asyncio.create_task(consume())
            await started.wait()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    before = len(plain.executor.cancelled)
    _run(leave())
    _run(cancel())
    assert len(plain.executor.cancelled) == before + 2


def test_what_only_the_extension_carries_is_refused_for_a_plain_peer(plain: PeerServer) -> None:
    with pytest.raises(MessageFormatError, match="structured_schema"):
        _run(_reply(plain.url, new_msg("u", "hi", "user"), structured_schema={"type": "object"}))
    answer = {"type": "USER_INTERRUPT", "reply_id": "r"}
    with pytest.raises(MessageFormatError, match="user_interrupt"):
        _run(_reply(plain.url, None, answer=answer))


def test_a_token_goes_with_every_call() -> None:
    with PeerServer(PlainPeer(), token="s3cret") as server:
        with pytest.raises(RemoteError) as info:
            fetch_card(server.url)
        assert info.value.code == grpc.StatusCode.UNAUTHENTICATED
        assert fetch_card(server.url, token="s3cret").name == "Peer"

        async def main() -> Msg:
            async with AsyncA2AClient(server.url, token="s3cret") as client:
                return await client.reply(new_msg("u", "hi", "user"))

        assert get_text_content(_run(main())) == heard(["hi"])


def test_an_unreachable_agent_is_unavailable() -> None:
    with PeerServer(PlainPeer()) as server:
        url = server.url
    with pytest.raises(RemoteError) as info:
        fetch_card(url, timeout=5)
    assert info.value.code == grpc.StatusCode.UNAVAILABLE
    with pytest.raises(RemoteError) as info:
        _run(_reply(url, new_msg("u", "hi", "user")))
    assert info.value.code == grpc.StatusCode.UNAVAILABLE
