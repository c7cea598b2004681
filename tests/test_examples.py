"""The example clients (examples/): the Python one against a live server, and the docs.

`make interop` builds and runs the other four languages and compares them with
the Python client; this keeps the reference itself honest within `make check`,
and each README's build commands identical to the script that runs them.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentscope_proto.service import ServerConfig

from readme_recipes import README, example_replay
from replay_server import ReplayServer
from server_harness import RunningServer

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
COMPILED = ["typescript", "go", "java", "cpp"]


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    running = RunningServer(ServerConfig(port=0)).start()
    yield running
    running.stop()


def test_python_example_prints_the_golden_document(server: RunningServer) -> None:
    # Without an agent's address (no AgentScope here): everything but the agent part, which
    # `make interop` checks against the example agent (AgentScope 2.x, .venv-as2).
    completed = subprocess.run(
        [sys.executable, "-W", "error", str(EXAMPLES / "python" / "client.py"), server.target],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    expected = json.loads((EXAMPLES / "expected.json").read_text())
    assert json.loads(completed.stdout) == {k: v for k, v in expected.items() if k != "agent"}
    # Both stream modes end with the same result; only the deltas mode's first reply is empty.
    assert expected["stream"]["first_text"] == "It is "
    assert expected["stream_deltas"]["first_text"] == ""
    assert expected["error"]["field"] == "tool_choice"


def test_the_hub_gave_back_what_was_published_where_it_was_published() -> None:
    received = json.loads((EXAMPLES / "expected.json").read_text())["hub"]["received"]
    assert [(item["name"], item["blocks"]) for item in received] == [
        ("Friday", ["text", "tool_use"]),
        ("system", ["tool_result"]),
    ]
    assert all(item["offset_matches"] and item["msg_matches"] for item in received)


def test_the_agent_asked_was_answered_and_ended_in_its_session() -> None:
    agent = json.loads((EXAMPLES / "expected.json").read_text())["agent"]
    asked, answered = agent["replies"]
    assert asked["events"][0] == "REPLY_START"
    assert asked["events"][-1] == "REQUIRE_USER_CONFIRM"
    assert "TOOL_CALL_DELTA" in asked["events"]
    call = {"name": "get_weather", "input": {"city": "Paris", "unit": "celsius"}}
    assert agent["asked"] == [call]
    # The confirmed call ran (its result streamed), then the model answered and the reply ended.
    tool_result = ["TOOL_RESULT_START", "TOOL_RESULT_TEXT_DELTA", "TOOL_RESULT_END"]
    assert answered["events"][:3] == tool_result
    assert answered["events"][-1] == "REPLY_END"
    assert answered["tool_result"] == "Sunny in Paris, 21°C"
    # The replayed model's answer says the weather the tool returned.
    assert answered["tool_result"].rsplit(", ", 1)[1] in answered["text"]
    assert agent["same_session"] is True
    assert agent["reply"] == {
        "name": "Friday",
        "role": "ROLE_ASSISTANT",
        "text": answered["text"],
        "finished_reason": "FINISHED_REASON_COMPLETED",
    }


def test_the_example_agent_answers_what_the_readme_asks_it() -> None:
    # `make example-agent` replays its model: each question the README asks it
    # (ask.py, a2a send, the hub's @mention, AgentClient's "hi") has a recording.
    readme = README.read_text(encoding="utf-8")
    asked = re.findall(r'^(?:python ask\.py|agentscope-proto a2a send) \S+ "([^"]+)"', readme, re.M)
    asked += re.findall(r'"role": "user", "content": "([^"]+)"', readme)
    assert "What's the weather in Paris?" in asked
    assert {"hi", "@Friday, hello!"} <= set(asked)
    replay = example_replay()
    server = ReplayServer(replay.SCRIPT, replay.RECORDINGS)
    for question in asked:
        assert server.pick({"messages": [{"role": "user", "content": question}]}), question


def _model_call(replay: ReplayServer, question: str, turn: int) -> Iterator[dict[str, Any]]:
    """The chunks of the streamed model call number `turn` after `question`, as
    the replay sends them."""
    messages = [{"role": "user", "content": question}]
    messages += [{"role": "assistant", "content": "..."}] * turn
    request = urllib.request.Request(
        f"{replay.base_url}/chat/completions",
        data=json.dumps({"messages": messages, "stream": True}).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        for line in response:
            if line.startswith(b"data: {"):
                yield json.loads(line.removeprefix(b"data: "))


def _said(chunks: list[dict[str, Any]]) -> tuple[str, str]:
    """The text and the tool call arguments a stream's chunks say."""
    deltas = [choice["delta"] for chunk in chunks for choice in chunk["choices"]]
    calls = [call for delta in deltas for call in delta.get("tool_calls") or []]
    return (
        "".join(delta.get("content") or "" for delta in deltas),
        "".join(call["function"].get("arguments", "") for call in calls),
    )


def test_the_held_example_agent_holds_each_model_call_until_a_later_release() -> None:
    """`serve_replayed.py --hold` (make interop's resume check): each weather
    model call sends its first words, then waits for a release sent after
    the call began (one sent before lets nothing through), then says the
    rest: what the unheld recording says."""
    replay_module = example_replay()
    question = "What is the weather in Paris?"
    held = replay_module.Held(replay_module.HELD_SCRIPT, replay_module.HELD_RECORDINGS)
    with held as replay:
        for turn, name in enumerate(replay_module.SCRIPT[question]):
            replay.release.set()  # the last call's release, or one too early
            chunks = _model_call(replay, question, turn)
            first = next(chunks)
            assert _said([first])[0]  # its first words
            assert not replay.release.is_set()  # re-armed as the call began
            replay.release.set()
            unheld = replay.cases[name]["chunks"]
            assert _said([first, *chunks]) == _said(unheld)


def _interop() -> Any:
    """examples/run_interop.py as a module."""
    spec = importlib.util.spec_from_file_location("run_interop", EXAMPLES / "run_interop.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("run_interop", module)
    spec.loader.exec_module(module)
    return module


INTEROP = _interop()
BY_NAME = {language.name: language for language in INTEROP.LANGUAGES}


@pytest.mark.parametrize("language", COMPILED)
def test_make_interop_runs_the_readme_build_which_is_build_sh(language: str) -> None:
    script = (EXAMPLES / language / "build.sh").read_text().splitlines()
    body = script[script.index('cd "$(dirname "$0")"') + 1 :]
    commands = [line for line in body if line and not line.startswith("#")]
    # What `make interop` runs: the README's Build block, exactly.
    readme_block = INTEROP.build_commands(BY_NAME[language]).splitlines()
    assert readme_block == commands


@pytest.mark.parametrize("language", COMPILED)
def test_a_fresh_clone_needs_nothing_before_the_readme_build(language: str) -> None:
    block = INTEROP.build_commands(BY_NAME[language]).splitlines()
    uses_venv = [i for i, line in enumerate(block) if ".venv" in line.split("#")[0]]
    if uses_venv:
        # The repository's .venv is made by the block itself, first.
        assert block[0].startswith("make -s -C ../.. setup")
        assert min(uses_venv) > 0


def test_commands_already_there_install_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    # Node from NodeSource brings npm: Debian's npm would conflict with it.
    on_path = {"node", "npm"}
    monkeypatch.setattr(
        INTEROP.shutil, "which", lambda c: f"/usr/bin/{c}" if c in on_path else None
    )
    assert INTEROP.missing_packages(BY_NAME["typescript"]) == ["protobuf-compiler"]
    on_path.add("protoc")
    assert INTEROP.missing_packages(BY_NAME["typescript"]) == []
    on_path.clear()
    assert INTEROP.missing_packages(BY_NAME["typescript"]) == ["nodejs", "npm", "protobuf-compiler"]


def test_the_typescript_readme_names_the_connect_transport_as_the_client_builds_it() -> None:
    readme = " ".join((EXAMPLES / "typescript" / "README.md").read_text().split())
    client = (EXAMPLES / "typescript" / "client.ts").read_text()
    assert 'createConnectTransport({ baseUrl, httpVersion: "2" })' in readme
    assert 'createConnectTransport({ baseUrl, httpVersion: "2" })' in client
    assert BY_NAME["typescript-connect"].over_http
    assert "--connect" in BY_NAME["typescript-connect"].run


def test_every_language_has_an_example_and_is_run_by_make_interop() -> None:
    harness = (EXAMPLES / "run_interop.py").read_text()
    for language in ["python", *COMPILED]:
        assert (EXAMPLES / language / "README.md").is_file()
        assert f'"{language}"' in harness


@pytest.mark.parametrize("language", ["python", *COMPILED])
def test_each_readme_runs_the_client_against_the_servers_make_starts(language: str) -> None:
    readme = (EXAMPLES / language / "README.md").read_text()
    run = readme[readme.index("\n## Run\n") :]
    assert "make example-agent" in run
    assert re.search(r"client\S* (--connect )?127\.0\.0\.1:\d+ 127\.0\.0\.1:50052 ", run)
    # ...where `make example-agent` serves it.
    makefile = (EXAMPLES / "interop.mk").read_text()
    recipe = makefile[makefile.index("\nexample-agent:") :]
    assert "serve_replayed.py --port 50052\n" in recipe
