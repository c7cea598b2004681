"""Media downloads for the formatters, guarded against server-side request forgery.

A message is untrusted input, and a media URL in it makes the formatter fetch
whatever the sender names. With downloads allowed, that is a way into the
server's own network (cloud metadata endpoints, admin ports on localhost,
databases on private addresses). So a download:

- resolves the host itself and refuses it unless every address is public
  (not private, loopback, link-local, multicast, reserved or unspecified,
  IPv4-mapped and 6to4 forms included), or inside a network the operator
  explicitly allowed (`MediaLimits.allow_networks`);
- then connects to exactly the address it checked, so a second DNS answer
  cannot swap in another one (DNS rebinding);
- follows at most `max_redirects` redirects, each checked the same way, and
  only to http(s);
- uses no proxy from the environment, and no `file:`, `ftp:` or `data:`
  handler;
- stops at `max_bytes` and after `timeout` seconds in all (not per read, so a
  server sending one byte at a time cannot hold it forever).

A refusal is a `MediaAccessError` (FAILED_PRECONDITION over gRPC). A transport
failure (refused connection, HTTP error status, timeout) stays an `OSError`, so
that callers reproducing AgentScope's retries can retry it.
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import logging
import socket
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from .errors import MediaAccessError

__all__ = ["MEDIA_LIMITS", "MediaLimits", "fetch", "is_public_address", "media_limits"]

logger = logging.getLogger("agentscope_proto.format")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_CHUNK = 64 * 1024


@dataclass(frozen=True, slots=True)
class MediaLimits:
    """Caps on the media a formatter reads or downloads.

    `max_bytes` caps a local file and a download alike; `timeout` is the whole
    time one download may take; `allow_networks` lists CIDR networks (e.g.
    `"10.0.0.0/8"`, `"127.0.0.1/32"`) that downloads may reach although they are
    not public. Empty by default: only public addresses.
    """

    max_bytes: int = 20 * 1024 * 1024
    timeout: float = 10.0
    max_redirects: int = 3
    allow_networks: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Fail when the limits are made (at server start), not on a request.
        self.networks()

    def networks(self) -> tuple[IPNetwork, ...]:
        """`allow_networks` parsed."""
        return tuple(ipaddress.ip_network(net, strict=False) for net in self.allow_networks)


# The limits `format()` applies when the caller does not build its own
# `FormatContext`; the server sets them from its configuration per call.
MEDIA_LIMITS: ContextVar[MediaLimits] = ContextVar("media_limits", default=MediaLimits())  # noqa: B039


@contextlib.contextmanager
def media_limits(limits: MediaLimits) -> Iterator[MediaLimits]:
    """Apply `limits` to the `format()` calls made inside the `with` block."""
    token = MEDIA_LIMITS.set(limits)
    try:
        yield limits
    finally:
        MEDIA_LIMITS.reset(token)


def is_public_address(ip: IPAddress) -> bool:
    """Whether `ip` is a public unicast address (including the IPv4 address
    an IPv4-mapped, 6to4 or Teredo IPv6 address carries)."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = [ip.ipv4_mapped, ip.sixtofour, *(ip.teredo or ())]
        if any(inner is not None and not is_public_address(inner) for inner in embedded):
            return False
    return ip.is_global and not ip.is_multicast


class _Guard:
    """Resolves, vets and connects; installed as each HTTP connection's socket factory."""

    def __init__(self, url: str, location: str, networks: tuple[IPNetwork, ...]) -> None:
        self._url = url
        self._location = location
        self._networks = networks

    def _allowed(self, ip: IPAddress) -> bool:
        if any(ip in net for net in self._networks if net.version == ip.version):
            return True
        return is_public_address(ip)

    def connect(
        self, address: tuple[str, int], timeout: Any = None, source_address: Any = None
    ) -> socket.socket:
        host, port = address
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        for *_, sockaddr in infos:
            ip = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
            if not self._allowed(ip):
                # The address stays in the log: telling an untrusted client
                # what an internal name resolves to would map the network.
                logger.info("download of %r refused: %r resolves to %s", self._url, host, ip)
                raise MediaAccessError(
                    self._location,
                    f"{self._url!r}: host {host!r} is not a public address; downloads from "
                    "private, loopback and link-local addresses are refused",
                )
        error: OSError = OSError(f"cannot connect to {host!r}")
        for family, kind, proto, _, sockaddr in infos:
            sock = socket.socket(family, kind, proto)
            try:
                if timeout is not None:
                    sock.settimeout(timeout)
                sock.connect(sockaddr)
            except OSError as exc:
                sock.close()
                error = exc
                continue
            return sock
        raise error

    def factory(self, connection_class: type[http.client.HTTPConnection]) -> Callable[..., Any]:
        def make(host: str, **kwargs: Any) -> http.client.HTTPConnection:
            connection = connection_class(host, **kwargs)
            # http.client opens its socket through this attribute; both HTTP and
            # HTTPS (which wraps the socket afterwards, keeping SNI and
            # certificate checks on the host name) go through the guard.
            setattr(connection, "_create_connection", self.connect)  # noqa: B010
            return connection

        return make


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, guard: _Guard) -> None:
        super().__init__()
        self._guard = guard

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(self._guard.factory(http.client.HTTPConnection), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, guard: _Guard) -> None:
        super().__init__(context=ssl.create_default_context())
        self._guard = guard

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(
            self._guard.factory(http.client.HTTPSConnection),
            req,
            context=self._context,  # type: ignore[attr-defined]
        )


def _opener(guard: _Guard, limits: MediaLimits) -> urllib.request.OpenerDirector:
    # Built by hand rather than with build_opener(): no ProxyHandler (proxies
    # from the environment would bypass the guard), no file/ftp/data handlers.
    opener = urllib.request.OpenerDirector()
    redirects = urllib.request.HTTPRedirectHandler()
    # typeshed declares it a class variable; the instance attribute is what
    # urllib reads, and it keeps the limit to this opener.
    setattr(redirects, "max_redirections", limits.max_redirects)  # noqa: B010
    for handler in (
        _HTTPHandler(guard),
        _HTTPSHandler(guard),
        redirects,
        urllib.request.HTTPDefaultErrorHandler(),
        urllib.request.HTTPErrorProcessor(),
        urllib.request.UnknownHandler(),
    ):
        opener.add_handler(handler)
    return opener


def fetch(url: str, limits: MediaLimits, location: str) -> bytes:
    """The body of an http(s) `url`, within `limits`; `location` names the block in errors.

    Raises `MediaAccessError` for a refused URL or a body over the limits, and
    `OSError` for a failed transfer.
    """
    try:
        scheme = urllib.parse.urlsplit(url).scheme
    except ValueError as exc:
        raise MediaAccessError(location, f"{url!r} is not a valid URL ({exc})") from None
    if scheme not in ("http", "https"):
        raise MediaAccessError(location, f"{url!r}: only http(s) URLs can be downloaded")
    guard = _Guard(url, location, limits.networks())
    deadline = time.monotonic() + limits.timeout
    too_large = MediaAccessError(location, f"{url!r} is larger than {limits.max_bytes} bytes")
    try:
        with _opener(guard, limits).open(url, timeout=limits.timeout) as response:
            declared = response.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > limits.max_bytes:
                raise too_large
            parts: list[bytes] = []
            size = 0
            while True:
                if time.monotonic() > deadline:
                    raise MediaAccessError(
                        location, f"{url!r} took longer than {limits.timeout:g}s to download"
                    )
                # read1: at most one read from the socket, so that the clock is
                # checked between the pieces of a slowly sent body.
                part = response.read1(min(_CHUNK, limits.max_bytes + 1 - size))
                if not part:
                    break
                parts.append(part)
                size += len(part)
                if size > limits.max_bytes:
                    raise too_large
    except MediaAccessError:
        raise
    except urllib.error.HTTPError as exc:
        if 300 <= exc.code < 400:
            # A redirect urllib refused (to another scheme, or too many).
            raise MediaAccessError(location, f"{url!r}: {exc.reason}") from None
        # An error status; its body (an error page) is of no use.
        raise OSError(f"HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, str) and exc.reason.startswith("unknown url type"):
            # A redirect to a scheme this opener has no handler for (ftp:).
            raise MediaAccessError(
                location, f"{url!r}: redirect not allowed ({exc.reason})"
            ) from None
        raise
    except http.client.HTTPException as exc:
        # Truncated bodies and bad status lines are transfer failures too.
        raise OSError(f"{type(exc).__name__}: {exc}") from None
    except ValueError as exc:
        # urllib's own refusal of a malformed URL or redirect target.
        raise MediaAccessError(location, f"{url!r}: {exc}") from None
    return b"".join(parts)
