"""Provider fidelity for `format()`: the parity body adapted to the provider's API.

`format(..., fidelity="provider")` formats exactly as AgentScope 1.0.21 first,
then hands the finished body to its provider's pass (one module each). The parity
code never sees this module, so provider fidelity cannot leak into parity.

Each pass makes the body one the provider's own request schema accepts: keys
the provider does not define are dropped (foreign signatures, `cache_control`
where the API has none, `name` on tool messages), content a place cannot hold
is replaced by a short text note (audio in an Anthropic tool result, an image
in an OpenAI assistant turn, unsigned thinking for Anthropic becomes text),
tool calls nothing answers are dropped, empty text and thinking blocks are
dropped, and tool schemas are narrowed to the keywords the provider takes.
Every drop or move is a `FormatWarning` whose path points into the parity body
(`messages[3].content[1]`), `block_type` the kind of thing changed and
`message` what was done. Pure: the input body is deep-copied, never changed.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from ..._generated.agentscope.formatter.v1.formatter_service_pb2 import FormatWarning
from ._common import Json, Notes
from .anthropic import anthropic, anthropic_container
from .chat import dashscope, ollama, openai
from .gemini import gemini
from .responses import responses

__all__ = ["provider_fidelity"]

_PASSES: dict[str, Callable[[Json, Notes], None]] = {
    "anthropic": anthropic,
    "dashscope": dashscope,
    "deepseek": openai,
    "gemini": gemini,
    "ollama": ollama,
    "openai": openai,
    "openai_responses": responses,
}


# What a pass takes from the messages' metadata (what a provider-fidelity
# parse kept there) for the next request to continue the last.
_CONTINUATIONS: dict[str, Callable[[Json, list[Any]], None]] = {
    "anthropic": anthropic_container,
}


def provider_fidelity(
    provider: str,
    body: Json,
    warnings: list[FormatWarning],
    metadata: list[Any] | None = None,
) -> Json:
    """`body` (AgentScope parity, for `provider`) adapted so the provider accepts it.

    `metadata` is each message's metadata, oldest first. Appends a warning per
    change to `warnings`; returns a new body.
    """
    adapted = copy.deepcopy(body)
    _PASSES[provider](adapted, Notes(warnings))
    continuation = _CONTINUATIONS.get(provider)
    if continuation is not None and metadata:
        continuation(adapted, metadata)
    return adapted
