"""Conversion from and to real AgentScope 1.x `agentscope.message.Msg` objects.

AgentScope is not a test dependency: the check against the real AgentScope
1.0.21 runs in `.venv-golden` (`make golden-venv`, which .ci/run makes); 2.x
is checked in tests/agentscope2/test_interop.py.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from agentscope_proto import new_msg
from agentscope_proto.interop import from_agentscope, to_agentscope

from conftest import require

ROOT = Path(__file__).resolve().parent.parent
GOLDEN_PYTHON = ROOT / ".venv-golden" / "bin" / "python"

# Runs inside .venv-golden with this checkout's package first on the path.
SCRIPT = r"""
import json, sys
# Packages of this venv that .venv-golden lacks (grpc extras), after its own.
sys.path.extend(sys.argv[2:])
from agentscope.message import Msg as AsMsg
import agentscope_proto as ap
from agentscope_proto.interop import from_agentscope, to_agentscope

with open(sys.argv[1], encoding="utf-8") as file:
    golden = json.load(file)
checked = 0
for case in golden["cases"]:
    original = AsMsg.from_dict(json.loads(json.dumps(case["input"])))
    msg = from_agentscope(original)
    assert ap.to_dict(msg) == original.to_dict(), case["name"]
    assert (msg.invocation_id if msg.HasField("invocation_id") else None) == original.invocation_id
    for separator in ("\n", " | "):
        assert ap.get_text_content(msg, separator) == original.get_text_content(separator)
    back = to_agentscope(msg)
    assert type(back) is AsMsg
    assert json.dumps(back.to_dict()) == json.dumps(case["to_dict"]), case["name"]
    assert back.invocation_id == case["invocation_id"], case["name"]
    assert back.get_content_blocks() == original.get_content_blocks(), case["name"]
    checked += 1

tool = ap.new_msg("system", [ap.new_tool_result_block("c", "f", "ok")], ap.Role.ROLE_TOOL)
assert to_agentscope(tool).role == "system"
try:
    from_agentscope({"name": "a"})
except TypeError as exc:
    assert "agentscope.message.Msg" in str(exc)
else:
    raise AssertionError("a dict is not an agentscope Msg")
print("checked", checked)
"""


def test_round_trips_real_agentscope_messages() -> None:
    require(GOLDEN_PYTHON.exists(), "needs .venv-golden with agentscope==1.0.21 (make golden-venv)")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    result = subprocess.run(
        [
            str(GOLDEN_PYTHON),
            "-c",
            SCRIPT,
            str(ROOT / "tests" / "golden" / "messages.json"),
            *dict.fromkeys(sysconfig.get_path(name) for name in ("purelib", "platlib")),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert int(result.stdout.split()[-1]) >= 200


@pytest.mark.skipif(
    importlib.util.find_spec("agentscope") is not None, reason="agentscope is installed here"
)
def test_without_agentscope_the_error_says_what_to_install() -> None:
    msg = new_msg("a", "hi", "user")
    with pytest.raises(ImportError, match=r'pip install "agentscope-proto\[agentscope\]"'):
        to_agentscope(msg)
    with pytest.raises(ImportError, match="agentscope-proto"):
        from_agentscope(object())
    assert "agentscope" not in sys.modules
