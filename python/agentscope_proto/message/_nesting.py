"""How deep tool results and hints may nest in a message.

A block list inside a tool result (or a hint) holds blocks again, so a message
can nest without end in Python; on the wire it cannot: protobuf's decoders
(upb, C++, protobuf-java) refuse messages nested past 100 levels. A message
read from a dict must travel in every envelope of the schema (the deepest,
today, is an event of an agent's reply), so the cap is derived
here from the descriptors: the deepest level a block takes in any RPC's
request or response, what a block holds below itself, and the levels each
nesting adds. A schema change that moves them moves the cap with it.
"""

from __future__ import annotations

from collections.abc import Iterator

from google.protobuf.descriptor import Descriptor

from .._generated.agentscope.agent.v1 import agent_service_pb2, hub_service_pb2
from .._generated.agentscope.formatter.v1 import formatter_service_pb2
from .._generated.agentscope.message.v1.message_pb2 import ContentBlock, Msg
from ..errors import MessageFormatError

__all__ = ["MAX_NESTING", "check_nesting"]

# Levels of messages nested below the top one the decoders take (upb's and
# protobuf-java's default).
DECODER_DEPTH = 100
_BLOCK = ContentBlock.DESCRIPTOR
# A block's fields holding nested blocks, and the dict key each is read from.
_NESTED = {"tool_result": "output", "hint": "hint"}


def _children(message: Descriptor) -> Iterator[Descriptor]:
    for field in message.fields:
        if field.message_type is not None:
            yield field.message_type


def _first_block(message: Descriptor, level: int, above: tuple[str, ...]) -> int:
    """The deepest level (`message` at `level`) a block takes below `message`
    before any block; -1 if none."""
    if message is _BLOCK:
        return level
    if message.full_name in above:
        raise ValueError(f"a cycle besides nested blocks: {' -> '.join(above)}")
    inside = (*above, message.full_name)
    return max((_first_block(child, level + 1, inside) for child in _children(message)), default=-1)


def _below_block(message: Descriptor, above: tuple[str, ...]) -> tuple[int, int]:
    """How deep `message` goes below itself without another block, and the
    most levels a path from the block back to a block takes."""
    deepest, step = 0, 0
    for child in _children(message):
        if child is _BLOCK:
            step = max(step, len(above))
            continue
        if child.full_name in above:
            raise ValueError(f"a cycle besides nested blocks: {' -> '.join(above)}")
        depth, inner_step = _below_block(child, (*above, child.full_name))
        deepest, step = max(deepest, depth + 1), max(step, inner_step)
    return deepest, step


def _max_nesting() -> int:
    envelopes = [
        method_type
        for module in (agent_service_pb2, hub_service_pb2, formatter_service_pb2)
        for service in module.DESCRIPTOR.services_by_name.values()
        for method in service.methods
        for method_type in (method.input_type, method.output_type)
    ]
    first = max(_first_block(envelope, 0, ()) for envelope in envelopes)
    below, step = _below_block(_BLOCK, (_BLOCK.full_name,))
    return (DECODER_DEPTH - first - below) // step


# Levels of tool results (or hints) nested in one another a message may hold.
MAX_NESTING = _max_nesting()


def check_nesting(msg: Msg) -> None:
    """Refuse a message whose tool results or hints nest past `MAX_NESTING`,
    naming the first block past it (`content[0].output[0]...`)."""
    if msg.WhichOneof("content") != "blocks":
        return
    pending = [(msg.blocks.items, "content", 0)]
    while pending:
        blocks, path, level = pending.pop()
        for index, block in enumerate(blocks):
            kind = block.WhichOneof("block")
            if kind not in _NESTED:
                continue
            inner = getattr(block, kind)
            if inner.WhichOneof(_NESTED[kind]) != "blocks":
                continue
            where = f"{path}[{index}].{_NESTED[kind]}"
            if level == MAX_NESTING:
                raise MessageFormatError(
                    where,
                    f"tool results and hints nest at most {MAX_NESTING} levels (deeper, "
                    f"no protobuf decoder takes the message: they stop at {DECODER_DEPTH} "
                    "levels of the schema)",
                )
            pending.append((inner.blocks.items, where, level + 1))
