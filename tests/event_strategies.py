"""Hypothesis strategies for AgentScope 2.x agent events, as `model_dump(mode="json")`
writes them: every key (compare as dicts: hypothesis does not keep the order;
the golden data checks it), with values of the types 2.x holds.

Shared by the main suite (the conversion round-trips them) and
tests/agentscope2/ (the real 2.x validates each to itself first, which proves
they are dumps 2.x could write).
"""

from __future__ import annotations

import base64
from typing import Any

from hypothesis import strategies as st

# Text protobuf can carry (no lone surrogates).
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
SHORT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=4)
INT64 = st.integers(-(2**63), 2**63 - 1)
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(SHORT, inner, max_size=3),
    max_leaves=8,
)
OBJECT = st.dictionaries(SHORT, JSON, max_size=3)
MEDIA_TYPES = st.sampled_from(["image/png", "audio/wav", "video/mp4", "application/pdf", "x/y"])
# URLs already in the form pydantic normalizes them to (2.x's `AnyUrl`).
URLS = st.sampled_from(["https://example.com/a.png", "http://h.test/x?y=1#z", "file:///tmp/a"])
BASE64 = st.binary(max_size=12).map(lambda raw: base64.b64encode(raw).decode("ascii"))
CALL_STATES = st.sampled_from(["pending", "asking", "allowed", "submitted", "finished"])
RESULT_STATES = st.sampled_from(["running", "success", "error", "interrupted", "denied"])


def _times() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"created_at": TEXT, "finished_at": st.none() | TEXT})


def _block(kind: str, **fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """A block dict: `type`, `fields` in order, then the times."""
    return st.tuples(st.fixed_dictionaries(fields), _times()).map(
        lambda parts: {"type": kind, **parts[0], **parts[1]}
    )


SOURCES = st.one_of(
    st.fixed_dictionaries({"type": st.just("base64"), "data": BASE64, "media_type": MEDIA_TYPES}),
    st.fixed_dictionaries({"type": st.just("url"), "url": URLS, "media_type": MEDIA_TYPES}),
)
TEXT_BLOCKS = _block("text", text=TEXT, id=SHORT)
DATA_BLOCKS = _block("data", id=SHORT, source=SOURCES, name=st.none() | TEXT)
PARTS = TEXT | st.lists(TEXT_BLOCKS | DATA_BLOCKS, max_size=3)
RULES = st.fixed_dictionaries(
    {
        "tool_name": TEXT,
        "rule_content": st.none() | TEXT,
        "behavior": st.sampled_from(["allow", "deny", "ask", "passthrough"]),
        "source": TEXT,
    }
)
TOOL_CALLS = _block(
    "tool_call",
    id=SHORT,
    name=TEXT,
    input=TEXT,
    state=CALL_STATES,
    suggested_rules=st.lists(RULES, max_size=2),
)
TOOL_RESULTS = _block(
    "tool_result", id=SHORT, name=TEXT, output=PARTS, state=RESULT_STATES, metadata=OBJECT
)


def _content() -> st.SearchStrategy[dict[str, Any]]:
    """2.x's `data` and `url`: exactly one is set."""
    data = st.fixed_dictionaries({"data": BASE64 | TEXT, "url": st.none()})
    url = st.fixed_dictionaries({"data": st.none(), "url": TEXT})
    return data | url


REPLY = {"reply_id": SHORT}
BLOCK = {"reply_id": SHORT, "block_id": SHORT}
CALL = {"reply_id": SHORT, "tool_call_id": SHORT}
# Each event type's own keys, in 2.x's order.
BODIES: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "REPLY_START": st.fixed_dictionaries(
        {
            "session_id": SHORT,
            **REPLY,
            "name": TEXT,
            "role": st.sampled_from(["user", "assistant", "system"]),
        }
    ),
    "REPLY_END": st.fixed_dictionaries(
        {
            "session_id": SHORT,
            **REPLY,
            "finished_reason": st.sampled_from(
                ["completed", "interrupted", "exceed_max_iters", "error"]
            ),
            "error": st.none()
            | st.fixed_dictionaries(
                {
                    "type": st.sampled_from(
                        ["unknown", "authentication", "rate_limit", "upstream", "internal", "setup"]
                    ),
                    "message": TEXT,
                }
            ),
        }
    ),
    "MODEL_CALL_START": st.fixed_dictionaries({**REPLY, "model_name": TEXT}),
    "MODEL_CALL_END": st.fixed_dictionaries(
        {
            **REPLY,
            "input_tokens": INT64,
            "output_tokens": INT64,
            "cache_input_tokens": INT64,
            "cache_creation_input_tokens": INT64,
            "finished_reason": st.sampled_from(["completed", "interrupted"]),
        }
    ),
    "TEXT_BLOCK_START": st.fixed_dictionaries(BLOCK),
    "TEXT_BLOCK_DELTA": st.fixed_dictionaries({**BLOCK, "delta": TEXT}),
    "TEXT_BLOCK_END": st.fixed_dictionaries({**BLOCK, "text": st.none() | TEXT}),
    "DATA_BLOCK_START": st.fixed_dictionaries(
        {**BLOCK, "media_type": TEXT, "name": st.none() | TEXT}
    ),
    "DATA_BLOCK_DELTA": st.tuples(
        st.fixed_dictionaries({**BLOCK, "media_type": TEXT}), _content()
    ).map(lambda parts: {**parts[0], **parts[1]}),
    "DATA_BLOCK_END": st.fixed_dictionaries(BLOCK),
    "THINKING_BLOCK_START": st.fixed_dictionaries(BLOCK),
    "THINKING_BLOCK_DELTA": st.fixed_dictionaries({**BLOCK, "delta": TEXT}),
    "THINKING_BLOCK_END": st.fixed_dictionaries(BLOCK),
    "HINT_BLOCK": st.fixed_dictionaries({**BLOCK, "source": st.none() | TEXT, "hint": PARTS}),
    "TOOL_CALL_START": st.fixed_dictionaries({**CALL, "tool_call_name": TEXT}),
    "TOOL_CALL_DELTA": st.fixed_dictionaries({**CALL, "delta": TEXT}),
    "TOOL_CALL_END": st.fixed_dictionaries(CALL),
    "TOOL_RESULT_START": st.fixed_dictionaries({**CALL, "tool_call_name": TEXT}),
    "TOOL_RESULT_TEXT_DELTA": st.fixed_dictionaries({**CALL, "delta": TEXT}),
    "TOOL_RESULT_DATA_DELTA": st.tuples(
        st.fixed_dictionaries({**CALL, "block_id": SHORT, "media_type": TEXT}), _content()
    ).map(lambda parts: {**parts[0], **parts[1]}),
    "TOOL_RESULT_END": st.fixed_dictionaries({**CALL, "state": RESULT_STATES}),
    "EXCEED_MAX_ITERS": st.fixed_dictionaries({**REPLY, "name": TEXT}),
    "REQUIRE_USER_CONFIRM": st.fixed_dictionaries(
        {**REPLY, "tool_calls": st.lists(TOOL_CALLS, max_size=2)}
    ),
    "REQUIRE_EXTERNAL_EXECUTION": st.fixed_dictionaries(
        {**REPLY, "tool_calls": st.lists(TOOL_CALLS, max_size=2)}
    ),
    "USER_CONFIRM_RESULT": st.fixed_dictionaries(
        {
            **REPLY,
            "confirm_results": st.lists(
                st.fixed_dictionaries(
                    {
                        "confirmed": st.booleans(),
                        "tool_call": TOOL_CALLS,
                        "rules": st.none() | st.lists(RULES, max_size=2),
                    }
                ),
                max_size=2,
            ),
        }
    ),
    "USER_INTERRUPT": st.fixed_dictionaries(REPLY),
    "EXTERNAL_EXECUTION_RESULT": st.fixed_dictionaries(
        {**REPLY, "execution_results": st.lists(TOOL_RESULTS, max_size=2)}
    ),
    "CUSTOM": st.fixed_dictionaries({"name": TEXT, "value": OBJECT}),
}


@st.composite
def event_dumps(draw: st.DrawFn) -> dict[str, Any]:
    """One event's `model_dump(mode="json")`."""
    kind = draw(st.sampled_from(sorted(BODIES)))
    head = {"id": draw(SHORT), "created_at": draw(TEXT), "metadata": draw(OBJECT), "type": kind}
    return {**head, **draw(BODIES[kind])}
