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

from . import mapping
from .mapping import *  # noqa: F403 - the package's names are the mapping's

__all__ = mapping.__all__
