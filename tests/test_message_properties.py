"""Property tests: random messages survive the dict and binary round trips unchanged.

- Random AgentScope 1.x message dicts, in the form `Msg.to_dict()` writes them
  (every block kind, the provider-fidelity ones and keys included, string and
  list content, extra keys, shuffled block keys, metadata with ints, floats,
  big ints, unicode and null, canonical base64),
  satisfy `to_dict(from_dict(d)) == d` strictly (types and key order), also
  after a binary round trip.
- Random `Msg` protos, and random messages built with the `new_*` helpers,
  satisfy `from_dict(to_dict(m)) == m` (the helpers' messages up to what the
  1.x form cannot hold: `invocation_id`, which AgentScope's `to_dict` leaves
  out, and the tool role, which 1.x writes as `"system"`).
- The agentscope-java form of a random message, when there is one, is read
  back by the Java reader (which refuses what agentscope-java refuses) to the
  same form; when there is none, the refusal names the path and Java's rule.

The examples are derandomized, so every run checks the same ones.
"""

from __future__ import annotations

import base64
import string
from typing import Any

from google.protobuf import json_format
from hypothesis import given, settings
from hypothesis import strategies as st

from agentscope_proto import (
    AudioBlock,
    ContentBlock,
    ImageBlock,
    MediaSource,
    MessageFormatError,
    Msg,
    OpaqueBlock,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolResultState,
    ToolUseBlock,
    VideoBlock,
    from_dict,
    new_audio_block,
    new_image_block,
    new_msg,
    new_text_block,
    new_thinking_block,
    new_tool_result_block,
    new_tool_use_block,
    new_video_block,
    to_dict,
)
from agentscope_proto._json import dumps
from agentscope_proto.dialects import detect_dialect
from agentscope_proto.message import GroundingBlock, ServerToolResultBlock, ServerToolUseBlock
from agentscope_proto.message._codec import block_from_dict, block_to_dict

from strict import assert_same

SETTINGS = settings(max_examples=200, deadline=None, derandomize=True, database=None)

# Keys some block kind models, and keys that are traces of agentscope-java (a
# 1.x dict holding them would be read as agentscope-java). Random extra keys
# avoid both so that every generated dict is unambiguously AgentScope 1.x.
MODELLED = {
    "type",
    "text",
    "thinking",
    "signature",
    "thought_signature",
    "id",
    "name",
    "input",
    "raw_input",
    "output",
    "state",
    "source",
    "url",
    "media_type",
    "data",
    # Provider-fidelity keys.
    "citations",
    "redacted_data",
    "encrypted_content",
    "reasoning_id",
    "provider_type",
    "raw",
    "tool_use_id",
    "is_error",
    "sources",
    "queries",
}
JAVA_TRACES = {"content", "metadata", "mime_type", "min_pixels", "max_pixels", "fps"}
JAVA_TRACES |= {"max_frames", "total_pixels", "created_at"}
AGENTSCOPE_KINDS = ["text", "thinking", "tool_use", "tool_result", "image", "audio", "video"]
PROVIDER_KINDS = ["server_tool_use", "server_tool_result", "grounding"]
KINDS = AGENTSCOPE_KINDS + PROVIDER_KINDS

texts = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12
) | st.sampled_from(["", " ", "héllo 世界 🤖", "line\nbreak\t\r", '"quoted"', "\u0000"])
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.sampled_from([2**63 - 1, 2**64 + 1, -(2**63), 0])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([-0.0, 1.0, 0.1, 1e300, 5e-324])
    | texts
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
json_objects = st.dictionaries(texts, json_values, max_size=4)
extra_keys = texts.filter(lambda k: k not in MODELLED and k not in JAVA_TRACES)
extras = st.dictionaries(extra_keys, json_values, max_size=2)
canonical_b64 = st.binary(max_size=24).map(lambda b: base64.b64encode(b).decode("ascii"))
# Soft keys (provider annotations) keep a value that does not fit as an extra.
soft_b64 = canonical_b64 | st.sampled_from(["not base64!", "YQ", 7, None, ["x"]])
soft_str = texts | st.sampled_from([1, None, {"a": 1}])
media_types = st.sampled_from(["image/png", "audio/wav", "video/mp4", "image/jpeg", "x/y"])
timestamps = st.datetimes().map(lambda t: t.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3])
# Provider-fidelity values: citations of every mapped type (flat, and nested as
# Chat Completions writes them), and values that do not fit their field.
CITATION_TYPES = [
    "url_citation",
    "file_citation",
    "container_file_citation",
    "file_path",
    "char_location",
    "page_location",
    "content_block_location",
    "web_search_result_location",
    "search_result_location",
    "other",
]
citation_fields = st.fixed_dictionaries(
    {},
    optional={
        "url": texts,
        "title": texts | st.integers(),
        "cited_text": texts,
        "start_index": st.integers(-(2**64), 2**64),
        "end_char_index": st.integers(0, 99) | st.booleans(),
        "start_page_number": st.integers(0, 9),
        "source": texts,
        "file_id": texts,
        "filename": texts,
        "document_title": texts | st.none(),
    },
)


@st.composite
def citation_objects(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(CITATION_TYPES))
    if draw(st.booleans()):
        return {"type": kind, kind: draw(citation_fields)}
    return {"type": kind, **draw(citation_fields), **draw(extras)}


soft_citations = st.lists(citation_objects(), min_size=1, max_size=3) | st.sampled_from(
    [[], "x", [1], None, [{"type": "url_citation"}, "x"]]
)
# Lenient keys of the provider kinds keep a misfit value as an extra too.
lenient_str = texts | st.sampled_from([1, None, ["x"]])
raw_objects = json_objects | st.sampled_from([[1], "x", None])
grounding_sources = st.lists(
    st.fixed_dictionaries({"url": texts, "title": texts}), max_size=3
) | st.sampled_from([[{"uri": "u"}], [{"title": "t", "url": "u"}], "x", [{"url": 1, "title": ""}]])
grounding_queries = st.lists(texts, max_size=3) | st.sampled_from([[1], "q", None])


@st.composite
def shuffled(draw: st.DrawFn, fields: dict[str, Any]) -> dict[str, Any]:
    """`fields` plus random extras, in the canonical key order or a random one."""
    block = {**fields, **draw(extras)}
    if draw(st.booleans()):
        return block
    keys = draw(st.permutations(list(block)))
    return {key: block[key] for key in keys}


@st.composite
def optional(draw: st.DrawFn, fields: dict[str, Any], **maybe: st.SearchStrategy[Any]) -> Any:
    """`fields` plus some of the `maybe` keys, in order."""
    out = dict(fields)
    for key, strategy in maybe.items():
        if draw(st.booleans()):
            out[key] = draw(strategy)
    return out


@st.composite
def sources(draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.booleans()):
        fields = draw(optional({"type": "url", "url": draw(texts)}, media_type=soft_str))
    else:
        fields = {"type": "base64", "media_type": draw(texts), "data": draw(canonical_b64)}
    return draw(shuffled(fields))


@st.composite
def media_blocks(draw: st.DrawFn, kinds: list[str] | None = None) -> dict[str, Any]:
    kind = draw(st.sampled_from(kinds or ["image", "audio", "video"]))
    return draw(shuffled({"type": kind, "source": draw(sources())}))


@st.composite
def text_blocks(draw: st.DrawFn) -> dict[str, Any]:
    fields = {"type": "text", "text": draw(texts)}
    fields = draw(optional(fields, thought_signature=soft_b64, citations=soft_citations))
    return draw(shuffled(fields))


@st.composite
def blocks(draw: st.DrawFn, kind: str | None = None) -> dict[str, Any]:
    kind = kind or draw(st.sampled_from([*KINDS, "opaque"]))
    if kind == "text":
        return draw(text_blocks())
    if kind == "thinking":
        fields = {"type": "thinking", "thinking": draw(texts)}
        fields = draw(
            optional(
                fields,
                signature=soft_str,
                thought_signature=soft_b64,
                redacted_data=soft_str,
                encrypted_content=soft_str,
                reasoning_id=soft_str,
            )
        )
    elif kind == "tool_use":
        fields = {
            "type": "tool_use",
            "id": draw(texts),
            "name": draw(texts),
            "input": draw(json_objects),
        }
        fields = draw(optional(fields, raw_input=soft_str, thought_signature=soft_b64))
    elif kind == "tool_result":
        output = draw(
            texts | st.none() | st.lists(text_blocks() | media_blocks(), max_size=3),
        )
        fields = {"type": "tool_result", "id": draw(texts), "name": draw(texts), "output": output}
    elif kind == "server_tool_use":
        fields = draw(
            optional(
                {"type": kind},
                id=lenient_str,
                name=lenient_str,
                input=json_values,
                provider_type=lenient_str,
                raw=raw_objects,
            )
        )
    elif kind == "server_tool_result":
        fields = draw(
            optional(
                {"type": kind},
                tool_use_id=lenient_str,
                provider_type=lenient_str,
                output=json_values,
                is_error=st.booleans() | st.sampled_from(["no", 1, None]),
                raw=raw_objects,
            )
        )
    elif kind == "grounding":
        fields = draw(
            optional(
                {"type": kind},
                provider_type=lenient_str,
                sources=grounding_sources,
                queries=grounding_queries,
                raw=raw_objects,
            )
        )
    elif kind == "opaque":
        unknown = texts.filter(lambda t: t not in KINDS)
        return {"type": draw(unknown), **draw(extras)}
    else:
        return draw(media_blocks([kind]))
    return draw(shuffled(fields))


@st.composite
def agentscope_dicts(draw: st.DrawFn) -> dict[str, Any]:
    """A message dict as AgentScope 1.x's `Msg.to_dict()` writes it."""
    content = draw(texts | st.lists(blocks(), max_size=5))
    return {
        "id": draw(st.text(string.ascii_letters + string.digits, min_size=1, max_size=22)),
        "name": draw(texts),
        "role": draw(st.sampled_from(["user", "assistant", "system"])),
        "content": content,
        "metadata": draw(json_objects),
        "timestamp": draw(timestamps),
    }


def assert_round_trip(data: dict[str, Any]) -> None:
    msg = from_dict(data)
    assert_same(to_dict(msg), data)
    assert_same(to_dict(Msg.FromString(msg.SerializeToString())), data)


@SETTINGS
@given(agentscope_dicts())
def test_agentscope_dicts_round_trip(data: dict[str, Any]) -> None:
    assert detect_dialect(data) == "agentscope"
    assert_round_trip(data)


@SETTINGS
@given(st.sampled_from(KINDS).flatmap(blocks))
def test_every_block_kind_round_trips(block: dict[str, Any]) -> None:
    data = {
        "id": "6hGaqqUXRucCDyXt4tbeDw",
        "name": "Friday",
        "role": "assistant",
        "content": [block],
        "metadata": {},
        "timestamp": "2025-03-14 09:26:53.589",
    }
    assert_round_trip(data)


@SETTINGS
@given(
    agentscope_dicts(),
    st.none() | texts,
    st.none() | st.sampled_from(["success", "error", "interrupted", "denied", "running", "x"]),
    st.dictionaries(texts.filter(lambda k: k not in MODELLED), json_values, max_size=3),
)
def test_any_extras_round_trip_in_the_agentscope_dialect(
    data: dict[str, Any], name: str | None, state: str | None, more: dict[str, Any]
) -> None:
    """With the dialect given, any extra key and a null name survive too."""
    data = {**data, "name": name}
    if isinstance(data["content"], list):
        for block in data["content"]:
            if block["type"] == "tool_result" and state is not None:
                block["state"] = state
            if block["type"] in KINDS:
                block.update(more)
    msg = from_dict(data, dialect="agentscope")
    assert_same(to_dict(msg), data)
    assert_same(to_dict(Msg.FromString(msg.SerializeToString())), data)


# --- Random protos -----------------------------------------------------------

b64_bytes = st.binary(max_size=16)


def _keys(message: Any) -> list[str]:
    """The keys of the dict a block or source writes."""
    if isinstance(message, MediaSource):
        return list(block_to_dict(ImageBlock(source=message))["source"])
    return list(block_to_dict(message))


@st.composite
def laid_out(draw: st.DrawFn, message: Any) -> Any:
    """`message` with random extras and, sometimes, a non-canonical key order."""
    more = draw(extras)
    if more:
        message.extra_json = dumps(more)
    keys = _keys(message)
    order = draw(st.permutations(keys))
    if draw(st.booleans()):
        if more:
            # A reader keeps the extras in the order they came in.
            message.extra_json = dumps({key: more[key] for key in order if key in more})
        if order != _keys(message):
            message.key_order.extend(order)
    return message


@st.composite
def proto_sources(draw: st.DrawFn) -> MediaSource:
    if draw(st.booleans()):
        source = MediaSource(url=draw(texts))
        if draw(st.booleans()):
            source.media_type = draw(texts)
    else:
        source = MediaSource(data=draw(b64_bytes), media_type=draw(texts))
    result: MediaSource = draw(laid_out(source))
    return result


@st.composite
def proto_provider_blocks(draw: st.DrawFn, kind: str) -> Any:
    block: Any
    if kind == "server_tool_use":
        block = ServerToolUseBlock(id=draw(texts), name=draw(texts), provider_type=draw(texts))
        if draw(st.booleans()):
            block.input_json = dumps(draw(json_values))
    elif kind == "server_tool_result":
        block = ServerToolResultBlock(
            tool_use_id=draw(texts), provider_type=draw(texts), is_error=draw(st.booleans())
        )
        if draw(st.booleans()):
            block.output_json = dumps(draw(json_values))
    else:
        block = GroundingBlock(provider_type=draw(texts), queries=draw(st.lists(texts, max_size=3)))
        for url, title in draw(st.lists(st.tuples(texts, texts), max_size=3)):
            block.sources.add(url=url, title=title)
    if draw(st.booleans()):
        block.raw_json = dumps(draw(json_objects))
    return block


@st.composite
def proto_blocks(draw: st.DrawFn, result_kinds: bool = False) -> ContentBlock:
    kinds = ["text", "image", "audio", "video"] if result_kinds else [*KINDS, "opaque"]
    kind = draw(st.sampled_from(kinds))
    block: Any
    if kind == "text":
        block = TextBlock(text=draw(texts))
        if draw(st.booleans()):
            block.thought_signature = draw(b64_bytes)
        if draw(st.booleans()):
            # Citations as a reader builds them: typed fields read from the
            # provider object it keeps.
            cited = {"type": "text", "text": "", "citations": draw(soft_citations.filter(bool))}
            block.citations.extend(block_from_dict(cited).text.citations)
    elif kind == "thinking":
        block = ThinkingBlock(thinking=draw(texts))
        for field in ("signature", "redacted_data", "encrypted_content", "reasoning_id"):
            if draw(st.booleans()):
                setattr(block, field, draw(texts))
        if draw(st.booleans()):
            block.thought_signature = draw(b64_bytes)
    elif kind in PROVIDER_KINDS:
        block = draw(proto_provider_blocks(kind))
    elif kind == "tool_use":
        block = ToolUseBlock(id=draw(texts), name=draw(texts), input_json=dumps(draw(json_objects)))
        if draw(st.booleans()):
            block.raw_input = draw(texts)
        if draw(st.booleans()):
            block.thought_signature = draw(b64_bytes)
    elif kind == "tool_result":
        block = ToolResultBlock(id=draw(texts), name=draw(texts), state=draw(st.integers(0, 5)))
        output = draw(st.sampled_from(["text", "blocks", None]))
        if output == "text":
            block.text = draw(texts)
        elif output == "blocks":
            block.blocks.SetInParent()
            block.blocks.items.extend(draw(st.lists(proto_blocks(result_kinds=True), max_size=3)))
    elif kind == "opaque":
        type_ = draw(texts.filter(lambda t: t not in KINDS))
        body = {"type": type_, **draw(extras)}
        return ContentBlock(opaque=OpaqueBlock(block_type=type_, block_json=dumps(body)))
    else:
        cls = {"image": ImageBlock, "audio": AudioBlock, "video": VideoBlock}[kind]
        block = cls(source=draw(proto_sources()))
    wrapper = ContentBlock()
    getattr(wrapper, kind).CopyFrom(draw(laid_out(block)))
    return wrapper


@st.composite
def protos(draw: st.DrawFn) -> Msg:
    msg = Msg(
        name=draw(texts),
        role=draw(st.sampled_from([Role.ROLE_USER, Role.ROLE_ASSISTANT, Role.ROLE_SYSTEM])),
        timestamp=draw(timestamps),
    )
    # `{}` and no metadata are the same AgentScope message (it keeps
    # `metadata or {}`); the package holds it as no metadata.
    metadata = draw(json_objects)
    if metadata:
        msg.metadata_json = dumps(metadata)
    if draw(st.booleans()):
        msg.id = draw(texts)
    if draw(st.booleans()):
        msg.text = draw(texts)
    else:
        msg.blocks.SetInParent()
        msg.blocks.items.extend(draw(st.lists(proto_blocks(), max_size=5)))
    return msg


@SETTINGS
@given(protos())
def test_protos_round_trip(msg: Msg) -> None:
    again = from_dict(to_dict(msg))
    assert again == msg
    assert Msg.FromString(again.SerializeToString()) == msg


def assert_java_form_reads_back(msg: Msg) -> None:
    refusal: MessageFormatError | None = None
    try:
        java = to_dict(msg, dialect="java")
    except MessageFormatError as error:
        refusal = error
    if refusal is not None:
        assert refusal.path
        assert refusal.reason.startswith("agentscope-java refuses this: "), refusal
        return
    assert detect_dialect(java) == "java"
    assert_same(to_dict(from_dict(java, dialect="java"), dialect="java"), java)


@SETTINGS
@given(protos())
def test_java_form_reads_back_the_same(msg: Msg) -> None:
    assert_java_form_reads_back(msg)


# --- Messages built with the helpers -------------------------------------------

media_helpers = st.sampled_from([new_image_block, new_audio_block, new_video_block])


@st.composite
def helper_media(draw: st.DrawFn) -> Any:
    make = draw(media_helpers)
    if draw(st.booleans()):
        return make(draw(texts), media_type=draw(st.none() | texts))
    return make(data=draw(b64_bytes), media_type=draw(texts.filter(bool)))


@st.composite
def helper_blocks(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(AGENTSCOPE_KINDS))
    if kind == "text":
        return new_text_block(draw(texts))
    if kind == "thinking":
        return new_thinking_block(draw(texts), signature=draw(st.none() | texts))
    if kind == "tool_use":
        raw = draw(st.none() | texts)
        return new_tool_use_block(draw(texts), draw(texts), draw(json_objects), raw_input=raw)
    if kind == "tool_result":
        items = st.lists(st.builds(new_text_block, texts) | helper_media(), max_size=3)
        return new_tool_result_block(
            draw(texts),
            draw(texts),
            draw(texts | st.none() | items),
            state=draw(st.sampled_from(ToolResultState.values())),
        )
    return draw(helper_media())


@st.composite
def helper_messages(draw: st.DrawFn) -> Msg:
    return new_msg(
        draw(texts),
        draw(texts | st.lists(helper_blocks(), max_size=5)),
        draw(st.sampled_from(["user", "assistant", "system", "tool"])),
        metadata=draw(st.none() | json_objects),
        timestamp=draw(st.none() | timestamps),
        invocation_id=draw(st.none() | texts),
        id=draw(st.none() | texts),
    )


@SETTINGS
@given(helper_messages())
def test_helper_messages_round_trip(msg: Msg) -> None:
    expected = Msg()
    expected.CopyFrom(msg)
    expected.ClearField("invocation_id")
    if expected.role == Role.ROLE_TOOL:
        expected.role = Role.ROLE_SYSTEM
    again = from_dict(to_dict(msg))
    assert again == expected
    assert from_dict(to_dict(again)) == again
    if not msg.HasField("invocation_id") and msg.role != Role.ROLE_TOOL:
        assert again == msg


def test_a_plain_message_round_trips() -> None:
    msg = new_msg("Friday", "hi", "assistant")
    assert not msg.HasField("metadata_json")
    assert from_dict(to_dict(msg)) == msg
    assert not new_msg("Friday", "hi", "assistant", metadata={}).HasField("metadata_json")


@SETTINGS
@given(helper_messages())
def test_helper_messages_java_form_reads_back_the_same(msg: Msg) -> None:
    assert_java_form_reads_back(msg)


@SETTINGS
@given(protos())
def test_protos_round_trip_through_protojson(msg: Msg) -> None:
    assert json_format.Parse(json_format.MessageToJson(msg), Msg()) == msg
