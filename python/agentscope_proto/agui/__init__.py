"""Served agents as AG-UI agents: a reply's events as an AG-UI run's events,
and an AG-UI `RunAgentInput` as a `ReplyRequest` (docs/agui.md).

The events and their JSON encoding are ag-ui-protocol's own, so this package
needs the `agui` extra (`pip install "agentscope-proto[agui]"`);
`import agentscope_proto` never imports it.
"""

from __future__ import annotations

try:
    import ag_ui.core  # noqa: F401
except ImportError as error:
    raise ImportError(
        'agentscope_proto.agui needs ag-ui-protocol: pip install "agentscope-proto[agui]"'
    ) from error

from .interrupts import interrupts
from .messages import msg_from_user_message, user_message_from_msg
from .requests import read_run_input, reply_request
from .stream import HANDLERS, RunStream, encode

__all__ = [
    "HANDLERS",
    "RunStream",
    "encode",
    "interrupts",
    "msg_from_user_message",
    "read_run_input",
    "reply_request",
    "user_message_from_msg",
]
