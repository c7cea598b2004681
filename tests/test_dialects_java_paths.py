"""agentscope-java JSON on the other paths: the CLI and the gRPC client.

Neither writes the Java dialect (the CLI prints provider bodies and parsed
messages; gRPC carries `Msg` protos); both read message dicts with
`from_dict`, so a Java message reads, and is refused, as in Python.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentscope_proto import MessageFormatError, format, from_dict
from agentscope_proto.client import format_request

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "java"
COMMAND = [sys.executable, "-m", "agentscope_proto"]
CONVERSATION = ["05_uuid_id", "03_content_array", "13_tool_use_raw_content", "02_tool_result_role"]
# A USER message holding a thinking block: agentscope-java refuses it.
REFUSED = {
    "id": "m",
    "name": "user",
    "role": "USER",
    "content": [{"type": "thinking", "thinking": "x", "metadata": None}],
    "metadata": {},
    "timestamp": "2026-03-14 09:26:53.589",
    "usage": None,
}


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    return data


def _refusal() -> str:
    """What formatting the refused message says in Python."""
    with pytest.raises(MessageFormatError) as caught:
        format("openai", [REFUSED])
    assert caught.value.path == "messages[0].content[0].type"
    assert caught.value.reason.startswith("agentscope-java refuses this: 'thinking'")
    return str(caught.value)


def _cli_format(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, "format", "--provider", "openai", str(path)],
        capture_output=True,
        text=True,
    )


def _conversation() -> list[dict[str, Any]]:
    msgs = [_load(name) for name in CONVERSATION]
    # Java's ToolResultMessage has no name; formatting needs one on every path.
    msgs[-1]["name"] = "tools"
    return msgs


def test_cli_formats_java_messages_as_python_does(tmp_path: Path) -> None:
    msgs = _conversation()
    path = tmp_path / "java.json"
    path.write_text(json.dumps(msgs), encoding="utf-8")
    result = _cli_format(path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == format("openai", [from_dict(m) for m in msgs]).body


def test_cli_refuses_what_java_refuses_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "refused.json"
    path.write_text(json.dumps([REFUSED]), encoding="utf-8")
    result = _cli_format(path)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.endswith(f"error: {_refusal()}\n")


def test_grpc_requests_read_java_messages_as_python_does() -> None:
    msgs = _conversation()
    request = format_request(msgs=msgs, provider="openai")
    assert list(request.messages) == [from_dict(m) for m in msgs]
    with pytest.raises(MessageFormatError) as caught:
        format_request(msgs=[REFUSED], provider="openai")
    assert str(caught.value) == _refusal()
