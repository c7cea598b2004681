"""The server's wire-keyed format cache: message bytes sliced from the request,
turns stored with their JSON, bodies written from it (see FormatterServicer.Format)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from agentscope_proto import FormatCache, Msg, from_dict
from agentscope_proto._engine.body import EncodedMessage
from agentscope_proto._engine.walk import resume_point, settings_scope
from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto._wire import WireMessages
from agentscope_proto.formatting import body_to_json, format
from agentscope_proto.options import FormatSettings
from agentscope_proto.providers import PROVIDERS
from agentscope_proto.service._rpc import encoded_format_response
from provider_schemas.scenarios import AGENTSCOPE2_TOOL_LOOP

from golden_data import bench_history

_MESSAGES = pb.FormatRequest.DESCRIPTOR.fields_by_name["messages"].number

# Every provider in each of its fidelities.
_FIDELITIES = [
    pytest.param(provider, fidelity, id=f"{provider}:{fidelity}")
    for provider, record in sorted(PROVIDERS.items())
    for fidelity in sorted(record.variants)
]


def _wired(msgs: list[Msg]) -> WireMessages:
    request = pb.FormatRequest(provider=pb.PROVIDER_OPENAI, messages=msgs, tool_choice="auto")
    wire = WireMessages.of(request.SerializeToString(), _MESSAGES)
    assert wire is not None
    return wire


def _conversation() -> list[dict[str, object]]:
    return [
        {"name": "system", "role": "system", "content": "Be brief."},
        {"name": "user", "role": "user", "content": "What is the weather? ünïcödé"},
        {
            "name": "Friday",
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Paris"}},
            ],
        },
        {
            "name": "system",
            "role": "system",
            "content": [
                {"type": "tool_result", "id": "c1", "name": "weather", "output": "sunny"},
            ],
        },
        {"name": "Friday", "role": "assistant", "content": [{"type": "text", "text": "Sunny."}]},
    ]


def test_the_messages_as_encoded_and_their_run() -> None:
    request = pb.FormatRequest(provider=pb.PROVIDER_OPENAI, tools_json="[]", tool_choice="auto")
    request.messages.extend(from_dict(d) for d in _conversation())
    request.options.max_tokens = 300  # a field after the messages
    wire = WireMessages.of(request.SerializeToString(), _MESSAGES)
    assert wire is not None
    assert wire.first == request.messages[0].SerializeToString()
    assert wire.walk()
    assert wire.messages == [m.SerializeToString() for m in request.messages]
    # The run of all messages: their tags, lengths and bytes, nothing else.
    assert wire.run() == pb.FormatRequest(messages=request.messages).SerializeToString()
    # A walk that skips a known run reads only what follows it.
    two = pb.FormatRequest(messages=request.messages[:2]).SerializeToString()
    again = WireMessages.of(request.SerializeToString(), _MESSAGES)
    assert again is not None
    assert again.known_run(two)
    assert again.walk(len(two), 2)
    assert again.messages == [m.SerializeToString() for m in request.messages[2:]]
    assert len(again) == len(request.messages)
    assert again.run() == wire.run()


def test_messages_split_by_another_field_are_no_run() -> None:
    first = pb.FormatRequest(messages=[from_dict(_conversation()[0])]).SerializeToString()
    rest = pb.FormatRequest(messages=[from_dict(_conversation()[1])]).SerializeToString()
    data = first + pb.FormatRequest(tool_choice="auto").SerializeToString() + rest
    wire = WireMessages.of(data, _MESSAGES)
    assert wire is not None
    assert wire.walk()
    assert len(wire) == 2
    assert wire.run() is None


@pytest.mark.parametrize("data", [b"\x1a\x05ab", b"\x1a", b"\x0b", b"\x08\x80"])
def test_bytes_that_do_not_walk_are_refused(data: bytes) -> None:
    wire = WireMessages.of(data, _MESSAGES)
    assert wire is None or not wire.walk()


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_wire_keyed_turns_give_the_uncached_body(provider: str) -> None:
    msgs = [from_dict(d) for d in _conversation()]
    plain = format(provider, msgs)
    cache = FormatCache()
    for _ in range(3):  # cold, then every turn from the cache
        for end in range(1, len(msgs) + 1):
            try:
                expected = format(provider, msgs[:end])
            except Exception as exc:  # the same refusal either way
                with pytest.raises(type(exc)):
                    format(provider, msgs[:end], cache=cache, _wire=_wired(msgs[:end]))
                continue
            body = format(provider, msgs[:end], cache=cache, _wire=_wired(msgs[:end]))
            assert body_to_json(body) == body_to_json(expected)
            assert json.loads(body_to_json(body)) == dict(expected)
            assert list(body.warnings) == list(expected.warnings)
    assert cache.hits
    assert body_to_json(format(provider, msgs, cache=cache, _wire=_wired(msgs))) == body_to_json(
        plain
    )


def test_cached_turns_go_out_as_their_json() -> None:
    msgs = [from_dict(d) for d in _conversation()]
    cache = FormatCache()
    format("openai", msgs, cache=cache, _wire=_wired(msgs))
    body = format("openai", msgs, cache=cache, _wire=_wired(msgs))
    encoded = [m for m in body["messages"] if type(m) is EncodedMessage]
    assert encoded, "the second call replays the stored turns"
    # The stored JSON is what is written, not the dict: proven by a mismatch.
    forged = EncodedMessage({"role": "user"}, b'{"role":"forged"}')
    assert json.loads(body_to_json({"messages": [forged]})) == {"messages": [{"role": "forged"}]}


def test_edited_message_bytes_miss() -> None:
    msgs = [from_dict(d) for d in _conversation()]
    cache = FormatCache()
    format("anthropic", msgs, cache=cache, _wire=_wired(msgs))
    msgs[1].text = "Something else entirely"
    body = format("anthropic", msgs, cache=cache, _wire=_wired(msgs))
    assert body_to_json(body) == body_to_json(format("anthropic", msgs))


@pytest.mark.parametrize(("provider", "fidelity"), _FIDELITIES)
def test_a_walk_resumed_from_a_cached_run_equals_the_uncached_one(
    provider: str, fidelity: str
) -> None:
    # A conversation with a message that is not plain (media: a walk over it
    # is never kept) and that some providers drop (a warning to carry over).
    dicts = _conversation()
    dicts.insert(
        2,
        {
            "name": "user",
            "role": "user",
            "content": [
                {
                    "type": "video",
                    "source": {"type": "base64", "media_type": "video/mp4", "data": "AAAA"},
                }
            ],
        },
    )
    msgs = [from_dict(d) for d in dicts]
    cache = FormatCache()
    for end in range(1, len(msgs) + 1):
        for _ in range(2):  # each request, then the same again
            try:
                expected = format(provider, msgs[:end], fidelity=fidelity)
            except Exception as exc:
                wire = _wired(msgs[:end])
                with pytest.raises(type(exc)):
                    format(provider, msgs[:end], cache=cache, _wire=wire, fidelity=fidelity)
                continue
            wire = _wired(msgs[:end])
            body = format(provider, msgs[:end], cache=cache, _wire=wire, fidelity=fidelity)
            assert body_to_json(body) == body_to_json(expected), end
            assert list(body.warnings) == list(expected.warnings), end
    # An edit early in the history: no cached run matches, the turns still do.
    msgs[0].text = "Be verbose."
    body = format(provider, msgs, cache=cache, _wire=_wired(msgs), fidelity=fidelity)
    assert body_to_json(body) == body_to_json(format(provider, msgs, fidelity=fidelity))


@pytest.mark.parametrize(("provider", "fidelity"), _FIDELITIES)
def test_a_varied_history_resumed_request_by_request(provider: str, fidelity: str) -> None:
    msgs = [from_dict(d) for d in bench_history("varied_20")]
    cache = FormatCache()
    for end in range(1, len(msgs) + 1):
        wire = _wired(msgs[:end])
        try:
            expected = format(provider, msgs[:end], fidelity=fidelity)
        except Exception as exc:  # a system prompt alone, for an API that needs a message
            with pytest.raises(type(exc)):
                format(provider, msgs[:end], cache=cache, _wire=wire, fidelity=fidelity)
            continue
        body = format(provider, msgs[:end], cache=cache, _wire=wire, fidelity=fidelity)
        assert body_to_json(body) == body_to_json(expected), end
        assert list(body.warnings) == list(expected.warnings), end
    # The walk over the whole history was kept: the next request resumes it.
    scope = settings_scope(cache, provider, FormatSettings(fidelity=fidelity))
    wire = _wired([*msgs, msgs[1]])
    assert resume_point(cache, scope, wire) is not None
    assert wire.skipped > 0


@pytest.mark.parametrize("provider", ["anthropic", "gemini", "ollama"])
def test_a_wide_integer_is_cached_with_its_json(provider: str) -> None:
    # These providers send a tool input as an object: a 100-bit integer in it
    # (which orjson cannot write) is spliced from the turn's JSON like any
    # other, exactly, and the walk over the conversation is still kept.
    wide = 2**100 + 7
    dicts = _conversation()
    dicts[2]["content"][1]["input"] = {"city": "Paris", "id": wide}  # type: ignore[index]
    msgs = [from_dict(d) for d in dicts]
    cache = FormatCache()
    body = format(provider, msgs, cache=cache, _wire=_wired(msgs))
    expected = format(provider, msgs)
    assert body_to_json(body) == body_to_json(expected)
    assert json.loads(body_to_json(body)) == json.loads(json.dumps(dict(expected)))
    assert f'"id":{wide}'.encode() in body_to_json(body)
    scope = settings_scope(cache, provider, FormatSettings(fidelity="agentscope"))
    wire = _wired([*msgs, msgs[1]])
    assert resume_point(cache, scope, wire) is not None
    assert wire.skipped == len(msgs)


def test_the_next_request_resumes_the_cached_run() -> None:
    msgs = [from_dict(d) for d in _conversation()]
    cache = FormatCache()
    format("openai", msgs[:4], cache=cache, _wire=_wired(msgs[:4]))
    # The scope of the settings format() ran with: the default's, its fidelity resolved.
    scope = settings_scope(cache, "openai", FormatSettings(fidelity="agentscope"))
    wire = _wired(msgs)
    assert resume_point(cache, scope, wire) is not None
    assert (wire.skipped, len(wire.messages)) == (4, 1)
    # Another conversation with the same first message is not taken for it.
    other = [from_dict(d) for d in _conversation()]
    other[0].id = msgs[0].id
    other[1].text = "Something else"
    wire = _wired(other)
    assert resume_point(cache, scope, wire) is None
    assert (wire.skipped, len(wire.messages)) == (0, 5)
    # A walk over media is not kept: the conversation's run stays the last plain one.
    image = from_dict(
        {
            "name": "user",
            "role": "user",
            "content": [
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
                }
            ],
        }
    )
    with_media = [*msgs[:4], image]
    format("openai", with_media, cache=cache, _wire=_wired(with_media))
    wire = _wired([*with_media, msgs[4]])
    assert resume_point(cache, scope, wire) is not None
    assert wire.skipped == 4


def test_the_server_cache_stays_within_its_bound() -> None:
    cache = FormatCache(max_bytes=60_000)
    for agent in range(12):
        dicts = _conversation()
        dicts[0] = {**dicts[0], "content": f"Agent {agent}: be brief. " + "x" * 500}
        msgs = [from_dict(d) for d in dicts * 4]
        for end in range(1, len(msgs) + 1):
            body = format("openai", msgs[:end], cache=cache, _wire=_wired(msgs[:end]))
            assert cache.size_bytes <= cache.max_bytes
        assert body_to_json(body) == body_to_json(format("openai", msgs))
    assert cache.hits


@pytest.mark.parametrize("token_count", [None, 0, 7, 300_000, -1])
@pytest.mark.parametrize(
    "body_json", [b"", b'{"messages":[]}', ("{" + "x" * 20_000 + "}").encode()]
)
def test_the_encoded_response_is_what_protobuf_writes(
    token_count: int | None, body_json: bytes
) -> None:
    warnings = [
        pb.FormatWarning(path="messages[3].content[1]", block_type="video", message="dropped ü"),
        pb.FormatWarning(path="", block_type="tool_choice", message=""),
    ]
    for chosen in ([], warnings):
        expected = pb.FormatResponse(body_json=body_json.decode(), warnings=chosen)
        if token_count is not None:
            expected.token_count = token_count
        encoded = encoded_format_response(body_json, chosen, token_count)
        assert encoded == expected.SerializeToString()
        assert pb.FormatResponse.FromString(encoded) == expected


def test_the_server_cache_keeps_each_called_model_apart() -> None:
    """A signature goes back only to the model that issued it: the same
    history requested for two models through one wire cache, alternately,
    gives each model's uncached body (never the other's cached turns)."""
    thinking = {
        "type": "thinking",
        "thinking": "Check the weather.",
        "signature": "EqQBsignature",
        "signed_model": "claude-sonnet-4-5-20250929",
    }
    dicts = _conversation()
    dicts[2]["content"].insert(0, thinking)  # type: ignore[union-attr]
    msgs = [from_dict(d) for d in dicts]
    cache = FormatCache()
    for model in ("claude-sonnet-4-5", "claude-opus-4-5", "claude-sonnet-4-5", "claude-opus-4-5"):
        request = {"model": model, "max_output_tokens": 64}
        expected = format("anthropic", msgs, fidelity="provider", request=request)
        body = format(
            "anthropic", msgs, cache=cache, _wire=_wired(msgs), fidelity="provider", request=request
        )
        assert body_to_json(body) == body_to_json(expected), model
        assert list(body.warnings) == list(expected.warnings), model
        signed = b"EqQBsignature" in body_to_json(body)
        assert signed is (model == "claude-sonnet-4-5"), model


def _agent_conversation(rounds: int, *, parted_hint: bool = False) -> list[Msg]:
    """An AgentScope 2.x agent's history: each assistant message holds its
    thinking, its call, the call's result, a hint and its answer, which
    provider fidelity sends as several turns (`agent_turns`). With
    `parted_hint`, one hint is a list of parts."""
    question, answer, _ = AGENTSCOPE2_TOOL_LOOP
    dicts: list[dict[str, Any]] = []
    for number in range(rounds):
        asked = copy.deepcopy(question)
        asked["content"][0]["text"] = f"Question {number}?"
        answered = copy.deepcopy(answer)
        for block in answered["content"]:
            if block["type"] in ("tool_call", "tool_result"):
                block["id"] = f"toolu_{number:02d}"
            elif block["type"] == "text":
                block["text"] += f" ({number})"
            elif block["type"] == "hint" and parted_hint and number == 1:
                block["hint"] = [{**asked["content"][0], "text": "Be brief."}]
        dicts += [asked, answered]
    return [from_dict(d) for d in dicts]


_PROVIDER_FIDELITY = sorted(name for name, p in PROVIDERS.items() if "provider" in p.variants)


@pytest.mark.parametrize("provider", _PROVIDER_FIDELITY)
def test_a_message_sent_as_several_turns_is_cached_whole(provider: str) -> None:
    """A 2.x message provider fidelity splits into turns (its call, the
    result, the hint, the answer) is kept as one record of its turns: every
    request gives the uncached body, and the walk over the conversation is
    kept, so the next request resumes it."""
    msgs = _agent_conversation(5)
    cache, keyed = FormatCache(), FormatCache()
    for end in range(1, len(msgs) + 1):
        expected = format(provider, msgs[:end], fidelity="provider")
        for _ in range(2):  # the second time, every turn from the cache
            body = format(
                provider, msgs[:end], cache=cache, _wire=_wired(msgs[:end]), fidelity="provider"
            )
            assert body_to_json(body) == body_to_json(expected), end
            assert list(body.warnings) == list(expected.warnings), end
            body = format(provider, msgs[:end], cache=keyed, fidelity="provider")
            assert body_to_json(body) == body_to_json(expected), end
            assert list(body.warnings) == list(expected.warnings), end
    scope = settings_scope(cache, provider, FormatSettings(fidelity="provider"))
    wire = _wired([*msgs, msgs[0]])
    assert resume_point(cache, scope, wire) is not None
    assert wire.skipped == len(msgs)


@pytest.mark.parametrize("provider", ["anthropic", "moonshot"])
def test_a_hint_of_parts_is_formatted_again_each_time(provider: str) -> None:
    """A hint made of parts names its blocks inside the hint: its message's
    turns are not kept (the walk kept is the one before it), and every
    request still gives the uncached body."""
    msgs = _agent_conversation(3, parted_hint=True)
    cache = FormatCache()
    for end in range(1, len(msgs) + 1):
        expected = format(provider, msgs[:end], fidelity="provider")
        for _ in range(2):
            body = format(
                provider, msgs[:end], cache=cache, _wire=_wired(msgs[:end]), fidelity="provider"
            )
            assert body_to_json(body) == body_to_json(expected), end
            assert list(body.warnings) == list(expected.warnings), end
    scope = settings_scope(cache, provider, FormatSettings(fidelity="provider"))
    wire = _wired([*msgs, msgs[0]])
    assert resume_point(cache, scope, wire) is not None
    assert wire.skipped == 3  # messages[3] holds the hint of parts


_IN_RUNS = sorted(
    name for name, p in PROVIDERS.items() if getattr(p.variants.get("provider"), "segmented", False)
)


@pytest.mark.parametrize("bound", [None, 40_000])
@pytest.mark.parametrize("provider", _IN_RUNS)
def test_the_pass_in_runs_is_kept_beside_the_walk(provider: str, bound: int | None) -> None:
    """Provider fidelity's pass in runs on the server: each request takes
    the runs the last one passed (and the screen's warnings about its
    messages) and passes only what follows; the body, its JSON and its
    warnings are the uncached call's, also when the cache, bounded, forgets
    turns and runs between requests (a turn made again is a new object: the
    runs kept no longer cover the walk, and are passed again)."""
    from agentscope_proto._engine.entries import runs_key
    from agentscope_proto.providers._runs import PassedRuns

    msgs = [from_dict(d) for d in bench_history("varied_20")]
    msgs += [from_dict(m) for m in AGENTSCOPE2_TOOL_LOOP]
    cache = FormatCache() if bound is None else FormatCache(max_bytes=bound)
    for end in range(1, len(msgs) + 1):
        try:
            expected = format(provider, msgs[:end], fidelity="provider")
        except Exception as exc:  # a system prompt alone, for an API that needs a message
            with pytest.raises(type(exc)):
                format(
                    provider, msgs[:end], cache=cache, _wire=_wired(msgs[:end]), fidelity="provider"
                )
            continue
        body = format(
            provider, msgs[:end], cache=cache, _wire=_wired(msgs[:end]), fidelity="provider"
        )
        assert body_to_json(body) == body_to_json(expected), end
        assert list(body.warnings) == list(expected.warnings), end
    if bound is None:
        scope = settings_scope(cache, provider, FormatSettings(fidelity="provider"))
        wire = _wired(msgs)
        assert wire.first is not None
        runs = cache.get(runs_key(scope, wire.first))
        assert isinstance(runs, PassedRuns)
        assert runs.cut > 0
        assert runs.screen is not None
        assert runs.screen[0] == len(msgs)


@pytest.mark.parametrize("provider", ["anthropic", "moonshot", "openai"])
def test_runs_of_one_conversation_never_serve_another(provider: str) -> None:
    """Two conversations that start with the same message (its bytes: the
    key the runs are kept under) and then differ, requested in turn through
    one cache: each body and its warnings are its own uncached ones."""
    base = [from_dict(d) for d in _conversation()]
    # The other's question carries a cache marker: a screen warning base has not.
    asked = {
        "name": "Jarvis",
        "role": "user",
        "content": [{"type": "text", "text": "Weather?", "cache_control": {"type": "ephemeral"}}],
    }
    other = [base[0], from_dict(asked), *(from_dict(d) for d in _conversation()[2:])]
    cache = FormatCache()
    for end in range(2, len(base) + 1):
        for msgs in (base, other):
            expected = format(provider, msgs[:end], fidelity="provider")
            body = format(
                provider, msgs[:end], cache=cache, _wire=_wired(msgs[:end]), fidelity="provider"
            )
            assert body_to_json(body) == body_to_json(expected), end
            assert list(body.warnings) == list(expected.warnings), end
