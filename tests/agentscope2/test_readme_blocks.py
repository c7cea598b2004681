"""The documents' blocks that need AgentScope 2.x, run as written (the
conventions: tests/test_readme_blocks.py): examples/agents/weather_agent.py
and ask.py as the README shows them, and the blocks that need the example
agent, which `make example-agent` serves (examples/agents/serve_replayed.py,
started here the same way on a free port)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from readme_recipes import ROOT, SERVERS, Block, blocks, run_block

NEEDING = [block for block in blocks() if block.needs_agentscope and not block.not_run]


@pytest.fixture(scope="module")
def example_agent() -> Iterator[str]:
    """`make example-agent`'s server on a free port: its address."""
    script = ROOT / "examples" / "agents" / "serve_replayed.py"
    process = subprocess.Popen(
        [sys.executable, str(script), "--port", "0"], stderr=subprocess.PIPE, text=True
    )
    assert process.stderr is not None
    log = []
    for line in process.stderr:
        log.append(line)
        found = re.search(r"listening on (\S+:\d+) \(gRPC\)", line)
        if found:
            break
    else:
        raise AssertionError("the example agent did not start:\n" + "".join(log))
    yield found.group(1)
    process.terminate()
    process.wait(30)


@pytest.mark.parametrize("block", NEEDING, ids=[block.name for block in NEEDING])
def test_the_block_runs_as_written(
    block: Block, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    assert set(block.needs) <= {"make example-agent"}, block.name
    addresses = {}
    if block.needs:
        addresses[SERVERS["make example-agent"]] = request.getfixturevalue("example_agent")
    run_block(block, tmp_path, addresses, sys.executable)
