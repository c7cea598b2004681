"""README's "Agents across processes", run as written: two processes (one serves
examples/agents/weather_agent.py with `agentscope-proto serve-agent`, the other
asks it with examples/agents/ask.py through `RemoteAgent`, answering the
confirmation), and the grpcurl recipe against the same server over reflection.

The model endpoint is the local replay (`OPENAI_BASE_URL`), so nothing
reaches the network; everything else is the README's.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from needs import require
from readme_recipes import commands, grpcurl, json_values, run, section
from replay_server import ReplayServer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "agents"
TITLE = "Agents across processes"
QUESTION = "What's the weather in Paris?"
SCRIPT = {QUESTION: ["stream_text_then_tool_by4", "stream_text_by3"], "hi": ["stream_text_by3"]}
README_TARGET = "127.0.0.1:50052"


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    """Process 1, as the README starts it (on a free port): its address."""
    (command,) = commands("agentscope-proto", TITLE)
    argv = [arg if arg != "50052" else "0" for arg in shlex.split(command)]
    argv[0] = str(Path(sys.executable).parent / argv[0])
    with ReplayServer(SCRIPT) as replay:
        env = {**os.environ, "OPENAI_API_KEY": "sk-replay", "OPENAI_BASE_URL": replay.base_url}
        process = subprocess.Popen(argv, cwd=EXAMPLE, env=env, stderr=subprocess.PIPE, text=True)
        try:
            yield _listening(process)
        finally:
            process.terminate()
            process.wait(30)


def _listening(process: subprocess.Popen[str]) -> str:
    assert process.stderr is not None
    log = []
    for line in process.stderr:
        log.append(line)
        found = re.search(r"AgentService listening on (\S+:\d+)", line)
        if found:
            return found.group(1)
    raise AssertionError("the server did not start:\n" + "".join(log))


def test_the_readme_shows_the_example_files_as_they_are() -> None:
    text = section(TITLE)
    for name in ("weather_agent.py", "ask.py"):
        assert f"```python\n{(EXAMPLE / name).read_text(encoding='utf-8')}```" in text, name


def test_two_processes_stream_events_and_answer_a_confirmation(served: str) -> None:
    (command,) = commands("python", TITLE)
    argv = shlex.split(command.replace(README_TARGET, served))
    result = subprocess.run(
        [sys.executable, *argv[1:]],
        cwd=EXAMPLE,
        input="y\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert 'Allow get_weather({"city": "Paris", "unit": "celsius"})? [y/N]' in out
    for event in ("[REPLY_START]", "[TOOL_CALL_START]", "[TOOL_RESULT_END]", "[REPLY_END]"):
        assert event in out
    assert out.index("[TOOL_RESULT_END]") > out.index("Allow get_weather")
    assert "The weather in Paris is sunny and 22 degrees." in out


def test_grpcurl_gets_typed_events_and_the_whole_reply(served: str) -> None:
    require(grpcurl() is not None, "grpcurl not installed (make test-agentscope2 installs it)")
    (command,) = commands("grpcurl", TITLE)
    out = run(command.replace(README_TARGET, served))
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
    assert reply["blocks"]["items"][-1]["text"]["text"] == (
        "The weather in Paris is sunny and 22 degrees."
    )
