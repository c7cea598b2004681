"""What a client can make the server touch: files, sockets, tokens, logs.

- Without opt-in the server opens no file and no socket while it handles
  requests (a `sys.addaudithook` hook watches the server, which runs in this
  process), and media needing either is FAILED_PRECONDITION naming the block.
- `media_root`: traversal by `..`, percent-encoding, absolute paths, symlinks
  and `file://` URLs never reads outside the root.
- `allow_download`: private, loopback and link-local addresses are refused
  (also after a redirect, and however the address is spelled) unless the
  operator allowed the network; size and time caps hold. Only loopback is ever
  connected to: a guard on `socket.connect` fails the test otherwise.
- Auth: the token is never logged or echoed; logged client text cannot forge
  log lines.
"""

from __future__ import annotations

import base64
import http.server
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from agentscope_proto import errors
from agentscope_proto._fetch import MediaLimits, fetch, is_public_address
from agentscope_proto.client import FormatterClient
from agentscope_proto.formatting import body_to_json, format
from agentscope_proto.service import ServerConfig

from adversarial_inputs import GOLDEN, GOLDEN_PROVIDERS, PROVIDERS, golden
from server_harness import RunningServer

PNG = (GOLDEN / "media" / "cat.png").read_bytes()
SECRET = b"\x89PNG\r\n\x1a\nTOP-SECRET-BYTES" + PNG[16:]


def _image(url: str, kind: str = "image") -> dict[str, Any]:
    block = {"type": kind, "source": {"type": "url", "url": url}}
    return {"name": "u", "role": "user", "content": [block]}


def _outcome(call: Callable[[], Any]) -> Any:
    """What `call` returned, or the package error it raised."""
    try:
        return call()
    except errors.AgentScopeProtoError as exc:
        return exc


# -- no file, no socket without opt-in (audit hook in the server's process) ------

_AUDITED = ("open", "os.", "socket.", "subprocess.", "urllib.", "shutil.", "http.client.")
_events: list[tuple[str, str]] = []
_armed = threading.Event()
_hooked = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _armed.is_set() and event.startswith(_AUDITED):
        _events.append((event, repr(args)[:200]))


@pytest.fixture
def audit() -> Iterator[list[tuple[str, str]]]:
    global _hooked
    if not _hooked:  # an audit hook cannot be removed; one inert hook is installed once
        sys.addaudithook(_audit)
        _hooked = True
    _events.clear()
    yield _events
    _armed.clear()


def _media_messages() -> list[tuple[str, dict[str, Any]]]:
    cases = []
    for kind, ext in (("image", "png"), ("audio", "wav"), ("video", "mp4")):
        for url in (
            f"media/x.{ext}",
            f"/etc/passwd.{ext}",
            f"file:///etc/passwd.{ext}",
            f"../../x.{ext}",
            f"http://127.0.0.1:9/x.{ext}",
            f"https://169.254.169.254/latest.{ext}",
        ):
            cases.append((f"{kind} {url}", _image(url, kind)))
    return cases


def _requests() -> list[tuple[str, str, Callable[[FormatterClient], Any]]]:
    """Every call of the workload, golden data loaded up front (the test's own file reads)."""
    calls: list[tuple[str, str, Callable[[FormatterClient], Any]]] = []
    for provider in PROVIDERS:
        for label, msg in _media_messages():
            calls.append((provider, label, lambda c, p=provider, m=msg: c.format(p, [m])))
        if provider not in GOLDEN_PROVIDERS:
            continue
        for case in golden("formatters", provider)[:8]:
            if "error" not in case:
                msgs, multi = case["msgs"], case["multi_agent"]
                call = lambda c, p=provider, m=msgs, x=multi: c.format(p, m, multi_agent=x)  # noqa: E731
                calls.append((provider, case["name"], call))
        for case in golden("parsers", provider)[:6]:
            if case["stream"]:
                call = lambda c, p=provider, k=case["chunks"]: list(c.parse_stream(p, k))  # noqa: E731
            else:
                call = lambda c, p=provider, r=case["response"]: c.parse(p, r)  # noqa: E731
            calls.append((provider, case["name"], call))
    return calls


def _workload(
    client: FormatterClient, calls: list[tuple[str, str, Callable[[FormatterClient], Any]]]
) -> list[tuple[str, str, BaseException | None]]:
    outcomes: list[tuple[str, str, BaseException | None]] = []
    for provider, label, call in calls:
        try:
            call(client)
            outcomes.append((provider, label, None))
        except errors.AgentScopeProtoError as exc:
            outcomes.append((provider, label, exc))
    return outcomes


def test_without_opt_in_the_server_opens_no_file_and_no_socket(
    audit: list[tuple[str, str]],
) -> None:
    running = RunningServer(ServerConfig(port=0)).start()
    try:
        with FormatterClient(running.target) as client:
            calls = _requests()
            _workload(client, calls)  # warm up: lazy imports open their modules once
            _armed.set()
            outcomes = _workload(client, calls)
            _armed.clear()
    finally:
        running.stop()
    assert not audit, audit[:10]
    media = {label for label, _ in _media_messages()}
    for provider, label, exc in outcomes:
        if label not in media:
            continue
        if exc is None:
            # Passed through as a URL, or dropped with a warning: nothing was
            # opened or fetched either way (the audit says so).
            continue
        assert isinstance(exc, errors.FormatError), (provider, label, exc)
        # A local path or file:// URL needs file access (refused), or is not
        # media the provider takes (dropped, leaving nothing to send).
        assert exc.path.startswith("messages"), (provider, label, exc.path)
        if isinstance(exc, errors.MediaAccessError):
            assert exc.path == "messages[0].content[0]", (provider, label, exc.path)


def test_local_media_without_media_root_is_failed_precondition_naming_the_block() -> None:
    running = RunningServer(ServerConfig(port=0)).start()
    try:
        with FormatterClient(running.target) as client:
            for provider in ("openai", "anthropic", "gemini", "dashscope", "ollama"):
                with pytest.raises(errors.MediaAccessError) as caught:
                    client.format(provider, [_image("/etc/passwd.png")])
                assert caught.value.path == "messages[0].content[0]"
                assert "media_root" in caught.value.reason
    finally:
        running.stop()


# -- media_root -----------------------------------------------------------------


@pytest.fixture
def media_tree(tmp_path: Path) -> Path:
    """root/{cat.png, link.png -> secret, dirlink -> outside/, loop.png}, outside/secret.png"""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "cat.png").write_bytes(PNG)
    (outside / "secret.png").write_bytes(SECRET)
    (root / "link.png").symlink_to(outside / "secret.png")
    (root / "dirlink").symlink_to(outside, target_is_directory=True)
    (root / "loop.png").symlink_to(root / "loop.png")
    return root


def _traversals(root: Path) -> list[str]:
    secret = root.parent / "outside" / "secret.png"
    return [
        "../outside/secret.png",
        "%2e%2e/outside/secret.png",
        "%2E%2E%2Foutside%2Fsecret.png",
        "..%2foutside%2fsecret.png",
        "cat.png/../../outside/secret.png",
        "./../outside/./secret.png",
        str(secret),
        f"file://{secret}",
        f"file://localhost{secret}",
        "link.png",
        "dirlink/secret.png",
        "loop.png",
        "a\x00b.png",
        "%00.png",
        "x" * 5000 + ".png",
        "\\..\\outside\\secret.png",
    ]


LOCAL_READERS = ["openai", "anthropic", "gemini", "dashscope", "ollama", "openai_responses"]


@pytest.mark.parametrize("provider", LOCAL_READERS)
def test_media_root_traversal_never_reads_outside(provider: str, media_tree: Path) -> None:
    leaked = base64.b64encode(SECRET).decode()[:40]
    for url in _traversals(media_tree):
        outcome = _outcome(lambda u=url: format(provider, [_image(u)], media_root=media_tree))
        if isinstance(outcome, BaseException):
            assert isinstance(outcome, errors.FormatError), (url, outcome)
            continue
        text = body_to_json(outcome).decode()
        assert leaked not in text, url
        assert "TOP-SECRET" not in text, url


@pytest.mark.parametrize("provider", ["openai", "anthropic", "ollama"])
def test_media_root_still_reads_files_inside(provider: str, media_tree: Path) -> None:
    body = format(provider, [_image("cat.png")], media_root=media_tree)
    assert base64.b64encode(PNG).decode()[:40] in body_to_json(body).decode()


def test_media_root_refusals_name_the_block_over_grpc(media_tree: Path) -> None:
    running = RunningServer(ServerConfig(port=0, media_root=media_tree)).start()
    try:
        with FormatterClient(running.target) as client:
            for url in ("../outside/secret.png", "%2e%2e/outside/secret.png", "link.png"):
                with pytest.raises(errors.MediaAccessError) as caught:
                    client.format("openai", [_image(url)])
                assert caught.value.path == "messages[0].content[0]"
                assert "outside the media root" in caught.value.reason
                # The resolved location of the root is not revealed.
                assert str(media_tree) not in str(caught.value)
    finally:
        running.stop()


def test_media_reads_are_capped(media_tree: Path) -> None:
    from agentscope_proto._fetch import media_limits

    assert len(PNG) > 50
    with media_limits(MediaLimits(max_bytes=50)), pytest.raises(errors.MediaAccessError) as caught:
        format("openai", [_image("cat.png")], media_root=media_tree)
    assert "larger than 50 bytes" in caught.value.reason


def test_a_server_caps_media_reads_at_max_media_mb(media_tree: Path) -> None:
    limits = MediaLimits(max_bytes=50)
    config = ServerConfig(port=0, media_root=media_tree, media_limits=limits)
    running = RunningServer(config).start()
    try:
        with FormatterClient(running.target) as client:
            with pytest.raises(errors.MediaAccessError) as caught:
                client.format("openai", [_image("cat.png")])
            assert "larger than 50 bytes" in caught.value.reason
    finally:
        running.stop()


# -- downloads: the SSRF guard ------------------------------------------------------


class _Origin:
    """A loopback HTTP server whose paths redirect, stall, or send too much."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        origin = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                origin.hits.append(self.path)
                if self.path.startswith("/redirect?"):
                    self.send_response(302)
                    self.send_header("Location", self.path.split("?", 1)[1])
                    self.end_headers()
                elif self.path == "/drip.png":
                    self.send_response(200)
                    self.end_headers()
                    for _ in range(40):
                        try:
                            self.wfile.write(b"x")
                            self.wfile.flush()
                        except OSError:
                            return
                        time.sleep(0.05)
                elif self.path == "/big.png":
                    self.send_response(200)
                    self.end_headers()
                    self.wfile.write(b"x" * 5000)
                elif self.path == "/liar.png":
                    self.send_response(200)
                    self.send_header("Content-Length", "999999999")
                    self.end_headers()
                else:
                    self.send_response(200)
                    self.end_headers()
                    self.wfile.write(PNG)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        serve = lambda: self.server.serve_forever(poll_interval=0.02)  # noqa: E731
        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def origin(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Origin]:
    # The workplace's rule and this suite's: only loopback is ever connected to.
    connect = socket.socket.connect

    def loopback_only(sock: socket.socket, address: Any) -> Any:
        host = address[0]
        assert host.startswith("127.") or host in ("::1", "localhost"), f"connect to {address}"
        return connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", loopback_only)
    server = _Origin()
    yield server
    server.close()


LOOPBACK = MediaLimits(allow_networks=("127.0.0.1/32",), max_bytes=1000, timeout=0.5)


def _refused(url: str, limits: MediaLimits) -> str:
    with pytest.raises(errors.MediaAccessError) as caught:
        fetch(url, limits, "messages[0].content[0]")
    assert caught.value.path == "messages[0].content[0]"
    return caught.value.reason


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "localhost",
        "127.1",
        "2130706433",  # 127.0.0.1 as one number
        "0x7f000001",
        "0177.0.0.1",
        "0",
        "[::1]",
        "[::ffff:127.0.0.1]",
        "[::]",
    ],
)
def test_loopback_however_spelled_is_refused(origin: _Origin, host: str) -> None:
    assert "not a public address" in _refused(origin.url("/cat.png", host), MediaLimits())
    assert origin.hits == []


@pytest.mark.parametrize(
    "address",
    [
        "10.0.0.1",
        "172.16.5.4",
        "192.168.1.1",
        "169.254.169.254",  # cloud metadata
        "100.64.0.1",  # carrier-grade NAT
        "224.0.0.1",  # multicast
        "240.0.0.1",  # reserved
        "fc00::1",
        "fe80::1",
        "::ffff:10.0.0.1",
        "2002:a00:1::",  # 6to4 of 10.0.0.1
    ],
)
def test_private_and_link_local_addresses_are_refused_before_connecting(
    origin: _Origin, address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ipaddress

    assert not is_public_address(ipaddress.ip_address(address))
    # A name that resolves there (no real DNS): refused before any connection,
    # which the loopback-only guard would fail anyway.
    family = socket.AF_INET6 if ":" in address else socket.AF_INET

    def resolve(host: str, port: Any, *args: Any, **kwargs: Any) -> Any:
        return [(family, socket.SOCK_STREAM, 6, "", (address, 80))]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    assert "not a public address" in _refused("http://internal.example/x.png", MediaLimits())


def test_a_name_with_one_private_address_among_public_ones_is_refused(
    origin: _Origin, monkeypatch: pytest.MonkeyPatch
) -> None:
    # DNS rebinding: the guard checks every address and connects only to one it
    # checked, so a public first answer cannot smuggle a private second.
    answers = [
        (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", 80)),
        (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.1", 80)),
    ]
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: answers)
    assert "not a public address" in _refused("http://rebind.example/x.png", MediaLimits())


def test_allowed_networks_are_downloaded_from(origin: _Origin) -> None:
    assert fetch(origin.url("/cat.png"), MediaLimits(allow_networks=("127.0.0.0/8",)), "") == PNG
    assert origin.hits == ["/cat.png"]


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("http://127.0.0.2:{port}/cat.png", "host '127.0.0.2' is not a public address"),
        ("http://169.254.169.254/latest/meta-data/", "host '169.254.169.254' is not a public"),
        ("http://[::1]:{port}/cat.png", "host '::1' is not a public address"),
        ("file:///etc/passwd", "Redirection to url 'file:///etc/passwd' is not allowed"),
        ("ftp://127.0.0.1/x", "not allowed"),
    ],
)
def test_redirects_are_checked_like_the_first_request(
    origin: _Origin, target: str, reason: str
) -> None:
    url = origin.url("/redirect?" + target.format(port=origin.port))
    assert reason in _refused(url, LOOPBACK)
    assert origin.hits == [url.split(str(origin.port), 1)[1]]


def test_redirect_loops_stop(origin: _Origin) -> None:
    allowed = MediaLimits(allow_networks=("127.0.0.1/32",), max_redirects=3)
    chain = origin.url("/cat.png")
    for _ in range(3):
        chain = origin.url("/redirect?" + chain)
    assert fetch(chain, allowed, "") == PNG  # three hops: within the limit
    chain = origin.url("/redirect?" + chain)
    with pytest.raises(errors.MediaAccessError, match="redirect"):
        fetch(chain, allowed, "")


def test_size_and_time_caps_hold(origin: _Origin) -> None:
    assert "larger than 1000 bytes" in _refused(origin.url("/big.png"), LOOPBACK)
    assert "larger than 1000 bytes" in _refused(origin.url("/liar.png"), LOOPBACK)
    started = time.monotonic()
    assert "took longer than 0.5s" in _refused(origin.url("/drip.png"), LOOPBACK)
    assert time.monotonic() - started < 1.5


def test_only_http_urls_are_downloaded() -> None:
    for url in ("file:///etc/passwd", "ftp://example.invalid/x", "data:,x", "gopher://x/"):
        assert "only http(s)" in _refused(url, MediaLimits())
    assert "not a valid URL" in _refused("http://[::1/x.png", MediaLimits())


def test_server_with_downloads_refuses_loopback_unless_allowed(origin: _Origin) -> None:
    msgs = [_image(origin.url("/cat.png"))]
    running = RunningServer(ServerConfig(port=0, allow_download=True)).start()
    try:
        with FormatterClient(running.target) as client:
            with pytest.raises(errors.MediaAccessError) as caught:
                client.format("ollama", msgs)
            assert caught.value.path == "messages[0].content[0]"
            assert "not a public address" in caught.value.reason
    finally:
        running.stop()
    assert origin.hits == []
    allowed = MediaLimits(allow_networks=("127.0.0.1/32",))
    config = ServerConfig(port=0, allow_download=True, media_limits=allowed)
    running = RunningServer(config).start()
    try:
        with FormatterClient(running.target) as client:
            body = client.format("ollama", msgs)
    finally:
        running.stop()
    assert origin.hits == ["/cat.png"]
    assert body["messages"][0]["images"] == [base64.b64encode(PNG).decode()]


# -- auth and logs -------------------------------------------------------------------

TOKEN = "tok-3f9c2a7e-do-not-log"


def test_the_token_is_never_logged_or_echoed(caplog: pytest.LogCaptureFixture) -> None:
    running = RunningServer(ServerConfig(port=0, auth_token=TOKEN)).start()
    try:
        with caplog.at_level(logging.DEBUG):
            for token in (None, "", "wrong-secret-value", TOKEN[:-1], TOKEN, TOKEN + " "):
                with FormatterClient(running.target, token=token) as client:
                    # b"[]" is not a response: the parser's error once authenticated.
                    exc = _outcome(lambda c=client: c.parse("openai", b"[]", timeout=5))
                    assert isinstance(exc, errors.AgentScopeProtoError)
                    assert TOKEN not in str(exc)
                    assert "wrong-secret-value" not in str(exc)
                    authenticated = token == TOKEN
                    assert isinstance(exc, errors.ParseError) is authenticated, (token, exc)
    finally:
        running.stop()
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert TOKEN not in logged
    assert "wrong-secret-value" not in logged


def test_the_serve_command_never_logs_the_token(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "AS_TOKEN": TOKEN}
    command = [sys.executable, "-m", "agentscope_proto", "serve", "--port", str(port)]
    command += ["--auth-token-env", "AS_TOKEN", "--log-level", "debug", "--grace", "1"]
    process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    try:
        target = f"127.0.0.1:{port}"
        grpc.channel_ready_future(grpc.insecure_channel(target)).result(timeout=30)
        for token in ("wrong-secret-value", TOKEN):
            with FormatterClient(target, token=token) as client:
                _outcome(lambda c=client: c.parse("openai", b"[]", timeout=5))
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    assert "listening on" in stderr
    assert TOKEN not in stderr
    assert "wrong-secret-value" not in stderr


def test_client_text_cannot_forge_log_lines(caplog: pytest.LogCaptureFixture) -> None:
    forged = "x\n2026-01-01 00:00:00 CRITICAL [pid 1] agentscope_proto.server: forged"
    msgs = [
        {"name": "u", "role": "user", "content": [{"type": forged, "text": "a"}]},
        {"name": "u", "role": "user", "content": [{"type": "text", "text": "b"}]},
    ]
    with caplog.at_level(logging.DEBUG, logger="agentscope_proto"):
        for provider in PROVIDERS:
            _outcome(lambda p=provider: format(p, msgs))
        running = RunningServer(ServerConfig(port=0)).start()
        try:
            with FormatterClient(running.target) as client:
                error_body = json.dumps({"error": {"message": forged}})
                for provider in PROVIDERS:
                    _outcome(lambda p=provider: client.format(p, msgs))
                    _outcome(lambda p=provider: client.parse(p, error_body))
        finally:
            running.stop()
    for record in caplog.records:
        assert "\n" not in record.getMessage(), record.getMessage()
