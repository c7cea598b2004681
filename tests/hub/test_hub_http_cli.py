"""The HubService over Connect (HTTP + JSON: Publish, and Subscribe as a
server stream) and on the command line (`hub publish`, `hub subscribe`, the
`serve` flags)."""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentscope_proto.hub import HubClient, hub_service
from agentscope_proto.service import ServerConfig

from conftest import require
from hub_fixtures import CLI, STORES, hub_server, msg, store_url
from readme_recipes import GRPC_ADDRESS, README, grpcurl, run
from server_harness import RunningServer

connect = pytest.importorskip(
    "agentscope_proto.service.connect", reason="the http extra (connectrpc) is not installed"
)

HUB = "/agentscope.agent.v1.HubService"


class Served:
    """gRPC and Connect over HTTP on free ports, sharing one hub."""

    def __init__(self, url: str, token: str | None = None) -> None:
        from agentscope_proto.hub import HubConfig

        self.config = ServerConfig(port=0, hub=HubConfig(url=url), auth_token=token)
        self.grpc = RunningServer(self.config).start()
        assert self.grpc.hub is not None
        hosted = [hub_service(self.grpc.hub)]
        self.http = self.grpc.call(connect.start_http(self.config, 0, services=hosted))

    def post(
        self, method: str, body: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> Any:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.http.port}{HUB}/{method}",
            data=body,
            headers={"content-type": content_type, **(headers or {})},
        )
        return urllib.request.urlopen(request, timeout=30)

    def stop(self) -> None:
        self.grpc.call(self.http.stop(0))
        self.grpc.stop()


@pytest.fixture(scope="module", params=STORES)
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    running = Served(store_url(request, request.param))
    yield running
    running.stop()


def test_publish_over_connect_json(served: Served, topic: str) -> None:
    with HubClient(served.grpc.target) as hub, hub.subscribe(topic) as events:
        body = {"topic": topic, "msg": {"name": "user", "role": "ROLE_USER", "text": "hi"}}
        with served.post("Publish", json.dumps(body).encode(), "application/json") as reply:
            offset = json.loads(reply.read())["offset"]
        event = next(events)
    assert (event.offset, event.msg.text) == (offset, "hi")


def test_a_bad_topic_over_connect_is_invalid_argument(served: Served) -> None:
    body = json.dumps({"topic": "no spaces", "msg": {"text": "x"}}).encode()
    with pytest.raises(urllib.error.HTTPError) as caught:
        served.post("Publish", body, "application/json")
    error = json.loads(caught.value.read())
    assert (caught.value.code, error["code"]) == (400, "invalid_argument")
    assert error["details"][1]["debug"]["fieldViolations"][0]["field"] == "topic"


def _envelope(message: dict[str, Any]) -> bytes:
    data = json.dumps(message).encode()
    return struct.pack(">BI", 0, len(data)) + data


def _next_envelope(stream: Any) -> tuple[int, Any]:
    flags, size = struct.unpack(">BI", stream.read(5))
    return flags, json.loads(stream.read(size))


def test_subscribe_over_connect_streams_events(served: Served, topic: str) -> None:
    with HubClient(served.grpc.target) as hub:
        first = hub.publish(topic, msg("m0"))
        offsets = [hub.publish(topic, msg(f"m{i}")) for i in (1, 2)]
    request = _envelope({"topic": topic, "after": first})
    with served.post("Subscribe", request, "application/connect+json") as stream:
        # Connect sends the response headers with the first event.
        assert stream.headers["hub-after"] == first
        events = [_next_envelope(stream) for _ in range(2)]
    assert [(flags, e["offset"], e["msg"]["text"]) for flags, e in events] == [
        (0, offsets[0], "m1"),
        (0, offsets[1], "m2"),
    ]


def test_a_bad_offset_over_connect_ends_the_stream_out_of_range(served: Served, topic: str) -> None:
    with HubClient(served.grpc.target) as hub:
        position, _, epoch = hub.publish(topic, msg("m")).partition(".")
    ms, seq = position.split("-")
    request = _envelope({"topic": topic, "after": f"{int(ms) + 10**9}-{seq}.{epoch}"})
    with served.post("Subscribe", request, "application/connect+json") as stream:
        flags, end = _next_envelope(stream)
    assert flags == 2
    assert end["error"]["code"] == "out_of_range"


def _envelopes(data: bytes) -> list[tuple[int, Any]]:
    found = []
    while data:
        flags, size = struct.unpack(">BI", data[:5])
        found.append((flags, json.loads(data[5 : 5 + size])))
        data = data[5 + size :]
    return found


def test_publish_stream_over_connect_answers_each_request(served: Served, topic: str) -> None:
    good = {"topic": topic, "msg": {"name": "a", "role": "ROLE_USER", "text": "one"}}
    requests = [
        {"publishes": [good, {"topic": "no spaces", "msg": {"text": "x"}}]},
        {},
        {"publishes": [{**good, "msg": {**good["msg"], "text": "two"}}]},
    ]
    body = b"".join(_envelope(r) for r in requests)
    with HubClient(served.grpc.target) as hub, hub.subscribe(topic) as events:
        with served.post("PublishStream", body, "application/connect+json") as reply:
            responses = _envelopes(reply.read())
        got = [next(events) for _ in range(2)]
    *answers, (end_flags, end) = responses
    assert (end_flags, end) == (2, {})
    assert [flags for flags, _ in answers] == [0, 0, 0]
    first, empty, last = (answer for _, answer in answers)
    assert empty == {}
    offset, refused = first["results"]
    assert [e.offset for e in got] == [offset["offset"], last["results"][0]["offset"]]
    assert [e.msg.text for e in got] == ["one", "two"]
    assert refused["error"]["code"] == 3
    violation = refused["error"]["details"][1]["fieldViolations"][0]
    assert violation["field"] == "topic"


def test_subscribe_batches_over_connect(served: Served, topic: str) -> None:
    with HubClient(served.grpc.target) as hub:
        first = hub.publish(topic, msg("m0"))
        offsets = hub.publish_many(topic, [msg("m1"), msg("m2")])
    request = _envelope({"topic": topic, "after": first})
    with served.post("SubscribeBatches", request, "application/connect+json") as stream:
        assert stream.headers["hub-after"] == first
        events: list[Any] = []
        while len(events) < 2:
            flags, batch = _next_envelope(stream)
            assert flags == 0
            events += batch["events"]
    assert [(e["offset"], e["msg"]["text"]) for e in events] == [
        (offsets[0], "m1"),
        (offsets[1], "m2"),
    ]


@pytest.mark.parametrize("headers", [{}, {"authorization": "Bearer wrong"}])
def test_every_hub_rpc_over_connect_refuses_a_bad_token(
    topic: str, headers: dict[str, str]
) -> None:
    served = Served("memory", token="s3cret")
    try:
        good = {"topic": topic, "msg": {"name": "a", "role": "ROLE_USER", "text": "one"}}
        calls = {
            "Publish": (json.dumps(good).encode(), "application/json"),
            "PublishStream": (_envelope({"publishes": [good]}), "application/connect+json"),
            "Subscribe": (_envelope({"topic": topic}), "application/connect+json"),
            "SubscribeBatches": (_envelope({"topic": topic}), "application/connect+json"),
            "Ack": (
                json.dumps(
                    {"topic": topic, "group": "g", "member": "m", "offsets": ["0-1"]}
                ).encode(),
                "application/json",
            ),
        }
        for method, (body, content_type) in calls.items():
            try:
                with served.post(method, body, content_type, headers) as reply:
                    (flags, end), *_ = _envelopes(reply.read())
                assert flags == 2, method
                code = end["error"]["code"]
            except urllib.error.HTTPError as error:  # a unary call
                code = json.loads(error.read())["code"]
            assert code == "unauthenticated", method
        with (
            HubClient(served.grpc.target, token="s3cret") as hub,
            hub.subscribe(topic, after="0-0") as events,
        ):  # nothing got in
            hub.publish(topic, msg("probe"))
            assert next(events).msg.text == "probe"
    finally:
        served.stop()


# -- CLI ------------------------------------------------------------------------------


def _cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], input=stdin, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    running = RunningServer(ServerConfig(port=0)).start()  # the default hub: memory
    yield running
    running.stop()


def test_hub_publish_and_subscribe_commands(
    server: RunningServer, topic: str, tmp_path: Path
) -> None:
    messages = [
        {"id": "a", "name": "alice", "role": "user", "content": "hi", "timestamp": "t"},
        {"name": "bob", "role": "ROLE_ASSISTANT", "text": "hello"},  # ProtoJSON
    ]
    source = tmp_path / "msgs.json"
    source.write_text(json.dumps(messages))
    published = _cli("hub", "publish", "--target", server.target, topic, str(source))
    assert published.returncode == 0, published.stderr
    offsets = [json.loads(line)["offset"] for line in published.stdout.splitlines()]
    assert len(offsets) == 2
    lines = "\n".join(json.dumps(m) for m in messages)
    again = _cli("hub", "publish", "--target", server.target, topic, "-", stdin=lines)
    assert again.returncode == 0, again.stderr
    subscribed = _cli(
        "hub", "subscribe", "--target", server.target, topic, "--after", offsets[0], "--count", "3"
    )
    assert subscribed.returncode == 0, subscribed.stderr
    events = [json.loads(line) for line in subscribed.stdout.splitlines()]
    assert events[0]["offset"] == offsets[1]
    assert [e["msg"]["text"] for e in events] == ["hello", "hi", "hello"]
    assert events[1]["msg"]["id"] == "a"


def test_hub_publish_reports_each_message_and_the_first_refused(topic: str, tmp_path: Path) -> None:
    small = hub_server("memory", max_msg_kb=1)
    try:
        lines = [
            {"name": "a", "role": "user", "content": text} for text in ("one", "x" * 2000, "two")
        ]
        source = tmp_path / "msgs.jsonl"
        source.write_text("\n".join(json.dumps(line) for line in lines))
        result = _cli("hub", "publish", "--target", small.target, topic, str(source))
        with HubClient(small.target) as hub, hub.subscribe(topic, after="0-0") as events:
            stored = [next(events).msg.text for _ in range(2)]
    finally:
        small.stop()
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "2 of 3 published; messages[1]: hub_max_msg_kb:" in result.stderr
    assert len(result.stdout.splitlines()) == 2
    assert stored == ["one", "two"]


@pytest.mark.parametrize("token", [None, "wrong"])
def test_hub_commands_with_a_bad_token_fail_at_once(topic: str, token: str | None) -> None:
    secured = hub_server("memory", auth_token="s3cret")
    env = {**os.environ, "HUB_TOKEN": token or ""}
    flags = [] if token is None else ["--token-env", "HUB_TOKEN"]
    line = json.dumps({"name": "a", "role": "user", "content": "x"})
    try:
        for args in (["publish", topic, "-"], ["subscribe", topic, "--count", "1"]):
            result = subprocess.run(
                [*CLI, "hub", args[0], "--target", secured.target, *flags, *args[1:]],
                input=line,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,  # a hang fails here
                check=False,
            )
            assert result.returncode == 1, (args, result.stderr)
            assert "UNAUTHENTICATED" in result.stderr, args
            assert result.stderr.count("\n") == 1
    finally:
        secured.stop()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["hub", "subscribe", "--target", "{target}", "bad topic"], "topic: expected"),
        (["hub", "subscribe", "--target", "{target}", "t", "--after", "x"], "after: 'x'"),
        (["hub", "publish", "--target", "{target}", "t", "-"], "stdin: invalid JSON"),
        (["serve", "--hub", "memcached://x"], "--hub memcached://x: expected"),
        (["serve", "--workers", "2", "--port", "1", "--hub", "memory"], "each worker"),
        (["serve", "--hub-retention", "0"], "--hub-retention must be at least 1"),
    ],
)
def test_hub_command_errors_are_one_line(
    server: RunningServer, args: list[str], expected: str
) -> None:
    result = _cli(*(a.format(target=server.target) for a in args), stdin="not json")
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1
    assert expected in result.stderr


def test_serve_with_an_unreachable_redis_is_one_line() -> None:
    result = _cli("serve", "--port", "0", "--hub", "redis://127.0.0.1:1/0")
    assert result.returncode == 1
    assert result.stderr.startswith("agentscope-proto: error: --hub: cannot reach")
    assert result.stderr.count("\n") == 1


# -- README's grpcurl recipes ---------------------------------------------------------


def _hub_recipes() -> list[str]:
    """The grpcurl commands of README's "Message hub" section, continuation lines joined."""
    text = README.read_text(encoding="utf-8")
    start = text.index("## Message hub\n")
    section = text[start : text.index("\n## ", start + 1)]
    found: list[str] = []
    for block in re.findall(r"^```sh\n(.*?)^```", section, re.MULTILINE | re.DOTALL):
        for line in block.splitlines():
            if line.startswith("grpcurl "):
                found.append(line)
            elif found and line.strip():
                found[-1] += "\n" + line
    return found


def test_readme_grpcurl_recipes_subscribe_and_publish(server: RunningServer) -> None:
    require(grpcurl() is not None, "grpcurl is not installed (the dev extra ships it)")
    subscribe, publish = _hub_recipes()
    assert subscribe.endswith("HubService/Subscribe")
    assert publish.endswith("HubService/Publish")
    tools = str(Path(grpcurl() or "").parent)
    watcher = subprocess.Popen(
        ["bash", "-c", subscribe.replace(GRPC_ADDRESS, server.target)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PATH": tools + os.pathsep + os.environ["PATH"]},
    )
    assert watcher.stdout is not None
    first: list[str] = []
    reader = threading.Thread(target=lambda: first.append(watcher.stdout.readline()))  # type: ignore[union-attr]
    reader.start()
    try:
        # grpcurl shows no sign of being live: publish until its first event shows.
        offsets = []
        while not first:
            offsets.append(json.loads(run(publish, grpc_target=server.target))["offset"])
            reader.join(0.05)
    finally:
        watcher.kill()
        watcher.wait(10)
    assert first == ["{\n"]
    assert offsets
