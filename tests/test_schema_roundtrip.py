"""A message holding every block kind and source kind survives the binary wire unchanged."""

from __future__ import annotations

from agentscope_proto.message import (
    AudioBlock,
    Citation,
    ContentBlock,
    ContentBlocks,
    DataBlock,
    ErrorType,
    FinishedReason,
    GroundingBlock,
    GroundingSource,
    HintBlock,
    ImageBlock,
    MediaSource,
    Msg,
    OpaqueBlock,
    PermissionBehavior,
    PermissionRule,
    ReplyError,
    Role,
    ServerToolResultBlock,
    ServerToolUseBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallState,
    ToolResultBlock,
    ToolResultState,
    ToolUseBlock,
    Usage,
    VideoBlock,
)

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"


def _every_kind() -> Msg:
    url = MediaSource(url="https://example.com/cat.png")
    inline = MediaSource(data=PNG, media_type="image/png")
    local = MediaSource(url="file:///tmp/a.wav", media_type="audio/wav")
    output = ContentBlocks(
        items=[
            ContentBlock(text=TextBlock(text="Sunny")),
            ContentBlock(image=ImageBlock(source=inline)),
            ContentBlock(audio=AudioBlock(source=local)),
            ContentBlock(
                video=VideoBlock(
                    source=MediaSource(data=b"\x00\x00\x00\x18ftypmp42", media_type="video/mp4")
                )
            ),
        ]
    )
    blocks = [
        ContentBlock(
            text=TextBlock(
                text="héllo 🤖",
                thought_signature=b"\x01\x02",
                extra_json='{"cache_control":{"type":"ephemeral"}}',
            )
        ),
        ContentBlock(
            thinking=ThinkingBlock(thinking="hmm", signature="sig==", thought_signature=b"\xff")
        ),
        ContentBlock(
            text=TextBlock(
                text="Paris is sunny.",
                citations=[
                    Citation(
                        citation_type="url_citation",
                        url="https://example.com/w",
                        title="Weather",
                        start_index=0,
                        end_index=15,
                        raw_json='{"type":"url_citation","start_index":0,"end_index":15,'
                        '"url":"https://example.com/w","title":"Weather"}',
                    )
                ],
            )
        ),
        ContentBlock(thinking=ThinkingBlock(redacted_data="EmwKAhgBEgy3va3pzix")),
        ContentBlock(
            thinking=ThinkingBlock(encrypted_content="gAAAAB", reasoning_id="rs_1", thinking="")
        ),
        ContentBlock(
            server_tool_use=ServerToolUseBlock(
                id="srvtoolu_1",
                name="web_search",
                input_json='{"query":"weather Paris"}',
                provider_type="server_tool_use",
                raw_json='{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search",'
                '"input":{"query":"weather Paris"}}',
            )
        ),
        ContentBlock(
            server_tool_result=ServerToolResultBlock(
                tool_use_id="srvtoolu_1",
                provider_type="web_search_tool_result",
                output_json='[{"type":"web_search_result","url":"https://example.com/w"}]',
                is_error=True,
                raw_json='{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1"}',
            )
        ),
        ContentBlock(
            grounding=GroundingBlock(
                provider_type="grounding_metadata",
                sources=[GroundingSource(url="https://example.com/r", title="example.com")],
                queries=["weather Paris"],
                raw_json='{"webSearchQueries":["weather Paris"]}',
            )
        ),
        ContentBlock(
            tool_use=ToolUseBlock(
                id="call_1",
                name="weather",
                input_json='{"city":"Paris","n":1,"x":1.0}',
                raw_input='{"city": "Paris", "n": 1, "x": 1.0}',
                thought_signature=b"\x00",
            )
        ),
        ContentBlock(
            tool_result=ToolResultBlock(
                id="call_1",
                name="weather",
                blocks=output,
                state=ToolResultState.TOOL_RESULT_STATE_SUCCESS,
            )
        ),
        ContentBlock(tool_result=ToolResultBlock(id="call_2", name="weather", text="done")),
        ContentBlock(tool_result=ToolResultBlock(id="call_3", name="weather")),
        ContentBlock(image=ImageBlock(source=url, key_order=["source", "type"])),
        ContentBlock(audio=AudioBlock(source=MediaSource(data=b"RIFF", media_type="audio/wav"))),
        ContentBlock(
            video=VideoBlock(
                source=MediaSource(url="https://example.com/v.mp4"), extra_json='{"fps":2}'
            )
        ),
        ContentBlock(
            opaque=OpaqueBlock(block_type="reasoning", block_json='{"type":"reasoning","x":1}')
        ),
        ContentBlock(
            data=DataBlock(
                id="d1",
                source=MediaSource(data=b"%PDF-1.7", media_type="application/pdf"),
                name="r.pdf",
                created_at="2026-05-30T14:00:02.209458",
            )
        ),
        ContentBlock(
            data=DataBlock(source=MediaSource(base64_text="JVBER", media_type="application/pdf"))
        ),
        ContentBlock(hint=HintBlock(text="be brief", id="h1", source="system", finished_at="t")),
        ContentBlock(hint=HintBlock(blocks=ContentBlocks(items=[ContentBlock(text=TextBlock())]))),
        ContentBlock(
            tool_use=ToolUseBlock(
                id="call_9",
                name="Bash",
                input_json="{}",
                raw_input="",
                state=ToolCallState.TOOL_CALL_STATE_ASKING,
                suggested_rules=[
                    PermissionRule(
                        tool_name="Bash",
                        rule_content="npm install",
                        behavior=PermissionBehavior.PERMISSION_BEHAVIOR_ALLOW,
                        source="userSettings",
                    )
                ],
                created_at="c",
                finished_at="f",
            )
        ),
        ContentBlock(
            tool_result=ToolResultBlock(
                id="call_9", name="Bash", text="", metadata_json='{"a":1}', created_at="c"
            )
        ),
    ]
    return Msg(
        id="NpScqPE57K4enNGEXLHsKz",
        name="Friday",
        role=Role.ROLE_ASSISTANT,
        blocks=ContentBlocks(items=blocks),
        metadata_json='{"z":1,"a":[1.0,null,18446744073709551617]}',
        timestamp="2026-11-22 03:16:25.065",
        invocation_id="chatcmpl-1",
        usage=Usage(input_tokens=10, output_tokens=0, cache_read_input_tokens=3, time_seconds=0.25),
        finished_at="2026-11-22 03:16:26.000",
        finished_reason=FinishedReason.FINISHED_REASON_ERROR,
        structured_output_json='{"b":1,"a":2}',
        error=ReplyError(type=ErrorType.ERROR_TYPE_RATE_LIMIT, message="429"),
        extra_json='{"trace":"x"}',
    )


def test_binary_round_trip_is_identical() -> None:
    msg = _every_kind()
    wire = msg.SerializeToString(deterministic=True)
    back = Msg.FromString(wire)
    assert back == msg
    assert back.SerializeToString(deterministic=True) == wire


def test_every_block_kind_and_source_kind_is_present() -> None:
    msg = _every_kind()
    kinds = {b.WhichOneof("block") for b in msg.blocks.items}
    kinds |= {b.WhichOneof("block") for b in msg.blocks.items[3].tool_result.blocks.items}
    oneof = ContentBlock.DESCRIPTOR.oneofs_by_name["block"]
    assert kinds == {f.name for f in oneof.fields}
    sources = {b.image.source.WhichOneof("source") for b in msg.blocks.items if b.HasField("image")}
    sources |= {
        b.audio.source.WhichOneof("source") for b in msg.blocks.items if b.HasField("audio")
    }
    sources |= {b.data.source.WhichOneof("source") for b in msg.blocks.items if b.HasField("data")}
    assert sources == {"url", "data", "base64_text"}


def test_string_content_and_empty_string_are_distinct_from_blocks() -> None:
    empty = Msg(name="u", role=Role.ROLE_USER, text="")
    assert Msg.FromString(empty.SerializeToString()).WhichOneof("content") == "text"
    no_content = Msg(name="u", role=Role.ROLE_USER)
    assert Msg.FromString(no_content.SerializeToString()).WhichOneof("content") is None


def test_usage_counts_have_presence() -> None:
    usage = Usage.FromString(Usage(output_tokens=0).SerializeToString())
    assert usage.HasField("output_tokens")
    assert not usage.HasField("input_tokens")
