"""`agentscope-proto a2a card|send` against a minimal a2a-sdk agent
(tests/a2a_peers.py), and the `serve-agent --a2a-*` flags' errors: one line,
non-zero exit."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections.abc import Iterator

import pytest

from agentscope_proto.cli import main

from a2a_peers import PeerServer, PlainPeer, heard

COMMAND = [sys.executable, "-m", "agentscope_proto"]


@pytest.fixture(scope="module")
def peer() -> Iterator[PeerServer]:
    with PeerServer(PlainPeer()) as server:
        yield server


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The command run in this process: (exit code, stdout, stderr)."""
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_card_prints_the_agent_card(peer: PeerServer) -> None:
    result = subprocess.run(
        [*COMMAND, "a2a", "card", peer.url], capture_output=True, text=True, check=True
    )
    assert '"name": "Peer"' in result.stdout
    assert '"protocolBinding": "JSONRPC"' in result.stdout


@pytest.mark.parametrize("binding", ["JSONRPC", "GRPC"])
def test_send_prints_the_reply_as_it_streams(
    peer: PeerServer, capsys: pytest.CaptureFixture[str], binding: str
) -> None:
    code, out, err = _cli(capsys, "a2a", "send", peer.url, "hi", "--binding", binding)
    assert (code, out) == (0, heard(["hi"]) + "\n")
    assert re.fullmatch(r"agentscope-proto: completed in context \S+\n", err)


def test_a_question_says_how_to_answer_it(
    peer: PeerServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _cli(capsys, "a2a", "send", peer.url, "ask")
    assert (code, out) == (0, "Which city?\n")
    found = re.fullmatch(r"agentscope-proto: input-required: (agentscope-proto a2a send .*)\n", err)
    assert found is not None
    answer = shlex.split(found.group(1).replace("'yes'", "Paris"))
    code, out, err = _cli(capsys, *answer[1:])
    assert (code, out) == (0, heard(["Paris"]) + "\n")


def test_a_failed_reply_exits_1_after_what_it_said(
    peer: PeerServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _cli(capsys, "a2a", "send", peer.url, "fail")
    assert (code, out) == (1, "It broke.\n")
    assert err == "agentscope-proto: error: the agent's reply failed (upstream): It broke.\n"


@pytest.mark.parametrize(
    ("args", "expected", "code"),
    [
        (["a2a", "card", "http://127.0.0.1:9"], "UNAVAILABLE", 1),
        (["a2a", "send", "http://127.0.0.1:9", "hi"], "UNAVAILABLE", 1),
        (["a2a", "send", "http://127.0.0.1:9", "hi", "--task", "t"], "--task needs --context", 2),
        (["a2a", "card", "http://127.0.0.1:9", "--token-env", "NO_SUCH_VAR"], "NO_SUCH_VAR", 2),
    ],
)
def test_a2a_errors_are_one_line(
    args: list[str], expected: str, code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = _cli(capsys, *args)
    assert (status, out) == (code, "")
    assert err.count("\n") == 1
    assert err.startswith("agentscope-proto: error: ")
    assert expected in err


def test_a_document_that_is_no_card_is_one_line(
    peer: PeerServer, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = _cli(capsys, "a2a", "card", peer.url + "/nope/")
    assert (status, out) == (1, "")
    assert err.count("\n") == 1
    assert "HTTP 404" in err


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--a2a-grpc-port", "5"], "--a2a-grpc-port needs --a2a-port"),
        (["--a2a-host", "example.com"], "--a2a-host needs --a2a-port"),
        (["--a2a-port", "0", "--a2a-max-tasks", "0"], "--a2a-max-tasks must be at least 1"),
        (
            ["--a2a-port", "0", "--a2a-card-max-age", "-1"],
            "--a2a-card-max-age must not be negative",
        ),
    ],
)
def test_serve_agent_a2a_flag_errors_are_one_line(
    flags: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = _cli(capsys, "serve-agent", "json:loads", "--port", "0", *flags)
    assert (status, out) == (2, "")
    assert err == f"agentscope-proto: error: {expected}\n"
