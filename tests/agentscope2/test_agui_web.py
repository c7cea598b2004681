"""examples/web/ against the example agent served over AG-UI (its model
replayed, `examples/web/serve.py`: the page's static server and
`serve_replayed.py --agui-port`), from outside, in real processes:

- AG-UI's official TypeScript client (`@ag-ui/client`, examples/web/
  node_client.mjs) in Node runs the umbrella conversation (thinking, text, a
  tool call, its confirmation allowed, and denied in another thread); the
  events it parsed equal, as parsed JSON, those Python reads over server-sent
  events: the same first run read again exactly, and the same conversation
  run by Python with its ids aside. One case per encoding the client asks for.
- The page in headless Chromium (Debian's `chromium`, driven by puppeteer-core,
  examples/web/browser_check.mjs): the question asked, the answer streamed,
  Allow clicked, the tool's result and the final answer shown; then Deny.
  Its screenshot is kept in build/web/.

`make web-check` installs what they need (Chromium from apt, the npm
packages) and runs them (marker `web`: the AgentScope 2.x suite leaves them
out); a missing part skips them, or fails them under the strict switch.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

from needs import require
from readme_recipes import example_replay

pytestmark = pytest.mark.web

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "examples" / "web"
ARTIFACTS = ROOT / "build" / "web"
REPLAY = example_replay()
QUESTION = "Should I take an umbrella in Paris?"
# The encodings node_client.mjs asks for, by its Accept header.
ENCODINGS = {"json": "text/event-stream", "protobuf": "application/vnd.ag-ui.event+proto"}
# What differs between two runs of one conversation: generated ids, and the
# 2.x events' clock (their times, and the time a reminder names).
GENERATED_ID = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}")
CLOCK = re.compile(r'"created_at": "[^"]*"')
# 2.x's system reminder names the current time to the second.
NOW = re.compile(r"<current-time>[^<]*</current-time>")


class WebExample:
    """`examples/web/serve.py` on free ports: `page` (its address, which
    names the agent's) once both listen."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(WEB / "serve.py"), "--port", "0", "--agent-port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.log: list[str] = []
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(
            target=self._read, args=(self.process.stdout, lines.put), daemon=True
        ).start()
        threading.Thread(
            target=self._read, args=(self.process.stderr, self.log.append), daemon=True
        ).start()
        try:
            line = lines.get(timeout=120)
        except queue.Empty:
            line = ""
        if not line.startswith("page: "):
            self.process.kill()  # never left behind
            self.process.wait(30)
            raise AssertionError("serve.py did not start:\n" + "".join(self.log))
        self.page = line.removeprefix("page: ").strip()
        self.agent = self.page.partition("?agent=")[2]

    @staticmethod
    def _read(stream: IO[str] | None, put: Callable[[str], object]) -> None:
        """A pipe's lines as they come (a full pipe would stall the process)."""
        for line in stream or ():
            put(line)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(60)


def _need_node_modules() -> None:
    require(shutil.which("node") is not None, "no node on PATH (`make web-check` installs it)")
    installed = all(
        (WEB / "node_modules" / name).is_dir() for name in ("@ag-ui/client", "puppeteer-core")
    )
    require(installed, "examples/web has no node_modules (`make web-check` runs npm ci there)")


@pytest.fixture(scope="module")
def web() -> Iterator[WebExample]:
    _need_node_modules()
    example = WebExample()
    try:
        yield example
    finally:
        example.stop()


def _run(url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """A run's events as Python reads them: server-sent events, each parsed."""
    headers = {"accept": "text/event-stream"}
    with httpx.stream("POST", url, json=body, headers=headers, timeout=60) as response:
        assert response.status_code == 200, response.read()
        return [json.loads(line[5:]) for line in response.iter_lines() if line.startswith("data:")]


def _python_conversation(url: str, confirmed: bool) -> list[list[dict[str, Any]]]:
    """node_client.mjs's conversation, run by Python in a thread of its own."""
    thread = str(uuid.uuid4())
    question = {"id": str(uuid.uuid4()), "role": "user", "content": QUESTION}
    asked = _run(url, {"threadId": thread, "runId": str(uuid.uuid4()), "messages": [question]})
    resume = [
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"confirmed": confirmed}}
        for interrupt in asked[-1]["outcome"]["interrupts"]
    ]
    body = {"threadId": thread, "runId": str(uuid.uuid4()), "messages": [], "resume": resume}
    return [asked, _run(url, body)]


def _ids_aside(runs: Any) -> Any:
    """`runs` with each generated id named by its first appearance in the
    JSON with sorted keys (the same id the same name, whatever order a
    decoder gives an object's keys) and the clock's times alike."""
    names: dict[str, str] = {}
    text = GENERATED_ID.sub(
        lambda found: names.setdefault(found[0], f"<id {len(names)}>"),
        json.dumps(runs, sort_keys=True),
    )
    text = NOW.sub("<current-time>now</current-time>", text)
    return json.loads(CLOCK.sub('"created_at": "<time>"', text))


def _node_conversations(url: str, encoding: str) -> dict[str, Any]:
    done = subprocess.run(
        ["node", "node_client.mjs", url, "--encoding", encoding],
        cwd=WEB,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def _text(events: list[dict[str, Any]], kind: str) -> str:
    return "".join(event["delta"] for event in events if event["type"] == kind)


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
def test_the_official_typescript_client_parses_what_python_reads(
    web: WebExample, encoding: str
) -> None:
    node = _node_conversations(web.agent, encoding)
    for answer, confirmed in (("allowed", True), ("denied", False)):
        runs = node[answer]
        # The first run again: the server reads it from the reply's log.
        first = runs[0]
        question = {"id": str(uuid.uuid4()), "role": "user", "content": QUESTION}
        again = _run(
            web.agent,
            {"threadId": first["threadId"], "runId": first["runId"], "messages": [question]},
        )
        assert first["events"] == again
        # The whole conversation, run by Python.
        python = _python_conversation(web.agent, confirmed)
        assert _ids_aside([run["events"] for run in runs]) == _ids_aside(python)
    asked, allowed = (run["events"] for run in node["allowed"])
    assert _text(asked, "REASONING_MESSAGE_CONTENT") == REPLAY.THOUGHT
    assert asked[-1]["outcome"]["interrupts"][0]["reason"] == "require_user_confirm"
    result = next(event for event in allowed if event["type"] == "TOOL_CALL_RESULT")
    assert result["content"] == "Sunny in Paris, 21°C"
    assert _text(allowed, "TEXT_MESSAGE_CONTENT") == REPLAY.UMBRELLA
    assert _text(node["denied"][1]["events"], "TEXT_MESSAGE_CONTENT") == REPLAY.DENIED


def test_the_page_in_headless_chromium(web: WebExample) -> None:
    chromium = shutil.which("chromium")
    require(chromium is not None, "no chromium on PATH (`make web-check` installs Debian's)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    screenshot = ARTIFACTS / "page.png"
    screenshot.unlink(missing_ok=True)
    done = subprocess.run(
        ["node", "browser_check.mjs", web.page, str(screenshot), str(chromium)],
        cwd=WEB,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "HOME": str(ARTIFACTS)},  # Chromium's profile and crash dumps
    )
    assert done.returncode == 0, done.stderr + "".join(web.log[-20:])
    shown = json.loads(done.stdout)
    assert shown["failures"] == []
    assert shown["errors"] == []
    assert shown["user"] == [QUESTION, "Allow", QUESTION, "Deny"]
    assert shown["assistant"] == [
        "Let me check that.",
        REPLAY.UMBRELLA,
        "Let me check that.",
        REPLAY.DENIED,
    ]
    assert shown["thinking"] == ["Thinking" + REPLAY.THOUGHT] * 2
    assert not shown["thinkingOpen"]  # folded
    allowed, denied = shown["tool"]
    assert allowed.startswith('get_weather {"city": "Paris", "unit": "celsius"}')
    assert allowed.endswith("→ Sunny in Paris, 21°C")
    assert "denied by user" in denied
    assert screenshot.read_bytes().startswith(b"\x89PNG")
