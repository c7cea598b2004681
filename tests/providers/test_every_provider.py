"""Cross-provider guarantees: block coverage, purity (no I/O), registry and options."""

from __future__ import annotations

import builtins
import io
import socket
from typing import Any

import pytest

from agentscope_proto import errors
from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto._generated.agentscope.message.v1.message_pb2 import ContentBlock
from agentscope_proto.formatting import format
from agentscope_proto.providers import (
    PROVIDERS,
    PROVIDERS_BY_ENUM,
    Provider,
    get_provider,
    provider_enum,
    provider_for,
)

KINDS = {field.name for field in ContentBlock.DESCRIPTOR.oneofs_by_name["block"].fields}
PNG_B64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "YPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


@pytest.mark.parametrize("name", sorted(PROVIDERS))
def test_every_block_kind_is_formatted_or_declared_dropped(name: str) -> None:
    provider = PROVIDERS[name]
    formatted, dropped = provider.formatted_blocks, provider.dropped_blocks
    assert formatted | dropped == KINDS, f"{name} does not decide {KINDS - formatted - dropped}"
    assert not formatted & dropped


def test_unknown_provider_lists_the_known_ones() -> None:
    with pytest.raises(errors.UnknownProviderError) as caught:
        get_provider("claude")
    for known in PROVIDERS:
        assert known in str(caught.value)


def test_proto_enum_and_registry_match_exactly() -> None:
    enum_values = {value for value in pb.Provider.values() if value != pb.PROVIDER_UNSPECIFIED}
    assert set(PROVIDERS_BY_ENUM) == enum_values
    assert len(PROVIDERS_BY_ENUM) == len(PROVIDERS)
    for value in enum_values:
        provider = provider_for(value)
        assert provider is PROVIDERS[provider.name]
        assert provider_enum(provider.name) == value
        # The enum value's name is the provider's name, spelled as proto enums are.
        assert pb.Provider.Name(value) == "PROVIDER_" + provider.name.upper()


@pytest.mark.parametrize("value", [pb.PROVIDER_UNSPECIFIED, 99, -1])
def test_provider_for_refuses_unspecified_and_unknown_values(value: int) -> None:
    with pytest.raises(errors.FormatError) as caught:
        provider_for(value)
    assert caught.value.path == "provider"


def test_provider_enum_of_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(errors.UnknownProviderError, match="openai_responses"):
        provider_enum("claude")


def test_unknown_option_is_rejected_with_the_accepted_ones() -> None:
    with pytest.raises(errors.FormatError, match="promote_tool_result_images"):
        format("openai", [], promote_everything=True)


def _conversation(source: dict[str, Any]) -> list[dict[str, Any]]:
    """A conversation touching every block kind, media from `source`."""
    media = [{"type": kind, "source": source} for kind in ("image", "audio", "video")]
    return [
        {"name": "system", "role": "system", "content": "Be brief."},
        {"name": "user", "role": "user", "content": [{"type": "text", "text": "Look"}, media[0]]},
        {
            "name": "Friday",
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm"},
                {"type": "tool_use", "id": "c1", "name": "f", "input": {"n": 1}},
            ],
        },
        {
            "name": "system",
            "role": "system",
            "content": [{"type": "tool_result", "id": "c1", "name": "f", "output": [*media]}],
        },
        {"name": "user", "role": "user", "content": [{"type": "hint", "hint": "x"}]},
    ]


def _outcome(call: Any) -> BaseException | None:
    try:
        call()
    except errors.AgentScopeProtoError as exc:
        return exc
    return None


class _NoIO:
    """Makes any file open or socket creation fail loudly."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError(f"I/O attempted: {args[:1]}")

        for target, attr in (
            (builtins, "open"),
            (io, "open"),
            (socket, "socket"),
            (socket, "create_connection"),
            (socket, "getaddrinfo"),
        ):
            monkeypatch.setattr(target, attr, refuse)


@pytest.mark.parametrize("name", sorted(PROVIDERS))
@pytest.mark.parametrize("multi_agent", [False, True])
def test_inline_media_needs_no_io(
    name: str, multi_agent: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = {"type": "base64", "media_type": "image/png", "data": PNG_B64}
    _NoIO(monkeypatch)
    outcome = _outcome(lambda: format(name, _conversation(source), multi_agent=multi_agent))
    # A provider may refuse a media type (as AgentScope does), never for I/O.
    assert not isinstance(outcome, errors.MediaAccessError), outcome


@pytest.mark.parametrize("name", sorted(PROVIDERS))
@pytest.mark.parametrize(
    "url", ["media/cat.png", "file:///etc/passwd", "/etc/hosts.png", "http://169.254.169.254/x.png"]
)
def test_media_needing_io_is_refused_without_permission(
    name: str, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    msgs = [
        {
            "name": "u",
            "role": "user",
            "content": [{"type": "image", "source": {"type": "url", "url": url}}],
        }
    ]
    _NoIO(monkeypatch)
    outcome = _outcome(lambda: format(name, msgs))
    if isinstance(outcome, errors.MediaAccessError):
        assert outcome.path == "messages[0].content[0]"
    elif name in ("openai", "anthropic", "dashscope", "openai_responses") and "http" not in url:
        # These read local images (AgentScope does); without permission they must refuse.
        assert outcome is not None


def test_a_provider_agentscope_lacks_refuses_agentscope_fidelity(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A provider registered with its own variant alone (one AgentScope 1.0.21
    has no formatter for): `fidelity="agentscope"` is a clear error on every
    path, never a silent fallback, and provider fidelity, its default, works
    as usual."""
    from agentscope_proto import providers
    from agentscope_proto.conversation import Conversation
    from agentscope_proto.parsing import StreamParser, parse
    from agentscope_proto.providers.openai import (
        CHAT_DROPPED_BLOCKS,
        CHAT_FORMATTED_BLOCKS,
        CHAT_OPTIONS,
        CHAT_REQUEST_FIELDS,
        ChatCompletions,
    )

    # A module as docs/providers.md shows one, registered under OpenAI's value.
    alone = Provider(
        enum=pb.PROVIDER_OPENAI,
        options=CHAT_OPTIONS,
        formatted_blocks=CHAT_FORMATTED_BLOCKS,
        dropped_blocks=CHAT_DROPPED_BLOCKS,
        framing="sse",
        request_fields=CHAT_REQUEST_FIELDS,
        document_types=frozenset(),
        agentscope=None,
        provider=ChatCompletions,
    )
    monkeypatch.setattr(providers, "PROVIDERS", {**PROVIDERS, "openai": alone})
    msgs = [{"name": "user", "role": "user", "content": "Hi"}]
    refused = r"^fidelity: AgentScope 1\.0\.21 has no openai formatter or parser"
    with pytest.raises(errors.FormatError, match=refused):
        format("openai", msgs, fidelity="agentscope")
    with pytest.raises(errors.FormatError, match=refused):
        Conversation("openai", msgs, fidelity="agentscope")
    with pytest.raises(errors.ParseError, match=refused):
        parse("openai", {"choices": []}, fidelity="agentscope")
    with pytest.raises(errors.ParseError, match=refused):
        StreamParser("openai", fidelity="agentscope")
    expected = {
        "messages": [{"role": "user", "name": "user", "content": [{"type": "text", "text": "Hi"}]}]
    }
    assert alone.default_fidelity == "provider"
    for fidelity in ("provider", None):
        assert dict(format("openai", msgs, fidelity=fidelity)) == expected
        assert dict(Conversation("openai", msgs, fidelity=fidelity).format()) == expected
        assert parse("openai", {"choices": []}, fidelity=fidelity).content == []
        StreamParser("openai", fidelity=fidelity)
