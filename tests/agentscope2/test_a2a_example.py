"""README's "A2A" section, run as written: `agentscope-proto serve-agent ...
--a2a-port` serving examples/agents/weather_agent.py, `agentscope-proto a2a
card` and `a2a send` (its question, then the command it prints to answer),
examples/agents/ask.py given the A2A URL, and the served agent joining a
Redis hub's topic through examples/agents/a2a_member.py; and the acceptance of the
serving: the card at the well-known path, and a2a-sdk's streamed
SendStreamingMessage ending in a completed task whose final message is the
agent's reply (the same reply the AgentService gives, ids and times aside).

The model endpoint is the local replay (`OPENAI_BASE_URL`), so nothing
reaches the network.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, SendMessageRequest, StreamResponse, TaskState

from agentscope_proto import Msg, new_msg
from agentscope_proto.a2a import a2a_to_msg
from agentscope_proto.a2a.client import fetch_card
from agentscope_proto.agents import AgentClient
from agentscope_proto.hub import HubClient

from agent_processes import AgentProcess, Listener
from readme_recipes import commands, example_replay
from replay_server import ReplayServer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "agents"
TITLE = "A2A"
# The example agent's model, replayed as `make example-agent` replays it.
EXAMPLE_REPLAY = example_replay()
HELLO = "@Friday, hello!"
README_URL = "http://127.0.0.1:8080"
SUNNY = EXAMPLE_REPLAY.ANSWER


class Served(NamedTuple):
    grpc: str  # host:port of the AgentService
    url: str  # the A2A URL


def _bin(program: str) -> str:
    return str(Path(sys.executable).parent / program)


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    """The README's server, on free ports."""
    command = next(c for c in commands("agentscope-proto", TITLE) if "serve-agent" in c)
    argv = [{"50052": "0", "8080": "0"}.get(arg, arg) for arg in shlex.split(command)]
    argv[0] = _bin(argv[0])
    with ReplayServer(EXAMPLE_REPLAY.SCRIPT, EXAMPLE_REPLAY.RECORDINGS) as replay:
        env = {**os.environ, "OPENAI_API_KEY": "sk-replay", "OPENAI_BASE_URL": replay.base_url}
        process = subprocess.Popen(argv, cwd=EXAMPLE, env=env, stderr=subprocess.PIPE, text=True)
        try:
            yield _listening(process)
        finally:
            process.terminate()
            process.wait(30)


def _listening(process: subprocess.Popen[str]) -> Served:
    assert process.stderr is not None
    log = []
    for line in process.stderr:
        log.append(line)
        found = re.search(r"listening on (\S+:\d+) \(gRPC\), (http://\S+) \(A2A JSON-RPC", line)
        if found:
            return Served(found.group(1), found.group(2))
    raise AssertionError("the server did not start:\n" + "".join(log))


def _run(command: str, url: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    argv = shlex.split(command.replace(README_URL, url))
    program = _bin(argv[0]) if argv[0] == "agentscope-proto" else sys.executable
    return subprocess.run(
        [program, *argv[1:]],
        cwd=EXAMPLE,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _command(word: str) -> str:
    return next(c for c in commands("agentscope-proto", TITLE) if f"a2a {word}" in c)


def test_a2a_card_prints_the_served_card(served: Served) -> None:
    done = _run(_command("card"), served.url)
    assert done.returncode == 0, done.stderr
    card = json.loads(done.stdout)
    assert card["name"] == "Friday"
    assert card["supportedInterfaces"][0] == {
        "url": served.url,
        "protocolBinding": "JSONRPC",
        "protocolVersion": "1.0",
    }


def test_a2a_send_asks_and_the_command_it_prints_answers(served: Served) -> None:
    asked = _run(_command("send"), served.url)
    assert asked.returncode == 0, asked.stderr
    assert '[asks to run get_weather({"city": "Paris", "unit": "celsius"})]' in asked.stdout
    # The README's stderr line, ids aside.
    shown = next(line for line in _readme_text() if "input-required:" in line)
    shown = re.sub(r"(--context|--task) \S+", r"\1 <id>", shown.replace(README_URL, served.url))
    pattern = re.escape(shown).replace("<id>", r"(\S+)")
    found = re.fullmatch(pattern, asked.stderr.strip())
    assert found is not None, asked.stderr
    answer = asked.stderr.strip().split("input-required: ", 1)[1]
    answered = _run(answer, served.url)
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout == SUNNY + "\n"
    assert answered.stderr.strip() == f"agentscope-proto: completed in context {found.group(1)}"


def _readme_text() -> list[str]:
    from readme_recipes import section

    blocks = re.findall(r"```text\n(.*?)```", section(TITLE), re.DOTALL)
    return [line for block in blocks for line in block.splitlines()]


def test_ask_py_asks_over_a2a_given_the_url(served: Served) -> None:
    (command,) = [c for c in _python_commands() if README_URL in c]
    done = _run(command, served.url, stdin="y\n")
    assert done.returncode == 0, done.stderr
    assert 'Allow get_weather({"city": "Paris", "unit": "celsius"})? [y/N]' in done.stdout
    assert SUNNY in done.stdout


def _python_commands() -> list[str]:
    return commands("python", TITLE)


def test_the_served_agent_joins_a_topic_through_a2a_member(
    served: Served, redis_server: Any
) -> None:
    (command,) = commands("A2A_AGENT_URL=" + README_URL, TITLE)
    topic = f"room-{uuid.uuid4().hex}"  # the Redis server is the session's
    for readme, ours in [
        (README_URL, served.url),
        ("redis://127.0.0.1:6379/0", redis_server.url),
        ("--topic room", f"--topic {topic}"),
        ("50053", "0"),
    ]:
        assert readme in command
        command = command.replace(readme, ours)
    assignment, *argv = shlex.split(command.replace("\\\n", " "))  # as bash reads it
    assert argv[:2] == ["agentscope-proto", "serve-agent"]
    name, _, value = assignment.partition("=")
    member = AgentProcess(argv[2:], {**os.environ, name: value}, cwd=EXAMPLE)
    try:
        target = member.wait_listening()
        listener = Listener(target, topic)
        try:
            with HubClient(target) as person:
                person.publish(topic, new_msg("user", HELLO, "user"))
            # The A2A agent, named from its card, answered over A2A in the room.
            assert listener.next(2) == [("user", HELLO), ("Friday", EXAMPLE_REPLAY.HELLO)]
        finally:
            listener.close()
    finally:
        member.stop()


def test_the_card_is_at_the_well_known_path(served: Served) -> None:
    response = httpx.get(served.url + "/.well-known/agent-card.json", timeout=10)
    assert response.status_code == 200
    assert fetch_card(served.url).name == response.json()["name"] == "Friday"


def test_a_streamed_message_ends_in_a_completed_task_whose_message_is_the_reply(
    served: Served,
) -> None:
    async def stream() -> list[StreamResponse]:
        client = await ClientFactory(ClientConfig(streaming=True)).create_from_url(served.url)
        message = Message(role=Role.ROLE_USER, message_id="m-1", parts=[Part(text="hi")])
        responses = [r async for r in client.send_message(SendMessageRequest(message=message))]
        await client.close()
        return responses

    responses = asyncio.run(stream())
    final = responses[-1].status_update
    assert final.status.state == TaskState.TASK_STATE_COMPLETED
    with AgentClient(served.grpc) as client:
        reply = client.reply({"name": "user", "role": "user", "content": "hi"})
    assert _stable(a2a_to_msg(final.status.message)) == _stable(reply)


def _stable(msg: Msg) -> Msg:
    """`msg` without what differs between two replies: ids and times."""
    copy = Msg()
    copy.CopyFrom(msg)
    copy.ClearField("id")
    copy.ClearField("timestamp")
    for block in copy.blocks.items:
        inner = getattr(block, block.WhichOneof("block") or "")
        for field in ("id", "created_at", "finished_at"):
            if inner.DESCRIPTOR.fields_by_name.get(field) is not None:
                inner.ClearField(field)
    return copy
