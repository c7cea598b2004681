"""One verdict on every path: the same input gets the same answer from Python
(`format()`, `parse()`), the CLI, the gRPC service and its Connect (HTTP +
JSON) twin.

Each input of the corpus goes through all four: for Format
(`adversarial_inputs.verdict_corpus`) bad names and tools, inline media without
a media type and every hand-built block of the adversarial suite, user and
assistant; for Parse (`parse_corpus`) responses wrong as a whole on every
provider and golden responses with odd values put in. An error must have the
same exception class (gRPC's and Connect's `ErrorInfo.reason`), field path
(their `BadRequest` field, `PreconditionFailure` or `QuotaFailure` subject) and
reason (clipped, on the wire, as long texts are), and gRPC and Connect the same
code; the CLI's one line is `path: reason` as Python words it (naming its file
where the whole response is wrong). A body must be the same JSON with the same
warnings, a parse result the same result.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import struct
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from google.rpc import code_pb2, error_details_pb2
from grpc_status import rpc_status

from agentscope_proto import cli, errors
from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto._generated.agentscope.formatter.v1 import (
    formatter_service_pb2_grpc as pb_grpc,
)
from agentscope_proto.formatting import body_to_json, format
from agentscope_proto.parsing import StreamParser, parse
from agentscope_proto.providers import provider_enum
from agentscope_proto.service import ServerConfig
from agentscope_proto.service.status import _clip

from adversarial_inputs import (
    SNIFFABLE,
    ParseCase,
    StreamCase,
    VerdictCase,
    parse_corpus,
    stream_corpus,
    verdict_corpus,
)
from server_harness import RunningServer

CORPUS = verdict_corpus()
PARSE_CORPUS = parse_corpus()
STREAM_CORPUS = stream_corpus()
FORMAT = "/agentscope.formatter.v1.FormatterService/Format"
PARSE = "/agentscope.formatter.v1.FormatterService/Parse"
_DETAILS = {
    "google.rpc.ErrorInfo": error_details_pb2.ErrorInfo,
    "google.rpc.BadRequest": error_details_pb2.BadRequest,
    "google.rpc.PreconditionFailure": error_details_pb2.PreconditionFailure,
    "google.rpc.QuotaFailure": error_details_pb2.QuotaFailure,
}


@dataclass(frozen=True)
class Verdict:
    """What a path answered: an error (class, path, reason) or a body and its warnings."""

    error: str | None = None  # the exception class
    path: str = ""
    reason: str = ""
    body: Any = None
    warnings: tuple[tuple[str, str], ...] = ()


class Paths:
    """The gRPC server and its Connect twin, on free ports in one event loop."""

    def __init__(self) -> None:
        self.server = RunningServer(ServerConfig(port=0)).start()
        self.channel = grpc.insecure_channel(self.server.target)
        self.stub = pb_grpc.FormatterServiceStub(self.channel)
        self.http: Any = None
        try:
            from agentscope_proto.service import connect
        except ImportError:  # the http extra needs Python 3.11
            return
        self.http = self.server.call(connect.start_http(self.server.config, 0))

    def stop(self) -> None:
        self.channel.close()
        if self.http is not None:
            self.server.call(self.http.stop(0))
        self.server.stop()


@pytest.fixture(scope="module")
def paths() -> Iterator[Paths]:
    running = Paths()
    yield running
    running.stop()


def _request(case: VerdictCase) -> pb.FormatRequest:
    request = pb.FormatRequest(
        provider=provider_enum(case.provider), messages=case.msgs, multi_agent=case.multi_agent
    )
    if case.tools is not None:
        request.tools_json = json.dumps(case.tools)
    if case.tool_choice is not None:
        request.tool_choice = case.tool_choice
    if case.fidelity == "provider":
        request.options.fidelity = pb.FIDELITY_PROVIDER
    return request


def _warnings(warnings: Any) -> tuple[tuple[str, str], ...]:
    return tuple((w.path, w.message) for w in warnings)


def _clipped(verdict: Verdict) -> Verdict:
    """`verdict` as a status carries it: long reasons are clipped to fit in the trailers."""
    return replace(verdict, reason=_clip(verdict.reason))


def _python(case: VerdictCase) -> Verdict:
    try:
        body = format(
            case.provider,
            list(case.msgs),
            tools=case.tools,
            tool_choice=case.tool_choice,
            fidelity=case.fidelity,
            multi_agent=case.multi_agent,
        )
    except errors.AgentScopeProtoError as exc:
        return _error(exc)
    return Verdict(body=json.loads(body_to_json(body)), warnings=_warnings(body.warnings))


def _error(exc: errors.AgentScopeProtoError) -> Verdict:
    # What a status carries: the path, and the reason (the whole text where there is none).
    reason = getattr(exc, "reason", None) or str(exc)
    return Verdict(type(exc).__name__, getattr(exc, "path", ""), reason)


def _from_details(details: list[Any]) -> tuple[str, str]:
    """(ErrorInfo.reason, the one field or subject) of a status's details."""
    reason, fields = "", []
    for detail in details:
        if isinstance(detail, error_details_pb2.ErrorInfo):
            reason = detail.reason
        elif isinstance(detail, error_details_pb2.BadRequest):
            fields += [v.field for v in detail.field_violations]
        else:
            fields += [v.subject for v in detail.violations]
    assert len(fields) == 1, details
    return reason, fields[0]


def _grpc_call(call: Any, request: Any, answer: Any) -> tuple[Verdict, str]:
    try:
        reply = call(request, timeout=30)
    except grpc.RpcError as error:
        status = rpc_status.from_call(error)  # type: ignore[arg-type]
    else:
        return answer(reply), "ok"
    assert status is not None, "a status without details"
    details = [_DETAILS[d.TypeName()].FromString(d.value) for d in status.details]
    return _status_verdict(details, status.message), code_pb2.Code.Name(status.code).lower()


def _status_verdict(details: list[Any], message: str) -> Verdict:
    kind, path = _from_details(details)
    return Verdict(kind, path, message.removeprefix(f"{path}: ") if path else message)


def _unbase64(text: str) -> bytes:
    return base64.b64decode(text + "=" * (-len(text) % 4))


def _connect_call(paths: Paths, method: str, request: Any, answer: Any) -> tuple[Verdict, str]:
    post = urllib.request.Request(
        f"http://{paths.server.config.host}:{paths.http.port}{method}",
        data=json_format.MessageToJson(request).encode(),
        headers={"content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(post, timeout=30) as response:
            reply = json_format.Parse(response.read(), _REPLIES[method]())
    except urllib.error.HTTPError as error:
        error_body = json.loads(error.read())
        details = [
            _DETAILS[d["type"]].FromString(_unbase64(d["value"]))
            for d in error_body.get("details", [])
        ]
        return _status_verdict(details, error_body["message"]), error_body["code"]
    return answer(reply), "ok"


_REPLIES = {FORMAT: pb.FormatResponse, PARSE: pb.ParseResponse}


def _format_answer(reply: pb.FormatResponse) -> Verdict:
    return Verdict(body=json.loads(reply.body_json), warnings=_warnings(reply.warnings))


def _grpc(paths: Paths, case: VerdictCase) -> tuple[Verdict, str]:
    return _grpc_call(paths.stub.Format, _request(case), _format_answer)


def _connect(paths: Paths, case: VerdictCase) -> tuple[Verdict, str]:
    return _connect_call(paths, FORMAT, _request(case), _format_answer)


def _cli(case: VerdictCase, tmp_path: Path) -> tuple[int, str, str]:
    """The CLI in-process: (exit code, stdout, stderr)."""
    conversation = tmp_path / "conversation.json"
    conversation.write_text(json.dumps([json_format.MessageToDict(m) for m in case.msgs]))
    argv = ["format", "--provider", case.provider, "--fidelity", case.fidelity, str(conversation)]
    if case.tools is not None:
        (tmp_path / "tools.json").write_text(json.dumps(case.tools))
        argv += ["--tools", str(tmp_path / "tools.json")]
    if case.tool_choice is not None:
        argv += ["--tool-choice", case.tool_choice]
    if case.multi_agent:
        argv.append("--multi-agent")
    return _run_cli(argv)


def _run_cli(argv: list[str]) -> tuple[int, str, str]:
    """`agentscope-proto ARGV` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            cli.main(argv)
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def _cli_agrees(case: VerdictCase, expected: Verdict, tmp_path: Path) -> None:
    code, out, err = _cli(case, tmp_path)
    lines = err.splitlines()
    if expected.error is None:
        assert code == 0, err
        assert json.loads(out) == expected.body
        assert lines == [f"warning: {path}: {message}" for path, message in expected.warnings]
        return
    assert code == 2, (code, err)
    assert len(lines) == 1, lines
    said = f"{expected.path}: {expected.reason}" if expected.path else expected.reason
    # The CLI prints one line: the same text with its whitespace runs joined.
    assert lines[0] == f"{cli.PROG}: error: {' '.join(said.split())}"


@pytest.mark.parametrize("case", CORPUS, ids=[case.id for case in CORPUS])
def test_every_path_gives_the_same_verdict(case: VerdictCase, paths: Paths, tmp_path: Path) -> None:
    expected = _python(case)
    grpc_verdict, grpc_code = _grpc(paths, case)
    assert grpc_verdict == _clipped(expected)
    if paths.http is not None:
        assert _connect(paths, case) == (grpc_verdict, grpc_code)
    _cli_agrees(case, expected, tmp_path)


def test_the_corpus_has_both_outcomes_and_every_path() -> None:
    verdicts = [_python(case) for case in CORPUS]
    errors_seen = {v.error for v in verdicts} - {None}
    assert {"FormatError", "MessageFormatError"} <= errors_seen
    assert sum(v.error is None for v in verdicts) > 100
    # Without the http extra the Connect path is not checked: say so.
    pytest.importorskip("agentscope_proto.service.connect", reason="the http extra")


@pytest.mark.parametrize("kind", sorted(SNIFFABLE))
@pytest.mark.parametrize("fidelity", ["agentscope", "provider"])
def test_inline_media_without_a_type_is_typed_by_its_bytes(kind: str, fidelity: str) -> None:
    data, media_type = SNIFFABLE[kind]
    encoded = base64.b64encode(data).decode()
    for case in CORPUS:
        if case.label != f"{kind} typed by its bytes" or case.fidelity != fidelity:
            continue
        verdict = _python(case)
        assert not verdict.path.endswith("media_type"), case.id
        text = json.dumps(verdict.body)
        # Where the body carries the bytes it names their type (OpenAI's
        # input audio as a `format`; Ollama's `images` are bare base64), and
        # never an empty one.
        if encoded in text and (kind, case.provider) != ("image", "ollama"):
            subtype = media_type.split("/")[1]
            assert media_type in text or f'"format": "{subtype}"' in text, case.id
        assert '"data:;' not in text, case.id
        assert '""' not in text, case.id


def test_inline_media_that_names_no_type_is_refused_naming_the_field() -> None:
    refused = [c for c in CORPUS if "without media type" in c.label and "PNG" not in c.label]
    assert len(refused) > 50
    for case in refused:
        verdict = _python(case)
        assert verdict.error == "MessageFormatError", case.id
        where = "content[0].output[0]" if "tool result" in case.label else "content[0]"
        assert verdict.path == f"messages[0].{where}.source.media_type", case.id
    wrong_kind = [c for c in CORPUS if c.label == "audio bytes in an image block"]
    assert {_python(c).error for c in wrong_kind} == {"MessageFormatError"}


def test_the_cli_in_a_subprocess_says_the_same(tmp_path: Path) -> None:
    """The in-process CLI above is the real command: one run as a process to be sure."""
    case = next(c for c in CORPUS if c.label == "second message without name")
    code, _, err = _cli(case, tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentscope_proto",
            "format",
            "--provider",
            case.provider,
            str(tmp_path / "conversation.json"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (code, err)


# -- Parse ---------------------------------------------------------------------------


def _parse_request(case: ParseCase) -> pb.ParseRequest:
    request = pb.ParseRequest(provider=provider_enum(case.provider), response_json=case.response)
    if case.fidelity == "provider":
        request.options.fidelity = pb.FIDELITY_PROVIDER
    return request


def _result(result: pb.ParseResult) -> dict[str, Any]:
    """A parse result as JSON, without what each call makes anew (the message's id and time)."""
    data = json_format.MessageToDict(result)
    for key in ("id", "timestamp"):
        data.get("msg", {}).pop(key, None)
    return data


def _python_parse(case: ParseCase) -> tuple[Verdict, Any]:
    """Python's verdict, and its result (for the CLI's document)."""
    try:
        result = parse(case.provider, case.response, fidelity=case.fidelity)
    except errors.AgentScopeProtoError as exc:
        return _error(exc), None
    return Verdict(body=_result(result.to_proto())), result


def _parse_answer(reply: pb.ParseResponse) -> Verdict:
    return Verdict(body=_result(reply.result))


def _cli_parse_agrees(case: ParseCase, expected: Verdict, result: Any, tmp_path: Path) -> None:
    response = tmp_path / "response.json"
    response.write_text(case.response, encoding="utf-8")
    argv = ["parse", "--provider", case.provider, "--fidelity", case.fidelity, str(response)]
    code, out, err = _run_cli(argv)
    if expected.error is None:
        assert (code, err) == (0, "")
        assert json.loads(out) == json.loads(json.dumps(cli._result_json(result)))
        return
    assert code == 2, (code, err)
    # A response wrong as a whole is named by the file the CLI read.
    where = str(response) if expected.path == "response" else expected.path
    said = f"{where}: {expected.reason}" if where else expected.reason
    assert err.splitlines() == [f"{cli.PROG}: error: {' '.join(said.split())}"]


@pytest.mark.parametrize("case", PARSE_CORPUS, ids=[case.id for case in PARSE_CORPUS])
def test_every_path_parses_alike(case: ParseCase, paths: Paths, tmp_path: Path) -> None:
    expected, result = _python_parse(case)
    grpc_verdict, grpc_code = _grpc_call(paths.stub.Parse, _parse_request(case), _parse_answer)
    assert grpc_verdict == _clipped(expected)
    if paths.http is not None:
        connect = _connect_call(paths, PARSE, _parse_request(case), _parse_answer)
        assert connect == (grpc_verdict, grpc_code)
    _cli_parse_agrees(case, expected, result, tmp_path)


def test_the_parse_corpus_has_both_outcomes() -> None:
    verdicts = [_python_parse(case)[0] for case in PARSE_CORPUS]
    assert {"ParseError", "ProviderError"} <= {v.error for v in verdicts}
    assert sum(v.error is None for v in verdicts) >= 14


# -- ParseStream -----------------------------------------------------------------------

PARSE_STREAM = "/agentscope.formatter.v1.FormatterService/ParseStream"


def _stream_requests(case: StreamCase) -> list[pb.ParseStreamRequest]:
    requests = [pb.ParseStreamRequest(chunk_json=chunk) for chunk in case.chunks]
    requests[0].provider = provider_enum(case.provider)
    if case.fidelity == "provider":
        requests[0].options.fidelity = pb.FIDELITY_PROVIDER
    return requests


def _python_stream(case: StreamCase) -> tuple[Verdict, Any]:
    """Python's verdict on the whole stream, and its last result (for the CLI)."""
    parser = StreamParser(case.provider, fidelity=case.fidelity)
    try:
        for chunk in case.chunks:
            parser.feed(chunk)
        result = parser.finish()
    except errors.AgentScopeProtoError as exc:
        return _error(exc), None
    return Verdict(body=_result(result.to_proto())), result


def _grpc_stream(paths: Paths, case: StreamCase) -> tuple[Verdict, str]:
    replies: list[pb.ParseStreamResponse] = []
    try:
        for reply in paths.stub.ParseStream(iter(_stream_requests(case)), timeout=30):
            replies.append(reply)
    except grpc.RpcError as error:
        status = rpc_status.from_call(error)  # type: ignore[arg-type]
        assert status is not None, "a status without details"
        details = [_DETAILS[d.TypeName()].FromString(d.value) for d in status.details]
        return _status_verdict(details, status.message), code_pb2.Code.Name(status.code).lower()
    return Verdict(body=_result(replies[-1].result)), "ok"


def _connect_stream(paths: Paths, case: StreamCase) -> tuple[Verdict, str]:
    frames = b"".join(
        struct.pack(">BI", 0, len(data)) + data
        for data in (json_format.MessageToJson(r).encode() for r in _stream_requests(case))
    )
    post = urllib.request.Request(
        f"http://{paths.server.config.host}:{paths.http.port}{PARSE_STREAM}",
        data=frames,
        headers={"content-type": "application/connect+json"},
    )
    with urllib.request.urlopen(post, timeout=30) as response:
        body = response.read()
    replies, end, index = [], {}, 0
    while index < len(body):
        flags, size = struct.unpack(">BI", body[index : index + 5])
        message = json.loads(body[index + 5 : index + 5 + size])
        index += 5 + size
        if flags & 2:
            end = message
        else:
            replies.append(json_format.ParseDict(message, pb.ParseStreamResponse()))
    if "error" in end:
        error = end["error"]
        details = [
            _DETAILS[d["type"]].FromString(_unbase64(d["value"])) for d in error.get("details", [])
        ]
        return _status_verdict(details, error["message"]), error["code"]
    return Verdict(body=_result(replies[-1].result)), "ok"


def _cli_stream_agrees(case: StreamCase, expected: Verdict, result: Any, tmp_path: Path) -> None:
    events = tmp_path / "events.json"
    events.write_text(json.dumps(list(case.chunks)), encoding="utf-8")
    argv = ["parse", "--stream", "--provider", case.provider, "--fidelity", case.fidelity]
    code, out, err = _run_cli([*argv, str(events)])
    if expected.error is None:
        assert (code, err) == (0, "")
        assert json.loads(out) == json.loads(json.dumps(cli._result_json(result)))
        return
    assert code == 2, (code, err)
    said = f"{expected.path}: {expected.reason}" if expected.path else expected.reason
    assert err.splitlines() == [f"{cli.PROG}: error: {' '.join(said.split())}"]


@pytest.mark.parametrize("case", STREAM_CORPUS, ids=[case.id for case in STREAM_CORPUS])
def test_every_path_parses_a_stream_alike(case: StreamCase, paths: Paths, tmp_path: Path) -> None:
    expected, result = _python_stream(case)
    grpc_verdict, grpc_code = _grpc_stream(paths, case)
    assert grpc_verdict == _clipped(expected)
    if paths.http is not None:
        assert _connect_stream(paths, case) == (grpc_verdict, grpc_code)
    _cli_stream_agrees(case, expected, result, tmp_path)


def test_the_stream_corpus_has_both_outcomes() -> None:
    verdicts = [_python_stream(case)[0] for case in STREAM_CORPUS]
    assert "ParseError" in {v.error for v in verdicts}
    assert sum(v.error is None for v in verdicts) >= 14
