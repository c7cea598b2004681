"""Hosting of AgentScope 1.x agents (`agentscope.agent.AgentBase`).

A 1.x agent streams by printing: it prints each message whole so far, and
once more with `last` set. The adapter takes the prints from the agent's
message queue and streams their new text as text and thinking block events
(tool calls are not printed as they stream), then the reply's end and the
agent's final message. 1.x agents ask nothing, so they take no answers.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

from ... import _json, interop
from ..._generated.agentscope.agent.v1 import agent_service_pb2 as service_pb
from ..._generated.agentscope.agent.v1 import events_pb2 as pb
from ..._generated.agentscope.agent.v1 import state_pb2
from ..._generated.agentscope.message.v1.message_pb2 import ErrorType, FinishedReason, Msg
from ...errors import AgentReplyError, MessageFormatError
from . import failures
from .protocol import Item, ReplyInputs, SavedState, Taken, new_event, read_each

__all__ = ["AgentScope1"]

# The kinds of printed blocks that stream, each as its own block events.
_STREAMED = ("text", "thinking")
_EVENTS = [
    "reply_start",
    *(f"{kind}_block_{step}" for kind in _STREAMED for step in ("start", "delta", "end")),
    "reply_end",
]


class AgentScope1:
    """Hosting of AgentScope 1.x agents (see the module doc)."""

    # A 1.x reply is one call of the agent, with no point to go on from.
    can_take_over = False

    def __init__(self) -> None:
        self.framework = f"agentscope {importlib.metadata.version('agentscope')}"

    def read_msgs(self, msgs: Sequence[Msg], field: str) -> list[Any]:
        return read_each(msgs, field, lambda msg, _: interop.to_agentscope(msg))

    def read_inputs(self, request: service_pb.ReplyRequest) -> ReplyInputs:
        which = request.WhichOneof("answer")
        if which is not None:
            raise MessageFormatError(which, "an AgentScope 1.x agent asks nothing to answer")
        if request.HasField("structured_schema_json"):
            raise MessageFormatError(
                "structured_schema_json", "this AgentScope 1.x agent takes no JSON schema"
            )
        msgs = self.read_msgs(request.msgs, "msgs") or None
        return ReplyInputs(msgs, None, None, request.reply_id)

    def bind(self, agent: Any, session_id: str) -> None:
        # What the agent prints goes to the reply's queue, not to stdout.
        agent.set_console_output_enabled(False)

    def check(self, agent: Any, inputs: ReplyInputs) -> None:
        return None

    def question(self, agent: Any) -> None:
        return None  # a 1.x reply never stops to ask its caller

    async def reply(self, agent: Any, session_id: str, inputs: ReplyInputs) -> AsyncIterator[Item]:
        printed: asyncio.Queue[Any] = asyncio.Queue()
        agent.set_msg_queue_enabled(True, printed)
        text = _PrintedText(session_id, inputs.reply_id or uuid.uuid4().hex)
        yield text.start(agent.name)
        call = asyncio.ensure_future(agent(inputs.msgs))
        try:
            async for msg, last, _ in _printed(call, printed):
                for event in text.chunk(msg, last):
                    yield event
            final, reason = call.result(), "completed"
        except asyncio.CancelledError:
            # 1.x's own interrupt: its `__call__` catches the cancellation and
            # answers with `handle_interrupt`'s message.
            call.cancel()
            final, reason = await asyncio.shield(call), "interrupted"
        except Exception as exc:
            failures.log(agent.name, exc)
            error_type = failures.classify(exc)
            for event in text.end("error", error_type):
                yield event
            raise AgentReplyError(error_type, failures.MESSAGES[error_type]) from None
        finally:
            agent.set_msg_queue_enabled(False)
        for event in text.end(reason):
            yield event
        if final is not None:
            yield interop.from_agentscope(final)

    async def observe(self, agent: Any, msgs: list[Any]) -> None:
        await agent.observe(msgs)

    def take_over(
        self, agent: Any, session_id: str, inputs: ReplyInputs, taken: Taken
    ) -> AsyncIterator[Item]:
        raise AgentReplyError(
            "internal", "a reply of an AgentScope 1.x agent cannot be taken over by another server"
        )

    def save_state(self, agent: Any, known: list[Any]) -> SavedState | None:
        """The agent's `state_dict()` (its memory and what it registered),
        as JSON: 1.x keeps its messages as dicts there (`known` is unused:
        nothing is converted)."""
        rest = state_pb2.SessionState(framework_major=1, rest_json=_json.dumps(agent.state_dict()))
        return SavedState(rest, [])

    def load_state(self, agent: Any, stored: state_pb2.SessionState) -> None:
        if stored.framework_major != 1:
            raise ValueError(f"written by an AgentScope {stored.framework_major}.x agent")
        agent.load_state_dict(_json.loads(stored.rest_json, "rest_json"))

    async def describe(self, agent: Any) -> service_pb.DescribeResponse:
        return service_pb.DescribeResponse(
            name=agent.name,
            framework=self.framework,
            input_media_types=["text/plain"],
            output_media_types=["text/plain"],
            events=_EVENTS,
        )


async def _printed(call: asyncio.Future[Any], printed: asyncio.Queue[Any]) -> AsyncIterator[Any]:
    """What the agent prints while `call` runs, then what is left."""
    while not call.done():
        getter = asyncio.ensure_future(printed.get())
        done, _ = await asyncio.wait({call, getter}, return_when=asyncio.FIRST_COMPLETED)
        if getter in done:
            yield getter.result()
        else:
            getter.cancel()  # a cancelled Queue.get loses nothing
    while not printed.empty():
        yield printed.get_nowait()


class _PrintedText:
    """One reply's prints as block events: each print's new text is what
    follows the text printed before for the same message and block."""

    def __init__(self, session_id: str, reply_id: str) -> None:
        self.session_id = session_id
        self.reply_id = reply_id
        # (message id, block index) -> (block id, kind, text printed so far)
        self._blocks: dict[tuple[str, int], tuple[str, str, str]] = {}

    def start(self, name: str) -> pb.AgentEvent:
        return new_event(
            "reply_start", session_id=self.session_id, reply_id=self.reply_id, name=name
        )

    def chunk(self, msg: Any, last: bool) -> list[pb.AgentEvent]:
        events = []
        content = msg.content
        if not isinstance(content, list):
            content = [{"type": "text", "text": content}]
        for index, block in enumerate(content):
            kind = block.get("type", "")
            if kind not in _STREAMED:
                continue
            text = block.get(kind) or ""
            key = (msg.id, index)
            block_id, _, before = self._blocks.get(key, (uuid.uuid4().hex, kind, ""))
            ids = {"reply_id": self.reply_id, "block_id": block_id}
            if key not in self._blocks:
                events.append(new_event(f"{kind}_block_start", **ids))
            if text.startswith(before) and len(text) > len(before):
                events.append(new_event(f"{kind}_block_delta", **ids, delta=text[len(before) :]))
            self._blocks[key] = (block_id, kind, text)
        if last:
            events.extend(self._close(msg.id))
        return events

    def _close(self, msg_id: str | None = None) -> list[pb.AgentEvent]:
        """The end events of the open blocks (of one message, or all)."""
        events = []
        for key in [key for key in self._blocks if msg_id is None or key[0] == msg_id]:
            block_id, kind, _ = self._blocks.pop(key)
            events.append(new_event(f"{kind}_block_end", reply_id=self.reply_id, block_id=block_id))
        return events

    def end(self, reason: str, error_type: str | None = None) -> list[pb.AgentEvent]:
        """The open blocks' ends and the reply's end."""
        end = new_event(
            "reply_end",
            session_id=self.session_id,
            reply_id=self.reply_id,
            finished_reason=FinishedReason.Value(f"FINISHED_REASON_{reason.upper()}"),
        )
        if error_type is not None:
            number = ErrorType.Value(f"ERROR_TYPE_{error_type.upper()}")
            end.reply_end.error.type = number
            end.reply_end.error.message = failures.MESSAGES[error_type]
        return [*self._close(), end]
