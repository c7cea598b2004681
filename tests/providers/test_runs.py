"""A provider-fidelity pass in runs (providers/_runs.py) gives the whole pass's body.

Random agent histories built to stress the cuts (tool calls answered, late,
twice or never; parallel results; turns the pass empties; text, thinking and
calls in every order) are grown one message at a time, through a
`Conversation` and through the server's wire cache, for every provider whose
pass goes in runs; every prefix equals `format()` of the same messages:
body, JSON, warnings and errors.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentscope_proto import FormatCache, from_dict
from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto._wire import WireMessages
from agentscope_proto.conversation import Conversation, FormattedJson
from agentscope_proto.errors import AgentScopeProtoError
from agentscope_proto.formatting import body_to_json, format
from agentscope_proto.providers import PROVIDERS

_IN_RUNS = sorted(
    name for name, p in PROVIDERS.items() if getattr(p.variants.get("provider"), "segmented", False)
)
_MESSAGES = pb.FormatRequest.DESCRIPTOR.fields_by_name["messages"].number


def _call(number: int) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"call_{number}", "name": "get", "input": {"n": number}}


def _result(number: int) -> dict[str, Any]:
    return {"type": "tool_result", "id": f"call_{number}", "name": "get", "output": f"r{number}"}


_IDS = st.integers(0, 3)
_ASSISTANT_BLOCKS = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, st.sampled_from(["", "Let me see.", "Done."])),
    st.just({"type": "thinking", "thinking": "Hm.", "signature": "c2lnbmVk"}),
    st.just({"type": "thinking", "thinking": "Unsigned."}),
    st.builds(_call, _IDS),
)
_MESSAGE = st.one_of(
    st.builds(
        lambda t: {"name": "user", "role": "user", "content": t}, st.sampled_from(["Hi", ""])
    ),
    st.builds(
        lambda blocks: {"name": "Friday", "role": "assistant", "content": blocks},
        st.lists(_ASSISTANT_BLOCKS, min_size=1, max_size=4),
    ),
    st.builds(
        lambda ids: {"name": "system", "role": "system", "content": [_result(i) for i in ids]},
        st.lists(_IDS, min_size=1, max_size=2),
    ),
)


def _outcome(call: Any) -> Any:
    """What a call gives: the body's JSON and its warnings, or its error."""
    try:
        body = call()
    except AgentScopeProtoError as exc:
        return ("error", type(exc), str(exc))
    as_json = body.body_json if isinstance(body, FormattedJson) else body_to_json(body)
    return (as_json, list(body.warnings))


def _wired(msgs: list[Any]) -> WireMessages:
    request = pb.FormatRequest(provider=pb.PROVIDER_OPENAI, messages=msgs)
    wire = WireMessages.of(request.SerializeToString(), _MESSAGES)
    assert wire is not None
    return wire


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    provider=st.sampled_from(_IN_RUNS),
    dicts=st.lists(_MESSAGE, min_size=1, max_size=12),
)
def test_a_history_passed_in_runs_is_the_whole_pass(
    provider: str, dicts: list[dict[str, Any]]
) -> None:
    msgs = [from_dict(d) for d in dicts]
    history = Conversation(provider, fidelity="provider")
    cache = FormatCache()
    for end, msg in enumerate(msgs, 1):
        prefix = msgs[:end]
        expected = _outcome(lambda prefix=prefix: format(provider, prefix, fidelity="provider"))
        history.append(msg)
        assert _outcome(history.format_json) == expected, (end, "conversation")
        served = _outcome(
            lambda prefix=prefix: format(
                provider, prefix, cache=cache, _wire=_wired(prefix), fidelity="provider"
            )
        )
        assert served == expected, (end, "server")


def test_every_provider_that_passes_in_runs_is_tested() -> None:
    assert {"anthropic", "openai", "moonshot"} <= set(_IN_RUNS)


@pytest.mark.parametrize("provider", _IN_RUNS)
def test_calls_answered_after_a_cut_are_kept(provider: str) -> None:
    """An assistant turn with text after the calls of another: the calls'
    results come after it, so the first turn's calls are unanswered in the
    whole pass, in runs too."""
    dicts = [
        {"name": "user", "role": "user", "content": "Hi"},
        {"name": "Friday", "role": "assistant", "content": [_call(1)]},
        {"name": "Friday", "role": "assistant", "content": [{"type": "text", "text": "Wait."}]},
        {"name": "system", "role": "system", "content": [_result(1)]},
        {"name": "user", "role": "user", "content": "And?"},
    ]
    msgs = [from_dict(d) for d in dicts]
    history = Conversation(provider, fidelity="provider")
    for end, msg in enumerate(msgs, 1):
        history.append(msg)
        expected = format(provider, msgs[:end], fidelity="provider")
        got = history.format_json()
        assert got.body_json == body_to_json(expected), end
        assert list(got.warnings) == list(expected.warnings), end


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_body_the_runs_cannot_keep_is_passed_whole(
    provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where a run's JSON is one only the slow encoder writes, the runs are
    given up and the body passed whole: no warning twice (the body's own,
    structured output without tools here, is made once)."""
    from agentscope_proto.providers import _runs

    monkeypatch.setattr(_runs, "encoded_turn", lambda messages: None)
    tools = [{"type": "function", "function": {"name": "get", "parameters": {"type": "object"}}}]
    options: dict[str, Any] = {"fidelity": "provider", "tools": tools}
    if provider == "openai":
        # Structured output drops the tools: a warning the body makes.
        options["response_schema"] = {"type": "object", "properties": {"a": {"type": "string"}}}
    dicts = [
        {"name": "user", "role": "user", "content": "Hi"},
        {"name": "Friday", "role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        {"name": "user", "role": "user", "content": "And?"},
    ]
    history = Conversation(provider, **options)
    cache = FormatCache()
    for end, msg in enumerate(dicts, 1):
        history.append(msg)
        msgs = [from_dict(d) for d in dicts[:end]]
        expected = _outcome(lambda msgs=msgs: format(provider, msgs, **options))
        assert _outcome(history.format_json) == expected, end
        served = _outcome(
            lambda msgs=msgs: format(provider, msgs, cache=cache, _wire=_wired(msgs), **options)
        )
        assert served == expected, end
