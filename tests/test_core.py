"""The compiled core (`_core`, `_ccore.c`) against the Python walk, the
reference: the same body, warnings and errors on every golden case and on
generated conversations, and the Python path for what the core does not know.

Skipped where the core is not built (a machine without a C compiler); under
AGENTSCOPE_PROTO_STRICT that is a failure (`.ci/run` builds it).
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentscope_proto import _core, _json, from_dict, parsing
from agentscope_proto._engine.body import body_to_json
from agentscope_proto._generated.agentscope.message.v1.message_pb2 import Msg, Role
from agentscope_proto.errors import AgentScopeProtoError, MessageFormatError
from agentscope_proto.formatting import format
from agentscope_proto.message import helpers
from agentscope_proto.providers import PROVIDERS

from golden_data import GOLDEN, formatter_cases
from needs import require

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "bench" / "corpus"
COMPILED = sorted(name for name, provider in PROVIDERS.items() if provider.compiled is not None)

# The extension itself, for what only it answers (None where not built).
_ccore: Any = _core._CCORE


@pytest.fixture(autouse=True, scope="module")
def _built() -> None:
    require(_core.available(), "the compiled core is not built (no C compiler; make core)")


def _outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """What a call gave: its body's JSON and warnings, or its error."""
    try:
        body = call()
    except AgentScopeProtoError as exc:
        return "error", (type(exc).__name__, str(exc))
    warnings = [(w.path, w.block_type, w.message) for w in body.warnings]
    # The project's writer: it takes integers past 64 bits (a tool call's input).
    return "body", (body_to_json(dict(body)), warnings, body.token_count)


def both(call: Callable[[], Any]) -> tuple[str, Any]:
    """The call on the Python path and with the core: the same outcome."""
    with _core.forced("python"):
        reference = _outcome(call)
    with _core.forced("auto"):
        compiled = _outcome(call)
    assert compiled == reference
    return reference


# -- what the core reads is what the schema says ------------------------------


def test_field_numbers_are_the_descriptors() -> None:
    for dotted, number in _ccore.field_numbers().items():
        message, name = dotted.split(".")
        descriptor = (
            Msg.DESCRIPTOR
            if message == "Msg"
            else Msg.DESCRIPTOR.file.message_types_by_name[message]
        )
        assert descriptor.fields_by_name[name].number == number, dotted


def test_role_numbers_are_the_enum() -> None:
    for name, number in _ccore.role_numbers().items():
        assert Role.Value(name) == number


# -- tool-call arguments: json.dumps(json.loads(text), ensure_ascii=False) -----------

json_texts = st.text(max_size=8)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | json_texts
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(json_texts, inner, max_size=3),
    max_leaves=10,
)
# The spellings a tool call's input arrives in: orjson's (this package's),
# json.dumps' (AgentScope's), ASCII-escaped, pretty-printed.
spellings = st.sampled_from(
    [
        lambda v: _orjson(v),
        lambda v: json.dumps(v, ensure_ascii=False),
        json.dumps,
        lambda v: json.dumps(v, indent=2),
        lambda v: json.dumps(v, separators=(",", ":")),
    ]
)


def _orjson(value: Any) -> str:
    """orjson's spelling; its compact twin for integers past 64 bits."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _python_dumps(text: str) -> str | None:
    try:
        return json.dumps(json.loads(text), ensure_ascii=False)
    except (ValueError, RecursionError):
        return None


@given(json_values, spellings)
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_arguments_as_python_writes_them(value: Any, spell: Callable[[Any], str]) -> None:
    text = spell(value)
    got = _ccore.dumps_arguments(text)
    assert got is not None, text  # every valid spelling of plain JSON is the core's
    assert got == _python_dumps(text)


@pytest.mark.parametrize(
    "text",
    [
        "-0",
        "0",
        "-0.0",
        "1e5",
        "1E-7",
        "2.50",
        "123456789012345678901234567890",
        '"\\u00e9\\ud83d\\ude00\\/\\b\\f\\n\\r\\t\\u0001\\u001f\\u007f\\u2028"',
        '"raw é 世界 \x7f"',
        '{"a": {"b": [1, 2.0, {"c": null}]}, "d": [], "e": {}}',
        ' \t\n{ "a" : 1 , "b" : [ true , false ] } \r\n',
        '{"": ""}',
    ],
)
def test_arguments_edge_cases(text: str) -> None:
    assert _ccore.dumps_arguments(text) == _python_dumps(text)
    assert repr(_ccore.loads(text)[0]) == repr(json.loads(text))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "NaN",
        "-Infinity",
        "1e400",
        '{"a": 1, "a": 2}',  # a duplicate key: Python keeps the first place, the last value
        '"\\ud800"',  # a lone surrogate
        '"\\udc00x"',
        "[1,]",
        "01",
        "1.",
        '"tab\there"',  # a raw control character
        "[" * 101 + "]" * 101,
        "1" * 4301,
        '{"a": 1} x',
        "{" + ", ".join(f'"k{i}": {i}' for i in range(65)) + "}",
    ],
)
def test_arguments_python_decides(text: str) -> None:
    assert _ccore.dumps_arguments(text) is None
    # The reader has no cap on an object's keys (its duplicate check is a dict's).
    if text.count('"k') > 64:
        assert _ccore.loads(text) == (json.loads(text),)
    else:
        assert _ccore.loads(text) is None


@given(json_values, spellings)
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_json_read_as_python_reads_it(value: Any, spell: Callable[[Any], str]) -> None:
    text = spell(value)
    got = _ccore.loads(text)
    assert got is not None, text
    expected = json.loads(text)
    # Equal values of equal types, keys in the same order (-0.0 and 0.0 apart).
    assert repr(got[0]) == repr(expected)


# -- the walk: both paths the same ---------------------------------------------------


def _as_msgs(msgs: list[Any]) -> list[Any]:
    """The case's messages as `Msg`s where they convert (the core's input)."""
    try:
        return [from_dict(msg) for msg in msgs]
    except AgentScopeProtoError:
        return msgs


GOLDEN_CASES = [
    pytest.param(provider, case, id=f"{provider}:{case['name']}")
    for provider in COMPILED
    for case in formatter_cases(provider)
]


@pytest.mark.parametrize(("provider", "case"), GOLDEN_CASES)
@pytest.mark.parametrize("fidelity", ["agentscope", "provider"])
def test_golden_cases_on_both_paths(provider: str, case: dict[str, Any], fidelity: str) -> None:
    msgs = _as_msgs(case["msgs"])
    options = {**case["options"], "fidelity": fidelity}
    both(
        lambda: format(
            provider,
            msgs,
            multi_agent=case["multi_agent"],
            tools=case["tools"],
            tool_choice=case["tool_choice"],
            media_root=GOLDEN,
            **options,
        )
    )


@pytest.mark.parametrize("provider", COMPILED)
@pytest.mark.parametrize(
    "corpus", ["chat_200", "tools_200", "debate_200", "media_20", "varied_200"]
)
@pytest.mark.parametrize("multi_agent", [False, True])
def test_bench_corpus_on_both_paths(provider: str, corpus: str, multi_agent: bool) -> None:
    msgs = [from_dict(d) for d in json.loads((CORPUS / f"{corpus}.json").read_text())["messages"]]
    _core.reset_counts()
    both(lambda: format(provider, msgs, multi_agent=multi_agent))
    counted = _core.counts()
    # The corpora of text and tool calls are the core's whole; varied_200's
    # extra keys are not (yet): the count says which path took each.
    taken = "python:blocks" if corpus == "varied_200" else "compiled"
    assert counted == {f"{provider}:{taken}": 1}


# Conversations of what the core knows, with now and then what it does not.
names = st.sampled_from(["user", "Friday", "", "ä agent", "system"])
roles = st.sampled_from([Role.ROLE_USER, Role.ROLE_ASSISTANT, Role.ROLE_SYSTEM, Role.ROLE_TOOL])
words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=10)


def _block(kind: str, draw: st.DrawFn) -> dict[str, Any]:
    if kind == "text":
        return {"type": "text", "text": draw(words)}
    if kind == "thinking":
        return {"type": "thinking", "thinking": draw(words)}
    if kind == "tool_use":
        return {
            "type": "tool_use",
            "id": draw(st.sampled_from(["call_1", "call_2", ""])),
            "name": draw(st.sampled_from(["search", "run"])),
            "input": draw(json_values),
        }
    if kind == "tool_result":
        output = draw(
            st.none()
            | words
            | st.lists(st.builds(lambda t: {"type": "text", "text": t}, words), max_size=3)
        )
        return {"type": "tool_result", "id": "call_1", "name": "search", "output": output}
    if kind in ("image", "audio", "video"):
        media_type = draw(
            st.sampled_from(["image/png", "audio/wav", "audio/mp3", "audio/ogg", "video/mp4"])
        )
        data = base64.b64encode(draw(st.binary(max_size=10))).decode()
        source: dict[str, Any] = {"type": "base64", "media_type": media_type, "data": data}
        if draw(st.integers(0, 9)) == 0:
            source = {"type": "url", "url": "https://example.com/a.png"}
        return {"type": kind, "source": source}
    return {"type": "text", "text": draw(words), "cache_control": {"type": "ephemeral"}}


@st.composite
def conversations(draw: st.DrawFn) -> list[Msg]:
    msgs = []
    for _ in range(draw(st.integers(0, 5))):
        role = draw(roles)
        if draw(st.booleans()):
            content: Any = draw(words)
        else:
            kinds = st.sampled_from(
                ["text", "thinking", "tool_use", "tool_result", "image", "audio", "video"]
            )
            rare = st.sampled_from(["extra"])
            picked = draw(
                st.lists(kinds | rare if draw(st.integers(0, 9)) == 0 else kinds, max_size=4)
            )
            content = [_block(kind, draw) for kind in picked]
        name = draw(names)
        msg = {"name": name, "role": Role.Name(role)[5:].lower(), "content": content}
        msg["role"] = "assistant" if msg["role"] == "tool" else msg["role"]
        msgs.append(from_dict(msg))
    return msgs


@given(
    conversations(),
    st.sampled_from(COMPILED),
    st.sampled_from(["agentscope", "provider"]),
    st.booleans(),
)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_generated_conversations_on_both_paths(
    msgs: list[Msg], provider: str, fidelity: str, multi_agent: bool
) -> None:
    both(lambda: format(provider, msgs, fidelity=fidelity, multi_agent=multi_agent))


def test_a_message_read_from_bytes_with_unknown_fields() -> None:
    msg = from_dict({"name": "user", "role": "user", "content": "hi"})
    # An unknown field (number 99) beside the message's own: the core reads past it.
    data = msg.SerializeToString() + bytes([0x9A, 0x06, 0x01, 0x41])
    both(lambda: format("openai", [Msg.FromString(data)]))


def test_inline_media_without_a_type_is_sniffed_in_python() -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(16)).decode()
    msg = from_dict(
        {
            "name": "user",
            "role": "user",
            "content": [
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": png},
                }
            ],
        }
    )
    msg.blocks.items[0].image.source.ClearField("media_type")
    _core.reset_counts()
    for multi_agent in (False, True):
        kind, _ = both(lambda m=multi_agent: format("openai", [msg], multi_agent=m))
        assert kind == "body"
    assert _core.counts() == {"openai:python:blocks": 2}


def test_anthropic_images_where_they_stand_are_the_cores() -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(16)).decode()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
    call = {"type": "tool_use", "id": "c1", "name": "look", "input": {"at": [1, 2.5, None]}}
    result = {
        "type": "tool_result",
        "id": "c1",
        "name": "look",
        "output": [{"type": "text", "text": "seen"}, image],
    }
    msgs = [
        from_dict(msg)
        for msg in (
            {"name": "user", "role": "user", "content": [image, {"type": "text", "text": "what?"}]},
            {"name": "Bob", "role": "assistant", "content": [{"type": "text", "text": "a"}, image]},
            {"name": "Bob", "role": "assistant", "content": [call]},
            {"name": "system", "role": "system", "content": [result]},
        )
    ]
    _core.reset_counts()
    for multi_agent in (False, True):
        both(lambda m=multi_agent: format("anthropic", msgs, multi_agent=m))
    assert _core.counts() == {"anthropic:compiled": 2}


def test_errors_are_the_python_paths() -> None:
    nameless = Msg(role=Role.ROLE_USER, text="hi")
    roleless = Msg(name="x", text="hi")
    bad_input = from_dict(
        {
            "name": "a",
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c", "name": "f", "input": {}}],
        }
    )
    bad_input.blocks.items[0].tool_use.input_json = "{not json"
    for msgs in ([nameless], [roleless], [bad_input]):
        kind, _ = both(lambda msgs=msgs: format("openai", msgs))
        assert kind == "error"


def test_options_the_core_does_not_take_go_to_python() -> None:
    msgs = [from_dict({"name": "user", "role": "user", "content": "hi"})]
    _core.reset_counts()
    both(lambda: format("openai", msgs, agent_name="user"))
    both(lambda: format("openai", msgs, prompt_cache="auto"))
    both(lambda: format("openai", [{"name": "user", "role": "user", "content": "hi"}]))
    both(lambda: format("openai", msgs, response_schema={"type": "object"}))
    assert _core.counts() == {
        "openai:python:options": 2,
        "openai:python:input": 1,
        "openai:compiled": 1,
    }


def test_a_token_budget_is_counted_after_the_walk_and_truncation_is_pythons() -> None:
    msgs = [
        from_dict({"name": "system", "role": "system", "content": "Be brief."}),
        *(from_dict({"name": "user", "role": "user", "content": "word " * 20}) for _ in range(4)),
    ]
    _core.reset_counts()
    for provider in COMPILED:
        for multi_agent in (False, True):
            kind, (_, _, count) = both(
                lambda p=provider, m=multi_agent: format(
                    p, msgs, multi_agent=m, max_tokens=10_000, token_counter="char"
                )
            )
            assert kind == "body"
            assert count is not None  # the body's token count, the same on both paths
            both(
                lambda p=provider, m=multi_agent: format(
                    p, msgs, multi_agent=m, max_tokens=60, token_counter="char"
                )
            )
    assert _core.counts() == {
        **{f"{p}:compiled": 2 for p in COMPILED},
        **{f"{p}:python:truncated": 2 for p in COMPILED},
    }


def test_forced_python_never_calls_the_core() -> None:
    msgs = [from_dict({"name": "user", "role": "user", "content": "hi"})]
    _core.reset_counts()
    with _core.forced("python"):
        format("openai", msgs)
    assert _core.counts() == {}


def test_a_mode_not_known_is_refused() -> None:
    with pytest.raises(ValueError, match="expected one of auto, python, compiled"):
        _core.forced("fast").__enter__()


def test_the_variable_is_read_and_checked_at_import() -> None:
    script = "from agentscope_proto import _core; print(_core.mode())"
    run = [sys.executable, "-c", script]
    # No bytecode written into the source tree (test_generated reads every file there).
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT / "python"),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    out = subprocess.run(
        run,
        env={**env, "AGENTSCOPE_PROTO_CORE": "python"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "python"
    bad = subprocess.run(
        run, env={**env, "AGENTSCOPE_PROTO_CORE": "fast"}, capture_output=True, text=True
    )
    assert bad.returncode != 0
    assert "AGENTSCOPE_PROTO_CORE: expected one of auto, python, compiled, got 'fast'" in bad.stderr


@given(st.binary(max_size=300) | st.sampled_from([bytes(range(256)) * 40, b"\xff" * 1001]))
@settings(max_examples=300)
def test_base64_as_python_writes_it(data: bytes) -> None:
    # Both encoders: AVX2 where the CPU has it (else the same portable one), and the portable.
    assert _ccore.b64encode(data, True) == base64.b64encode(data)
    assert _ccore.b64encode(data, False) == base64.b64encode(data)


@given(json_values, spellings)
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
def test_json_loads_takes_the_core_and_gives_the_same(
    value: Any, spell: Callable[[Any], str]
) -> None:
    text = spell(value)
    with _core.forced("python"):
        reference = _json.loads(text)
    assert _core.loads(text) is not None  # plain JSON: the core's
    assert repr(_json.loads(text)) == repr(reference)
    assert repr(_json.loads(text.encode())) == repr(reference)


@pytest.mark.parametrize(
    "text", [b'{"a": 1, "a": 2}', b"NaN", b'"\\ud800"', b'"\xff"', b"[" * 130 + b"]" * 130, b""]
)
def test_json_loads_errors_are_the_strict_readers(text: bytes) -> None:
    with _core.forced("python"), pytest.raises(MessageFormatError) as reference:
        _json.loads(text, "x")
    with pytest.raises(MessageFormatError) as compiled:
        _json.loads(text, "x")
    assert str(compiled.value) == str(reference.value)


@given(st.binary(min_size=16, max_size=16) | st.sampled_from([bytes(16), b"\xff" * 16]))
@settings(max_examples=300)
def test_message_ids_are_pythons(random: bytes) -> None:
    with mock.patch.object(helpers.os, "urandom", return_value=random):
        with _core.forced("python"):
            reference = helpers.new_id()
        assert _core.shortuuid(random) == reference
        assert helpers.new_id() == reference


def _snapshot_blocks() -> st.SearchStrategy[list[dict[str, Any]]]:
    texts = st.sampled_from(["", "a", "ab", "abc", "b"])
    values = texts | st.none() | st.sampled_from([0, 5, [], ["x"], {"k": 1}])
    kinds = st.sampled_from(["text", "thinking", "tool_use", "image", 7]) | st.none()

    @st.composite
    def block(draw: st.DrawFn) -> dict[str, Any]:
        made: dict[str, Any] = {}
        kind = draw(kinds)
        if kind is not None or draw(st.booleans()):
            made["type"] = kind
        for key in ("text", "thinking", "raw_input", "id"):
            if draw(st.booleans()):
                made[key] = draw(values)
        return made

    return st.lists(block(), max_size=4)


@given(_snapshot_blocks(), _snapshot_blocks())
@settings(max_examples=500)
def test_stream_deltas_are_pythons(
    before: list[dict[str, Any]], after: list[dict[str, Any]]
) -> None:
    def outcome() -> Any:
        try:
            return [(d.index, d.block) for d in parsing._delta(before, after)]
        except Exception as exc:  # what Python raises on odd blocks, the core leaves to it
            return type(exc).__name__

    with _core.forced("python"):
        reference = outcome()
    assert outcome() == reference


# -- what a model's dump reads (refs, same_refs: agents/hosting/context.py) ------


class _Model:
    """A model as the walk sees one: its fields in `__dict__`, extras beside."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


class _Other(_Model):
    pass


_MODELS: dict[type, bool] = {_Model: True, _Other: True}


def _tree() -> _Model:
    return _Model(
        name="alpha",
        content=[_Model(type="text", text="hi " * 3, n=1.5)],
        metadata={"k": [1, True, None, b"x"], "t": (2,)},
        usage=None,
    )


def test_refs_hold_what_a_dump_reads() -> None:
    tree = _tree()
    refs = _ccore.refs(tree, _MODELS)
    assert isinstance(refs, tuple)
    shape, *objects = refs
    assert len(shape) == len(objects)
    assert objects[0] is _Model  # a marker
    assert objects[-1] is Ellipsis  # the end of it
    assert shape[0] == shape[-1] == 1
    assert tree.content[0].text in refs  # leaves themselves, held
    assert _ccore.same_refs(tree, refs, _MODELS)


@pytest.mark.parametrize(
    "change",
    [
        lambda t: setattr(t, "name", "b"),
        lambda t: setattr(t, "name", "".join(["al", "pha"])),  # equal, not the same: dumped again
        lambda t: t.content.append(_Model(type="text", text="")),
        lambda t: t.content.pop(),
        lambda t: setattr(t.content[0], "text", "other"),
        lambda t: setattr(t.content[0], "n", -1.5),
        lambda t: t.metadata["k"].append(2),
        lambda t: t.metadata.update(z=0),
        lambda t: t.metadata.pop("t"),
        lambda t: setattr(t, "metadata", {"t": (2,), "k": t.metadata["k"]}),  # key order
        lambda t: setattr(t, "usage", 0),
        lambda t: setattr(t, "extra", None),
        lambda t: setattr(t, "__pydantic_extra__", {"x": 1}),
        lambda t: setattr(t.content[0], "__class__", _Other),
        lambda t: setattr(t, "content", tuple(t.content)),
    ],
)
def test_same_refs_sees_every_change(change: Callable[[Any], None]) -> None:
    tree = _tree()
    refs = _ccore.refs(tree, _MODELS)
    change(tree)
    assert not _ccore.same_refs(tree, refs, _MODELS)
    assert _ccore.same_refs(tree, _ccore.refs(tree, _MODELS), _MODELS)


def test_same_refs_take_no_value_for_a_marker_where_it_stands() -> None:
    # {"x": [1]} lists (dict, "x", list, 1, END, END); {"x": list, 1: ...}
    # holds those very objects in that order, as values.
    refs = _ccore.refs(_Model(m={"x": [1]}), _MODELS)
    assert not _ccore.same_refs(_Model(m={"x": list, 1: Ellipsis}), refs, _MODELS)


def test_refs_name_a_type_they_cannot_walk() -> None:
    class Opaque:
        pass

    tree = _tree()
    refs = _ccore.refs(tree, _MODELS)
    tree.metadata["k"].append(Opaque())
    assert _ccore.refs(tree, _MODELS) is Opaque
    assert not _ccore.same_refs(tree, refs, _MODELS)
    assert isinstance(_ccore.refs(tree, {**_MODELS, Opaque: False}), tuple)  # a leaf


def test_refs_give_up_on_a_model_without_fields_to_read() -> None:
    class Slotted:
        __slots__ = ("text",)

    assert _ccore.refs(Slotted(), {**_MODELS, Slotted: True}) is None


def test_refs_give_up_deep_and_circular_data() -> None:
    deep: list[Any] = []
    for _ in range(100):
        deep = [deep]
    assert _ccore.refs(_Model(deep=deep), _MODELS) is None
    loop: dict[str, Any] = {}
    loop["self"] = loop
    assert _ccore.refs(_Model(loop=loop), _MODELS) is None
    assert not _ccore.same_refs(_Model(loop=loop), (b"",), _MODELS)


def test_unchanged_gives_what_the_last_save_kept_at_each_same_messages_place() -> None:
    same, changed, unwalked, moved = (_Model(id=f"m{n}", text=f"t{n}") for n in range(4))
    last = [
        ("fingerprint", f"bytes of {msg.id}".encode(), _ccore.refs(msg, _MODELS))
        for msg in (same, changed, unwalked, moved)
    ]
    last[2] = ("fingerprint", b"bytes of m2", None)  # converted, never walked
    changed.text = "changed"
    # `moved` at another place (its id is Python's to look up), and two new.
    context = [same, changed, unwalked, _Model(text="x"), moved, same]
    out, kept = _ccore.unchanged(context, last, _MODELS)
    assert out == [b"bytes of m0", None, None, None, None, None]
    assert kept == {0}
    # A record of another shape, or a short list, keeps nothing.
    assert _ccore.unchanged([same, same], [("fingerprint", b"x")], _MODELS) == ([None, None], set())
    with pytest.raises(TypeError, match="two lists"):
        _ccore.unchanged(tuple(context), last, _MODELS)
    with pytest.raises(TypeError, match="two lists"):
        _ccore.unchanged(context, {}, _MODELS)


def test_refs_refuse_bad_arguments() -> None:
    with pytest.raises(TypeError, match="models must be a dict"):
        _ccore.refs(_tree(), [])
    for wrong in ([], (), (b"\x01", _Model, Ellipsis)):
        with pytest.raises(TypeError, match="refs must be a tuple"):
            _ccore.same_refs(_tree(), wrong, _MODELS)
