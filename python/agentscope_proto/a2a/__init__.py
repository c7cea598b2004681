"""AgentScope messages as A2A 1.0 messages and artifacts, and back, exactly;
served agents as A2A agents (`server`), and any A2A agent called as a served
one (`client`).

The mapping, the AgentScope extension it writes and agentscope-java's keys it
also speaks are in docs/a2a.md. The types are a2a-sdk's generated ones, so this
package needs the `a2a` extra (`pip install "agentscope-proto[a2a]"`);
`import agentscope_proto` never imports it.
"""

from __future__ import annotations

try:
    import a2a.types  # noqa: F401
except ImportError as error:
    raise ImportError(
        'agentscope_proto.a2a needs a2a-sdk: pip install "agentscope-proto[a2a]"'
    ) from error

from .mapping import (
    BLOCK_KEY,
    ENVELOPE_KEY,
    EVENTS_KEY,
    EXTENSION_URI,
    JAVA_KEYS,
    MSG_KEY,
    MSGS_KEY,
    REQUEST_KEY,
    a2a_to_msg,
    a2a_to_msgs,
    agent_extension,
    artifact_to_msg,
    msg_to_a2a,
    msg_to_artifact,
    msgs_to_a2a,
    prefix_speaker_names,
)

__all__ = [
    "BLOCK_KEY",
    "ENVELOPE_KEY",
    "EVENTS_KEY",
    "EXTENSION_URI",
    "JAVA_KEYS",
    "MSGS_KEY",
    "MSG_KEY",
    "REQUEST_KEY",
    "a2a_to_msg",
    "a2a_to_msgs",
    "agent_extension",
    "artifact_to_msg",
    "msg_to_a2a",
    "msg_to_artifact",
    "msgs_to_a2a",
    "prefix_speaker_names",
]
