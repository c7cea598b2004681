"""A 2.x agent's state as a save stores it (`agents/hosting/context.py`): with
the compiled core telling which messages changed, every save gives the bytes
the reference gives (every message dumped and converted anew), whatever the
agent did to its context between saves."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest
from agentscope.message import (
    AssistantMsg,
    Base64Source,
    DataBlock,
    HintBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolCallState,
    ToolResultBlock,
    URLSource,
    UserMsg,
)
from agentscope.state import AgentState
from agentscope.types import ReplyFinishedReason
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentscope_proto import _core
from agentscope_proto.agents.hosting import context
from agentscope_proto.agents.hosting.agentscope2 import AgentScope2

from needs import require


@pytest.fixture(autouse=True, scope="module")
def _built() -> None:
    require(_core.available(), "the compiled core is not built (no C compiler; make core)")


def _reference(agent: Any) -> tuple[bytes, list[bytes]]:
    with _core.forced("python"):
        saved = AgentScope2().save_state(agent, [])
    assert saved is not None
    return saved.rest.SerializeToString(), saved.context


def _saved(hosting: AgentScope2, agent: Any, known: list[Any]) -> tuple[bytes, list[bytes]]:
    saved = hosting.save_state(agent, known)
    assert saved is not None
    return saved.rest.SerializeToString(), saved.context


def _blocks(n: int) -> list[Any]:
    """Every kind of 2.x block, by `n`."""
    call_id = f"call-{n}"
    kinds = [
        lambda: TextBlock(text=f"text {n}"),
        lambda: ThinkingBlock(thinking=f"thinking {n}"),
        lambda: ToolCallBlock(id=call_id, name="lookup", input=f'{{"q": {n}}}'),
        lambda: ToolResultBlock(id=call_id, name="lookup", output=f"found {n}", metadata={"n": n}),
        lambda: DataBlock(source=Base64Source(data="aGk=", media_type="image/png")),
        lambda: DataBlock(
            source=URLSource(url=f"https://example.com/{n}.png", media_type="image/png")
        ),
        lambda: HintBlock(hint=[TextBlock(text=f"hint {n}")]),
    ]
    return [kinds[n % len(kinds)](), kinds[(n * 3 + 1) % len(kinds)]()]


def _new_msg(n: int) -> Msg:
    if n % 3 == 0:
        return UserMsg("user", [TextBlock(text=f"user {n}")], metadata={"turn": n})
    return AssistantMsg("agent", _blocks(n), id=uuid.uuid4().hex)


def _block_of(state: AgentState, n: int, kind: type) -> Any:
    for msg in reversed(state.context):
        for block in msg.content:
            if isinstance(block, kind):
                return block
    return None


def _change_text(state: AgentState, n: int) -> None:
    if (block := _block_of(state, n, TextBlock)) is not None:
        block.text += f" more {n}"


def _change_call_state(state: AgentState, n: int) -> None:
    if (block := _block_of(state, n, ToolCallBlock)) is not None:
        block.state = list(ToolCallState)[n % len(ToolCallState)]


def _change_result_metadata(state: AgentState, n: int) -> None:
    if (block := _block_of(state, n, ToolResultBlock)) is not None:
        block.metadata.setdefault("seen", []).append(n)  # in place, nested


def _finish(state: AgentState, n: int) -> None:
    if state.context:
        state.context[-1].finished_reason = ReplyFinishedReason.ERROR


def _change_metadata(state: AgentState, n: int) -> None:
    if state.context:
        state.context[n % len(state.context)].metadata["edited"] = n  # in place


def _same_value_again(state: AgentState, n: int) -> None:
    if state.context:
        msg = state.context[n % len(state.context)]
        msg.name = "".join(list(msg.name))  # an equal string, another object


_OPERATIONS: list[Callable[[AgentState, int], None]] = [
    lambda state, n: state.context.append(_new_msg(n)),
    lambda state, n: state.context.append(_new_msg(n)),
    _change_text,
    _change_call_state,
    _change_result_metadata,
    _change_metadata,
    _same_value_again,
    lambda state, n: state.context and state.context.pop(n % len(state.context)),
    lambda state, n: state.context and state.context.append(state.context[n % len(state.context)]),
    lambda state, n: setattr(state, "context", [m.model_copy() for m in state.context]),
    lambda state, n: setattr(state, "context", copy.deepcopy(state.context)),
    lambda state, n: state.context.reverse(),
    lambda state, n: setattr(state, "summary", f"summary {n}"),
    lambda state, n: (
        state.context and setattr(state.context[-1], "finished_reason", ReplyFinishedReason.ERROR)
    ),
    lambda state, n: state.context and state.context[-1].content.append(TextBlock(text=f"{n}")),
]


def _reply(hosting: AgentScope2, state: AgentState, n: int) -> None:
    """A reply's message: converted for its caller (`reply_msg`), then kept."""
    msg = _new_msg(n)
    hosting._saver.reply_msg(msg)
    state.context.append(msg)


# A step: an operation (or, past the list, a reply), its `n`, and whether a
# save follows it (the agent may change a reply's message before the save).
_STEPS = st.tuples(st.integers(0, len(_OPERATIONS)), st.integers(0, 50), st.booleans())


@given(st.lists(_STEPS, max_size=30))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_every_save_gives_the_references_bytes(steps: list[tuple[int, int, bool]]) -> None:
    hosting, known = AgentScope2(), []
    agent = SimpleNamespace(state=AgentState())
    for operation, n, save in [*steps, (0, 0, True)]:
        if operation < len(_OPERATIONS):
            _OPERATIONS[operation](agent.state, n)
        else:
            _reply(hosting, agent.state, n)
        if save:
            assert _saved(hosting, agent, known) == _reference(agent)
            # What the save keeps is a record of each context message, in order.
            assert [seen.id for seen in known] == [msg.id for msg in agent.state.context]


def test_an_unchanged_message_is_not_converted_again() -> None:
    hosting, known = AgentScope2(), []
    agent = SimpleNamespace(state=AgentState())
    agent.state.context += [_new_msg(n) for n in range(12)]
    _saved(hosting, agent, known)
    converted = mock.Mock(wraps=context.from_dict)
    agent.state.context += [_new_msg(12), _new_msg(13)]
    with mock.patch.object(context, "from_dict", converted):
        saved = _saved(hosting, agent, known)
    assert saved == _reference(agent)
    # The new two; a message holding a URL source (2.x serializes its URL by a
    # function of its own) is dumped each time, converted only if it changed.
    assert converted.call_count == 2
    assert sum(seen.refs is None for seen in known) == sum(
        any(isinstance(getattr(b, "source", None), URLSource) for b in m.content)
        for m in agent.state.context
    )


@pytest.mark.parametrize("core", ["auto", "python"])
def test_a_message_that_moved_is_found_by_its_id(core: str) -> None:
    hosting, known = AgentScope2(), []
    agent = SimpleNamespace(state=AgentState())
    agent.state.context += [_new_msg(n) for n in range(8) if n % 3]  # no URL source
    _saved(hosting, agent, known)
    del agent.state.context[:2]  # the oldest dropped: every other one moved
    agent.state.context.append(_new_msg(9))
    converted = mock.Mock(wraps=context.from_dict)
    with _core.forced(core), mock.patch.object(context, "from_dict", converted):
        saved = _saved(hosting, agent, known)
    assert saved == _reference(agent)
    assert converted.call_count == 1  # the new one alone
    assert [seen.id for seen in known] == [msg.id for msg in agent.state.context]


def test_the_core_forced_off_dumps_every_message() -> None:
    hosting, known = AgentScope2(), []
    agent = SimpleNamespace(state=AgentState())
    agent.state.context += [_new_msg(n) for n in range(4)]
    with _core.forced("python"):
        assert _saved(hosting, agent, known) == _reference(agent)
    assert all(seen.refs is None for seen in known)


@pytest.mark.parametrize("core", ["auto", "python"])
def test_a_replys_message_is_converted_once(core: str) -> None:
    hosting, known = AgentScope2(), []
    agent = SimpleNamespace(state=AgentState())
    agent.state.context += [_new_msg(n) for n in range(4)]
    _saved(hosting, agent, known)
    answer = AssistantMsg("Echo", "the answer", id=uuid.uuid4().hex)
    sent = hosting._saver.reply_msg(answer)  # what the reply's caller got
    agent.state.context += [_new_msg(4), answer]
    converted = mock.Mock(wraps=context.from_dict)
    with _core.forced(core), mock.patch.object(context, "from_dict", converted):
        saved = _saved(hosting, agent, known)
    assert saved == _reference(agent)
    assert saved[1][-1] == sent.SerializeToString()
    assert converted.call_count == 1  # the new user message alone


def test_a_replys_message_changed_before_the_save_is_converted_anew() -> None:
    hosting, known = AgentScope2(), []
    agent = SimpleNamespace(state=AgentState())
    answer = AssistantMsg("Echo", "the answer", id=uuid.uuid4().hex)
    sent = hosting._saver.reply_msg(answer)
    answer.content.append(TextBlock(text="added after the reply"))
    answer.metadata = {"n": 1.0}
    agent.state.context.append(answer)
    saved = _saved(hosting, agent, known)
    assert saved == _reference(agent)
    assert saved[1][-1] != sent.SerializeToString()


def test_replies_messages_no_save_takes_are_dropped_oldest_first() -> None:
    hosting = AgentScope2()
    ids = [uuid.uuid4().hex for _ in range(context._REPLIED + 3)]
    for key in ids:
        hosting._saver.reply_msg(AssistantMsg("Echo", "x", id=key))
    assert list(hosting._saver._replied) == ids[3:]


def test_a_save_keeps_nothing_of_messages_gone_from_the_context() -> None:
    hosting, known = AgentScope2(), []
    agent = SimpleNamespace(state=AgentState())
    agent.state.context.extend([_new_msg(1), _new_msg(2)])
    _saved(hosting, agent, known)
    agent.state.context.pop(0)
    # A message orjson cannot write (an integer past 64 bits) is converted at
    # every save: its record is never reused.
    agent.state.context.append(UserMsg("user", [TextBlock(text="big")], metadata={"n": 2**70}))
    assert _saved(hosting, agent, known) == _reference(agent)
    assert [seen.id for seen in known] == [msg.id for msg in agent.state.context]
    assert known[1].fingerprint is None
    assert known[1].refs is None
