"""`FormatCache`: a cache never changes an output.

Every golden format case gives AgentScope's output with the cache off, cold,
warm (formatted twice), after every prefix of its conversation was formatted
first, and after the caller mutated an earlier cached result; a property test
appends, edits and reorders messages under one cache; threads share one
cache; the cache stays within its byte bound; the server gives the same with
its cache on.
"""

from __future__ import annotations

import builtins
import copy
import json
import threading
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentscope_proto import FormatCache, FormatterClient, from_dict
from agentscope_proto._engine.entries import view_key
from agentscope_proto.cache import ENTRY_OVERHEAD
from agentscope_proto.errors import AgentScopeProtoError, FormatError
from agentscope_proto.formatting import body_to_json, format
from agentscope_proto.message import new_msg, new_text_block
from agentscope_proto.providers import PROVIDERS
from agentscope_proto.service import ServerConfig

from golden_data import (
    GOLDEN,
    bench_history,
    decode,
    formatter_cases,
    golden_providers,
    message_pool,
)
from server_harness import RunningServer
from strict import assert_same, diff, scramble

GOLDEN_CASES: list[tuple[str, dict[str, Any]]] = [
    (provider, case)
    for provider in PROVIDERS
    if provider in golden_providers("formatters")
    for case in formatter_cases(provider)
]
CASES = [pytest.param(p, c, id=f"{p}:{c['name']}") for p, c in GOLDEN_CASES]


def _run(provider: str, case: dict[str, Any], msgs: Any = None, **extra: Any) -> Any:
    return format(
        provider,
        case["msgs"] if msgs is None else msgs,
        multi_agent=case["multi_agent"],
        tools=case["tools"],
        tool_choice=case["tool_choice"],
        media_root=GOLDEN,
        **case["options"],
        **extra,
    )


def _outcome(call: Any) -> tuple[str, Any, list[bytes]]:
    """What a format call gave: its body and warnings, or its error."""
    try:
        body = call()
    except AgentScopeProtoError as exc:
        return "error", (type(exc), str(exc)), []
    return "body", dict(body), [w.SerializeToString() for w in body.warnings]


def _assert_same_outcome(actual: tuple[str, Any, list[bytes]], expected: Any) -> None:
    assert actual[0] == expected[0], (actual, expected)
    if actual[0] == "body":
        assert_same(actual[1], expected[1])
    else:
        assert actual[1] == expected[1]
    assert actual[2] == expected[2]


def _check_golden(case: dict[str, Any], outcome: tuple[str, Any, list[bytes]]) -> None:
    if "error" in case:
        assert outcome[0] == "error", outcome
        builtin = getattr(builtins, case["error"]["type"], None)
        if isinstance(builtin, type) and builtin in (ValueError, TypeError):
            assert issubclass(outcome[1][0], builtin), outcome
        return
    assert outcome[0] == "body", outcome
    assert_same(outcome[1], decode(case["expected"]))
    assert len(outcome[2]) == len(case["warnings"])


@pytest.mark.parametrize(("provider", "case"), CASES)
def test_golden_off_cold_warm_and_after_prefixes(provider: str, case: dict[str, Any]) -> None:
    off = _outcome(lambda: _run(provider, case))
    _check_golden(case, off)

    cache = FormatCache()
    cold = _outcome(lambda: _run(provider, case, cache=cache))
    _assert_same_outcome(cold, off)
    warm = _outcome(lambda: _run(provider, case, cache=cache))
    _assert_same_outcome(warm, off)
    if warm[0] == "body" and case["msgs"]:
        assert cache.hits > 0

    # A caller owns what it gets back: mutating it must not reach the cache.
    # (On a copy of the case: the body shares the caller's tool schemas.)
    if "error" not in case:
        scramble(dict(_run(provider, copy.deepcopy(case), cache=cache)))
        _assert_same_outcome(_outcome(lambda: _run(provider, case, cache=cache)), off)

    prefixed = FormatCache()
    msgs = case["msgs"]
    for end in range(1, len(msgs)):
        _outcome(lambda end=end: _run(provider, case, msgs=msgs[:end], cache=prefixed))
    _assert_same_outcome(_outcome(lambda: _run(provider, case, cache=prefixed)), off)


# -- appends, edits and reorders under one cache -------------------------------


POOL = message_pool()


def _edited(msg: dict[str, Any], text: str) -> dict[str, Any]:
    edited: dict[str, Any] = json.loads(json.dumps(msg))
    content = edited.get("content")
    if isinstance(content, str) or not content:
        edited["content"] = text
    else:
        edited["content"] = [*content, {"type": "text", "text": text}]
    return edited


_OPS = st.one_of(
    st.tuples(st.just("append"), st.integers(0, len(POOL) - 1)),
    st.tuples(st.just("edit"), st.integers(0, 10_000), st.text(max_size=8)),
    st.tuples(st.just("swap"), st.integers(0, 10_000), st.integers(0, 10_000)),
    st.tuples(st.just("drop"), st.integers(0, 10_000)),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    provider=st.sampled_from(sorted(PROVIDERS)),
    ops=st.lists(_OPS, min_size=1, max_size=12),
    max_bytes=st.sampled_from([0, 4_000, 64 * 1024 * 1024]),
)
def test_cached_equals_uncached_while_editing(
    provider: str, ops: list[tuple[Any, ...]], max_bytes: int
) -> None:
    cache = FormatCache(max_bytes)
    history: list[dict[str, Any]] = []
    for op in ops:
        if op[0] == "append":
            history.append(POOL[op[1]])
        elif history and op[0] == "edit":
            at = op[1] % len(history)
            history[at] = _edited(history[at], op[2])
        elif history and op[0] == "swap":
            i, j = op[1] % len(history), op[2] % len(history)
            history[i], history[j] = history[j], history[i]
        elif history and op[0] == "drop":
            del history[op[1] % len(history)]
        plain = _outcome(lambda: format(provider, history))
        cached = _outcome(lambda: format(provider, history, cache=cache))
        _assert_same_outcome(cached, plain)
        assert cache.size_bytes <= max_bytes


# -- threads, bounds, arguments -------------------------------------------------


def _conversation(turns: int) -> list[Any]:
    msgs: list[Any] = [new_msg("system", "You are terse.", "system")]
    for i in range(turns):
        msgs.append(new_msg("user", f"question {i} " * (i % 7 + 1), "user"))
        msgs.append(new_msg("friday", f"answer {i}", "assistant"))
    return msgs


@pytest.mark.parametrize("max_bytes", [64 * 1024 * 1024, 3_000])
def test_threads_share_one_cache(max_bytes: int) -> None:
    msgs = _conversation(15)
    providers = sorted(PROVIDERS)
    expected = {
        (p, end): _outcome(lambda p=p, end=end: format(p, msgs[:end]))
        for p in providers
        for end in range(1, len(msgs) + 1)
    }
    cache = FormatCache(max_bytes)
    failures: list[str] = []
    start = threading.Barrier(4)

    def work(seed: int) -> None:
        start.wait()
        for round_ in range(3):
            for p in providers[seed % len(providers) :] + providers[: seed % len(providers)]:
                for end in range(1, len(msgs) + 1):
                    got = _outcome(lambda p=p, end=end: format(p, msgs[:end], cache=cache))
                    want = expected[(p, end)]
                    if got[0] != want[0] or diff(got[1], want[1]) or got[2] != want[2]:
                        failures.append(f"thread {seed} round {round_}: {p} [:{end}]")
                    if cache.size_bytes > max_bytes:
                        failures.append(f"over the bound: {cache.size_bytes}")

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures[:5]
    assert cache.hits > 0


def test_stays_within_max_bytes() -> None:
    msgs = _conversation(200)
    cost = max(ENTRY_OVERHEAD + 2 * len(m.SerializeToString()) for m in msgs)
    bound = 40 * cost
    cache = FormatCache(bound)
    for end in range(1, len(msgs) + 1, 10):
        format("openai", msgs[:end], cache=cache)
        assert 0 < cache.size_bytes <= bound
    # Full: entries were evicted, yet it still holds about as many as fit.
    assert 10 <= len(cache) < len(msgs)
    assert cache.size_bytes > bound // 2
    cache.clear()
    assert len(cache) == 0
    assert cache.size_bytes == 0


def test_zero_bytes_keeps_nothing() -> None:
    cache = FormatCache(0)
    msgs = _conversation(3)
    assert dict(format("openai", msgs, cache=cache)) == dict(format("openai", msgs))
    assert len(cache) == 0
    assert cache.size_bytes == 0


def test_the_view_key_is_the_content() -> None:
    def msg(name: str, content: Any, role: str) -> Any:
        return new_msg(name, content, role)  # a fresh id and timestamp each time

    assert view_key(msg("user", "hi", "user")) == view_key(msg("user", "hi", "user"))
    assert view_key(msg("user", "hi", "user")) != view_key(msg("user", "hi!", "user"))
    assert view_key(msg("user", "hi", "user")) != view_key(msg("bob", "hi", "user"))
    assert view_key(msg("user", "hi", "user")) != view_key(msg("user", "hi", "assistant"))
    blocks = [new_text_block("hi")]
    assert view_key(msg("user", blocks, "user")) == view_key(msg("user", blocks, "user"))
    assert view_key(msg("user", blocks, "user")) != view_key(msg("user", "hi", "user"))


@pytest.mark.parametrize("bad", [-1, 1.5, "64", None, True])
def test_max_bytes_must_be_a_non_negative_int(bad: Any) -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        FormatCache(bad)


def test_cache_must_be_a_format_cache() -> None:
    with pytest.raises(FormatError) as caught:
        format("openai", _conversation(1), cache={})  # type: ignore[arg-type]
    assert caught.value.path == "cache"


def test_errors_are_not_cached_and_keep_their_path() -> None:
    cache = FormatCache()
    good = new_msg("user", "hi", "user")
    bad = new_msg("user", "x", "user")
    bad.ClearField("name")
    for _ in range(2):
        with pytest.raises(FormatError) as caught:
            format("openai", [good, good, bad], cache=cache)
        assert caught.value.path == "messages[2].name"


# -- cached chat turns: what a turn depends on beyond its message -----------------


def _same_as_uncached(provider: str, msgs: list[Any], cache: FormatCache, **kw: Any) -> None:
    _assert_same_outcome(
        _outcome(lambda: format(provider, msgs, cache=cache, **kw)),
        _outcome(lambda: format(provider, msgs, **kw)),
    )


@pytest.mark.parametrize(
    ("provider", "fidelity"),
    [(p, f) for p, record in sorted(PROVIDERS.items()) for f in sorted(record.variants)],
)
def test_a_varied_history_cached_equals_uncached(provider: str, fidelity: str) -> None:
    # Every prefix of an agent's history with blocks dropped, extra keys, odd
    # tool inputs (a 100-bit integer among them) and media, cold then warm, and
    # the JSON written from cached turns byte for byte.
    msgs = [from_dict(d) for d in bench_history("varied_20")]
    cache = FormatCache()
    for _ in range(2):
        for end in range(1, len(msgs) + 1):
            _same_as_uncached(provider, msgs[:end], cache, fidelity=fidelity)
    for end in range(1, len(msgs) + 1):
        try:
            expected = body_to_json(format(provider, msgs[:end], fidelity=fidelity))
        except AgentScopeProtoError:
            continue
        cached = format(provider, msgs[:end], cache=cache, fidelity=fidelity)
        assert body_to_json(cached) == expected


def test_a_turn_is_cached_apart_for_first_and_later() -> None:
    # Anthropic sends a system message that is not first as a user's.
    system = new_msg("system", "Be brief.", "system")
    user = new_msg("user", "hi", "user")
    cache = FormatCache()
    for msgs in ([system, user], [user, system], [system, user], [user, system]):
        _same_as_uncached("anthropic", msgs, cache)
    # The second time, each list's two turns come from the cache: four turns
    # in all, two per position of the system message.
    assert cache.hits >= 4
    assert len(cache) >= 4


def test_cached_turn_warnings_name_the_new_position() -> None:
    thinking = {
        "name": "friday",
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}, {"type": "thinking", "thinking": "hmm"}],
    }
    user = {"name": "user", "role": "user", "content": "hi"}
    cache = FormatCache()
    for msgs in ([user, thinking], [user, user, user, thinking], [thinking]):
        _same_as_uncached("openai", msgs, cache)
    paths = [w.path for w in format("openai", [user, user, thinking], cache=cache).warnings]
    assert paths == ["messages[2].content[1]"]


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_agent_loop_with_truncation(provider: str) -> None:
    msgs = _conversation(12)
    cache = FormatCache()
    for end in range(1, len(msgs) + 1):
        for limit in (None, 400):
            kw = {} if limit is None else {"max_tokens": limit, "token_counter": "char"}
            _same_as_uncached(provider, msgs[:end], cache, **kw)
    # Both the views and the turns came from the cache.
    assert cache.hits > 2 * len(msgs)


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_agent_name_and_multi_agent_with_cache(provider: str) -> None:
    msgs = _conversation(4)
    cache = FormatCache()
    for _ in range(2):
        _same_as_uncached(provider, msgs, cache, agent_name="friday")
        _same_as_uncached(provider, msgs, cache, multi_agent=True)
        _same_as_uncached(provider, msgs, cache)


# -- the server, cache on -------------------------------------------------------


@pytest.fixture(scope="module")
def cached_server() -> Any:
    running = RunningServer(ServerConfig(port=0, format_cache_mb=8)).start()
    yield running
    running.stop()


SERVER_CASES = [
    (provider, case)
    for provider, case in GOLDEN_CASES
    if "error" not in case
    and "media/" not in json.dumps(case["msgs"])
    # A FormatRequest's tool_choice is a string field.
    and isinstance(case["tool_choice"], (str, type(None)))
]


def test_server_with_cache_equals_golden(cached_server: Any) -> None:
    with FormatterClient(cached_server.target) as client:
        for _ in range(2):  # cold, then warm
            for provider, case in SERVER_CASES:
                kwargs = dict(
                    multi_agent=case["multi_agent"],
                    tools=case["tools"],
                    tool_choice=case["tool_choice"],
                    **case["options"],
                )
                remote = client.format(provider, case["msgs"], **kwargs)
                # Over the wire the body is JSON (bytes become base64 text).
                expected = json.loads(body_to_json(decode(case["expected"])))
                assert not diff(dict(remote), expected), (provider, case["name"])
                assert len(remote.warnings) == len(case["warnings"]), (provider, case["name"])
                assert remote.warnings == format(provider, case["msgs"], **kwargs).warnings
