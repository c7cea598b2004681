"""What a reply that raised tells its caller: AgentScope 2.x's error type,
and a fixed text per type.

Classified as 2.x's own service classifies a failed reply: by an HTTP status
anywhere in the exception's chain (or exception group), else by a network
failure, else internal; an agent its factory could not make is `setup`. The
text is generic on purpose: a provider's message may hold a credential or an
internal name, and goes to the server log only.

What the agent raises is its reply's failure, whatever it is (`by_agent`):
a `CancelledError` nobody asked for, `SystemExit` or `KeyboardInterrupt` too,
which would otherwise end the reply as if it succeeded, or the server.
"""

from __future__ import annotations

import asyncio
import logging

from ...errors import AgentReplyError
from ...service._rpc import log_failure

__all__ = ["MESSAGES", "by_agent", "classify", "contained", "log", "log_remote", "log_setup"]

logger = logging.getLogger("agentscope_proto.agents")

# HTTP statuses an upstream service answered with -> 2.x error type (other 4xx
# are invalid requests, 5xx upstream failures).
_STATUSES = {401: "authentication", 403: "permission", 429: "rate_limit"}
# Exception classes (by name, so that no provider SDK is imported) that mean
# the network failed: httpx, openai/anthropic, aiohttp.
_NETWORK = frozenset(
    {
        "TransportError",
        "APIConnectionError",
        "APITimeoutError",
        "ClientConnectionError",
        "ClientConnectorError",
    }
)
MESSAGES = {
    "authentication": "The agent's model service refused its credentials.",
    "permission": "The agent's model service denied it access.",
    "rate_limit": "The agent's model service is rate limited; try again later.",
    "invalid_request": "The agent's model service refused the request as invalid.",
    "upstream": "The agent's model service failed.",
    "connection": "The agent could not reach its model service.",
    "internal": "The agent failed unexpectedly.",
    "setup": "The agent could not be made: its factory failed.",
}


def by_agent(exc: BaseException) -> bool:
    """Whether `exc`, raised where the agent (or its factory) runs, is the
    agent's failure rather than the reply being stopped: any `Exception`;
    `SystemExit` and `KeyboardInterrupt` (the server takes its signals in its
    event loop, so these come from the agent's code); a `CancelledError` when
    nothing cancelled the running task (a caller's interrupt does: Python
    3.11's `Task.cancelling`; before, every one counts as an interrupt).
    Never `GeneratorExit`: the reply's reader is done with it."""
    if isinstance(exc, Exception | SystemExit | KeyboardInterrupt):
        return True
    if isinstance(exc, asyncio.CancelledError):
        cancelling = getattr(asyncio.current_task(), "cancelling", None)
        return cancelling is not None and cancelling() == 0
    return False


def contained(exc: BaseException) -> Exception:
    """`exc` as an exception the server may raise on: one that is not an
    `Exception` would stop more than the reply (the task, or the server), so
    it becomes an internal failure (logged here)."""
    if isinstance(exc, Exception):
        return exc
    log_failure("the agent's code", exc)
    return AgentReplyError("internal", MESSAGES["internal"])


def _causes(exc: BaseException) -> list[BaseException]:
    """`exc`, what it wraps (`__cause__`, `__context__`) and the members of
    exception groups: a provider's 401 often arrives wrapped."""
    seen: list[BaseException] = []
    pending = [exc]
    while pending:
        current = pending.pop()
        if any(current is other for other in seen):
            continue
        seen.append(current)
        members = getattr(current, "exceptions", None)  # an exception group
        if isinstance(members, tuple):
            pending.extend(members)
        pending.extend(link for link in (current.__cause__, current.__context__) if link)
    return seen


def _status(exc: BaseException) -> int | None:
    for status in (
        getattr(exc, "status_code", None),
        getattr(exc, "status", None),
        getattr(getattr(exc, "response", None), "status_code", None),
    ):
        if isinstance(status, int) and not isinstance(status, bool):
            return status
    return None


def classify(exc: BaseException) -> str:
    """AgentScope 2.x's error type for a reply that raised `exc`."""
    causes = _causes(exc)
    for cause in causes:
        status = _status(cause)
        if status is not None:
            return "upstream" if status >= 500 else _STATUSES.get(status, "invalid_request")
    for cause in causes:
        if isinstance(cause, TimeoutError | ConnectionError) or any(
            cls.__name__ in _NETWORK for cls in type(cause).__mro__
        ):
            return "connection"
    return "internal"


def log(agent_name: str, exc: BaseException) -> None:
    """Log a failed reply as every unexpected error is logged: repr() (a
    provider's message may hold newlines that would forge log lines) and the
    stack's frames."""
    log_failure(f"the reply of agent {agent_name!r}", exc)


def log_setup(exc: BaseException) -> None:
    """Log a factory that failed to make a session's agent."""
    log_failure("making an agent (the factory)", exc)


def log_remote(agent_name: str, exc: AgentReplyError) -> None:
    """Log the failed reply of a remote agent (a hosted `RemoteAgent`): what
    its server said, no stack (the failure was not here)."""
    logger.warning(
        "the reply of agent %r failed remotely (%s): %r", agent_name, exc.error_type, exc.message
    )
