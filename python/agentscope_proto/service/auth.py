"""Bearer-token authentication for every RPC but health checks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from hmac import compare_digest
from typing import Any

import grpc

__all__ = ["BearerTokenAuth"]

_HEALTH_PREFIX = "/grpc.health.v1.Health/"
_DENIED = "missing or invalid bearer token"


async def _deny(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
    await context.abort(grpc.StatusCode.UNAUTHENTICATED, _DENIED)


async def _deny_stream(request_iterator: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
    await context.abort(grpc.StatusCode.UNAUTHENTICATED, _DENIED)
    yield  # pragma: no cover - makes this an async generator


class BearerTokenAuth(grpc.aio.ServerInterceptor):
    """Requires `authorization: Bearer <token>` on every RPC but health checks."""

    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()
        self._deny_unary: grpc.RpcMethodHandler[Any, Any] = grpc.unary_unary_rpc_method_handler(
            _deny
        )
        self._deny_stream: grpc.RpcMethodHandler[Any, Any] = grpc.stream_stream_rpc_method_handler(
            _deny_stream
        )

    def accepts(self, authorization: str | bytes) -> bool:
        """Whether an `authorization` header value carries the token."""
        value = authorization.encode() if isinstance(authorization, str) else bytes(authorization)
        # Constant-time comparison: the time taken must not reveal the token.
        return compare_digest(value, self._expected)

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]
        ],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        method = details.method or ""
        if method.startswith(_HEALTH_PREFIX):
            return await continuation(details)
        if self.accepts(dict(details.invocation_metadata or ()).get("authorization", "")):
            return await continuation(details)
        return self._deny_stream if method.endswith("/ParseStream") else self._deny_unary
