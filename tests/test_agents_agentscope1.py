"""A real AgentScope 1.x agent behind the AgentService (the 1.x adapter).

AgentScope 1.0.21 is not a test dependency: this runs
tests/agentscope1/serve_react_agent.py in `.venv-golden` (made by
`make golden-venv`, which .ci/run makes), as the other checks against the
real 1.x are. The agent prints its reply; the printed chunks must
arrive as text (and thinking) block events, the final message last; a
reply that fails ends with a ReplyEndEvent carrying the error. In a hub
topic, the 1.x agent observes, answers what names it and publishes its
reply without thinking.
"""

from __future__ import annotations

import json
import os
import subprocess
import sysconfig
from pathlib import Path

from needs import require

ROOT = Path(__file__).resolve().parent.parent
GOLDEN_PYTHON = ROOT / ".venv-golden" / "bin" / "python"
SUNNY = "The weather in Paris is sunny and 22 degrees."


def test_a_react_agent_streams_its_printed_chunks_then_its_message() -> None:
    require(GOLDEN_PYTHON.exists(), "needs .venv-golden with agentscope==1.0.21 (make golden-venv)")
    result = subprocess.run(
        [
            str(GOLDEN_PYTHON),
            str(ROOT / "tests" / "agentscope1" / "serve_react_agent.py"),
            *dict.fromkeys(sysconfig.get_path(name) for name in ("purelib", "platlib")),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "python")},
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    lines = (json.loads(line) for line in result.stdout.splitlines())
    card, hi, think, failed, topic, kept = lines
    assert card["name"] == "Jarvis"
    assert card["framework"] == "agentscope 1.0.21"
    assert card["answers"] == []
    assert hi["kinds"] == [
        "reply_start",
        "text_block_start",
        "text_block_delta",
        "text_block_end",
        "reply_end",
        "msg",
    ]
    assert hi["text"] == hi["final"] == SUNNY
    assert think["kinds"][:3] == ["reply_start", "thinking_block_start", "thinking_block_delta"]
    assert think["kinds"][-2:] == ["reply_end", "msg"]
    assert think["thinking"] == "The user wants the weather, so I should call get_weather."
    assert think["text"] == think["final"] == SUNNY
    # A failing model: the reply ends with the error, then AgentReplyError.
    assert failed == {
        "raised": "upstream",
        "kinds": ["reply_start", "reply_end"],
        "reason": "FINISHED_REASON_ERROR",
        "error": "ERROR_TYPE_UPSTREAM",
    }
    # In a topic: it observes, answers what names it, publishes without thinking.
    assert topic["topic"] == [
        ["user", "nice weather"],
        ["user", "@Jarvis, think first"],
        ["Jarvis", SUNNY],
    ]
    assert topic["kinds"][-1] == ["text"]
    # A durable store's state of a 1.x agent (its `state_dict()`) gives a
    # new agent its memory.
    assert kept["kept"] == [["user", "hi"], ["assistant", SUNNY]]
