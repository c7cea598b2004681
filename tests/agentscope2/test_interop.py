"""`to_agentscope`/`from_agentscope` and the 2.x writer against the real AgentScope 2.x.

Runs in `.venv-as2` (`make test-agentscope2`): AgentScope 2.0.11 is imported
here, so its `Msg` is the judge of what the package writes.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from agentscope.message import Msg as AsMsg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentscope_proto import (
    MessageFormatError,
    Msg,
    from_dict,
    new_data_block,
    new_hint_block,
    new_image_block,
    new_msg,
    new_text_block,
    new_thinking_block,
    new_tool_result_block,
    new_tool_use_block,
    to_dict,
)
from agentscope_proto.interop import agentscope_major, from_agentscope, to_agentscope

from golden_data import GOLDEN

MESSAGES = json.loads((GOLDEN / "agentscope2" / "messages.json").read_text("utf-8"))["cases"]
ONE_X = json.loads((GOLDEN / "messages.json").read_text("utf-8"))["cases"]


def test_the_installed_agentscope_is_2x() -> None:
    assert agentscope_major() == 2


@pytest.mark.parametrize("case", MESSAGES, ids=[c["name"] for c in MESSAGES])
def test_real_objects_round_trip_exactly(case: dict[str, Any]) -> None:
    original = AsMsg.model_validate(copy.deepcopy(case["dump"]))
    msg = from_agentscope(original)
    back = to_agentscope(msg)
    assert isinstance(back, AsMsg)
    assert back.model_dump(mode="json") == original.model_dump(mode="json")
    again = to_agentscope(Msg.FromString(msg.SerializeToString()))
    assert again.model_dump(mode="json") == original.model_dump(mode="json")


def test_from_agentscope_refuses_other_objects() -> None:
    with pytest.raises(TypeError, match=r"agentscope\.message\.Msg"):
        from_agentscope({"name": "a"})


def _write(msg: Msg) -> dict[str, Any] | str:
    """The message in the 2.x dialect, or the reason it is refused."""
    try:
        return to_dict(msg, dialect="agentscope2")
    except MessageFormatError as exc:
        return exc.reason


def _validates_to_itself(data: dict[str, Any]) -> None:
    """What the writer gives is a fixed point of 2.x's validation."""
    assert AsMsg.model_validate(copy.deepcopy(data)).model_dump(mode="json") == data


@pytest.mark.parametrize("case", ONE_X, ids=[c["name"] for c in ONE_X])
def test_1x_messages_write_what_2x_holds_or_are_refused(case: dict[str, Any]) -> None:
    data = _write(from_dict(case["input"], dialect="agentscope"))
    if isinstance(data, str):
        assert data.startswith("AgentScope 2.x refuses this: ")
        return
    _validates_to_itself(data)
    assert to_dict(from_dict(data), dialect="agentscope2") == data


def _java_messages() -> list[dict[str, Any]]:
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "shared" / "agentscope-java" / "messages.jsonl"
    if not path.exists():
        return []
    with path.open(encoding="utf-8") as file:
        return [json.loads(line) for line in file]


@pytest.mark.parametrize("case", _java_messages(), ids=lambda c: c["case"])
def test_java_messages_write_what_2x_holds_or_are_refused(case: dict[str, Any]) -> None:
    data = _write(from_dict(case["msg"], dialect="java"))
    if isinstance(data, str):
        assert data.startswith("AgentScope 2.x refuses this: ")
        return
    _validates_to_itself(data)


_TEXT = st.text(max_size=12)
_BLOCKS = st.one_of(
    _TEXT.map(new_text_block),
    st.builds(lambda t, s: new_thinking_block(t, signature=s), _TEXT, st.none() | _TEXT),
    st.builds(
        lambda i, n, a: new_tool_use_block(i, n, {"a": a}),
        _TEXT,
        _TEXT,
        st.integers() | st.floats(allow_nan=False, allow_infinity=False) | _TEXT,
    ),
    st.builds(lambda i, o: new_tool_result_block(i, "f", o), _TEXT, st.none() | _TEXT),
    st.builds(lambda h, s: new_hint_block(h, source=s), _TEXT, st.none() | _TEXT),
    st.builds(
        lambda d, n: new_data_block(data=d, media_type="application/pdf", name=n),
        st.binary(max_size=16),
        st.none() | _TEXT,
    ),
    st.just(new_image_block("https://example.com/a.png")),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    role=st.sampled_from(["user", "assistant", "system", "tool"]),
    blocks=st.lists(_BLOCKS, max_size=4),
    text=st.none() | _TEXT,
)
def test_generated_messages_are_written_as_2x_holds_them(
    role: str, blocks: list[Any], text: str | None
) -> None:
    msg = new_msg("agent", text if text is not None else blocks, role, id="m", timestamp="t")
    data = _write(msg)
    if isinstance(data, str):
        assert data.startswith("AgentScope 2.x refuses this: ")
        # 2.x's role rule is why: a user message of other blocks, a system one
        # of anything but text.
        assert role in ("user", "system")
        return
    _validates_to_itself(data)
    back = to_agentscope(from_dict(data))
    assert back.model_dump(mode="json") == data
