"""`Conversation`: an agent's history formatted incrementally gives exactly
what `format()` gives for the same messages.

Every golden format case is grown one message at a time and, after each
message, `format_json()` and `format()` are compared with `format()` of the
same prefix: the same body (the JSON byte for byte), the same warnings, the
same error. A property test appends, removes and reformats at random; the
rest checks that nothing a caller does to what it gave or got reaches the
conversation.
"""

from __future__ import annotations

import copy
import json
import logging
import re
import threading
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentscope_proto import Conversation, FormatCache, FormattedJson, Msg, from_dict, to_dict
from agentscope_proto._log import warning_log_level
from agentscope_proto.errors import AgentScopeProtoError, FormatError, MessageFormatError
from agentscope_proto.formatting import body_to_json, format
from agentscope_proto.message import new_msg, new_text_block, new_tool_use_block
from agentscope_proto.providers import PROVIDERS

from golden_data import (
    GOLDEN,
    bench_history,
    formatter_cases,
    golden_providers,
    input_cases,
    message_pool,
)
from strict import scramble

GOLDEN_CASES = [
    pytest.param(provider, case, id=f"{provider}:{case['name']}")
    for provider in PROVIDERS
    if provider in golden_providers("formatters")
    for case in formatter_cases(provider)
]


def _reference(provider: str, case: dict[str, Any], msgs: list[Any], **where: Any) -> Any:
    """format()'s outcome for `msgs` under the case's options: (body JSON,
    dict body, warnings) or the error."""
    try:
        body = format(
            provider,
            msgs,
            multi_agent=case["multi_agent"],
            tools=case["tools"],
            tool_choice=case["tool_choice"],
            **where,
            **case["options"],
        )
    except AgentScopeProtoError as exc:
        return ("error", type(exc), str(exc))
    warnings = [w.SerializeToString() for w in body.warnings]
    return ("body", body_to_json(body), dict(body), warnings, body.token_count)


def _outcomes(history: Conversation) -> tuple[Any, Any]:
    """What the conversation gives now, as JSON and as dicts, in `_reference`'s shape."""
    try:
        as_json = history.format_json()
    except AgentScopeProtoError as exc:
        json_outcome: Any = ("error", type(exc), str(exc))
    else:
        warnings = [w.SerializeToString() for w in as_json.warnings]
        json_outcome = ("json", as_json.body_json, warnings, as_json.token_count)
    try:
        as_dicts = history.format()
    except AgentScopeProtoError as exc:
        dict_outcome: Any = ("error", type(exc), str(exc))
    else:
        warnings = [w.SerializeToString() for w in as_dicts.warnings]
        dict_outcome = ("dicts", dict(as_dicts), warnings, as_dicts.token_count)
    return json_outcome, dict_outcome


def _assert_same(history: Conversation, expected: Any) -> None:
    as_json, as_dicts = _outcomes(history)
    if expected[0] == "error":
        assert as_json == expected
        assert as_dicts == expected
        return
    _, body_json, body, warnings, count = expected
    assert as_json == ("json", body_json, warnings, count)
    assert as_dicts[0] == "dicts"
    # Compared as JSON too: `==` alone takes 1 for True and 1.0 for 1.
    assert as_dicts[1] == body
    assert body_to_json(as_dicts[1]) == body_json
    assert as_dicts[2:] == (warnings, count)


def _grow(provider: str, case: dict[str, Any], **where: Any) -> None:
    """Grow the case's conversation one message at a time, checking every prefix."""
    msgs = case["msgs"]
    history, refused = _attempt(
        lambda: Conversation(
            provider,
            multi_agent=case["multi_agent"],
            tools=case["tools"],
            tool_choice=case["tool_choice"],
            **where,
            **case["options"],
        )
    )
    if refused is not None:
        # Options refused up front are refused by every format() call too.
        outcome = _reference(provider, case, msgs, **where)
        assert outcome[0] == "error", (refused, outcome)
        assert isinstance(refused, FormatError)
        return
    if not isinstance(msgs, list):
        with pytest.raises(AgentScopeProtoError):
            history.extend(msgs)
        return
    _assert_same(history, _reference(provider, case, [], **where))
    for end, msg in enumerate(msgs, 1):
        expected = _reference(provider, case, msgs[:end], **where)
        _, refused = _attempt(lambda msg=msg: history.append(msg))
        if refused is not None:
            # A message that cannot be read is refused when it is added,
            # with format()'s error for it, and the conversation is unchanged.
            assert expected == ("error", type(refused), str(refused))
            assert len(history) == end - 1
            return
        _assert_same(history, expected)
        # Asked again with nothing new: the same.
        _assert_same(history, expected)


def _attempt(call: Any) -> tuple[Any, AgentScopeProtoError | None]:
    try:
        return call(), None
    except AgentScopeProtoError as exc:
        return None, exc


@pytest.mark.parametrize(("provider", "case"), GOLDEN_CASES)
def test_golden_cases_grown_turn_by_turn(provider: str, case: dict[str, Any]) -> None:
    _grow(provider, case, media_root=GOLDEN)
    if "media/" in json.dumps(case["msgs"]):
        # Without file access, media turns are formatted incrementally too
        # (a file may change between calls, so with access they are not).
        _grow(provider, case)


# Every golden chat conversation in provider fidelity, for every provider
# (those AgentScope lacks included): its options as given, refused alike by a
# conversation and format() where the provider takes none such. (A
# multi-agent history is formatted whole, by format() itself, in either
# fidelity: the parity cases above cover that path.)
PROVIDER_CASES = [
    pytest.param(provider, case, id=f"{provider}:{case['name']}")
    for provider, record in sorted(PROVIDERS.items())
    if "provider" in record.variants
    for case in input_cases()
    if not case["multi_agent"]
]


@pytest.mark.parametrize(("provider", "case"), PROVIDER_CASES)
def test_golden_conversations_in_provider_fidelity_grown_turn_by_turn(
    provider: str, case: dict[str, Any]
) -> None:
    case["options"]["fidelity"] = "provider"
    _grow(provider, case, media_root=GOLDEN)
    if "media/" in json.dumps(case["msgs"]):
        # Without file access, media turns are formatted incrementally too.
        _grow(provider, case)


# -- appends, removals, formats at random ----------------------------------------


POOL = message_pool()

_OPS = st.one_of(
    st.tuples(st.just("append"), st.integers(0, len(POOL) - 1)),
    st.tuples(st.just("extend"), st.lists(st.integers(0, len(POOL) - 1), max_size=3)),
    st.tuples(st.just("pop")),
    st.tuples(st.just("clear")),
)

_STYLES = st.sampled_from(
    [
        {},
        {"token_counter": "char"},
        {"promote_tool_result_images": True},
        {"multi_agent": True},
        {"max_tokens": 400, "token_counter": "char"},
        {"fidelity": "provider"},
    ]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    provider=st.sampled_from(sorted(PROVIDERS)),
    ops=st.lists(_OPS, min_size=1, max_size=14),
    style=_STYLES,
)
def test_random_histories_equal_format(
    provider: str, ops: list[tuple[Any, ...]], style: dict[str, Any]
) -> None:
    try:
        history = Conversation(provider, **style)
    except FormatError:
        # An option this provider does not take: format() refuses it too.
        with pytest.raises(FormatError):
            format(provider, [], **style)
        return
    mirror: list[dict[str, Any]] = []
    options = {k: v for k, v in style.items() if k != "multi_agent"}
    case = {
        "multi_agent": style.get("multi_agent", False),
        "tools": None,
        "tool_choice": None,
        "options": options,
    }
    for op in ops:
        if op[0] == "append":
            mirror.append(POOL[op[1]])
            history.append(POOL[op[1]])
        elif op[0] == "extend":
            mirror.extend(POOL[i] for i in op[1])
            history.extend([POOL[i] for i in op[1]])
        elif op[0] == "pop" and mirror:
            assert history.pop().name == mirror.pop()["name"]
        elif op[0] == "clear":
            mirror.clear()
            history.clear()
        assert len(history) == len(mirror)
        _assert_same(history, _reference(provider, case, list(mirror)))


# -- what a caller gives and gets is its own ---------------------------------------


def _loop(turns: int) -> list[Msg]:
    msgs: list[Msg] = [new_msg("system", "You are terse.", "system")]
    for i in range(turns):
        msgs.append(new_msg("user", f"question {i}", "user"))
        call = new_tool_use_block(f"call_{i}", "lookup", {"q": i})
        msgs.append(new_msg("friday", [new_text_block("Looking."), call], "assistant"))
        msgs.append(
            from_dict(
                {
                    "name": "system",
                    "role": "system",
                    "content": [
                        {
                            "type": "tool_result",
                            "id": f"call_{i}",
                            "name": "lookup",
                            "output": f"result {i}",
                        },
                    ],
                }
            )
        )
        msgs.append(new_msg("friday", f"answer {i}", "assistant"))
    return msgs


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_changing_a_message_after_adding_it_changes_nothing(provider: str) -> None:
    msgs = _loop(3)
    originals = [Msg.FromString(m.SerializeToString()) for m in msgs]
    history = Conversation(provider, msgs)
    whole = Conversation(provider, msgs, multi_agent=True)  # formats it all every time
    before = history.format_json().body_json
    msgs[1].text = "something else"
    msgs[2].blocks.items[0].text.text = "edited"
    more = new_msg("user", "more", "user")
    history.append(more)
    whole.append(more)
    assert history.messages == [*originals, more]
    assert history.format_json().body_json == body_to_json(format(provider, [*originals, more]))
    assert before != history.format_json().body_json
    assert dict(whole.format()) == dict(format(provider, [*originals, more], multi_agent=True))


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_changing_a_result_changes_nothing(provider: str) -> None:
    msgs = _loop(3)
    history = Conversation(provider, msgs, tools=[_TOOL])
    expected = format(provider, msgs, tools=[_TOOL])
    body = history.format()
    scramble(body)
    for warning in body.warnings:
        warning.message = "changed"
    as_json = history.format_json()
    for warning in as_json.warnings:
        warning.path = "changed"
    for message in history.messages:
        message.name = "changed"
    assert dict(history.format()) == dict(expected)
    assert history.format_json().body_json == body_to_json(expected)
    assert [w.SerializeToString() for w in history.format_json().warnings] == [
        w.SerializeToString() for w in expected.warnings
    ]
    assert history.messages == msgs


_TOOL = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Look something up.",
        "parameters": {"type": "object", "properties": {"q": {"type": "integer"}}},
    },
}


def test_the_tools_given_are_taken_as_they_were() -> None:
    tools = [copy.deepcopy(_TOOL)]
    history = Conversation("openai", _loop(1), tools=tools, tool_choice="auto")
    expected = body_to_json(format("openai", _loop(1), tools=[_TOOL], tool_choice="auto"))
    tools[0]["function"]["name"] = "changed"
    tools.append({"type": "function", "function": {"name": "another"}})
    assert history.format_json().body_json == expected


# -- errors --------------------------------------------------------------------------


def test_a_message_that_cannot_be_read_is_refused_when_added() -> None:
    history = Conversation("openai", [new_msg("user", "hi", "user")])
    with pytest.raises(FormatError) as caught:
        history.append({"role": "user", "content": "no name"})
    assert caught.value.path == "messages[1].name"
    with pytest.raises(MessageFormatError) as refused:
        history.extend([new_msg("user", "fine", "user"), {"name": "x", "role": 7}])
    assert refused.value.path.startswith("messages[2]")
    assert len(history) == 1  # neither of the two went in
    with pytest.raises(FormatError):
        history.extend("not a list")  # type: ignore[arg-type]
    assert history.format_json().body_json == body_to_json(
        format("openai", [new_msg("user", "hi", "user")])
    )


def test_a_message_format_refuses_can_be_taken_back() -> None:
    good = [new_msg("user", "hi", "user"), new_msg("friday", "hello", "assistant")]
    bad = new_msg("friday", [new_text_block("x")], "assistant")
    bad.blocks.items.add()  # a block of no kind: format() refuses it
    history = Conversation("anthropic", good)
    history.format_json()
    history.append(bad)
    expected = _reference("anthropic", _plain_case(), [*good, bad])
    assert expected[0] == "error"
    assert _outcomes(history) == (expected, expected)
    assert history.pop() == bad
    follow = new_msg("user", "again", "user")
    history.append(follow)
    assert history.format_json().body_json == body_to_json(format("anthropic", [*good, follow]))


def _plain_case() -> dict[str, Any]:
    return {"multi_agent": False, "tools": None, "tool_choice": None, "options": {}}


def test_options_are_checked_when_the_conversation_is_made() -> None:
    with pytest.raises(FormatError) as caught:
        Conversation("openai", conversation_history_prompt="History:")
    assert caught.value.path == "conversation_history_prompt"
    with pytest.raises(FormatError):
        Conversation("openai", tools=[{"type": "function", "function": {}}])
    with pytest.raises(FormatError):
        Conversation("ollama", promote_tool_result_audios=True)
    with pytest.raises(FormatError):
        Conversation("openai", cache={})  # type: ignore[arg-type]
    with pytest.raises(AgentScopeProtoError):
        Conversation("nobody")
    with pytest.raises(IndexError):
        Conversation("openai").pop()


# -- sharing -----------------------------------------------------------------------


def test_threads_share_one_conversation() -> None:
    msgs = _loop(12)
    history = Conversation("gemini")
    errors: list[BaseException] = []
    results: list[bytes] = []

    def agent() -> None:
        try:
            for _ in range(20):
                results.append(history.format_json().body_json)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=agent) for _ in range(4)]
    for thread in threads:
        thread.start()
    for msg in msgs:
        history.append(msg)
    for thread in threads:
        thread.join()
    assert not errors
    # Every body any thread saw is the body of some prefix.
    prefixes = {body_to_json(format("gemini", msgs[:k])) for k in range(1, len(msgs) + 1)}
    assert {body for body in results if body != b'{"contents":[]}'} <= prefixes
    assert history.format_json().body_json == body_to_json(format("gemini", msgs))


def test_a_cache_serves_the_styles_that_format_the_whole_history() -> None:
    cache = FormatCache()
    msgs = _loop(4)
    history = Conversation("openai", msgs, multi_agent=True, cache=cache)
    assert dict(history.format()) == dict(format("openai", msgs, multi_agent=True))
    history.format_json()
    assert cache.hits > 0


def test_the_result_and_its_repr() -> None:
    history = Conversation("deepseek", _loop(1))
    assert history.provider == "deepseek"
    assert history.settings.fidelity == "agentscope"
    assert repr(history) == "Conversation('deepseek', messages=5)"
    result = history.format_json()
    assert isinstance(result, FormattedJson)
    assert result.warnings is result.warnings  # made once, when first read
    assert repr(result).startswith("FormattedJson(body_json=<")
    assert json.loads(result.body_json) == dict(format("deepseek", _loop(1)))


def test_after_media_read_from_files_is_taken_back_it_goes_on_incrementally() -> None:
    msgs = _loop(2)
    image = from_dict(
        {
            "name": "user",
            "role": "user",
            "content": [
                {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}}
            ],
        }
    )
    history = Conversation("openai", msgs, allow_download=True)
    history.format_json()
    history.append(image)
    assert history.format_json().body_json == body_to_json(
        format("openai", [*msgs, image], allow_download=True)
    )
    assert not history._incremental  # a download may give something else next time
    history.pop()
    history.append(new_msg("user", "later", "user"))
    expected = format("openai", [*msgs, new_msg("user", "later", "user")])
    assert history.format_json().body_json == body_to_json(expected)
    assert history._incremental


# -- histories like real agents': every turn incremental, every warning logged once --


_FIDELITIES = [
    pytest.param(provider, fidelity, id=f"{provider}:{fidelity}")
    for provider, record in sorted(PROVIDERS.items())
    for fidelity in sorted(record.variants)
]


class _Lines(logging.Handler):
    """The package's log lines while attached (`with _Lines() as lines:`)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def __enter__(self) -> list[str]:
        logging.getLogger("agentscope_proto").addHandler(self)
        return self.lines

    def __exit__(self, *exc: object) -> None:
        logging.getLogger("agentscope_proto").removeHandler(self)


def _varied_case(fidelity: str) -> dict[str, Any]:
    return {
        "multi_agent": False,
        "tools": None,
        "tool_choice": None,
        "options": {"fidelity": fidelity},
    }


def _grown_once(provider: str, msgs: list[Any], case: dict[str, Any]) -> Conversation:
    """Grow a conversation over `msgs` (stopping at one it refuses), each
    prefix equal to format()'s; it logs each line format() logs over all the
    prefixes exactly once."""
    history = Conversation(
        provider, multi_agent=case["multi_agent"], tools=case["tools"], **case["options"]
    )
    reference: set[str] = set()
    logged: list[str] = []
    for end, msg in enumerate(msgs, 1):
        with _Lines() as lines:
            expected = _reference(provider, case, msgs[:end])
        reference.update(lines)
        _, refused = _attempt(lambda msg=msg: history.append(msg))
        if refused is not None:
            assert expected == ("error", type(refused), str(refused))
            break
        with _Lines() as lines:
            _assert_same(history, expected)
        logged += lines
    assert sorted(logged) == sorted(reference)
    return history


@pytest.mark.parametrize(("provider", "fidelity"), _FIDELITIES)
def test_a_varied_history_grown_turn_by_turn(provider: str, fidelity: str) -> None:
    # Blocks the provider drops, extra keys, tool inputs with odd keys and a
    # 100-bit integer, user media, an image a tool returned.
    history = _grown_once(provider, bench_history("varied_20"), _varied_case(fidelity))
    # Nothing in such a history ends incremental formatting, in either fidelity.
    assert history._incremental


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_long_varied_history_stays_incremental(provider: str) -> None:
    msgs = [from_dict(d) for d in bench_history("varied_200")]
    history = Conversation(provider)
    with _Lines() as lines:
        for end, msg in enumerate(msgs, 1):
            history.append(msg)
            body = history.format_json()
            assert history._incremental, end
    with _Lines() as reference:
        expected = format(provider, msgs)
    assert body.body_json == body_to_json(expected)
    assert list(body.warnings) == list(expected.warnings)
    # Each line format() logs, once (the walk's warnings: in provider fidelity
    # the pass over the body reports its changes without logging them).
    assert sorted(lines) == sorted(reference)


@pytest.mark.parametrize(
    "options", [{"multi_agent": True}, {"max_tokens": 3000, "token_counter": "char"}]
)
def test_styles_formatted_whole_log_each_warning_once(options: dict[str, Any]) -> None:
    case = _varied_case("agentscope")
    case["multi_agent"] = options.pop("multi_agent", False)
    case["options"].update(options)
    history = _grown_once("ollama", bench_history("varied_20"), case)
    assert not history._incremental


def test_warnings_log_at_the_callers_level_and_anew_for_a_new_message() -> None:
    video = {
        "name": "user",
        "role": "user",
        "content": [
            {
                "type": "video",
                "source": {"type": "base64", "media_type": "video/mp4", "data": "AAAA"},
            },
            {"type": "text", "text": "What is this?"},
        ],
    }
    line = "messages[1].content[0]: Unsupported block type video in the message, skipped."
    history = Conversation("anthropic", [{"name": "user", "role": "user", "content": "hi"}])
    handler = _Lines()
    levels: list[int] = []
    handler.emit = lambda record: levels.append(record.levelno)  # type: ignore[method-assign]
    with handler:
        history.append(video)
        with warning_log_level(logging.ERROR):
            history.format_json()
        history.format()
        assert levels == [logging.ERROR]
        # Taken back and added again: a new message, logged about anew.
        history.pop()
        history.append(video)
        with _Lines() as lines:
            history.format_json()
            history.format_json()
        assert lines == [line]


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_with_file_access_inline_media_stay_incremental(provider: str) -> None:
    # Only media given by path or URL are read (a file may change between
    # calls); inline media and the media a tool returned are the messages' own.
    msgs = bench_history("varied_20")
    history = Conversation(provider, media_root=GOLDEN)
    for end, msg in enumerate(msgs, 1):
        history.append(msg)
        expected = body_to_json(format(provider, msgs[:end], media_root=GOLDEN))
        assert history.format_json().body_json == expected, end
        assert history._incremental, end
    image = {
        "name": "user",
        "role": "user",
        "content": [{"type": "image", "source": {"type": "url", "url": "media/cat.png"}}],
    }
    history.append(image)
    case = _varied_case(PROVIDERS[provider].default_fidelity)
    _assert_same(history, _reference(provider, case, [*msgs, image], media_root=GOLDEN))
    assert not history._incremental


def test_an_image_a_tool_returned_is_cited_by_a_later_turn() -> None:
    # AgentScope "saves" a tool result's inline image to a file and a later
    # message may show that file: the conversation keeps what its walk saved.
    msgs = bench_history("varied_20")
    history = Conversation("openai", msgs)
    body = format("openai", msgs)
    cited = [m["content"] for m in body["messages"] if "can be found at" in str(m.get("content"))]
    assert len(cited) == 1
    path = cited[0].rsplit(": ", 1)[1]
    later = {
        "name": "user",
        "role": "user",
        "content": [{"type": "image", "source": {"type": "url", "url": path}}],
    }
    history.format_json()
    history.append(later)
    expected = format("openai", [*msgs, later])
    assert history.format_json().body_json == body_to_json(expected)
    assert history._incremental


_CHARS = st.characters(exclude_categories=("Cs",))
_TEXT = st.text(_CHARS, max_size=6)
_KEYS = _TEXT | st.sampled_from(["", "a.b", "$ref", "0", "ключ", "with space", "__proto__"])
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**100), 2**100)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=6,
)
_EXTRAS = st.dictionaries(_KEYS.filter(lambda key: key not in ("type", "text")), _JSON, max_size=2)
_MEDIA = st.sampled_from(
    [
        ("image", "image/png", "iVBORw0KGgo="),
        ("audio", "audio/wav", "UklGRgAAAABXQVZF"),
        ("video", "video/mp4", "AAAAGGZ0eXBtcDQy"),
    ]
).map(lambda m: {"type": m[0], "source": {"type": "base64", "media_type": m[1], "data": m[2]}})
_BLOCK = st.one_of(
    st.builds(lambda text, extra: {"type": "text", "text": text, **extra}, _TEXT, _EXTRAS),
    st.builds(
        lambda text, signed: (
            {"type": "thinking", "thinking": text} | ({"signature": "c2lnbmVk"} if signed else {})
        ),
        _TEXT,
        st.booleans(),
    ),
    st.builds(
        lambda n, args: {"type": "tool_use", "id": f"call_{n}", "name": "f", "input": args},
        st.integers(0, 3),
        st.dictionaries(_KEYS, _JSON, max_size=3),
    ),
    st.builds(
        lambda n, output: {"type": "tool_result", "id": f"call_{n}", "name": "f", "output": output},
        st.integers(0, 3),
        _TEXT
        | st.lists(st.builds(lambda t: {"type": "text", "text": t}, _TEXT) | _MEDIA, max_size=2),
    ),
    _MEDIA,
)
_MESSAGE = st.builds(
    lambda role, content: {"name": role, "role": role, "content": content},
    st.sampled_from(["user", "assistant", "system"]),
    _TEXT | st.lists(_BLOCK, min_size=1, max_size=3),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    choice=st.sampled_from(
        [(p, f) for p, record in sorted(PROVIDERS.items()) for f in sorted(record.variants)]
    ),
    msgs=st.lists(_MESSAGE, min_size=1, max_size=8),
)
def test_random_varied_histories_stay_incremental_and_equal_format(
    choice: tuple[str, str], msgs: list[dict[str, Any]]
) -> None:
    provider, fidelity = choice
    history = _grown_once(provider, msgs, _varied_case(fidelity))
    assert history._incremental


_SEGMENTED = sorted(
    name for name, p in PROVIDERS.items() if getattr(p.variants.get("provider"), "segmented", False)
)


def test_the_chat_completions_family_and_claude_pass_in_runs() -> None:
    chat = {"openai", "deepseek", "moonshot", "xai", "volcengine", "zhipu", "minimax"}
    assert set(_SEGMENTED) >= {*chat, "anthropic"}


@pytest.mark.parametrize("shape", ["agentscope", "agentscope2"])
@pytest.mark.parametrize("provider", _SEGMENTED)
def test_a_long_history_is_passed_once_per_run(provider: str, shape: str) -> None:
    """In provider fidelity, a pass that goes in runs passes each run before
    the last cut once (they are kept with their JSON) and the last run again:
    the body, its JSON and its warnings are format()'s on every turn."""
    msgs = [from_dict(d) for d in bench_history("varied_200")]
    if shape == "agentscope2":
        msgs = [from_dict(to_dict(m, dialect=shape), dialect=shape) for m in msgs]
    history = Conversation(provider, fidelity="provider")
    for end, msg in enumerate(msgs, 1):
        history.append(msg)
        try:
            body = history.format_json()
        except FormatError as exc:  # a system prompt alone, for an API that needs a message
            with pytest.raises(FormatError, match=re.escape(str(exc))):
                format(provider, msgs[:end], fidelity="provider")
            continue
        if end % 50 == 0 or end == len(msgs):
            expected = format(provider, msgs[:end], fidelity="provider")
            assert body.body_json == body_to_json(expected), end
            assert list(body.warnings) == list(expected.warnings), end
    runs = history._runs
    assert runs is not None
    assert history._segmented
    # Every message before the last run was passed once and kept.
    assert len(history._walk.messages) - runs.cut <= 4
