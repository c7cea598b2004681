"""`serve-agent --agui-port`: a served agent as an AG-UI agent, over HTTP,
from outside: a real `serve-agent` process (a real AgentScope 2.x agent
whose tool asks for confirmation, its model the local replay), called with
plain HTTP as a frontend calls it (AG-UI's RunAgentInput POSTed, the run's
server-sent events read and parsed). Text, a tool call confirmed through an
interrupt and its resume, a denial, a run sent again, a run stopped by its
caller, and every refusal of bad input, the server unharmed after them. The
same runs asked for in AG-UI's protobuf encoding, read by AG-UI's own
TypeScript decoder (npm `@ag-ui/proto` 1.0.0, agui_node/decode.mjs), are the
same events."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest

import agentscope_proto
from agentscope_proto._generated.agentscope.agent.v1 import agent_service_pb2 as pb
from agentscope_proto._generated.agentscope.agent.v1 import agent_service_pb2_grpc as pb_grpc
from agentscope_proto._generated.agentscope.message.v1.message_pb2 import FinishedReason

from agent_processes import HERE, AgentProcess, stop_all
from hosted import SUNNY
from needs import require
from replay_server import ReplayServer

SCRIPT = {
    "hi": ["stream_text_by3"],
    "weather please": ["stream_text_then_tool_by4", "stream_text_by3"],
    "wait": ["hold:stream_text_by3"],
}
# AG-UI's TypeScript decoder, installed by `npm ci` into the ignored build/.
NODE_SOURCES = HERE / "agui_node"
NODE_DIR = HERE.parents[1] / "build" / "agui-node"
PROTOBUF = "application/vnd.ag-ui.event+proto"
TOKEN = "agui-test-token"
_PACKAGE_ROOT = str(Path(agentscope_proto.__file__).resolve().parents[1])
PAGE = "http://page.example:8000"
AUTH = {"authorization": f"Bearer {TOKEN}"}


class Served:
    """One `serve-agent` process with its AG-UI port, and its replayed model."""

    def __init__(self, replay: ReplayServer, tmp: Path) -> None:
        self.replay = replay
        self.runs = tmp / "runs"
        env = {
            **os.environ,
            "FRIDAY_MODEL_URL": replay.base_url,
            "TOOL_RUNS": str(self.runs),
            "TOOL_HOLD": str(tmp / "hold"),
            "AGUI_TOKEN": TOKEN,
            # The process serves the package these tests import (a checkout's too).
            "PYTHONPATH": os.pathsep.join([_PACKAGE_ROOT, str(HERE.parent), str(HERE)]),
        }
        flags = ["--port", "0", "--agui-port", "0", "--auth-token-env", "AGUI_TOKEN"]
        flags += ["--cors-origin", PAGE, "--max-message-mb", "1"]
        self.process = AgentProcess(["counting_agents:friday_asks", *flags], env)
        self.target = self.process.wait_listening()
        line = next(line for line in self.process.log if "listening on" in line)
        found = re.search(r"(http://\S+) \(AG-UI\)", line)
        assert found, line
        self.url = found.group(1)

    def tool_runs(self) -> int:
        return len(self.runs.read_text(encoding="utf-8").splitlines()) if self.runs.exists() else 0


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with ReplayServer(SCRIPT) as replay:
        server = Served(replay, tmp_path_factory.mktemp("agui"))
        try:
            yield server
        finally:
            replay.release.set()
            stop_all([server.process])


def _input(thread: str, words: str = "", **fields: Any) -> dict[str, Any]:
    messages = [{"id": uuid.uuid4().hex, "role": "user", "content": words}] if words else []
    return {"threadId": thread, "runId": uuid.uuid4().hex, "messages": messages, **fields}


def _run(served: Served, body: dict[str, Any]) -> list[dict[str, Any]]:
    """A run's events, parsed from its server-sent events."""
    headers = {**AUTH, "accept": "text/event-stream"}
    with httpx.stream("POST", served.url, json=body, headers=headers, timeout=60) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"] == "text/event-stream"
        return [json.loads(line[5:]) for line in response.iter_lines() if line.startswith("data:")]


def _types(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


def _text(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def test_a_run_streams_the_reply_as_ag_ui_events(served: Served) -> None:
    body = _input("t-text", "hi")
    events = _run(served, body)
    types = _types(events)
    assert types[0] == "RUN_STARTED"
    assert types[-1] == "RUN_FINISHED"
    assert events[0]["threadId"] == "t-text"
    assert events[0]["runId"] == body["runId"]
    assert events[-1]["runId"] == body["runId"]
    assert types.index("TEXT_MESSAGE_START") < types.index("TEXT_MESSAGE_END")
    assert _text(events) == SUNNY


def test_a_confirmation_is_an_interrupt_and_its_resume_runs_the_tool(served: Served) -> None:
    before = served.tool_runs()
    asked = _run(served, _input("t-confirm", "weather please"))
    finished = asked[-1]
    assert finished["type"] == "RUN_FINISHED"
    assert finished["outcome"]["type"] == "interrupt"
    (interrupt,) = finished["outcome"]["interrupts"]
    assert interrupt["reason"] == "require_user_confirm"
    assert any(e["type"] == "TOOL_CALL_START" for e in asked)
    assert served.tool_runs() == before  # asked, not run

    answer = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"confirmed": True}}
    resumed = _run(served, _input("t-confirm", resume=[answer]))
    types = _types(resumed)
    assert types[0] == "RUN_STARTED"
    assert types[-1] == "RUN_FINISHED"
    assert "outcome" not in resumed[-1] or resumed[-1]["outcome"]["type"] == "success"
    result = next(e for e in resumed if e["type"] == "TOOL_CALL_RESULT")
    assert result["toolCallId"] == interrupt["toolCallId"]
    assert "Sunny in" in result["content"]
    assert _text(resumed) == SUNNY
    assert served.tool_runs() == before + 1


def test_a_denied_confirmation_runs_no_tool(served: Served) -> None:
    before = served.tool_runs()
    asked = _run(served, _input("t-deny", "weather please"))
    (interrupt,) = asked[-1]["outcome"]["interrupts"]
    answer = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"confirmed": False}}
    resumed = _run(served, _input("t-deny", resume=[answer]))
    assert _types(resumed)[-1] == "RUN_FINISHED"
    assert served.tool_runs() == before


def test_a_run_sent_again_is_read_not_run_again(served: Served) -> None:
    body = _input("t-again", "hi")
    first = _run(served, body)
    asked = len(served.replay.requests)
    again = _run(served, body)
    assert len(served.replay.requests) == asked  # the model was not asked again
    assert _types(again) == _types(first)
    assert _text(again) == SUNNY


def test_a_run_its_caller_stops_is_interrupted(served: Served) -> None:
    body = _input("t-stop", "wait")
    served.replay.release.clear()
    headers = {**AUTH, "accept": "text/event-stream"}
    with httpx.stream("POST", served.url, json=body, headers=headers, timeout=60) as response:
        for line in response.iter_lines():
            if "STEP_STARTED" in line:
                break  # the model is called (and held): the frontend stops the run
    # The reply (named by the run id) ended interrupted, as the AgentService
    # sees it (its model still held: only the interrupt can end it).
    with grpc.insecure_channel(served.target) as channel:
        stub = pb_grpc.AgentServiceStub(channel)
        request = pb.ResumeRequest(session_id="t-stop", reply_id=body["runId"])
        metadata = (("authorization", f"Bearer {TOKEN}"),)
        responses = list(stub.Resume(request, timeout=30, metadata=metadata))
    served.replay.release.set()
    end = next(r.event.reply_end for r in responses if r.event.HasField("reply_end"))
    assert end.finished_reason == FinishedReason.FINISHED_REASON_INTERRUPTED
    assert _text(_run(served, _input("t-stop", "hi"))) == SUNNY  # the thread goes on


def _refused(response: httpx.Response, status: int, words: str) -> dict[str, Any]:
    assert response.status_code == status, (response.status_code, response.text)
    data = response.json()
    assert words in data["error"], data
    return dict(data)


def test_bad_input_gets_a_clear_http_error_and_the_server_goes_on(served: Served) -> None:
    url, sse = served.url, {**AUTH, "accept": "text/event-stream"}
    post = httpx.post
    _refused(post(url, content=b"{", headers={**sse, "content-type": "application/json"}), 400, "")
    missing = post(url, json={"threadId": "t-bad", "messages": []}, headers=sse)
    assert _refused(missing, 400, "AG-UI refuses")["field"] == "runId"
    resume = [{"interruptId": "x", "status": "resolved"}]
    assert _text(_run(served, _input("t-idle", "hi"))) == SUNNY
    idle = post(url, json=_input("t-idle", resume=resume), headers=sse)
    _refused(idle, 400, "nothing to resume")
    unknown = post(url, json=_input("t-never", resume=resume), headers=sse)
    _refused(unknown, 409, "no session 't-never'")
    no_token = {"accept": "text/event-stream"}
    _refused(post(url, json=_input("t-bad", "hi"), headers=no_token), 401, "token")
    wrong = {"authorization": "Bearer nope", "accept": "text/event-stream"}
    _refused(post(url, json=_input("t-bad", "hi"), headers=wrong), 401, "token")
    big = _input("t-bad", "x" * (1 << 20))
    _refused(post(url, json=big, headers=sse), 413, "at most")
    _refused(post(url, content=b"hi", headers={**sse, "content-type": "text/plain"}), 415, "json")
    _refused(httpx.get(url, headers=AUTH), 405, "POST")
    neither = {**AUTH, "accept": "application/json, text/html;q=0.9"}
    refused = _refused(post(url, json=_input("t-bad", "hi"), headers=neither), 406, PROTOBUF)
    assert "text/event-stream" in refused["error"]
    no_sse = {**AUTH, "accept": f"{PROTOBUF};q=0, text/event-stream;q=0"}
    _refused(post(url, json=_input("t-bad", "hi"), headers=no_sse), 406, PROTOBUF)
    other = {**sse, "origin": "http://elsewhere.example"}
    _refused(post(url, json=_input("t-bad", "hi"), headers=other), 403, "origin")
    assert _text(_run(served, _input("t-after", "hi"))) == SUNNY


def test_an_allowed_page_passes_its_preflight_and_reads_the_run(served: Served) -> None:
    preflight = httpx.options(
        served.url,
        headers={
            "origin": PAGE,
            "access-control-request-method": "POST",
            "access-control-request-headers": "authorization, content-type",
        },
    )
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == PAGE
    assert "POST" in preflight.headers["access-control-allow-methods"]
    assert "authorization" in preflight.headers["access-control-allow-headers"]
    headers = {**AUTH, "accept": "text/event-stream", "origin": PAGE}
    response = httpx.post(served.url, json=_input("t-page", "hi"), headers=headers, timeout=60)
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == PAGE


def test_a_run_over_tls(factory: Any, tmp_path: Path) -> None:
    """With the server's certificate (`--tls-cert`, `--tls-key`) the AG-UI
    port is HTTPS too (in process: `serve` and `start_agui` on its loop)."""
    import ssl

    import trustme

    from agentscope_proto.agui.server import start_agui
    from agentscope_proto.service.config import ServerConfig

    from hosted import serve

    authority = trustme.CA()
    certificate = authority.issue_cert("127.0.0.1")
    cert, key = tmp_path / "server.pem", tmp_path / "server.key"
    certificate.private_key_and_cert_chain_pem.write_to_path(str(cert))
    certificate.private_key_pem.write_to_path(str(key))
    server = serve(factory, config=ServerConfig(port=0, tls_cert=cert, tls_key=key))
    agui = server.call(start_agui(server.servicer.sessions, 0, server.config))
    try:
        assert agui.url.startswith("https://127.0.0.1:")
        context = ssl.create_default_context(cadata=authority.cert_pem.bytes().decode())
        body = _input("t-tls", "hi")
        headers = {"accept": "text/event-stream"}
        with httpx.Client(verify=context) as client:
            response = client.post(agui.url, json=body, headers=headers, timeout=60)
        with pytest.raises(httpx.HTTPError):  # plain HTTP to the TLS port is not served
            httpx.post(agui.url.replace("https", "http"), json=body, timeout=10)
        events = [
            json.loads(line[5:]) for line in response.text.splitlines() if line[:5] == "data:"
        ]
        assert _text(events) == SUNNY
    finally:
        server.call(agui.stop(0))
        server.stop()


@pytest.fixture(scope="module")
def in_process(factory: Any) -> Iterator[str]:
    """The conftest's agent (its tools: one asks, one is the caller's to
    run) served in process, its AG-UI port's URL."""
    from agentscope_proto.agui.server import start_agui
    from agentscope_proto.service.config import ServerConfig

    from hosted import serve

    server = serve(factory, config=ServerConfig(port=0))
    agui = server.call(start_agui(server.servicer.sessions, 0, server.config))
    yield agui.url
    server.call(agui.stop(0))
    server.stop()


def _post(url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    response = httpx.post(url, json=body, headers={"accept": "text/event-stream"}, timeout=60)
    assert response.status_code == 200, response.text
    return [json.loads(line[5:]) for line in response.text.splitlines() if line[:5] == "data:"]


def _interrupts(events: list[dict[str, Any]], reason: str) -> list[dict[str, Any]]:
    finished = events[-1]
    assert finished["type"] == "RUN_FINISHED", finished
    assert finished["outcome"]["type"] == "interrupt", finished
    found = finished["outcome"]["interrupts"]
    assert {item["reason"] for item in found} == {reason}
    return list(found)


@pytest.mark.parametrize("answered_by", ["resume", "tool_messages"])
def test_calls_handed_to_the_frontend_are_answered_by_a_resume_or_its_tool_messages(
    in_process: str, answered_by: str
) -> None:
    """Three tools: confirmed through one interrupt per call, then the one
    the caller runs handed over as an interrupt of its own, answered by
    resume entries or, as a frontend running its tools does, by AG-UI tool
    messages; the run then completes."""
    thread = f"t-handed-{answered_by}"
    asked = _interrupts(_post(in_process, _input(thread, "three tools")), "require_user_confirm")
    confirmed = [
        {"interruptId": item["id"], "status": "resolved", "payload": {"confirmed": True}}
        for item in asked
    ]
    handed = _interrupts(
        _post(in_process, _input(thread, resume=confirmed)), "require_external_execution"
    )
    assert {item["metadata"]["tool_name"] for item in handed} == {"web_search"}
    if answered_by == "resume":
        answer = _input(
            thread,
            resume=[
                {"interruptId": i["id"], "status": "resolved", "payload": {"output": "3 results"}}
                for i in handed
            ],
        )
    else:
        tools = [
            {"id": f"tm{n}", "role": "tool", "toolCallId": i["toolCallId"], "content": "3 results"}
            for n, i in enumerate(handed)
        ]
        answer = {**_input(thread), "messages": tools}
    done = _post(in_process, answer)
    assert done[-1]["type"] == "RUN_FINISHED"
    assert "outcome" not in done[-1] or done[-1]["outcome"]["type"] == "success"
    assert _text(done) == SUNNY


def test_a_reply_that_fails_ends_its_run_with_run_error(in_process: str) -> None:
    """The model fails (HTTP 500) once the run started: the answer is still
    200, and the run's last event is RUN_ERROR with the reply's error."""
    events = _post(in_process, _input("t-fail", "fail"))
    assert events[0]["type"] == "RUN_STARTED"
    assert events[-1]["type"] == "RUN_ERROR"
    assert events[-1]["message"]
    assert _text(_post(in_process, _input("t-fail", "hi"))) == SUNNY  # the thread goes on


@pytest.mark.parametrize(
    ("accept", "served_as"),
    [
        (PROTOBUF, PROTOBUF),
        (f"{PROTOBUF}, text/event-stream", PROTOBUF),  # named first
        (f"text/event-stream, {PROTOBUF}", "text/event-stream"),
        (f"*/*, {PROTOBUF}", PROTOBUF),  # named exactly
        (f"{PROTOBUF};q=0.5, text/event-stream", "text/event-stream"),
        ("*/*", "text/event-stream"),
    ],
)
def test_the_accept_header_chooses_the_encoding(
    served: Served, accept: str, served_as: str
) -> None:
    body = _input("t-accept", "hi")
    response = httpx.post(served.url, json=body, headers={**AUTH, "accept": accept}, timeout=60)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == served_as


@pytest.fixture(scope="module")
def ag_ui_decoder() -> Path:
    """decode.mjs beside @ag-ui/proto, as agui_node/package-lock.json pins it
    (`npm ci` once per lock; a missing node or npm, or npm failing, skips)."""
    missing = [command for command in ("node", "npm") if shutil.which(command) is None]
    require(not missing, f"no {' or '.join(missing)} for AG-UI's TypeScript decoder")
    NODE_DIR.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json", "decode.mjs"):
        shutil.copyfile(NODE_SOURCES / name, NODE_DIR / name)
    lock = (NODE_SOURCES / "package-lock.json").read_bytes()
    stamp = NODE_DIR / "node_modules" / ".installed-lock"
    if not (stamp.is_file() and stamp.read_bytes() == lock):
        # Their install scripts are not run: decoding needs only their JavaScript.
        npm = ["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"]
        done = subprocess.run(npm, cwd=NODE_DIR, capture_output=True, text=True, timeout=600)
        require(done.returncode == 0, f"npm ci of @ag-ui/proto failed: {done.stderr[-500:]}")
        stamp.write_bytes(lock)
    return NODE_DIR / "decode.mjs"


def _run_protobuf(decoder: Path, served: Served, body: dict[str, Any]) -> dict[str, Any]:
    """A run asked for as protobuf, read by AG-UI's decoder: {"bytes", "events"}."""
    request = json.dumps({"url": served.url, "headers": AUTH, "body": body})
    done = subprocess.run(
        ["node", str(decoder)], input=request, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


@pytest.mark.web  # Node and npm: `make web-check` installs them (in `make interop`)
def test_ag_ui_s_own_decoder_reads_the_protobuf_runs_as_their_sse(
    served: Served, ag_ui_decoder: Path
) -> None:
    # A run sent again is read from its log: the same run in both encodings.
    text = _input("t-proto", "hi")
    live = _run_protobuf(ag_ui_decoder, served, text)["events"]
    assert live == _run(served, text)
    assert _text(live) == SUNNY

    ask = _input("t-proto-ask", "weather please")
    asked = _run(served, ask)
    assert _run_protobuf(ag_ui_decoder, served, ask)["events"] == asked
    assert asked[-1]["outcome"]["type"] == "interrupt"
    assert "TOOL_CALL_START" in _types(asked)

    # A resume sent again finds nothing to resume (400): the same resume on a
    # twin thread, as server-sent events, is the comparison (its ids differ).
    resumed = _resume(served, ask, lambda run: _run_protobuf(ag_ui_decoder, served, run)["events"])
    twin = _input("t-sse-twin", "weather please")
    _run(served, twin)
    expected = _resume(served, twin, lambda body: _run(served, body))
    assert _types(resumed) == _types(expected)
    assert _text(resumed) == _text(expected) == SUNNY
    assert _results(resumed) == _results(expected)
    assert _results(resumed)


def _results(events: list[dict[str, Any]]) -> list[str]:
    return [event["content"] for event in events if event["type"] == "TOOL_CALL_RESULT"]


def _resume(served: Served, asked: dict[str, Any], run: Callable[[dict[str, Any]], Any]) -> Any:
    """The run confirming what the asked run's thread waits for, read by `run`."""
    (interrupt,) = _run(served, asked)[-1]["outcome"]["interrupts"]  # read again from its log
    answer = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"confirmed": True}}
    return run(_input(asked["threadId"], resume=[answer]))
