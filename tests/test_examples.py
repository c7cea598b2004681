"""The example clients (examples/): the Python one against a live server, and the docs.

`make interop` builds and runs the other four languages and compares them with
the Python client; this keeps the reference itself honest within `make check`,
and each README's build commands identical to the script that runs them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentscope_proto.service import ServerConfig

from server_harness import RunningServer

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
COMPILED = ["typescript", "go", "java", "cpp"]


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    running = RunningServer(ServerConfig(port=0)).start()
    yield running
    running.stop()


def test_python_example_prints_the_golden_document(server: RunningServer) -> None:
    completed = subprocess.run(
        [sys.executable, "-W", "error", str(EXAMPLES / "python" / "client.py"), server.target],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    expected = json.loads((EXAMPLES / "expected.json").read_text())
    assert json.loads(completed.stdout) == expected
    # Both stream modes end with the same result; only the deltas mode's first reply is empty.
    assert expected["stream"]["first_text"] == "It is "
    assert expected["stream_deltas"]["first_text"] == ""
    assert expected["error"]["field"] == "tool_choice"


@pytest.mark.parametrize("language", COMPILED)
def test_readme_shows_the_build_commands(language: str) -> None:
    script = (EXAMPLES / language / "build.sh").read_text().splitlines()
    body = script[script.index('cd "$(dirname "$0")"') + 1 :]
    commands = [line for line in body if line and not line.startswith("#")]
    readme = (EXAMPLES / language / "README.md").read_text()
    assert commands
    assert [line for line in commands if line not in readme.splitlines()] == []


def test_every_language_has_an_example_and_is_run_by_make_interop() -> None:
    harness = (EXAMPLES / "run_interop.py").read_text()
    for language in ["python", *COMPILED]:
        assert (EXAMPLES / language / "README.md").is_file()
        assert f'"{language}"' in harness
