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
from ...errors import FormatError
from .._provider import nothing_to_send
from ._common import Json, Notes
from .anthropic import anthropic, anthropic_container
from .chat import dashscope, ollama, openai
from .gemini import gemini
from .responses import responses

__all__ = ["provider_fidelity"]

# Each provider's pass, and the body key of the conversation where the
# provider's API refuses an empty one (OpenAI: "expected an array with minimum
# length 1"). None: Ollama documents an empty `messages` (it loads the model)
# and the Responses API's `input` is optional (`previous_response_id` carries
# the conversation).
_PASSES: dict[str, tuple[Callable[[Json, Notes], None], str | None]] = {
    "anthropic": (anthropic, "messages"),
    "dashscope": (dashscope, "messages"),
    "deepseek": (openai, "messages"),
    "gemini": (gemini, "contents"),
    "ollama": (ollama, None),
    "openai": (openai, "messages"),
    "openai_responses": (responses, None),
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
    change to `warnings`; returns a new body. A body left without a message
    where the provider's API needs one is a `FormatError`.
    """
    adapted = copy.deepcopy(body)
    adapt, conversation = _PASSES[provider]
    adapt(adapted, Notes(warnings))
    if conversation is not None and adapted.get(conversation) == []:
        raise FormatError(conversation, nothing_to_send(provider))
    continuation = _CONTINUATIONS.get(provider)
    if continuation is not None and metadata:
        continuation(adapted, metadata)
    return adapted
