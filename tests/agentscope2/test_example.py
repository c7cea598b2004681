"""README's "Agents across processes", run as written: two processes (one serves
examples/agents/weather_agent.py with `agentscope-proto serve-agent`, the other
asks it with examples/agents/ask.py through `RemoteAgent`, answering the
confirmation), the grpcurl recipe against the same server over reflection,
and the hub topic recipes: three processes on the agent's own hub (the agent,
a watcher, a speaker publishing and then asking in the topic's session), and
the Redis one, where the agent and a plain server share the room.

The model endpoint is the local replay (`OPENAI_BASE_URL`), the Redis the
test suite's own (its URL and the servers' free ports replace the README's),
so nothing reaches the network; everything else is the README's.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hub_fixtures import RedisServer
from needs import require
from readme_recipes import commands, example_replay, grpcurl, json_values, run, section
from replay_server import ReplayServer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "agents"
BIN = Path(sys.executable).parent
TITLE = "Agents across processes"
# The example agent's model, replayed as `make example-agent` replays it.
EXAMPLE_REPLAY = example_replay()
HELLO = EXAMPLE_REPLAY.HELLO
SUNNY = EXAMPLE_REPLAY.ANSWER
AGENT = "127.0.0.1:50052"
SERVER = "127.0.0.1:50051"
README_REDIS = "redis://127.0.0.1:6379/0"


def _command(program: str, *having: str, lacking: tuple[str, ...] = ()) -> str:
    """The section's one command of `program` with each of `having` in it
    and none of `lacking`."""
    (found,) = _commands(program, *having, lacking=lacking)
    return found


def _commands(program: str, *having: str, lacking: tuple[str, ...] = ()) -> list[str]:
    return [
        command
        for command in commands(program, TITLE)
        if all(part in command for part in having) and not any(part in command for part in lacking)
    ]


class Started:
    """A README command started as a server: `target` once it listens."""

    def __init__(self, command: str, env: dict[str, str], replace: dict[str, str]) -> None:
        for old, new in replace.items():
            command = command.replace(old, new)
        argv = ["0" if arg in ("50051", "50052", "50053") else arg for arg in shlex.split(command)]
        argv[0] = str(BIN / argv[0])
        self.process = subprocess.Popen(
            argv, cwd=EXAMPLE, env=env, stderr=subprocess.PIPE, text=True
        )
        self.target = _listening(self.process)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


def _listening(process: subprocess.Popen[str]) -> str:
    assert process.stderr is not None
    log = []
    for line in process.stderr:
        log.append(line)
        found = re.search(r"listening on (\S+:\d+) \(gRPC\)", line)
        if found:
            return found.group(1)
    raise AssertionError("the server did not start:\n" + "".join(log))


@pytest.fixture(scope="module")
def replay() -> Iterator[ReplayServer]:
    with ReplayServer(EXAMPLE_REPLAY.SCRIPT, EXAMPLE_REPLAY.RECORDINGS) as server:
        yield server


@pytest.fixture(scope="module")
def env(replay: ReplayServer) -> dict[str, str]:
    path = str(BIN) + os.pathsep + os.environ.get("PATH", "")
    return {
        **os.environ,
        "OPENAI_API_KEY": "sk-replay",
        "OPENAI_BASE_URL": replay.base_url,
        "PATH": path,
    }


@pytest.fixture(scope="module")
def served(env: dict[str, str]) -> Iterator[str]:
    """Process 1, as the README starts it (on a free port): its address."""
    agent = Started(
        _command("agentscope-proto", "serve-agent", lacking=("--topic", "--state")), env, {}
    )
    yield agent.target
    agent.stop()


def test_the_readme_shows_the_example_files_as_they_are() -> None:
    text = section(TITLE)
    for name in ("weather_agent.py", "ask.py"):
        assert f"```python\n{(EXAMPLE / name).read_text(encoding='utf-8')}```" in text, name


def _ask(command: str, env: dict[str, str]) -> str:
    """Run a README `python ask.py ...` command, answering `y`; its output."""
    argv = shlex.split(command)
    result = subprocess.run(
        [sys.executable, *argv[1:]],
        cwd=EXAMPLE,
        env=env,
        input="y\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_two_processes_stream_events_and_answer_a_confirmation(
    served: str, env: dict[str, str]
) -> None:
    out = _ask(_command("python", "ask.py", lacking=("topic:",)).replace(AGENT, served), env)
    assert 'Allow get_weather({"city": "Paris", "unit": "celsius"})? [y/N]' in out
    for event in ("[REPLY_START]", "[TOOL_CALL_START]", "[TOOL_RESULT_END]", "[REPLY_END]"):
        assert event in out
    assert out.index("[TOOL_RESULT_END]") > out.index("Allow get_weather")
    assert SUNNY in out


def test_grpcurl_gets_typed_events_and_the_whole_reply(served: str) -> None:
    require(grpcurl() is not None, "grpcurl not installed (make test-agentscope2 installs it)")
    out = run(_command("grpcurl").replace(AGENT, served))
    responses = json_values(out)
    kinds = [next(iter(r["event"].keys() - {"id", "createdAt", "metadataJson"})) for r in responses]
    assert kinds[0] == "replyStart"
    assert "textBlockDelta" in kinds
    assert kinds[-1] == "replyEnd"
    assert [r.get("done", False) for r in responses] == [False] * (len(responses) - 1) + [True]
    last = responses[-1]
    assert last["event"]["replyEnd"]["finishedReason"] == "FINISHED_REASON_COMPLETED"
    reply = last["msg"]
    assert reply["name"] == "Friday"
    assert reply["role"] == "ROLE_ASSISTANT"
    assert reply["blocks"]["items"][-1]["text"]["text"] == HELLO  # its answer to "hi"


class Watcher:
    """The README's `agentscope-proto hub subscribe ...`, live once started."""

    def __init__(self, command: str, env: dict[str, str]) -> None:
        argv = shlex.split(command)
        argv[0] = str(BIN / argv[0])
        self.process = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert self.process.stderr is not None
        line = self.process.stderr.readline()
        assert " subscribed to room after " in line, line

    def read(self, count: int) -> list[dict[str, Any]]:
        """The next `count` messages it printed (ProtoJSON)."""
        assert self.process.stdout is not None
        return [json.loads(self.process.stdout.readline())["msg"] for _ in range(count)]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


def _text(msg: dict[str, Any]) -> str:
    if "text" in msg:
        return str(msg["text"])
    return "".join(item["text"]["text"] for item in msg["blocks"]["items"] if "text" in item)


def test_three_processes_share_a_topic_on_the_agents_hub(env: dict[str, str]) -> None:
    agent = Started(_command("agentscope-proto", "serve-agent", "--hub memory"), env, {})
    watcher = Watcher(
        _command("agentscope-proto", "hub subscribe", AGENT).replace(AGENT, agent.target), env
    )
    try:
        run(_command("echo", AGENT).replace(AGENT, agent.target))
        out = _ask(_command("python", "topic:room").replace(AGENT, agent.target), env)
        assert 'Allow get_weather({"city": "Paris", "unit": "celsius"})? [y/N]' in out
        seen = watcher.read(3)
        assert [(msg["name"], msg["role"], _text(msg)) for msg in seen] == [
            ("user", "ROLE_USER", "@Friday, hello!"),
            ("Friday", "ROLE_ASSISTANT", HELLO),
            ("Friday", "ROLE_ASSISTANT", SUNNY),  # the question asked in topic:room stays private
        ]
        assert all(msg["finishedReason"] == "FINISHED_REASON_COMPLETED" for msg in seen[1:])
    finally:
        watcher.stop()
        agent.stop()


def test_the_agent_and_a_plain_server_share_a_topic_on_redis(
    env: dict[str, str], tmp_path: Path
) -> None:
    redis = RedisServer(tmp_path)  # a Redis of its own: its first topic "room" is this test's
    started: list[Started] = []
    watcher = None
    try:
        replace = {README_REDIS: redis.url}
        agent = Started(
            _command("agentscope-proto", "serve-agent", "redis://", lacking=("--state",)),
            env,
            replace,
        )
        started.append(agent)
        server = Started(_command("agentscope-proto", "serve --port"), env, replace)
        started.append(server)
        subscribe = _command("agentscope-proto", "hub subscribe", SERVER)
        watcher = Watcher(subscribe.replace(SERVER, server.target), env)
        run(_command("echo", SERVER).replace(SERVER, server.target))
        assert [(msg["name"], _text(msg)) for msg in watcher.read(2)] == [
            ("user", "@Friday, hello!"),
            ("Friday", HELLO),  # the agent's answer, through the other server
        ]
    finally:
        if watcher is not None:
            watcher.stop()
        for process in started:
            process.stop()
        redis.stop()


def test_a_conversation_goes_on_on_another_replica_once_the_first_is_killed(
    env: dict[str, str], replay: ReplayServer, tmp_path: Path
) -> None:
    """The README's two replicas on one Redis: `hi` on the first, which is
    then killed (SIGKILL: no drain, no goodbye), and the question on the
    second, in the same session: it answers, and its model call holds the
    first turn (the agent's memory came through Redis)."""
    redis = RedisServer(tmp_path)
    replicas = [
        Started(command, env, {README_REDIS: redis.url})
        for command in _commands("agentscope-proto", "serve-agent", "--state")
    ]
    try:
        assert len(replicas) == 2
        first, second = replicas
        assert HELLO in _ask(f"python ask.py {first.target} hi trip", env)
        first.process.kill()
        first.process.wait(30)
        out = _ask(f'python ask.py {second.target} "What\'s the weather in Paris?" trip', env)
        assert SUNNY in out
        said = [m for m in replay.requests[-1]["messages"] if m.get("name") == "user"]
        assert [_said(m) for m in said] == ["hi", "What's the weather in Paris?"]
    finally:
        for replica in replicas:
            replica.stop()
        redis.stop()


def _user_words(request: dict[str, Any]) -> list[str]:
    """What the user said in a model request, in order."""
    return [_said(m) for m in request["messages"] if m.get("name") == "user"]


def _said(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def test_ask_py_says_in_one_line_why_a_reply_failed(served: str, env: dict[str, str]) -> None:
    # The replay has no recording for these words: the agent's model call fails.
    result = subprocess.run(
        [sys.executable, "ask.py", served, "Who are you?"],
        cwd=EXAMPLE,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.startswith("ask.py: the agent's reply failed (invalid_request): ")
    assert result.stderr.count("\n") == 1, result.stderr


def test_the_three_replica_recipe_runs_as_written(
    env: dict[str, str], replay: ReplayServer
) -> None:
    """README's "Running agents in production" recipe, the block itself
    through bash, from examples/agents: its Redis and replicas on free
    ports, the model replayed, `y` to the tool's confirmation. The second
    question goes to another replica after the first was stopped, and its
    model call holds the first turn; the story's replica is killed as it
    streams, and the other takes its reply over: the model asked twice for
    it (the second time on the other replica, with the whole conversation),
    the story whole in the output."""
    import re

    from hub_fixtures import free_port

    sh_blocks = re.findall(r"^```sh\n(.*?)^```", section("Deployment"), re.MULTILINE | re.DOTALL)
    (block,) = [b for b in sh_blocks if "--daemonize yes" in b]
    for port in ("6379", "50052", "50053", "50054"):
        block = block.replace(port, str(free_port()))
    result = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block],
        cwd=EXAMPLE,
        env=env,
        input="y\n",
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert HELLO in result.stdout
    assert SUNNY in result.stdout
    assert EXAMPLE_REPLAY.STORY in result.stdout
    asked = [_user_words(r) for r in replay.requests]
    weather = "What's the weather in Paris?"
    story = "Tell me a story about Paris in the rain"
    assert asked[-2:] == [["hi", weather, story]] * 2, asked
    assert result.stdout.count("[REPLY_START]") == 3  # the story's once, though told twice
