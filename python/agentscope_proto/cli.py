"""The `agentscope-proto` command: `serve`, `format` and `parse`."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import multiprocessing
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from ._generated.agentscope.message.v1.message_pb2 import Msg
from .dialects import from_dict
from .errors import AgentScopeProtoError

__all__ = ["main"]


def _serve_parser(sub: Any) -> None:
    p = sub.add_parser("serve", help="run the gRPC FormatterService")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback)")
    p.add_argument("--port", type=int, default=50051, help="port to bind (0: any free port)")
    p.add_argument("--workers", type=int, default=1, help="processes sharing the port")
    p.add_argument("--max-message-mb", type=int, default=64, help="largest request/response")
    p.add_argument("--media-root", type=Path, help="allow reading local media under this dir")
    p.add_argument("--allow-download", action="store_true", help="allow fetching http(s) media")
    p.add_argument("--tls-cert", type=Path, help="server certificate (PEM)")
    p.add_argument("--tls-key", type=Path, help="server private key (PEM)")
    p.add_argument("--tls-client-ca", type=Path, help="require client certs signed by this CA")
    p.add_argument("--auth-token-env", metavar="NAME", help="env var holding the bearer token")
    p.add_argument("--grace", type=float, default=10.0, help="seconds to drain on SIGTERM")
    p.add_argument("--max-blocks", type=int, default=100_000, help="content blocks per request")
    p.add_argument(
        "--max-stream-messages", type=int, default=100_000, help="messages per ParseStream"
    )
    p.add_argument(
        "--max-stream-output-mb", type=int, default=1024, help="snapshot bytes per ParseStream"
    )
    p.add_argument(
        "--stream-idle-seconds", type=float, default=300.0, help="end a silent ParseStream"
    )
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
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])


def _client_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", help="host:port of a server (default: in-process)")
    p.add_argument("--token-env", metavar="NAME", help="env var holding the bearer token")


def _format_parser(sub: Any) -> None:
    p = sub.add_parser("format", help="format a conversation into a provider request body")
    p.add_argument("conversation", type=Path, help="JSON list of AgentScope or ProtoJSON messages")
    p.add_argument("--provider", required=True)
    p.add_argument("--multi-agent", action="store_true")
    p.add_argument("--tools", type=Path, help="JSON list of OpenAI-style tool schemas")
    p.add_argument("--tool-choice")
    p.add_argument("--media-root", type=Path, help="allow reading local media under this dir")
    p.add_argument(
        "--option", action="append", default=[], metavar="KEY=JSON", help="formatter option"
    )
    _client_args(p)


def _parse_parser(sub: Any) -> None:
    p = sub.add_parser("parse", help="parse a provider response into a message")
    p.add_argument("response", type=Path, help="response JSON; with --stream, chunks or raw SSE")
    p.add_argument("--provider", required=True)
    p.add_argument("--stream", action="store_true", help="a JSON list of events or a raw body")
    p.add_argument("--split-think-tags", action="store_true")
    _client_args(p)


def _read_msgs(path: Path) -> list[Msg]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, dict) and "messages" in data:
        data = data["messages"]
    if not isinstance(data, list):
        raise SystemExit(f"{path}: expected a JSON list of messages")
    msgs = []
    for item in data:
        proto_json = isinstance(item, dict) and (
            "blocks" in item or str(item.get("role", "")).startswith("ROLE_")
        )
        msgs.append(json_format.ParseDict(item, Msg()) if proto_json else from_dict(item))
    return msgs


def _token(env: str | None) -> str | None:
    if env is None:
        return None
    token = os.environ.get(env)
    if not token:
        raise SystemExit(f"environment variable {env} is empty or unset")
    return token


def _options(pairs: Sequence[str]) -> dict[str, Any]:
    options = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


def _print(value: Any) -> None:
    def default(obj: Any) -> Any:
        if isinstance(obj, bytes):
            import base64

            return base64.b64encode(obj).decode("ascii")
        raise TypeError(type(obj).__name__)

    print(json.dumps(value, ensure_ascii=False, indent=2, default=default))


def _run_format(args: argparse.Namespace) -> None:
    msgs = _read_msgs(args.conversation)
    tools = json.loads(args.tools.read_text(encoding="utf-8")) if args.tools else None
    kwargs = dict(
        multi_agent=args.multi_agent,
        tools=tools,
        tool_choice=args.tool_choice,
        **_options(args.option),
    )
    if args.target:
        from .client import FormatterClient

        with FormatterClient(args.target, token=_token(args.token_env)) as client:
            body = client.format(args.provider, msgs, **kwargs)
    else:
        from .formatting import format

        body = format(msgs, args.provider, media_root=args.media_root, **kwargs)
    for warning in body.warnings:
        print(f"warning: {warning.path}: {warning.message}", file=sys.stderr)
    _print(dict(body))


def _result_json(result: Any) -> dict[str, Any]:
    return {
        "content": result.content,
        "usage": result.usage,
        "response_id": result.response_id,
        "finish_reason": result.raw_finish_reason,
        "structured_output": result.structured_output,
    }


def _run_parse(args: argparse.Namespace) -> None:
    raw = args.response.read_bytes()
    chunks: Any = None
    if args.stream:
        try:
            chunks = json.loads(raw)
        except ValueError:
            chunks = None  # a raw SSE/NDJSON body
        if chunks is not None and not isinstance(chunks, list):
            raise SystemExit(f"{args.response}: expected a JSON list of events or a raw body")
    if args.target:
        from .client import FormatterClient

        with FormatterClient(args.target, token=_token(args.token_env)) as client:
            if not args.stream:
                result = client.parse(args.provider, raw, split_think_tags=args.split_think_tags)
            else:
                results = list(
                    client.parse_stream(
                        args.provider,
                        chunks if chunks is not None else [raw],
                        raw=chunks is None,
                        split_think_tags=args.split_think_tags,
                    )
                )
                result = results[-1]
    else:
        from .parsing import StreamParser, parse

        if not args.stream:
            result = parse(args.provider, raw, split_think_tags=args.split_think_tags)
        else:
            parser = StreamParser(args.provider, split_think_tags=args.split_think_tags)
            if chunks is None:
                parser.feed_bytes(raw)
            else:
                for chunk in chunks:
                    parser.feed(chunk)
            result = parser.finish()
    _print(_result_json(result))


def _server_config(args: argparse.Namespace, reuse_port: bool) -> Any:
    from ._fetch import MediaLimits
    from .service import ServerConfig

    try:
        limits = MediaLimits(
            max_bytes=args.max_media_mb * 1024 * 1024,
            timeout=args.download_timeout,
            allow_networks=tuple(args.allow_network),
        )
    except ValueError as exc:
        raise SystemExit(f"--allow-network: {exc}") from None
    return ServerConfig(
        host=args.host,
        port=args.port,
        max_message_mb=args.max_message_mb,
        media_root=args.media_root,
        allow_download=args.allow_download,
        auth_token=_token(args.auth_token_env),
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        tls_client_ca=args.tls_client_ca,
        grace_seconds=args.grace,
        reuse_port=reuse_port,
        max_blocks=args.max_blocks,
        max_stream_messages=args.max_stream_messages,
        max_stream_output_mb=args.max_stream_output_mb,
        stream_idle_seconds=args.stream_idle_seconds,
        media_limits=limits,
    )


def _configure_logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(),
        format=f"%(asctime)s %(levelname)s [pid {os.getpid()}] %(name)s: %(message)s",
        stream=sys.stderr,
    )


def _worker(config: Any, level: str) -> None:
    from .service import serve

    _configure_logging(level)
    asyncio.run(serve(config))


def _run_serve(args: argparse.Namespace) -> None:
    _configure_logging(args.log_level)
    if args.workers < 1:
        raise SystemExit("--workers must be at least 1")
    if args.workers == 1:
        from .service import serve

        asyncio.run(serve(_server_config(args, reuse_port=False)))
        return
    if args.port == 0:
        raise SystemExit("--workers > 1 needs a fixed --port (the workers share it)")
    # gRPC's recommended multi-core pattern for Python: processes sharing the
    # port with SO_REUSEPORT, the kernel balancing connections among them.
    config = _server_config(args, reuse_port=True)
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_worker, args=(config, args.log_level), daemon=False)
        for _ in range(args.workers)
    ]
    for worker in workers:
        worker.start()

    def forward(signum: int, frame: object) -> None:
        for worker in workers:
            if worker.is_alive() and worker.pid is not None:
                os.kill(worker.pid, signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    for worker in workers:
        worker.join()
    codes = [w.exitcode for w in workers]
    if any(code not in (0, -signal.SIGTERM) for code in codes):
        raise SystemExit(f"workers exited with {codes}")


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the `agentscope-proto` command."""
    parser = argparse.ArgumentParser(prog="agentscope-proto", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _serve_parser(sub)
    _format_parser(sub)
    _parse_parser(sub)
    args = parser.parse_args(argv)
    runners = {"serve": _run_serve, "format": _run_format, "parse": _run_parse}
    try:
        runners[args.command](args)
    except AgentScopeProtoError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
