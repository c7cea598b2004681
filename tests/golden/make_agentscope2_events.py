"""Generate golden data for AgentScope 2.x's agent events (``agentscope.event``).

The oracle is ``agentscope==2.0.11`` in its own venv (``.venv-golden2``, from
``tests/agentscope2/requirements.txt``), as for ``make_agentscope2.py``, whose
value lists and deterministic id and timestamp counters this script reuses
(ids ``gen-id-NNNN``, timestamps ``2026-01-01T00:00:00.NNNNNN``, restarted per
case). It writes ``tests/golden/agentscope2/events.json``:

* ``events``: every event class built through AgentScope's own constructors
  with many field values (optional fields set and unset, every enum value,
  unicode, canonical and odd base64, blocks with permission rules, metadata of
  many JSON shapes); for each, its ``model_dump(mode="json")``.
* ``replies``: real replies of a real ``agentscope.agent.Agent`` whose model is
  AgentScope's ``OpenAIChatModel`` pointed at a local replay endpoint
  (``tests/replay_server.py``, serving the OpenAI parser golden cases), with a
  toolkit holding a tool that asks for confirmation, one that runs at once and
  an external one. Each reply is a list of turns (the first takes a user
  message, the next ones the caller's answers), each turn the items
  ``reply_stream(..., yield_final_msg=True)`` yielded: ``{"event": dump}`` or
  ``{"msg": dump}``, and ``{"raised": "ExceptionClass"}`` if it raised.

Rerun from the repository root (no network needed once the venv exists):

    make golden-agentscope2

Rerunning reproduces the file byte for byte.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: the replay server

import agentscope
from agentscope.agent import Agent, InjectionConfig
from agentscope.event import (
    ConfirmResult,
    CustomEvent,
    DataBlockDeltaEvent,
    DataBlockEndEvent,
    DataBlockStartEvent,
    EventBase,
    ExceedMaxItersEvent,
    ExternalExecutionResultEvent,
    HintBlockEvent,
    ModelCallEndEvent,
    ModelCallStartEvent,
    ReplyEndEvent,
    ReplyStartEvent,
    RequireExternalExecutionEvent,
    RequireUserConfirmEvent,
    TextBlockDeltaEvent,
    TextBlockEndEvent,
    TextBlockStartEvent,
    ThinkingBlockDeltaEvent,
    ThinkingBlockEndEvent,
    ThinkingBlockStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolResultDataDeltaEvent,
    ToolResultEndEvent,
    ToolResultStartEvent,
    ToolResultTextDeltaEvent,
    UserConfirmResultEvent,
    UserInterruptEvent,
)
from agentscope.message import (
    Base64Source,
    DataBlock,
    Msg,
    TextBlock,
    ToolCallBlock,
    ToolCallState,
    ToolResultBlock,
    ToolResultState,
    URLSource,
    UserMsg,
)
from agentscope.model import FinishedReason
from agentscope.permission import (
    PermissionBehavior,
    PermissionRule,
)
from agentscope.types import ErrorInfo, ErrorType, ReplyFinishedReason
from make_agentscope2 import (
    AGENTSCOPE_VERSION,
    COUNTERS,
    DICT_VALUES,
    MEDIA,
    NAMES,
    TEXTS,
    TOOL_INPUTS,
    TOOL_NAMES,
    dict_value,
    fresh,
    stamp,
)

from replay_agent import make_agent as make_replay_agent
from replay_server import ReplayServer

OUT = Path("tests/golden/agentscope2/events.json")
R = "reply-1"  # the reply id of the built events
S = "session-1"


# --------------------------------------------------------------------------
# events: every class, built through its constructor
# --------------------------------------------------------------------------


def _rule(index: int = 0, content: str | None = "city=Paris") -> PermissionRule:
    behaviors = list(PermissionBehavior)
    return PermissionRule(
        tool_name=TOOL_NAMES[index % len(TOOL_NAMES)],
        rule_content=content,
        behavior=behaviors[index % len(behaviors)],
        source="userSettings",
    )


def _call(index: int = 0, **fields: Any) -> ToolCallBlock:
    label, raw = TOOL_INPUTS[index % len(TOOL_INPUTS)]
    values: dict[str, Any] = {
        "id": f"call_{label}",
        "name": TOOL_NAMES[index % len(TOOL_NAMES)],
        "input": raw,
    }
    return ToolCallBlock(**{**values, **fields})


def _result(index: int = 0, **fields: Any) -> ToolResultBlock:
    states = list(ToolResultState)
    values: dict[str, Any] = {
        "id": f"call_{TOOL_INPUTS[index % len(TOOL_INPUTS)][0]}",
        "name": TOOL_NAMES[index % len(TOOL_NAMES)],
        "output": TEXTS[index % len(TEXTS)][1],
        "state": states[index % len(states)],
    }
    return ToolResultBlock(**{**values, **fields})


def _data_block(index: int) -> DataBlock:
    media_type, data, name = MEDIA[index % len(MEDIA)]
    return DataBlock(source=Base64Source(data=data, media_type=media_type), name=name)


# Base64 text as it may come in a delta: canonical, and texts that decode to
# no bytes canonically (each must come back verbatim).
ODD_BASE64 = [
    ("empty", ""),
    ("no_padding", "aGVsbG8"),
    ("line_breaks", "aGVs\nbG8="),
    ("not_base64", "*** not base64 ***"),
    ("urlsafe", "-_-_"),
    ("extra_padding", "aGk==="),
]
URLS = [
    "https://example.com/cat.png",
    "HTTPS://Example.COM:443/a b?x=1#f",
    "file:///tmp/plot.png",
    "/relative/path.png",
    "not a url",
    "",
]


def reply_cases() -> Iterator[tuple[str, EventBase]]:
    roles = ["user", "assistant", "system"]
    for index, name in enumerate(NAMES):
        yield (
            f"reply_start/{index}",
            ReplyStartEvent(session_id=S, reply_id=R, name=name, role=roles[index % len(roles)]),
        )
    yield "reply_start/default_role", ReplyStartEvent(session_id=S, reply_id=R, name="Friday")
    for reason in ReplyFinishedReason:
        yield (
            f"reply_end/{reason.value}",
            ReplyEndEvent(session_id=S, reply_id=R, finished_reason=reason),
        )
    for kind in ErrorType:
        yield (
            f"reply_end/error_{kind.value}",
            ReplyEndEvent(
                session_id=S,
                reply_id=R,
                finished_reason=ReplyFinishedReason.ERROR,
                error=ErrorInfo(type=kind, message=f"failed: {kind.value} ✗"),
            ),
        )
    yield (
        "reply_end/error_default_type",
        ReplyEndEvent(
            session_id=S,
            reply_id=R,
            finished_reason=ReplyFinishedReason.ERROR,
            error=ErrorInfo(message=""),
        ),
    )
    yield "reply_end/default", ReplyEndEvent(session_id=S, reply_id=R)


def model_cases() -> Iterator[tuple[str, EventBase]]:
    for name in ("gpt-4.1", "qwen-max", "", "模型/🤖"):
        yield (
            f"model_call_start/{name or 'empty'}",
            ModelCallStartEvent(reply_id=R, model_name=name),
        )
    counts = [(0, 0, 0, 0), (12, 34, 5, 6), (2**63 - 1, 2**40, 1, 0), (7, 0, 0, 2**31)]
    for index, (i, o, c, cc) in enumerate(counts):
        for reason in FinishedReason:
            yield (
                f"model_call_end/{index}_{reason.value}",
                ModelCallEndEvent(
                    reply_id=R,
                    input_tokens=i,
                    output_tokens=o,
                    cache_input_tokens=c,
                    cache_creation_input_tokens=cc,
                    finished_reason=reason,
                ),
            )
    yield "model_call_end/defaults", ModelCallEndEvent(reply_id=R, input_tokens=3, output_tokens=4)


def text_cases() -> Iterator[tuple[str, EventBase]]:
    for kind, start, delta, end in (
        ("text", TextBlockStartEvent, TextBlockDeltaEvent, TextBlockEndEvent),
        ("thinking", ThinkingBlockStartEvent, ThinkingBlockDeltaEvent, ThinkingBlockEndEvent),
    ):
        yield f"{kind}_block_start", start(reply_id=R, block_id=f"{kind}-1")
        for label, text in TEXTS:
            yield f"{kind}_block_delta/{label}", delta(reply_id=R, block_id=f"{kind}-1", delta=text)
        yield f"{kind}_block_end", end(reply_id=R, block_id=f"{kind}-1")
    for label, text in TEXTS[:5]:
        yield (
            f"text_block_end/text_{label}",
            TextBlockEndEvent(reply_id=R, block_id="text-1", text=text),
        )


def data_cases() -> Iterator[tuple[str, EventBase]]:
    for index, (media_type, data, name) in enumerate(MEDIA):
        block = f"data-{index}"
        yield (
            f"data_block_start/{index}",
            DataBlockStartEvent(
                reply_id=R, block_id=block, media_type=media_type, name=name if index % 2 else None
            ),
        )
        yield (
            f"data_block_delta/{index}",
            DataBlockDeltaEvent(reply_id=R, block_id=block, media_type=media_type, data=data),
        )
        yield (
            f"tool_result_data_delta/{index}",
            ToolResultDataDeltaEvent(
                reply_id=R, tool_call_id="call_1", media_type=media_type, data=data
            ),
        )
        yield f"data_block_end/{index}", DataBlockEndEvent(reply_id=R, block_id=block)
    for label, text in ODD_BASE64:
        yield (
            f"data_block_delta/odd_{label}",
            DataBlockDeltaEvent(reply_id=R, block_id="d", media_type="image/png", data=text),
        )
        yield (
            f"tool_result_data_delta/odd_{label}",
            ToolResultDataDeltaEvent(
                reply_id=R, tool_call_id="c", block_id="b", media_type="x/y", data=text
            ),
        )
    for index, url in enumerate(URLS):
        yield (
            f"data_block_delta/url_{index}",
            DataBlockDeltaEvent(reply_id=R, block_id="d", media_type="image/png", url=url),
        )
        yield (
            f"tool_result_data_delta/url_{index}",
            ToolResultDataDeltaEvent(
                reply_id=R, tool_call_id="c", block_id=f"b{index}", media_type="", url=url
            ),
        )


def hint_cases() -> Iterator[tuple[str, EventBase]]:
    yield "hint_block/text", HintBlockEvent(reply_id=R, block_id="h", hint="Be brief.")
    yield (
        "hint_block/source",
        HintBlockEvent(
            reply_id=R,
            block_id="h",
            hint="<system-reminder>now</system-reminder>",
            source='{"label": "System", "sublabel": "Runtime State"}',
        ),
    )
    yield "hint_block/empty", HintBlockEvent(reply_id=R, block_id="h", hint="", source="")
    yield "hint_block/empty_list", HintBlockEvent(reply_id=R, block_id="h", hint=[])
    yield (
        "hint_block/blocks",
        HintBlockEvent(
            reply_id=R,
            block_id="h",
            hint=[
                TextBlock(text="Look at these:"),
                _data_block(0),
                _data_block(10),
                DataBlock(
                    source=URLSource(url="https://example.com/a.mp4", media_type="video/mp4"),
                    id="blk-video",
                    created_at=stamp(1),
                    finished_at=stamp(2),
                ),
                TextBlock(text="thanks", id="blk-t", created_at=stamp(3)),
            ],
            source="alice",
        ),
    )


def tool_cases() -> Iterator[tuple[str, EventBase]]:
    for index, name in enumerate(TOOL_NAMES):
        yield (
            f"tool_call_start/{index}",
            ToolCallStartEvent(reply_id=R, tool_call_id=f"call_{index}", tool_call_name=name),
        )
        yield (
            f"tool_result_start/{index}",
            ToolResultStartEvent(reply_id=R, tool_call_id=f"call_{index}", tool_call_name=name),
        )
    for label, raw in TOOL_INPUTS:
        yield (
            f"tool_call_delta/{label}",
            ToolCallDeltaEvent(reply_id=R, tool_call_id="call_1", delta=raw),
        )
    for label, text in TEXTS:
        yield (
            f"tool_result_text_delta/{label}",
            ToolResultTextDeltaEvent(reply_id=R, tool_call_id="call_1", delta=text),
        )
    yield "tool_call_end", ToolCallEndEvent(reply_id=R, tool_call_id="call_1")
    for state in ToolResultState:
        yield (
            f"tool_result_end/{state.value}",
            ToolResultEndEvent(reply_id=R, tool_call_id="call_1", state=state),
        )
    for label, _ in DICT_VALUES:
        yield (
            f"tool_result_end/metadata_{label}",
            ToolResultEndEvent(
                reply_id=R,
                tool_call_id="call_1",
                state=ToolResultState.SUCCESS,
                metadata=dict_value(label),
            ),
        )


def hitl_cases() -> Iterator[tuple[str, EventBase]]:
    states = list(ToolCallState)
    for index, (label, _) in enumerate(TOOL_INPUTS):
        call = _call(
            index,
            state=states[index % len(states)],
            suggested_rules=[_rule(i) for i in range(index % 3)],
        )
        yield (
            f"require_user_confirm/{label}",
            RequireUserConfirmEvent(reply_id=R, tool_calls=[call]),
        )
    yield (
        "require_user_confirm/several",
        RequireUserConfirmEvent(
            reply_id=R,
            tool_calls=[
                _call(0, state=ToolCallState.ASKING, suggested_rules=[_rule(0, None)]),
                _call(1, state=ToolCallState.ASKING, created_at=stamp(1), finished_at=stamp(2)),
            ],
        ),
    )
    yield "require_user_confirm/none", RequireUserConfirmEvent(reply_id=R, tool_calls=[])
    yield (
        "require_external_execution/several",
        RequireExternalExecutionEvent(
            reply_id=R,
            tool_calls=[_call(i, state=ToolCallState.SUBMITTED) for i in range(3)],
        ),
    )
    for index, rules in enumerate((None, [], [_rule(1)], [_rule(2, None), _rule(3)])):
        for confirmed in (True, False):
            yield (
                f"user_confirm_result/{index}_{confirmed}",
                UserConfirmResultEvent(
                    reply_id=R,
                    confirm_results=[
                        ConfirmResult(confirmed=confirmed, tool_call=_call(index), rules=rules)
                    ],
                ),
            )
    yield (
        "user_confirm_result/several",
        UserConfirmResultEvent(
            reply_id=R,
            confirm_results=[
                ConfirmResult(confirmed=True, tool_call=_call(i, state=ToolCallState.ASKING))
                for i in range(4)
            ],
        ),
    )
    yield "user_interrupt", UserInterruptEvent(reply_id=R)
    outputs: list[Any] = [
        "Sunny",
        "",
        [TextBlock(text="Sunny"), _data_block(0)],
        [],
        [_data_block(11), TextBlock(text="ünïcode", id="t1", created_at=stamp(4))],
    ]
    for index, output in enumerate(outputs):
        yield (
            f"external_execution_result/{index}",
            ExternalExecutionResultEvent(
                reply_id=R,
                execution_results=[
                    _result(index, output=output, metadata=dict_value(DICT_VALUES[index][0]))
                ],
            ),
        )
    yield (
        "external_execution_result/several",
        ExternalExecutionResultEvent(
            reply_id=R,
            execution_results=[_result(i, finished_at=stamp(i)) for i in range(5)],
        ),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for name in ("Friday", ""):
            yield f"exceed_max_iters/{name or 'empty'}", ExceedMaxItersEvent(reply_id=R, name=name)


def envelope_cases() -> Iterator[tuple[str, EventBase]]:
    for label, _ in DICT_VALUES:
        yield f"custom/{label}", CustomEvent(name="state_updated", value=dict_value(label))
        yield (
            f"envelope/metadata_{label}",
            TextBlockDeltaEvent(reply_id=R, block_id="t", delta="x", metadata=dict_value(label)),
        )
    yield "custom/default_value", CustomEvent(name="")
    yield (
        "envelope/explicit",
        ReplyStartEvent(
            id="evt-explicit", created_at=stamp(9), session_id=S, reply_id=R, name="Friday"
        ),
    )
    yield (
        "envelope/odd_strings",
        ReplyStartEvent(id="", created_at="yesterday", session_id="", reply_id="", name=""),
    )


EVENT_GENERATORS: tuple[Callable[[], Iterator[tuple[str, EventBase]]], ...] = (
    reply_cases,
    model_cases,
    text_cases,
    data_cases,
    hint_cases,
    tool_cases,
    hitl_cases,
    envelope_cases,
)


def event_cases() -> list[dict[str, Any]]:
    cases = []
    for generator in EVENT_GENERATORS:
        for name, event in fresh(generator()):
            cases.append({"name": name, "dump": event.model_dump(mode="json")})
    return cases


# --------------------------------------------------------------------------
# replies: a real agent, a real chat model class, a local replay endpoint
# --------------------------------------------------------------------------

# What the user says -> the golden OpenAI cases the model calls replay.
SCRIPT = {
    "hi": ["stream_text_by3"],
    "think first": ["stream_thinking_then_text_by5"],
    "weather?": ["stream_text_then_tool_by4", "stream_text_by3"],
    "three tools": ["stream_parallel_tools_interleaved_by3", "stream_text_by3"],
    "fail": ["http:500"],
}


def make_agent(base_url: str) -> Agent:
    # The runtime state reminder holds the wall-clock time.
    return make_replay_agent(base_url, injection_config=InjectionConfig(inject_runtime_state=False))


def dump(item: Any) -> dict[str, Any]:
    key = "msg" if isinstance(item, Msg) else "event"
    return {key: item.model_dump(mode="json")}


async def _turn(agent: Agent, inputs: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    try:
        async for item in agent.reply_stream(inputs, yield_final_msg=True):
            items.append(dump(item))
    except Exception as exc:  # the reply failed: say how
        items.append({"raised": type(exc).__name__})
    return items


def _answer(agent: Agent, decide: Callable[[ToolCallBlock], bool]) -> Any:
    """The caller's answer to what the parked agent waits for."""
    waiting = agent.state.get_awaiting_tool_calls(agent.name)
    asking = [call for call in waiting if call.state == ToolCallState.ASKING]
    if asking:
        return UserConfirmResultEvent(
            reply_id=agent.state.reply_id,
            confirm_results=[
                ConfirmResult(
                    confirmed=decide(call),
                    tool_call=call,
                    rules=call.suggested_rules if decide(call) else None,
                )
                for call in asking
            ],
        )
    return ExternalExecutionResultEvent(
        reply_id=agent.state.reply_id,
        execution_results=[
            ToolResultBlock(
                id=call.id,
                name=call.name,
                output=[TextBlock(text="3 results"), _data_block(0)],
                state=ToolResultState.SUCCESS,
                metadata={"source": "caller", "hits": 3},
            )
            for call in waiting
        ],
    )


async def _reply(
    base_url: str, words: str, decide: Callable[[ToolCallBlock], bool] | None = None
) -> list[Any]:
    """Every turn of one reply: the user's words, then answers while it waits."""
    agent = make_agent(base_url)
    agent.state.session_id = S
    turns = [await _turn(agent, UserMsg("user", words))]
    while agent.state.has_awaiting_tool_calls(agent.name) and len(turns) < 5:
        inputs = (
            UserInterruptEvent(reply_id=agent.state.reply_id)
            if decide is None
            else _answer(agent, decide)
        )
        turns.append([{"input": inputs.model_dump(mode="json")}, *await _turn(agent, inputs)])
    return turns


REPLIES: list[tuple[str, str, Callable[[ToolCallBlock], bool] | None]] = [
    ("text", "hi", None),
    ("thinking", "think first", None),
    ("confirmed", "weather?", lambda call: True),
    ("denied", "weather?", lambda call: False),
    ("interrupted", "weather?", None),
    ("three_tools", "three tools", lambda call: True),
    ("model_fails", "fail", None),
]


def reply_records(base_url: str) -> list[dict[str, Any]]:
    records = []
    for name, words, decide in REPLIES:
        COUNTERS.reset()
        turns = asyncio.run(_reply(base_url, words, decide))
        records.append({"name": name, "says": words, "turns": turns})
    return records


def main() -> None:
    started = time.perf_counter()
    if agentscope.__version__ != AGENTSCOPE_VERSION:
        raise SystemExit(
            f"agentscope {agentscope.__version__} is installed, not {AGENTSCOPE_VERSION}"
        )
    events = event_cases()
    names = [case["name"] for case in events]
    if len(set(names)) != len(names):
        raise SystemExit("duplicate event case names")
    with ReplayServer(SCRIPT) as replay:
        replies = reply_records(replay.base_url)
    document = {
        "agentscope": AGENTSCOPE_VERSION,
        "generated_by": "tests/golden/make_agentscope2_events.py",
        "events": events,
        "replies": replies,
    }
    text = json.dumps(document, ensure_ascii=False, indent=1, allow_nan=False)
    OUT.write_text(text + "\n", encoding="utf-8")
    turns = sum(len(reply["turns"]) for reply in replies)
    print(
        f"wrote {OUT}: {len(events)} events, {len(replies)} replies ({turns} turns) "
        f"in {time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
