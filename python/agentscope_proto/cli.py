"""The `agentscope-proto` command: `serve`, `serve-agent`, `format`, `parse`, `hub`,
`attach` and `a2a`.

User errors (a missing or unreadable file, invalid JSON, a bad flag, a port
already in use, input the formatter rejects) end in one line on stderr,
`agentscope-proto: error: ...`, and a non-zero exit: 2 for bad arguments or
input, 1 when the environment is at fault (a busy port, an unreachable server).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import gc
import importlib
import importlib.util
import json
import logging
import os
import socket
import ssl
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from . import _json
from .errors import AgentScopeProtoError, MessageFormatError, ParseError
from .options import FIDELITIES, PROMPT_CACHES
from .providers import PROVIDERS
from .service.config import host_port

__all__ = ["main"]

PROG = "agentscope-proto"
STDIN = "-"
_MAX_PORT = 65535


class UserError(Exception):
    """A mistake in the command or its input: reported in one line, no traceback."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line (argparse prints the whole usage first)."""

    def error(self, message: str) -> NoReturn:
        _fail(f"{message} (see '{self.prog} --help')", 2)


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows a flag's default only when it says something (not None, False or [])."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.default in (None, False, []) or action.default is argparse.SUPPRESS:
            return action.help or ""
        return super()._get_help_string(action) or ""


def _fail(message: str, code: int) -> NoReturn:
    # One line even when an underlying message has several.
    print(f"{PROG}: error: {' '.join(message.split())}", file=sys.stderr)
    raise SystemExit(code)


def _port(text: str) -> int:
    """A port flag's value: 0 (any free port) to 65535. argparse names the
    flag in the error; an unchecked port would be bound modulo 65536."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port: {text!r}") from None
    if not 0 <= value <= _MAX_PORT:
        raise argparse.ArgumentTypeError(f"{value}: expected 0 (any free port) to {_MAX_PORT}")
    return value


def _target(text: str) -> str:
    """A --target (HOST:PORT, or another gRPC target): a port after the last
    ':' is 1 to 65535 (gRPC would connect to it modulo 65536)."""
    port = text.rpartition(":")[2]
    if port.lstrip("-").isdigit() and not 1 <= int(port) <= _MAX_PORT:
        raise argparse.ArgumentTypeError(f"{text}: expected a port from 1 to {_MAX_PORT}")
    return text


def _provider_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--provider",
        required=True,
        choices=sorted(PROVIDERS),
        help="the provider API",
    )


def _server_flags(p: argparse.ArgumentParser, port: int) -> None:
    """The flags every server command shares: address, size, TLS, auth, drain, logs."""
    p.add_argument("--host", default="127.0.0.1", help="address to bind")
    p.add_argument("--port", type=_port, default=port, help="port to bind (0: any free port)")
    p.add_argument("--max-message-mb", type=int, default=64, help="largest request/response")
    p.add_argument("--tls-cert", type=Path, help="server certificate (PEM)")
    p.add_argument("--tls-key", type=Path, help="server private key (PEM)")
    p.add_argument("--tls-client-ca", type=Path, help="require client certs signed by this CA")
    p.add_argument("--auth-token-env", metavar="NAME", help="env var holding the bearer token")
    p.add_argument("--grace", type=float, default=10.0, help="seconds to drain on SIGTERM")
    p.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="log threshold",
    )


def _hub_flags(p: argparse.ArgumentParser, default: str) -> None:
    """The HubService's flags (`serve` and `serve-agent` host it)."""
    p.add_argument(
        "--hub",
        metavar="URL",
        help="the HubService's store: memory, redis://HOST:PORT[/DB] (rediss://, unix://; "
        f"needs the redis extra) or none (default: {default})",
    )
    p.add_argument(
        "--hub-retention", type=int, default=10_000, help="messages each hub topic keeps"
    )
    p.add_argument(
        "--hub-retention-seconds",
        type=int,
        default=0,
        help="seconds each hub topic keeps a message at most, trimmed on its next publish "
        "(default 0: no age limit)",
    )
    p.add_argument(
        "--hub-max-msg-kb", type=int, default=1024, help="largest message a Publish may store"
    )
    p.add_argument(
        "--hub-max-subscribers", type=int, default=1000, help="Subscribe streams open at once"
    )
    p.add_argument(
        "--hub-max-publishers", type=int, default=1000, help="PublishStream streams open at once"
    )
    p.add_argument(
        "--hub-memory-mb", type=int, default=256, help="messages the memory hub keeps, all topics"
    )
    p.add_argument(
        "--hub-subscriber-buffer-mb",
        type=int,
        default=16,
        help="messages a Redis hub holds for one slow subscriber; beyond, it is ended "
        "RESOURCE_EXHAUSTED and resumes from its offset",
    )


def _serve_parser(sub: Any) -> None:
    p = sub.add_parser("serve", help="run the gRPC FormatterService", **_sub_options())
    _server_flags(p, 50051)
    p.add_argument(
        "--http-port",
        type=_port,
        help="also serve Connect (HTTP + JSON) here; needs the http extra",
    )
    p.add_argument("--workers", type=int, default=1, help="processes sharing the port")
    _media_flags(p, "allow reading local media under this dir")
    p.add_argument("--allow-download", action="store_true", help="allow fetching http(s) media")
    p.add_argument("--max-blocks", type=int, default=100_000, help="content blocks per request")
    p.add_argument(
        "--format-cache-mb", type=int, default=0, help="format cache per worker (0: off)"
    )
    p.add_argument(
        "--max-stream-messages", type=int, default=100_000, help="messages per ParseStream"
    )
    p.add_argument(
        "--max-stream-output-mb", type=int, default=1024, help="snapshot bytes per ParseStream"
    )
    p.add_argument(
        "--stream-idle-seconds", type=float, default=300.0, help="end a silent ParseStream"
    )
    _hub_flags(p, "memory; none with --workers > 1, where each worker would have a hub of its own")


def _media_flags(p: argparse.ArgumentParser, media_root_help: str) -> None:
    """What callers' media may make a server read and fetch (`serve`'s
    formatter, `serve-agent`'s screen)."""
    p.add_argument("--media-root", type=Path, help=media_root_help)
    p.add_argument("--max-media-mb", type=int, default=20, help="largest media file or download")
    p.add_argument(
        "--download-timeout", type=float, default=10.0, help="seconds one download may take"
    )
    p.add_argument(
        "--allow-network",
        action="append",
        default=[],
        metavar="CIDR",
        help="a private network downloads may reach (repeatable; default: public only)",
    )


def _serve_agent_parser(sub: Any) -> None:
    p = sub.add_parser(
        "serve-agent",
        help="serve an AgentScope agent (the gRPC AgentService)",
        description="Serve the agents FACTORY makes, one per session. MODULE is imported as "
        "`python -m` would (from the working directory); FACTORY is a zero-argument callable "
        "returning a new agent.",
        **_sub_options(),
    )
    p.add_argument("factory", metavar="MODULE:FACTORY", help="e.g. my_agents:make_assistant")
    _server_flags(p, 50052)
    p.add_argument("--description", help="what the agent is for (Describe)")
    p.add_argument("--agent-version", help="the agent's version (Describe)")
    p.add_argument("--max-sessions", type=int, default=1000, help="sessions held at once")
    p.add_argument(
        "--session-idle-seconds", type=float, default=3600.0, help="drop a session idle this long"
    )
    p.add_argument("--max-replies", type=int, default=64, help="replies running at once")
    p.add_argument(
        "--reply-log-mb",
        type=int,
        default=256,
        help="with --state memory, the most the kept reply logs hold (the oldest go first)",
    )
    p.add_argument(
        "--max-request-msgs", type=int, default=10_000, help="messages one Reply or Observe carries"
    )
    p.add_argument(
        "--state",
        default="memory",
        metavar="URL",
        help="where sessions live between calls: memory (this process) or redis://... "
        "(shared by replicas, kept across restarts; needs the redis extra)",
    )
    p.add_argument(
        "--lease-seconds",
        type=float,
        default=10.0,
        help="how long a replica that stopped answering holds the sessions it was running "
        "(and, with --topic, the topic it followed)",
    )
    p.add_argument(
        "--max-request-blocks",
        type=int,
        default=100_000,
        help="content blocks one Reply or Observe carries (tool results' included)",
    )
    _media_flags(
        p,
        "let callers cite local media under this dir (read by the server and handed to the "
        "agent as bytes; default: refused)",
    )
    _hub_flags(p, "none")
    p.add_argument(
        "--topic",
        help="take part in this hub topic (needs --hub): observe every message published "
        "there (session topic:TOPIC) and publish the agent's replies there",
    )
    p.add_argument(
        "--reply-to",
        choices=["mentions", "users", "none"],
        help="which topic messages the agent answers on its own: mentions (@NAME in the "
        "text), users (those and every user message) or none (default: mentions)",
    )
    _a2a_flags(p)
    p.add_argument(
        "--agui-port",
        type=_port,
        metavar="N",
        help="also serve the agent as an AG-UI agent here (POST a RunAgentInput to /, "
        "server-sent events back); needs the agui extra",
    )
    p.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a web page origin (scheme://host[:port]) whose browsers may call the A2A and "
        "AG-UI ports; repeat for several (default: none)",
    )


def _a2a_flags(p: argparse.ArgumentParser) -> None:
    """Serving the agent over A2A 1.0 too (the a2a extra)."""
    p.add_argument(
        "--a2a-port",
        type=_port,
        metavar="N",
        help="also serve the agent as an A2A 1.0 agent here: JSON-RPC, HTTP+JSON and its card "
        "(/.well-known/agent-card.json); needs the a2a extra",
    )
    p.add_argument("--a2a-grpc-port", type=_port, metavar="M", help="and A2A over gRPC here")
    p.add_argument(
        "--a2a-host", metavar="NAME", help="the host the agent card lists (default: --host)"
    )
    p.add_argument(
        "--a2a-max-tasks", type=int, default=10_000, help="finished A2A tasks kept for GetTask"
    )
    p.add_argument(
        "--a2a-card-max-age",
        type=int,
        default=300,
        metavar="SECONDS",
        help="how long callers may cache the agent card (Cache-Control max-age)",
    )


def _client_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", type=_target, help="host:port of a server (default: in-process)")
    p.add_argument("--token-env", metavar="NAME", help="env var holding the bearer token")


def _format_parser(sub: Any) -> None:
    p = sub.add_parser(
        "format", help="format a conversation into a provider request body", **_sub_options()
    )
    p.add_argument(
        "conversation", help="JSON list of AgentScope or ProtoJSON messages ('-': stdin)"
    )
    _provider_flag(p)
    p.add_argument("--multi-agent", action="store_true", help="AgentScope's multi-agent form")
    p.add_argument(
        "--tools",
        metavar="JSON|FILE",
        help="OpenAI-style tool schemas: a JSON list, inline ('[...]') or in a FILE ('-': stdin)",
    )
    p.add_argument("--tool-choice", help="auto, none, required or a tool name")
    p.add_argument(
        "--response-schema",
        metavar="JSON|FILE",
        help="JSON Schema of a structured output, inline ('{...}') or in a FILE ('-': stdin; "
        "openai, deepseek, openai_responses, gemini)",
    )
    p.add_argument("--response-schema-name", metavar="NAME", help="the schema's name (OpenAI)")
    p.add_argument("--media-root", type=Path, help="allow reading local media under this dir")
    p.add_argument(
        "--option", action="append", default=[], metavar="KEY=JSON", help="formatter option"
    )
    p.add_argument(
        "--request",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="request parameter written into the body: model, max_output_tokens, temperature, "
        "top_p, stop, seed, stream, extra_body (see docs/request-params.md)",
    )
    p.add_argument(
        "--fidelity",
        choices=FIDELITIES,
        default=None,
        help="agentscope: exact AgentScope 1.0.21 body; provider: a body the provider accepts "
        "(default: agentscope where AgentScope 1.0.21 has the provider, else provider)",
    )
    p.add_argument(
        "--prompt-cache",
        choices=PROMPT_CACHES,
        help="auto: prompt cache breakpoints where the provider recommends them "
        "(anthropic: the last turn, the system prompt, the tools)",
    )
    _client_args(p)


def _parse_parser(sub: Any) -> None:
    p = sub.add_parser("parse", help="parse a provider response into a message", **_sub_options())
    p.add_argument("response", help="response JSON; with --stream, chunks or raw SSE ('-': stdin)")
    _provider_flag(p)
    p.add_argument("--stream", action="store_true", help="a JSON list of events or a raw body")
    p.add_argument("--split-think-tags", action="store_true", help="<think> text as thinking")
    p.add_argument(
        "--fidelity",
        choices=FIDELITIES,
        default=None,
        help="provider: also keep citations, server tools, encrypted reasoning, grounding "
        "(default: agentscope where AgentScope 1.0.21 has the provider, else provider)",
    )
    _client_args(p)


def _hub_parser(sub: Any) -> None:
    p = sub.add_parser(
        "hub", help="publish to or subscribe to a topic of a running HubService", **_sub_options()
    )
    actions = p.add_subparsers(dest="action", required=True, parser_class=_Parser)
    publish = actions.add_parser(
        "publish",
        help="publish messages, printing each one's offset (JSON lines)",
        **_sub_options(),
    )
    publish.add_argument("topic", help="the topic")
    publish.add_argument(
        "messages",
        help="a JSON message, a JSON list of them or JSON lines, AgentScope or ProtoJSON "
        "('-': stdin)",
    )
    subscribe = actions.add_parser(
        "subscribe",
        help="print a topic's messages as JSON lines {offset, msg (ProtoJSON)}",
        **_sub_options(),
    )
    subscribe.add_argument("topic", help="the topic")
    subscribe.add_argument("--after", metavar="OFFSET", help="resume after this offset")
    subscribe.add_argument("--count", type=int, help="stop after this many messages")
    for action in (publish, subscribe):
        action.add_argument("--target", type=_target, required=True, help="host:port of a server")
        action.add_argument("--token-env", metavar="NAME", help="env var holding the bearer token")


def _attach_parser(sub: Any) -> None:
    p = sub.add_parser(
        "attach",
        help="print a served agent's reply from where a caller stopped reading it (Resume), "
        "as JSON lines (ProtoJSON ReplyResponse, each with its cursor)",
        **_sub_options(),
    )
    p.add_argument("session", help="the reply's session id")
    p.add_argument("reply", help="the reply's id (its ReplyStartEvent's reply_id)")
    p.add_argument("--after", metavar="CURSOR", default="", help="the last cursor seen")
    p.add_argument("--target", type=_target, required=True, help="host:port of a serve-agent")
    p.add_argument("--token-env", metavar="NAME", help="env var holding the bearer token")


def _a2a_parser(sub: Any) -> None:
    p = sub.add_parser(
        "a2a",
        help="ask any A2A 1.0 agent: its card, or a reply (needs the a2a extra)",
        **_sub_options(),
    )
    actions = p.add_subparsers(dest="action", required=True, parser_class=_Parser)
    card = actions.add_parser(
        "card", help="print the agent card (JSON) of the agent at URL", **_sub_options()
    )
    send = actions.add_parser(
        "send",
        help="send TEXT to the agent at URL and print its reply as it streams",
        description="The reply's text goes to stdout as it streams; where the task ended "
        "(and how to go on) to stderr. Exit 1 when the agent's reply failed.",
        **_sub_options(),
    )
    for action in (card, send):
        action.add_argument("url", help="the agent's base URL (or its card's)")
        action.add_argument("--token-env", metavar="NAME", help="env var holding the bearer token")
    send.add_argument("text", help="what the user says")
    send.add_argument("--context", metavar="ID", help="go on in this A2A context (conversation)")
    send.add_argument("--task", metavar="ID", help="answer this task, which waits for input")
    send.add_argument(
        "--binding",
        choices=["JSONRPC", "HTTP+JSON", "GRPC"],
        help="the transport (default: the first the card lists)",
    )
    send.add_argument("--timeout", type=float, help="seconds the reply may take")


def _sub_options() -> dict[str, Any]:
    return {"formatter_class": _HelpFormatter}


def _read_bytes(source: str | Path) -> bytes:
    if str(source) == STDIN:
        return sys.stdin.buffer.read()
    return _read_file(Path(source), str(source))


def _read_file(path: Path, name: str) -> bytes:
    """A file's bytes; its errors in one line naming it as `name`."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{name}: is a directory") from None
    except OSError as exc:
        raise UserError(f"{name}: {exc.strerror or exc}") from None


def _load_json(source: str | Path, raw: bytes | None = None) -> Any:
    """A JSON file (or `raw`, read from `source`), decoded as the library decodes
    every JSON input, its errors worded alike and naming `source`."""
    text = _read_bytes(source) if raw is None else raw
    name = _name(source)
    try:
        return _json.loads(text, name)
    except MessageFormatError as exc:
        raise UserError(str(exc)) from None


def _name(source: str | Path) -> str:
    return "stdin" if str(source) == STDIN else str(source)


def _json_argument(flag: str, value: str | None) -> Any:
    """A flag's JSON: written inline (it starts with `[` or `{`), or a FILE, or '-' (stdin)."""
    if value is None:
        return None
    if value.lstrip().startswith(("[", "{")):
        return _load_json(flag, value.encode("utf-8"))
    return _load_json(value)


def _read_msgs(source: str, data: Any = None) -> list[Any]:
    """The messages of `source` (or of `data` read from it)."""
    from google.protobuf import json_format

    from ._generated.agentscope.message.v1.message_pb2 import Msg
    from .formatting import message_from_input

    if data is None:
        data = _load_json(source)
    if isinstance(data, dict) and "messages" in data:
        data = data["messages"]
    if not isinstance(data, list):
        raise UserError(f"{source}: expected a JSON list of messages")
    msgs = []
    for index, item in enumerate(data):
        # ProtoJSON never has AgentScope's `content`; it has `text` or
        # `blocks`, or a `ROLE_*` role (or none: ROLE_UNSPECIFIED is left out).
        proto_json = (
            isinstance(item, dict)
            and "content" not in item
            and (
                "blocks" in item
                or "text" in item
                or str(item.get("role", "ROLE_")).startswith("ROLE_")
            )
        )
        if not proto_json:
            # Read as `format()` reads them (errors name `messages[i]`).
            msgs.append(message_from_input(item, index))
            continue
        try:
            msgs.append(json_format.ParseDict(item, Msg()))
        except json_format.ParseError as exc:
            raise UserError(f"messages[{index}]: {exc}") from None
    return msgs


def _token(env: str | None) -> str | None:
    if env is None:
        return None
    token = os.environ.get(env)
    if not token:
        raise UserError(f"environment variable {env} is empty or unset")
    return token


def _options(pairs: Sequence[str], flag: str = "--option") -> dict[str, Any]:
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UserError(f"{flag} {pair!r}: expected KEY=JSON")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


def _print(value: Any) -> None:
    def default(obj: Any) -> Any:
        if isinstance(obj, bytes):
            return base64.b64encode(obj).decode("ascii")
        raise TypeError(type(obj).__name__)

    print(json.dumps(value, ensure_ascii=False, indent=2, default=default))


def _run_format(args: argparse.Namespace) -> None:
    sources = [args.conversation, args.tools, args.response_schema]
    if [str(source) for source in sources].count(STDIN) > 1:
        raise UserError(
            "only one of the conversation, --tools and --response-schema can be read from stdin"
        )
    msgs = _read_msgs(args.conversation)
    tools = _json_argument("--tools", args.tools)
    options = {"fidelity": args.fidelity}
    if args.prompt_cache is not None:
        options["prompt_cache"] = args.prompt_cache
    if args.response_schema is not None:
        options["response_schema"] = _json_argument("--response-schema", args.response_schema)
    if args.response_schema_name is not None:
        options["response_schema_name"] = args.response_schema_name
    kwargs = dict(
        multi_agent=args.multi_agent,
        tools=tools,
        tool_choice=args.tool_choice,
        **{**options, **_options(args.option)},
    )
    if args.request:
        kwargs["request"] = _options(args.request, "--request")
    if args.target:
        from .client import FormatterClient

        with FormatterClient(args.target, token=_token(args.token_env)) as client:
            body = client.format(args.provider, msgs, **kwargs)
    else:
        from .formatting import format

        body = format(args.provider, msgs, media_root=args.media_root, **kwargs)
    for warning in body.warnings:
        print(f"warning: {warning.path}: {warning.message}", file=sys.stderr)
    _print(dict(body))


def _result_json(result: Any) -> dict[str, Any]:
    return {
        "content": result.content,
        "usage": None if result.usage is None else result.usage.to_dict(),
        "response_id": result.response_id,
        "finish_reason": result.raw_finish_reason,
        "structured_output": result.structured_output,
    }


def _run_parse(args: argparse.Namespace) -> None:
    try:
        _parse_response(args)
    except ParseError as exc:
        if exc.path != "response":
            raise
        # The whole response is wrong (not JSON, not an object): name the
        # file, as `format` names its conversation file.
        raise UserError(f"{_name(args.response)}: {exc.reason}") from None


def _parse_response(args: argparse.Namespace) -> None:
    raw = _read_bytes(args.response)
    chunks: Any = None
    if args.stream:
        try:
            chunks = json.loads(raw)
        except ValueError:
            chunks = None  # a raw SSE/NDJSON body
        if chunks is not None and not isinstance(chunks, list):
            raise UserError(f"{args.response}: expected a JSON list of events or a raw body")
    if args.target:
        from .client import FormatterClient

        with FormatterClient(args.target, token=_token(args.token_env)) as client:
            if not args.stream:
                result = client.parse(
                    args.provider,
                    raw,
                    split_think_tags=args.split_think_tags,
                    fidelity=args.fidelity,
                )
            else:
                results = list(
                    client.parse_stream(
                        args.provider,
                        chunks if chunks is not None else [raw],
                        raw=chunks is None,
                        split_think_tags=args.split_think_tags,
                        fidelity=args.fidelity,
                    )
                )
                result = results[-1]
    else:
        from .parsing import StreamParser, parse

        if not args.stream:
            result = parse(
                args.provider, raw, split_think_tags=args.split_think_tags, fidelity=args.fidelity
            )
        else:
            parser = StreamParser(
                args.provider, split_think_tags=args.split_think_tags, fidelity=args.fidelity
            )
            if chunks is None:
                parser.feed_bytes(raw)
            else:
                for chunk in chunks:
                    parser.feed(chunk)
            result = parser.finish()
    _print(_result_json(result))


def _hub_messages(source: str) -> list[Any]:
    """The messages of `hub publish`: one JSON message, a JSON list, or JSON lines."""
    raw = _read_bytes(source)
    try:
        data = [_load_json(source, raw)]
    except UserError:
        lines = [line for line in raw.splitlines() if line.strip()]
        if len(lines) < 2:
            raise
        data = [_load_json(f"{source} line {n}", line) for n, line in enumerate(lines, 1)]
    if len(data) == 1 and isinstance(data[0], list):
        data = data[0]
    return _read_msgs(source, data)


def _run_hub(args: argparse.Namespace) -> None:
    from .hub.client import HubClient

    with HubClient(args.target, token=_token(args.token_env)) as client:
        if args.action == "publish":
            # One PublishStream: a line for each message stored, in order,
            # then the first that was not (one line, on stderr).
            msgs = _hub_messages(args.messages)
            failures: list[tuple[int, Exception]] = []
            outcomes = client._publish_each(args.topic, msgs)
            for index, (msg, outcome) in enumerate(zip(msgs, outcomes, strict=True)):
                if isinstance(outcome, str):
                    print(json.dumps({"offset": outcome, "id": msg.id}), flush=True)
                else:
                    failures.append((index, outcome))
            if failures:
                index, error = failures[0]
                stored = len(msgs) - len(failures)
                message = f"{stored} of {len(msgs)} published; messages[{index}]: {error}"
                local = isinstance(error, AgentScopeProtoError) and not _is_remote(error)
                raise UserError(message, 2 if local else 1)
            return
        if args.count is not None and args.count < 1:
            raise UserError("--count must be at least 1")
        from google.protobuf import json_format

        with client.subscribe(args.topic, args.after) as events:
            print(f"{PROG}: subscribed to {args.topic} after {events.after}", file=sys.stderr)
            for seen, event in enumerate(events, 1):
                msg = json_format.MessageToDict(event.msg)
                print(json.dumps({"offset": event.offset, "msg": msg}), flush=True)
                if seen == args.count:
                    return


def _run_attach(args: argparse.Namespace) -> None:
    from google.protobuf import json_format

    from .agents.client import AgentClient

    with AgentClient(args.target, token=_token(args.token_env)) as client:
        for response in client.resume(args.session, args.reply, after=args.after):
            print(json.dumps(json_format.MessageToDict(response)), flush=True)


def _run_a2a(args: argparse.Namespace) -> None:
    if importlib.util.find_spec("a2a") is None:
        raise UserError("a2a needs the a2a extra: pip install 'agentscope-proto[a2a]'")
    from .a2a.client import fetch_card
    from .errors import AgentReplyError

    token = _token(args.token_env)
    if args.action == "card":
        from google.protobuf import json_format

        try:
            card = fetch_card(args.url, token=token)
        except MessageFormatError as exc:  # the peer's document, not the user's input
            raise UserError(str(exc), 1) from None
        print(json.dumps(json_format.MessageToDict(card), ensure_ascii=False, indent=2))
        return
    if args.task is not None and args.context is None:
        raise UserError("--task needs --context (the task's context)")
    try:
        asyncio.run(_a2a_send(args, token))
    except AgentReplyError as exc:
        raise UserError(str(exc), 1) from None


async def _a2a_send(args: argparse.Namespace, token: str | None) -> None:
    """Print the reply's text as it streams, then (stderr) where its task
    ended and, for a question, how to answer it."""
    from ._generated.agentscope.message.v1.message_pb2 import ROLE_USER, FinishedReason, Msg
    from .a2a.client import AsyncA2AClient

    bindings = [args.binding] if args.binding else []
    async with AsyncA2AClient(args.url, token=token, bindings=bindings) as client:
        context = args.context or ""
        if args.task is not None:
            client.continue_task(context, args.task)
        # One speaker: a peer without the extension sees the words as typed.
        message = Msg(name="user", role=ROLE_USER, text=args.text)
        reply = None
        printed = False
        try:
            stream = client.reply_stream(message, session_id=context, timeout=args.timeout)
            async for item in stream:
                if isinstance(item, Msg):
                    reply = item
                elif item.WhichOneof("event") == "reply_start" and item.reply_start.session_id:
                    context = item.reply_start.session_id
                elif (text := _a2a_text(item)) is not None:
                    print(text, end="", flush=True)
                    printed = True
        finally:
            if printed:
                print(flush=True)
        waiting = client.waiting_task(context)
        if waiting is not None:
            again = f"{PROG} a2a send {args.url} 'yes' --context {context} --task {waiting}"
            print(f"{PROG}: input-required: {again}", file=sys.stderr)
            return
        reason = FinishedReason.Name(reply.finished_reason) if reply else "COMPLETED"
        state = reason.removeprefix("FINISHED_REASON_").lower()
        state = {"unspecified": "completed", "interrupted": "canceled"}.get(state, state)
        print(f"{PROG}: {state} in context {context}", file=sys.stderr)


def _a2a_text(event: Any) -> str | None:
    """What `a2a send` prints of an event: the reply's text, the agent's question."""
    kind = event.WhichOneof("event")
    if kind == "text_block_delta":
        return str(event.text_block_delta.delta)
    if kind in ("require_user_confirm", "require_external_execution"):
        from .a2a.protocol import calls_in_words

        return f"\n[asks to run {calls_in_words(event)}]"
    return None


def _hub_config(args: argparse.Namespace) -> Any:
    """The hub `serve` runs (None: none), from its --hub flags."""
    from .hub.store import HubConfig

    workers = getattr(args, "workers", 1)
    default = "memory" if args.command == "serve" and workers == 1 else "none"
    url = args.hub or default
    if url == "none":
        return None
    if url == "memory" and workers > 1:
        raise UserError(
            "--hub memory with --workers > 1 would give each worker a hub of its own; "
            "use --hub redis://..."
        )
    if url != "memory" and not url.startswith(("redis://", "rediss://", "unix://")):
        raise UserError(f"--hub {url}: expected memory, none or a redis://, rediss://, unix:// URL")
    if url != "memory" and importlib.util.find_spec("redis") is None:
        raise UserError("a Redis hub needs the redis extra: pip install 'agentscope-proto[redis]'")
    try:
        return HubConfig(
            url=url,
            retention=args.hub_retention,
            retention_seconds=args.hub_retention_seconds,
            max_msg_kb=args.hub_max_msg_kb,
            max_subscribers=args.hub_max_subscribers,
            max_publishers=args.hub_max_publishers,
            memory_mb=args.hub_memory_mb,
            subscriber_buffer_mb=args.hub_subscriber_buffer_mb,
        )
    except ValueError as exc:
        raise UserError(f"--hub-{str(exc).replace('_', '-')}") from None


def _server_base(args: argparse.Namespace) -> dict[str, Any]:
    """The `ServerConfig` fields of the flags every server command has."""
    if (args.tls_cert is None) != (args.tls_key is None):
        raise UserError("--tls-cert and --tls-key go together")
    _check_tls(args.tls_cert, args.tls_key, args.tls_client_ca)
    return {
        "host": args.host,
        "port": args.port,
        "max_message_mb": args.max_message_mb,
        "auth_token": _token(args.auth_token_env),
        "tls_cert": args.tls_cert,
        "tls_key": args.tls_key,
        "tls_client_ca": args.tls_client_ca,
        "grace_seconds": args.grace,
    }


def _check_tls(cert: Path | None, key: Path | None, client_ca: Path | None) -> None:
    """Load the TLS files before anything binds: gRPC reports a bad one as a
    failure to bind, after lines of its own."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    for flag, path in (("--tls-cert", cert), ("--tls-client-ca", client_ca)):
        if path is not None:
            _load_certificates(context, flag, path)
    if cert is None or key is None:
        return
    _read_file(key, f"--tls-key {key}")
    try:
        # A passphrase would be asked for on the terminal; gRPC takes none.
        context.load_cert_chain(cert, key, password=lambda: b"")
    except ssl.SSLError as exc:
        if exc.reason == "KEY_VALUES_MISMATCH":
            raise UserError(f"--tls-key {key}: does not match --tls-cert {cert}") from None
        raise UserError(f"--tls-key {key}: not a PEM private key without a passphrase") from None


def _load_certificates(context: ssl.SSLContext, flag: str, path: Path) -> None:
    data = _read_file(path, f"{flag} {path}")
    try:
        text = data.decode("ascii")
        if "-----BEGIN CERTIFICATE-----" not in text:
            raise ValueError("no certificate")
        context.load_verify_locations(cadata=text)
    except (ValueError, ssl.SSLError):  # UnicodeDecodeError is a ValueError
        raise UserError(f"{flag} {path}: not a PEM certificate") from None


def _media_limits(args: argparse.Namespace) -> Any:
    """The media flags' limits (`_media_flags`), the media root checked."""
    from ._fetch import MediaLimits

    if args.media_root is not None and not args.media_root.is_dir():
        raise UserError(f"--media-root {args.media_root}: no such directory")
    try:
        return MediaLimits(
            max_bytes=args.max_media_mb * 1024 * 1024,
            timeout=args.download_timeout,
            allow_networks=tuple(args.allow_network),
        )
    except ValueError as exc:
        raise UserError(f"--allow-network: {exc}") from None


def _server_config(args: argparse.Namespace, reuse_port: bool) -> Any:
    from .service import ServerConfig

    limits = _media_limits(args)
    base = _server_base(args)
    if args.format_cache_mb < 0:
        raise UserError("--format-cache-mb must be 0 (off) or more")
    if args.http_port is not None and importlib.util.find_spec("connectrpc") is None:
        raise UserError("--http-port needs the http extra: pip install 'agentscope-proto[http]'")
    return ServerConfig(
        **base,
        http_port=args.http_port,
        media_root=args.media_root,
        allow_download=args.allow_download,
        reuse_port=reuse_port,
        max_blocks=args.max_blocks,
        format_cache_mb=args.format_cache_mb,
        max_stream_messages=args.max_stream_messages,
        max_stream_output_mb=args.max_stream_output_mb,
        stream_idle_seconds=args.stream_idle_seconds,
        media_limits=limits,
        hub=_hub_config(args),
    )


def _check_port(host: str, port: int) -> None:
    """Fail early, in one line, on a port another process holds.

    gRPC would otherwise log a multi-line C-core error and raise. A race with
    another process binding in between is still caught when gRPC binds.
    """
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise UserError(f"--host {host}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise UserError(
                f"cannot listen on {host_port(host, port)}: {exc.strerror}", 1
            ) from None


def _configure_logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(),
        format=f"%(asctime)s %(levelname)s [pid {os.getpid()}] %(name)s: %(message)s",
        stream=sys.stderr,
    )


def _settled(port: int) -> None:
    """Once a server process listens: what it made to start (its modules, the
    agent's framework, the probe agent) lives as long as it does, so the
    collector's full passes, which would walk it all again each time (a tenth
    of a served agent's CPU under load), leave it out (`gc.freeze`)."""
    gc.freeze()


async def _serve_hosting_the_hub(config: Any) -> None:
    """`serve(config)`, with the HubService on the store `config.hub` names."""
    from .hub import HubServicer, hub_service, open_hub_store
    from .service import serve
    from .service.app import formatter_service

    if config.hub is None:
        await serve(config, _settled)
        return
    hub = HubServicer(await open_hub_store(config.hub), config.hub)
    try:
        await serve(config, _settled, services=[formatter_service(config), hub_service(hub)])
    finally:
        await hub.store.close()


def _serve(config: Any) -> None:
    from .errors import HubUnavailableError

    try:
        asyncio.run(_serve_hosting_the_hub(config))
    except HubUnavailableError as exc:
        raise UserError(f"--hub: {exc}", 1) from None
    except (OSError, RuntimeError) as exc:
        # gRPC's bind failure (a RuntimeError in recent grpcio, OSError here before).
        if "bind" not in str(exc).lower():
            raise
        where = host_port(config.host, config.port)
        raise UserError(f"cannot listen on {where}: {exc}", 1) from None


def _worker(config: Any, level: str) -> None:
    _configure_logging(level)
    try:
        _serve(config)
    except UserError as exc:
        _fail(str(exc), exc.code)


def _run_serve(args: argparse.Namespace) -> None:
    if args.workers < 1:
        raise UserError("--workers must be at least 1")
    if args.workers > 1 and args.port == 0:
        raise UserError("--workers > 1 needs a fixed --port (the workers share it)")
    if args.workers > 1 and args.http_port == 0:
        raise UserError("--workers > 1 needs a fixed --http-port (the workers share it)")
    config = _server_config(args, reuse_port=args.workers > 1)
    _check_port(args.host, args.port)
    if args.http_port is not None:
        _check_port(args.host, args.http_port)
    _configure_logging(args.log_level)
    if args.workers == 1:
        _serve(config)
        return
    from .service.workers import WorkersFailedError, run_workers

    try:
        run_workers(args.workers, _worker, (config, args.log_level))
    except WorkersFailedError as exc:
        raise UserError(str(exc), 1) from None


def build_parser() -> argparse.ArgumentParser:
    """The command's argument parser (also what `--help` shows)."""
    parser = _Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _serve_parser(sub)
    _serve_agent_parser(sub)
    _format_parser(sub)
    _parse_parser(sub)
    _hub_parser(sub)
    _attach_parser(sub)
    _a2a_parser(sub)
    return parser


def _version() -> str:
    from ._version import __version__

    return __version__


def _factory(spec: str) -> Any:
    """The callable `MODULE:FACTORY` names, MODULE imported as `python -m`
    would import it (the working directory first on the path)."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise UserError(f"{spec!r}: expected MODULE:FACTORY, e.g. my_agents:make_assistant")
    if sys.path[:1] != [os.getcwd()]:
        sys.path.insert(0, os.getcwd())
    try:
        target: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise UserError(f"{spec}: cannot import {exc.name!r}") from None
    except Exception as exc:  # the module's own code failed
        raise UserError(f"{spec}: importing {module_name} failed: {exc!r}", 1) from None
    for name in attribute.split("."):
        if not hasattr(target, name):
            raise UserError(f"{spec}: {type(target).__name__} {module_name} has no {name!r}")
        target = getattr(target, name)
    if not callable(target):
        raise UserError(f"{spec}: not callable (a {type(target).__name__})")
    return target


def _a2a_config(args: argparse.Namespace) -> Any:
    """The A2A serving `serve-agent` runs (None: none), from its --a2a flags."""
    from .agents.config import A2AConfig

    if args.a2a_port is None:
        for flag in ("a2a_grpc_port", "a2a_host"):
            if getattr(args, flag) is not None:
                raise UserError(f"--{flag.replace('_', '-')} needs --a2a-port")
        return None
    if importlib.util.find_spec("a2a") is None or importlib.util.find_spec("hypercorn") is None:
        raise UserError("--a2a-port needs the a2a extra: pip install 'agentscope-proto[a2a]'")
    try:
        return A2AConfig(
            port=args.a2a_port,
            grpc_port=args.a2a_grpc_port,
            public_host=args.a2a_host,
            max_tasks=args.a2a_max_tasks,
            card_max_age=args.a2a_card_max_age,
        )
    except ValueError as exc:
        raise UserError(f"--a2a-{str(exc).replace('_', '-')}") from None


async def _serve_agent(
    factory: Any,
    spec: str,
    config: Any,
    agent_config: Any,
    a2a: Any = None,
    agui_port: int | None = None,
) -> None:
    from .agents import serve_agent
    from .agents.hosting import hosting_for
    from .agents.sessions import new_agent

    try:
        probe = await new_agent(factory)
    except Exception as exc:  # the factory's own code failed
        raise UserError(f"{spec}: making an agent failed: {exc!r}", 1) from None
    try:
        hosting_for(probe)
    except TypeError as exc:  # not an agent
        raise UserError(f"{spec}: {exc}") from None
    await serve_agent(
        factory, config, agent_config, ready=_settled, probe=probe, a2a=a2a, agui_port=agui_port
    )


def _run_serve_agent(args: argparse.Namespace) -> None:
    from .agents import AgentConfig
    from .agents.media import MediaPolicy
    from .errors import HubUnavailableError, StateUnavailableError
    from .service import ServerConfig

    if args.reply_to is not None and args.topic is None:
        raise UserError("--reply-to needs --topic")
    media = MediaPolicy(args.media_root, _media_limits(args))
    try:
        agent_config = AgentConfig(
            description=args.description or "",
            version=args.agent_version or "",
            max_sessions=args.max_sessions,
            session_idle_seconds=args.session_idle_seconds,
            max_replies=args.max_replies,
            reply_log_mb=args.reply_log_mb,
            max_request_msgs=args.max_request_msgs,
            max_request_blocks=args.max_request_blocks,
            state=args.state,
            lease_seconds=args.lease_seconds,
            media=media,
            topic=args.topic,
            reply_to=args.reply_to or "mentions",
        )
    except ValueError as exc:
        field, _, reason = str(exc).partition(" ")  # the field named as its flag
        raise UserError(f"--{field.replace('_', '-')} {reason}") from None
    try:
        config = ServerConfig(
            **_server_base(args), hub=_hub_config(args), cors_origins=tuple(args.cors_origin)
        )
    except ValueError as exc:
        raise UserError(f"--cors-origin: {str(exc).partition(': ')[2]}") from None
    if args.topic is not None and config.hub is None:
        raise UserError("--topic needs a hub: --hub memory or --hub redis://...")
    a2a = _a2a_config(args)
    if args.agui_port is not None and (
        importlib.util.find_spec("ag_ui") is None or importlib.util.find_spec("hypercorn") is None
    ):
        raise UserError("--agui-port needs the agui extra: pip install 'agentscope-proto[agui]'")
    factory = _factory(args.factory)
    ports = [args.port, args.agui_port, *((a2a.port, a2a.grpc_port) if a2a is not None else ())]
    for port in ports:
        if port is not None:
            _check_port(args.host, port)
    _configure_logging(args.log_level)
    try:
        asyncio.run(_serve_agent(factory, args.factory, config, agent_config, a2a, args.agui_port))
    except HubUnavailableError as exc:
        raise UserError(f"--hub: {exc}", 1) from None
    except StateUnavailableError as exc:
        raise UserError(f"--state: {exc}", 1) from None
    except (OSError, RuntimeError) as exc:
        # gRPC's bind failure (a RuntimeError in recent grpcio, OSError before).
        if "bind" not in str(exc).lower() and "address already in use" not in str(exc).lower():
            raise
        raise UserError(f"cannot listen on {args.host}: {exc}", 1) from None


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the `agentscope-proto` command."""
    args = build_parser().parse_args(argv)
    runners = {
        "serve": _run_serve,
        "serve-agent": _run_serve_agent,
        "format": _run_format,
        "parse": _run_parse,
        "hub": _run_hub,
        "attach": _run_attach,
        "a2a": _run_a2a,
    }
    try:
        runners[args.command](args)
    except UserError as exc:
        _fail(str(exc), exc.code)
    except AgentScopeProtoError as exc:
        _fail(str(exc), 1 if _is_remote(exc) else 2)
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except BrokenPipeError:
        # The reader went away (`... | head`): not an error worth a traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(1) from None


def _is_remote(exc: AgentScopeProtoError) -> bool:
    from .errors import RemoteError

    return isinstance(exc, RemoteError)
