"""Every fenced python and sh block of README.md, examples/README.md,
examples/*/README.md and docs/*.md runs as written.

The conventions the documents follow (tests/readme_recipes.py reads them):

- A `python` block runs alone, as pasted into a file: a fresh interpreter (the
  package's), an empty directory. It must exit 0, print no traceback (no
  NameError, ImportError, SyntaxError, nothing unexpected) and end within
  60 s. A command-line script (`if __name__ == "__main__":`) run without its
  arguments may instead exit with its usage, one line on stderr.
- An `sh` (or `bash`) block runs through `bash -e -o pipefail` from the
  repository's root, the package's venv first on PATH; it must exit 0. The
  files its command lines name are in the repository (examples/
  conversation.json, examples/events.sse).
- A block that needs a server says so in a comment, naming the command that
  starts it: "# Needs `make serve` running" (the FormatterService and the
  hub on 127.0.0.1:50051) or "# Needs `make example-agent` running" (the
  example agent on 127.0.0.1:50052). The test starts that server on a free
  port and puts its address in the block's place.
- A block that is a server says "# Serves until Ctrl-C": it runs on a free
  port (its `port=N` set to 0), must print "listening on 127.0.0.1:PORT" and
  stop cleanly on SIGINT.
- A block not run here has `<!-- not run: REASON -->` on the line before its
  fence: what it needs that a test run has not (the network, a toolchain, a
  server that runs until stopped) and which test runs it, if one does. Its
  code is still parsed (python) or syntax-checked (bash -n).
- Blocks that need AgentScope 2.x (they import it, or need the example
  agent) run in tests/agentscope2/test_readme_blocks.py, in its venv.

`text`, `yaml` and unlabelled blocks are output or data, not run.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentscope_proto.service import ServerConfig

from readme_recipes import ROOT, SERVERS, Block, blocks, run_block
from server_harness import RunningServer

ALL = blocks()
RUN_HERE = [block for block in ALL if not block.not_run and not block.needs_agentscope]


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    """`make serve`'s server (the FormatterService and the in-memory hub), on a free port."""
    running = RunningServer(ServerConfig(port=0)).start()
    yield running
    running.stop()


@pytest.mark.parametrize("block", RUN_HERE, ids=[block.name for block in RUN_HERE])
def test_the_block_runs_as_written(block: Block, server: RunningServer, tmp_path: Path) -> None:
    assert set(block.needs) <= {"make serve"}, f"{block.name}: no server here for {block.needs}"
    addresses = {SERVERS["make serve"]: server.target} if block.needs else {}
    run_block(block, tmp_path, addresses, sys.executable)


def test_the_documents_have_the_blocks_this_test_runs() -> None:
    names = {block.name.split(":")[0] for block in RUN_HERE}
    assert {"README.md", "docs/request-params.md"} <= names
    kinds = {(block.language, bool(block.needs), block.serves) for block in RUN_HERE}
    assert {("python", False, False), ("python", True, False), ("python", False, True)} <= kinds
    assert ("sh", True, False) in kinds


@pytest.mark.parametrize("block", ALL, ids=[block.name for block in ALL])
def test_each_block_parses_and_names_only_servers_a_test_starts(block: Block) -> None:
    assert set(block.needs) <= set(SERVERS), f"{block.name}: {block.needs}"
    if block.language == "python":
        ast.parse(block.code, block.name)
    else:
        checked = subprocess.run(
            ["bash", "-n"], input=block.code, capture_output=True, text=True, check=False
        )
        assert checked.returncode == 0, f"{block.name}: {checked.stderr}"


def test_a_block_not_run_says_why_and_the_tests_it_names_exist() -> None:
    for block in ALL:
        if block.not_run:
            assert len(block.not_run) > 10, block.name
            for named in re.findall(r"tests/\S+?\.py", block.not_run):
                assert (ROOT / named).is_file(), f"{block.name}: {named}"


def test_a_block_that_needs_agentscope_is_run_in_its_suite() -> None:
    needing = [block.name for block in ALL if block.needs_agentscope and not block.not_run]
    # weather_agent.py, ask.py and AgentClient's block (the example agent's).
    assert len(needing) == 3, needing
    assert (ROOT / "tests" / "agentscope2" / "test_readme_blocks.py").is_file()


def test_serve_prints_the_line_the_readme_quotes(tmp_path: Path) -> None:
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    (quoted,) = re.findall(r"`serve` prints one line on stderr, `\.\.\. (.+?) \.\.\.`", readme)
    command = Path(sys.executable).parent / "agentscope-proto"
    process = subprocess.Popen(
        [str(command), "serve", "--port", "0"], stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
    finally:
        process.terminate()
        process.wait(30)
    printed = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:50051", line)
    assert quoted.removesuffix(";") + ";" in printed, line
