"""The example clients (examples/): the Python one against a live server, and the docs.

`make interop` builds and runs the other four languages and compares them with
the Python client; this keeps the reference itself honest within `make check`,
and each README's build commands identical to the script that runs them.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
