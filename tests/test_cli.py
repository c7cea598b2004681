"""The `agentscope-proto` command as a user runs it: serve (signals, workers), format, parse."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import trustme

from agentscope_proto import __version__, from_dict
from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto._generated.agentscope.formatter.v1 import (
    formatter_service_pb2_grpc as pb_grpc,
)
from agentscope_proto.cli import main
from agentscope_proto.providers import PROVIDERS

from conftest import GOLDEN, default_options

COMMAND = [sys.executable, "-m", "agentscope_proto"]
OLLAMA_REPLY = json.dumps(
    {"model": "qwen3", "message": {"role": "assistant", "content": "hi"}, "done": True}
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Served:
    """`agentscope-proto serve` in a subprocess, waited for until it listens."""

    def __init__(self, *args: str, listeners: int = 1) -> None:
        self.port = _free_port()
        self.process = subprocess.Popen(
            [*COMMAND, "serve", "--port", str(self.port), *args],
            stderr=subprocess.PIPE,
            text=True,
        )
        self.log: list[str] = []
        deadline = time.monotonic() + 30
        while sum("listening on" in line for line in self.log) < listeners:
            assert time.monotonic() < deadline, "server did not start:\n" + "".join(self.log)
            line = self.process.stderr.readline() if self.process.stderr else ""
            if not line and self.process.poll() is not None:
                raise AssertionError("server exited:\n" + "".join(self.log))
            self.log.append(line)

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self, signalled: bool = False) -> int:
        """SIGTERM the server (unless already sent) and wait for it to exit."""
        if not signalled and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(30)
        finally:
            if self.process.poll() is None:
                self.process.kill()
        if self.process.stderr:
            self.log.append(self.process.stderr.read())
        return code


def _chunks(count: int, delay: float, sent: list[int]) -> Iterator[pb.ParseStreamRequest]:
    for i in range(count):
        chunk = {"id": "c1", "choices": [{"index": 0, "delta": {"content": f"{i} "}}]}
        request = pb.ParseStreamRequest(chunk_json=json.dumps(chunk))
        if i == 0:
            request.provider = pb.PROVIDER_OPENAI
        sent.append(i)
        yield request
        time.sleep(delay)


def test_sigterm_lets_an_in_flight_parse_stream_complete() -> None:
    served = Served("--grace", "10")
    signalled = False
    try:
        with grpc.insecure_channel(served.target) as channel:
            stub = pb_grpc.FormatterServiceStub(channel)
            sent: list[int] = []
            call = stub.ParseStream(_chunks(20, 0.05, sent), timeout=30)
            first = next(call)
            assert first.result.msg.blocks.items
            served.process.send_signal(signal.SIGTERM)
            signalled = True
            rest = list(call)
        assert rest[-1].done
        assert rest[-1].result.msg.blocks.items[0].text.text.startswith("0 1 2")
        assert len(sent) == 20
    finally:
        code = served.stop(signalled)
    assert code == 0, "".join(served.log)
    assert any("draining" in line for line in served.log)


def test_two_workers_share_the_port() -> None:
    served = Served("--workers", "2", listeners=2)
    try:
        pids = set()
        for _ in range(60):
            # A fresh connection each time, for the kernel to spread.
            with grpc.insecure_channel(
                served.target, options=[("grpc.use_local_subchannel_pool", 1)]
            ) as channel:
                stub = pb_grpc.FormatterServiceStub(channel)
                _, call = stub.Parse.with_call(
                    pb.ParseRequest(provider=pb.PROVIDER_OLLAMA, response_json=OLLAMA_REPLY),
                    timeout=10,
                )
                pids.update(v for k, v in call.initial_metadata() if k == "x-worker-pid")
            if len(pids) == 2:
                break
        assert len(pids) == 2, pids
    finally:
        code = served.stop()
    assert code == 0, "".join(served.log)


def _write(path: Path, value: object) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def test_format_command_in_process(tmp_path: Path) -> None:
    conversation = _write(
        tmp_path / "conversation.json",
        [
            {"name": "system", "role": "system", "content": "Be brief."},
            {"name": "user", "role": "user", "content": "Hi"},
        ],
    )
    result = subprocess.run(
        [*COMMAND, "format", "--provider", "anthropic", str(conversation)],
        capture_output=True,
        text=True,
        check=True,
    )
    body = json.loads(result.stdout)
    assert body["system"] == [{"type": "text", "text": "Be brief."}]
    assert body["messages"][0]["role"] == "user"


def test_format_command_reports_bad_input(tmp_path: Path) -> None:
    conversation = _write(tmp_path / "c.json", [{"name": "u", "role": "robot", "content": "x"}])
    assert "role" in _user_error("format", "--provider", "openai", str(conversation))


def test_format_command_reads_stdin() -> None:
    conversation = json.dumps([{"name": "user", "role": "user", "content": "Hi"}])
    result = subprocess.run(
        [*COMMAND, "format", "--provider", "openai", "-"],
        input=conversation,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(result.stdout)["messages"][0]["content"][0]["text"] == "Hi"


def test_parse_command_reads_stdin() -> None:
    result = subprocess.run(
        [*COMMAND, "parse", "--provider", "ollama", "-"],
        input=OLLAMA_REPLY,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(result.stdout)["content"] == [{"type": "text", "text": "hi"}]


def _user_error(*args: str, stdin: str = "", code: int = 2) -> str:
    """Run the command expecting a user error: its exit code, one stderr line, no traceback."""
    result = subprocess.run([*COMMAND, *args], input=stdin, capture_output=True, text=True)
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("agentscope-proto: error: ")
    assert result.stdout == ""
    return lines[0]


@pytest.mark.parametrize("command", ["format", "parse"])
def test_a_missing_file_is_one_line(command: str, tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    line = _user_error(command, "--provider", "openai", str(missing))
    assert f"{missing}: no such file" in line


def test_a_directory_is_one_line(tmp_path: Path) -> None:
    line = _user_error("parse", "--provider", "openai", str(tmp_path))
    assert "is a directory" in line


@pytest.mark.parametrize("stdin", [False, True])
def test_invalid_json_is_one_line(stdin: bool, tmp_path: Path) -> None:
    bad = '[{"name": "u",\n'
    path = tmp_path / "bad.json"
    path.write_text(bad, encoding="utf-8")
    source = "-" if stdin else str(path)
    line = _user_error("format", "--provider", "openai", source, stdin=bad)
    assert "invalid JSON" in line
    assert "line 2" in line
    assert ("stdin" if stdin else str(path)) in line


def test_invalid_tools_json_is_one_line(tmp_path: Path) -> None:
    conversation = _write(tmp_path / "c.json", [{"name": "u", "role": "user", "content": "x"}])
    tools = tmp_path / "tools.json"
    tools.write_text("not json", encoding="utf-8")
    line = _user_error("format", "--provider", "openai", "--tools", str(tools), str(conversation))
    assert f"{tools}: invalid JSON" in line


def _in_process(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The command run in this process: (exit code, stdout, stderr)."""
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_tools_are_inline_json_a_file_or_stdin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conversation = str(_write(tmp_path / "c.json", [{"name": "u", "role": "user", "content": "x"}]))
    tools = [{"type": "function", "function": {"name": "f"}}]
    inline = json.dumps(tools)
    for given in (inline, f"  {inline}", str(_write(tmp_path / "tools.json", tools))):
        code, out, err = _in_process(
            capsys, "format", "--provider", "openai", "--tools", given, conversation
        )
        assert (code, err) == (0, "")
        assert json.loads(out)["tools"][0]["function"]["name"] == "f"
    code, out, _ = _in_process(
        capsys, "format", "--provider", "openai", "--tools", "[]", conversation
    )
    assert code == 0
    code, _, err = _in_process(
        capsys, "format", "--provider", "openai", "--tools", "[1", conversation
    )
    assert code == 2
    assert err.strip() == (
        "agentscope-proto: error: --tools: invalid JSON: Expecting ',' delimiter (line 1, column 3)"
    )
    code, _, err = _in_process(
        capsys, "format", "--provider", "openai", "--tools", "nope.json", conversation
    )
    assert (code, err.strip()) == (2, "agentscope-proto: error: nope.json: no such file")
    schema = '{"type": "object", "properties": {}}'
    code, out, _ = _in_process(
        capsys, "format", "--provider", "openai", "--response-schema", schema, conversation
    )
    assert code == 0
    assert json.loads(out)["response_format"]["json_schema"]["schema"] == json.loads(schema)


def test_the_help_says_how_tools_are_given(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _in_process(capsys, "format", "--help")
    assert code == 0
    help_text = " ".join(out.split())
    assert "--tools JSON|FILE" in help_text
    assert "a JSON list, inline ('[...]') or in a FILE ('-': stdin)" in help_text


@pytest.mark.parametrize("text", ['{"choices": [', "{nope", "", '[{"a": 1}'])
def test_format_and_parse_word_invalid_json_alike(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(text, encoding="utf-8")
    said = {
        command: _in_process(capsys, command, "--provider", "openai", str(bad))
        for command in ("format", "parse")
    }
    assert said["format"] == said["parse"]
    code, out, err = said["format"]
    assert (code, out) == (2, "")
    assert err.startswith(f"agentscope-proto: error: {bad}: invalid JSON: ")
    assert "(line 1, column " in err or err.endswith("invalid JSON: empty text\n")


def test_a_conversation_that_is_not_a_list_is_one_line() -> None:
    line = _user_error("format", "--provider", "openai", "-", stdin='{"name": "u"}')
    assert "expected a JSON list of messages" in line


def test_an_unknown_provider_is_one_line_listing_the_choices() -> None:
    line = _user_error("format", "--provider", "nope", "-")
    assert "invalid choice: 'nope'" in line
    for name in PROVIDERS:
        assert repr(name) in line


def test_an_unknown_option_is_one_line() -> None:
    conversation = json.dumps([{"name": "u", "role": "user", "content": "x"}])
    line = _user_error(
        "format", "--provider", "openai", "--option", "bogus=1", "-", stdin=conversation
    )
    assert "bogus" in line
    line = _user_error("format", "--provider", "openai", "--option", "=1", "-", stdin=conversation)
    assert "KEY=JSON" in line


def test_a_missing_command_is_one_line() -> None:
    assert "required" in _user_error()


def test_an_unset_token_variable_is_one_line() -> None:
    env_name = "AGENTSCOPE_PROTO_TEST_UNSET_TOKEN"
    assert env_name not in os.environ
    line = _user_error(
        "parse",
        "--provider",
        "ollama",
        "--target",
        "127.0.0.1:1",
        "--token-env",
        env_name,
        "-",
        stdin=OLLAMA_REPLY,
    )
    assert env_name in line


def test_an_unreachable_server_is_one_line() -> None:
    port = _free_port()
    line = _user_error(
        "parse",
        "--provider",
        "ollama",
        "--target",
        f"127.0.0.1:{port}",
        "-",
        stdin=OLLAMA_REPLY,
        code=1,
    )
    assert "UNAVAILABLE" in line


def test_a_port_in_use_is_one_line() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        line = _user_error("serve", "--port", str(port), code=1)
    assert f"cannot listen on 127.0.0.1:{port}" in line
    assert "in use" in line


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--workers", "0"], "--workers must be at least 1"),
        (["--workers", "2", "--port", "0"], "fixed --port"),
        (["--port", "0", "--tls-cert", "/nonexistent/cert.pem"], "--tls-cert"),
        (["--port", "0", "--allow-network", "not-a-cidr"], "--allow-network"),
        (["--port", "many"], "argument --port: invalid port: 'many'"),
    ],
)
def test_serve_flag_errors_are_one_line(flags: list[str], expected: str) -> None:
    assert expected in _user_error("serve", *flags)


@pytest.mark.parametrize(
    ("command", "flag", "value"),
    [
        ("serve", "--port", "99999"),
        ("serve", "--port", "-5"),
        ("serve", "--http-port", "70000"),
        ("serve-agent", "--port", "65536"),
        ("serve-agent", "--a2a-port", "70000"),
        ("serve-agent", "--a2a-grpc-port", "-1"),
    ],
)
def test_a_port_out_of_range_is_one_line_naming_its_flag(
    command: str, flag: str, value: str
) -> None:
    factory = ["json:loads"] if command == "serve-agent" else []
    line = _user_error(command, *factory, flag, value)
    assert f"argument {flag}: {value}: expected 0 (any free port) to 65535" in line


@pytest.mark.parametrize(
    "command",
    [
        ["hub", "subscribe", "room"],
        ["hub", "publish", "room", "{}"],
        ["parse", "--provider", "openai", "{}"],
    ],
)
def test_a_target_port_out_of_range_is_one_line(command: list[str]) -> None:
    line = _user_error(*command, "--target", "127.0.0.1:99999")
    assert "argument --target: 127.0.0.1:99999: expected a port from 1 to 65535" in line


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A certificate and its key, another key, and files that are neither."""
    folder = tmp_path_factory.mktemp("tls")
    ca = trustme.CA()
    issued = ca.issue_cert("localhost")
    issued.cert_chain_pems[0].write_to_path(str(folder / "cert.pem"))
    issued.private_key_pem.write_to_path(str(folder / "key.pem"))
    trustme.CA().issue_cert("localhost").private_key_pem.write_to_path(str(folder / "other.pem"))
    (folder / "text.pem").write_text("not a certificate\n")
    garbled = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
    (folder / "garbled.pem").write_text(garbled)
    return folder


@pytest.mark.parametrize("command", ["serve", "serve-agent"])
@pytest.mark.parametrize(
    ("cert", "key", "client_ca", "expected"),
    [
        ("text.pem", "key.pem", None, "--tls-cert {d}/text.pem: not a PEM certificate"),
        ("garbled.pem", "key.pem", None, "--tls-cert {d}/garbled.pem: not a PEM certificate"),
        ("cert.pem", "other.pem", None, "--tls-key {d}/other.pem: does not match --tls-cert"),
        ("cert.pem", "text.pem", None, "--tls-key {d}/text.pem: not a PEM private key"),
        ("cert.pem", "missing.pem", None, "--tls-key {d}/missing.pem: no such file"),
        ("cert.pem", "key.pem", "text.pem", "--tls-client-ca {d}/text.pem: not a PEM certificate"),
    ],
)
def test_a_bad_tls_file_is_named_before_binding(
    tls_files: Path,
    command: str,
    cert: str,
    key: str,
    client_ca: str | None,
    expected: str,
) -> None:
    flags = ["--tls-cert", str(tls_files / cert), "--tls-key", str(tls_files / key)]
    if client_ca is not None:
        flags += ["--tls-client-ca", str(tls_files / client_ca)]
    factory = ["json:loads"] if command == "serve-agent" else []
    line = _user_error(command, *factory, "--port", "0", *flags)
    assert expected.format(d=tls_files) in line
    assert "bind" not in line


def test_parse_command_through_a_server(tmp_path: Path) -> None:
    case = json.loads((GOLDEN / "parsers" / "anthropic.json").read_text())["cases"][0]
    response = _write(tmp_path / "response.json", case["response"])
    served = Served()
    try:
        result = subprocess.run(
            [
                *COMMAND,
                "parse",
                "--provider",
                "anthropic",
                "--target",
                served.target,
                str(response),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        served.stop()
    assert json.loads(result.stdout)["content"] == case["expected"]["content"]


def test_parse_command_reads_a_raw_sse_stream(tmp_path: Path) -> None:
    case = next(
        c
        for c in json.loads((GOLDEN / "parsers" / "openai.json").read_text())["cases"]
        if c["stream"] and "error" not in c["expected"] and default_options(c)
    )
    raw = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in case["chunks"]) + "data: [DONE]\n\n"
    body = tmp_path / "stream.sse"
    body.write_text(raw, encoding="utf-8")
    result = subprocess.run(
        [*COMMAND, "parse", "--provider", "openai", "--stream", str(body)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ},
    )
    assert json.loads(result.stdout)["content"] == case["expected"]["final"]["content"]


def _help(*args: str) -> str:
    result = subprocess.run([*COMMAND, *args, "--help"], capture_output=True, text=True, check=True)
    return " ".join(result.stdout.split())  # argparse wraps to the terminal width


def test_help() -> None:
    text = _help()
    for command in ("serve", "serve-agent", "format", "parse"):
        assert command in text


@pytest.mark.parametrize("command", ["format", "parse"])
def test_provider_help_lists_the_registry(command: str) -> None:
    assert "--provider {" + ",".join(sorted(PROVIDERS)) + "}" in _help(command)


def test_serve_help_shows_defaults() -> None:
    text = _help("serve")
    for flag, default in [
        ("--host HOST", "127.0.0.1"),
        ("--port PORT", "50051"),
        ("--workers WORKERS", "1"),
        ("--grace GRACE", "10.0"),
        ("--max-blocks MAX_BLOCKS", "100000"),
        ("--log-level {debug,info,warning,error}", "info"),
    ]:
        section = text.split(flag)[-1]
        assert section.split("--")[0].rstrip().endswith(f"(default: {default})"), flag
    # No noise for flags without a meaningful default.
    assert "(default: None)" not in text
    assert "(default: False)" not in text


def test_version() -> None:
    result = subprocess.run([*COMMAND, "--version"], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == f"agentscope-proto {__version__}"


def test_limit_flags_reach_the_server() -> None:
    served = Served("--max-blocks", "2")
    try:
        blocks = [{"type": "text", "text": str(i)} for i in range(3)]
        request = pb.FormatRequest(provider=pb.PROVIDER_OPENAI)
        request.messages.append(from_dict({"name": "u", "role": "user", "content": blocks}))
        with grpc.insecure_channel(served.target) as channel:
            stub = pb_grpc.FormatterServiceStub(channel)
            with pytest.raises(grpc.RpcError) as caught:
                stub.Format(request, timeout=10)
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    finally:
        served.stop()


@pytest.mark.parametrize(
    ("spec", "expected", "code"),
    [
        ("no_colon", "expected MODULE:FACTORY", 2),
        ("no_such_module_here:make", "cannot import 'no_such_module_here'", 2),
        ("json:no_such_factory", "module json has no 'no_such_factory'", 2),
        ("json:__name__", "not callable (a str)", 2),
        ("builtins:object", "expected an AgentScope agent", 2),
        ("json:loads", "making an agent failed: TypeError(", 1),
    ],
)
def test_serve_agent_factory_errors_are_one_line(spec: str, expected: str, code: int) -> None:
    assert expected in _user_error("serve-agent", spec, "--port", "0", code=code)


def test_serve_agent_imports_its_module_from_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "my_agents.py").write_text("def make():\n    return 42\n", encoding="utf-8")
    result = subprocess.run(
        [*COMMAND, "serve-agent", "my_agents:make", "--port", "0"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 2
    assert "my_agents:make: expected an AgentScope agent" in result.stderr
    assert "got a builtins.int" in result.stderr


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--max-sessions", "0"], "--max-sessions must be at least 1"),
        (["--session-idle-seconds", "0"], "--session-idle-seconds must be more than 0"),
        (["--tls-cert", "/nonexistent/cert.pem"], "--tls-cert"),
        (["--topic", "room"], "--topic needs a hub: --hub memory or --hub redis://..."),
        (["--topic", "room", "--hub", "none"], "--topic needs a hub"),
        (["--reply-to", "users"], "--reply-to needs --topic"),
        (["--topic", "room", "--hub", "memory", "--reply-to", "all"], "invalid choice: 'all'"),
        (["--topic", "a{b}", "--hub", "memory"], "--topic: expected 1 to 256 ASCII letters"),
        (["--topic", "r" * 123, "--hub", "memory"], "--topic: at most 122 characters"),
    ],
)
def test_serve_agent_flag_errors_are_one_line(flags: list[str], expected: str) -> None:
    assert expected in _user_error("serve-agent", "json:loads", "--port", "0", *flags)
