"""How a served agent is driven, per AgentScope major version: 2.x agents
(`agentscope2.py`), and 1.x agents through an adapter (`agentscope1.py`).
`base.py` has what they share (`Hosting`, `ReplyInputs`); `failures.py` what
a failed reply tells its caller. AgentScope is imported only here, and only
the version the served agent needs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from ... import interop
from .agentscope1 import AgentScope1
from .agentscope2 import AgentScope2
from .protocol import Checkpoint, Hosting, Item, ReplyInputs, SavedState, Taken, encoded

__all__ = [
    "AgentScope1",
    "AgentScope2",
    "Checkpoint",
    "Hosting",
    "Item",
    "ReplyInputs",
    "SavedState",
    "Taken",
    "encoded",
    "hosting_for",
]

# AgentScope's major version -> whether an object is its agent, and its hosting.
_HOSTINGS: dict[int, tuple[Callable[[Any], bool], Callable[[], Hosting]]] = {
    2: (lambda agent: callable(getattr(agent, "reply_stream", None)), AgentScope2),
    1: (
        lambda agent: isinstance(agent, importlib.import_module("agentscope.agent").AgentBase),
        AgentScope1,
    ),
}


def hosting_for(agent: Any) -> Hosting:
    """The hosting of `agent`'s AgentScope version; `TypeError` if it is not
    an agent of the installed AgentScope."""
    try:
        major: int | None = interop.agentscope_major()
    except ImportError:
        major = None  # no AgentScope: nothing here is an agent
    if major in _HOSTINGS:
        is_agent, hosting = _HOSTINGS[major]
        if is_agent(agent):
            return hosting()
    installed = "AgentScope is not installed" if major is None else f"AgentScope {major}.x"
    kind = f"{type(agent).__module__}.{type(agent).__qualname__}"
    raise TypeError(f"expected an AgentScope agent ({installed}), got a {kind}")
