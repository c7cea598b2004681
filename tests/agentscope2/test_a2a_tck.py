"""The A2A TCK's checks (a2aproject/a2a-tck) that failed on a served agent,
done here over the wire as the TCK does them: every time in what the server
sends over JSON-RPC (responses and SSE events) and HTTP+JSON, and in what
the A2A client sends, is UTC with `Z` (DM-SERIAL-003); the agent card is
sent with its cache headers and revalidates (CARD-CACHE-001 to 003).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
import pytest

from agentscope_proto import new_msg
from agentscope_proto.a2a import EXTENSION_URI
from agentscope_proto.a2a.client import AsyncA2AClient

from a2a_tck import bad_times, times_in
from hosted import A2AServed, serve_a2a

VERSION = {"A2A-Version": "1.0"}
EXTENSION = {"A2A-Extensions": EXTENSION_URI}


@pytest.fixture(scope="module")
def served(factory: Callable[[], Any]) -> Iterator[A2AServed]:
    server = serve_a2a(factory)
    yield server
    server.stop()


def _message(text: str) -> dict[str, Any]:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}


def _rpc_body(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


def _sse(response: httpx.Response) -> list[Any]:
    lines = response.iter_lines()
    return [json.loads(line[5:]) for line in lines if line.startswith("data:")]


def _post(url: str, body: Any, headers: dict[str, str], stream: bool) -> list[Any]:
    """What the server sends for one request: its JSON, or each SSE event's."""
    if not stream:
        response = httpx.post(url, json=body, headers=headers, timeout=30)
        response.raise_for_status()
        return [response.json()]
    with httpx.stream("POST", url, json=body, headers=headers, timeout=30) as response:
        response.raise_for_status()
        return _sse(response)


def _task_id(sent: list[Any]) -> str:
    last = sent[-1].get("result", sent[-1])
    for kind in ("task", "statusUpdate"):
        if kind in last:
            return str(last[kind].get("id") or last[kind]["taskId"])
    raise AssertionError(last)


@pytest.mark.parametrize("extension", [False, True], ids=["plain", "extension"])
@pytest.mark.parametrize("stream", [False, True], ids=["send", "stream"])
def test_json_rpc_sends_times_in_utc(served: A2AServed, extension: bool, stream: bool) -> None:
    headers = {**VERSION, **(EXTENSION if extension else {})}
    method = "SendStreamingMessage" if stream else "SendMessage"
    params = {"message": _message("hi")}
    sent = _post(served.a2a.url, _rpc_body(method, params), headers, stream)
    get = _rpc_body("GetTask", {"id": _task_id(sent)})
    sent += _post(served.a2a.url, get, headers, stream=False)
    assert all("error" not in item for item in sent), sent
    assert bad_times(sent) == []
    # What the TCK saw naive: the reply's times (the status message's, its events').
    assert {path.rsplit(".", 1)[1] for path, _ in times_in(sent)} == {"timestamp", "createdAt"}


@pytest.mark.parametrize("stream", [False, True], ids=["send", "stream"])
def test_http_json_sends_times_in_utc(served: A2AServed, stream: bool) -> None:
    headers = {**VERSION, **EXTENSION}
    path = "/message:stream" if stream else "/message:send"
    sent = _post(served.a2a.url + path, {"message": _message("hi")}, headers, stream)
    task = httpx.get(f"{served.a2a.url}/tasks/{_task_id(sent)}", headers=headers, timeout=30)
    sent.append(task.json())
    assert bad_times(sent) == []
    assert {path.rsplit(".", 1)[1] for path, _ in times_in(sent)} == {"timestamp", "createdAt"}


def test_the_client_sends_times_in_utc(served: A2AServed) -> None:
    # AgentScope's own form: local time, no zone.
    msg = new_msg("Alice", "hi", "user", timestamp="2026-12-05 13:27:22.438")
    session = uuid.uuid4().hex

    async def main() -> None:
        async with AsyncA2AClient(served.a2a.url, bindings=["JSONRPC"]) as client:
            await client.reply(msg, session_id=session)

    asyncio.run(main())
    listed = _rpc_body("ListTasks", {"contextId": session, "historyLength": 10})
    (answer,) = _post(served.a2a.url, listed, VERSION, stream=False)
    (task,) = answer["result"]["tasks"]
    sent = task["history"][0]  # the client's message, as the server got it
    assert sent["messageId"] == msg.id
    assert bad_times(sent) == []
    assert [path for path, _ in times_in(sent)] == [f"$.metadata.{EXTENSION_URI}/msgs[0].timestamp"]


# --- The agent card's cache headers (CARD-CACHE-001 to 003) ----------------------------


def _card(served: A2AServed, method: str = "GET", **headers: str) -> httpx.Response:
    url = served.a2a.url + "/.well-known/agent-card.json"
    return httpx.request(method, url, headers=headers, timeout=10)


def test_the_card_says_how_long_to_keep_it(served: A2AServed) -> None:
    response = _card(served)
    assert response.status_code == 200
    assert response.headers["cache-control"] == "public, max-age=300"
    # A strong ETag of the bytes sent.
    assert response.headers["etag"] == f'"{hashlib.sha256(response.content).hexdigest()}"'
    modified = parsedate_to_datetime(response.headers["last-modified"])
    assert modified <= datetime.now(timezone.utc)
    assert response.json()["name"] == "Friday"
    again = _card(served)
    assert (again.headers["etag"], again.headers["last-modified"]) == (
        response.headers["etag"],
        response.headers["last-modified"],
    )
    head = _card(served, "HEAD")
    assert (head.status_code, head.content) == (200, b"")
    assert head.headers["etag"] == response.headers["etag"]


def test_a_current_copy_of_the_card_is_not_sent_again(served: A2AServed) -> None:
    first = _card(served)
    etag, modified = first.headers["etag"], first.headers["last-modified"]
    for headers in (
        {"If-None-Match": etag},
        {"If-None-Match": f'"other", W/{etag}'},  # compared weakly, as RFC 9110 says
        {"If-None-Match": "*"},
        {"If-Modified-Since": modified},
    ):
        response = _card(served, **headers)
        assert (response.status_code, response.content) == (304, b""), headers
        assert response.headers["etag"] == etag
        assert response.headers["cache-control"] == "public, max-age=300"
    for headers in (
        {"If-None-Match": '"other"'},
        # If-None-Match decides alone when it is there.
        {"If-None-Match": '"other"', "If-Modified-Since": modified},
        {"If-Modified-Since": "Thu, 01 Jan 1970 00:00:00 GMT"},
        {"If-Modified-Since": "not a date"},
    ):
        response = _card(served, **headers)
        assert response.status_code == 200, headers
        assert response.content == first.content
