"""`prompt_cache="auto"`: cache breakpoints where each provider recommends them,
in every form (Python, the proto options and the service, the CLI).

Claude: the last turn, the system prompt and the last tool, beside the
messages' own markers, at most four in all; every other provider caches
prompts by itself, and its body is the one without the option.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto.cli import main
from agentscope_proto.client import FormatterClient
from agentscope_proto.conversation import Conversation
from agentscope_proto.errors import FormatError
from agentscope_proto.formatting import format
from agentscope_proto.options import (
    FormatSettings,
    format_settings_from_proto,
    format_settings_to_proto,
)
from agentscope_proto.providers import PROVIDERS
from agentscope_proto.service import ServerConfig
from provider_schemas import client as schemas
from provider_schemas.golden import REQUESTS

from server_harness import RunningServer

_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name}.",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    for name in ("get_weather", "get_time")
]
_EPHEMERAL = {"type": "ephemeral"}
_HOUR = {"type": "ephemeral", "ttl": "1h"}


def _msgs() -> list[dict[str, Any]]:
    return [
        {"name": "system", "role": "system", "content": "You are Friday."},
        {"name": "user", "role": "user", "content": "Weather in Paris?"},
        {
            "name": "Friday",
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Call it.", "signature": "EqQBsig"},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}},
            ],
        },
        {
            "name": "system",
            "role": "system",
            "content": [
                {"type": "tool_result", "id": "toolu_1", "name": "get_weather", "output": "Sun"}
            ],
        },
        {"name": "user", "role": "user", "content": [{"type": "text", "text": "And Rome?"}]},
    ]


def _markers(value: Any) -> list[tuple[str, Any]]:
    """(path, marker) of every `cache_control` in a body."""
    found: list[tuple[str, Any]] = []

    def walk(item: Any, path: str) -> None:
        if isinstance(item, dict):
            if "cache_control" in item:
                found.append((path, item["cache_control"]))
            for key, inner in item.items():
                walk(inner, f"{path}.{key}" if path else key)
        elif isinstance(item, list):
            for index, inner in enumerate(item):
                walk(inner, f"{path}[{index}]")

    walk(value, "")
    return found


@pytest.mark.parametrize("fidelity", ["agentscope", "provider"])
def test_claude_gets_the_last_turn_the_system_prompt_and_the_tools(fidelity: str) -> None:
    msgs = _msgs()
    given = copy.deepcopy(msgs)
    body = format("anthropic", msgs, tools=_TOOLS, prompt_cache="auto", fidelity=fidelity)
    assert _markers(dict(body)) == [
        ("tools[1]", _EPHEMERAL),
        ("system[0]", _EPHEMERAL),
        ("messages[3].content[0]", _EPHEMERAL),
    ]
    assert body["system"] == [
        {"type": "text", "text": "You are Friday.", "cache_control": _EPHEMERAL}
    ]
    assert msgs == given  # the caller's messages are never changed
    plain = format("anthropic", msgs, tools=_TOOLS, fidelity=fidelity)
    assert _markers(dict(plain)) == []


def test_a_thinking_block_takes_no_breakpoint() -> None:
    msgs = [
        {"name": "user", "role": "user", "content": "Hi"},
        {
            "name": "Friday",
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Hello."},
                {"type": "thinking", "thinking": "Done.", "signature": "EqQBsig"},
            ],
        },
    ]
    body = format("anthropic", msgs, prompt_cache="auto")
    assert _markers(dict(body)) == [("messages[1].content[0]", _EPHEMERAL)]


def test_the_messages_own_markers_count_toward_the_limit() -> None:
    """Three markers of the caller's leave room for the last turn only."""
    msgs = _msgs()
    msgs[1]["content"] = [
        {"type": "text", "text": f"Part {n}.", "cache_control": _HOUR} for n in range(3)
    ]
    body = format("anthropic", msgs, tools=_TOOLS, prompt_cache="auto", fidelity="provider")
    assert [path for path, _ in _markers(dict(body))] == [
        "messages[0].content[0]",
        "messages[0].content[1]",
        "messages[0].content[2]",
        "messages[3].content[0]",
    ]
    assert [(w.path, w.block_type) for w in body.warnings if w.block_type == "cache_control"] == [
        ("system", "cache_control"),
        ("tools", "cache_control"),
    ]


def test_a_marker_already_on_the_last_turn_is_kept_as_it_is() -> None:
    msgs = _msgs()
    msgs[-1]["content"][0]["cache_control"] = _HOUR
    body = format("anthropic", msgs, prompt_cache="auto", fidelity="provider")
    assert _markers(dict(body)) == [("system[0]", _EPHEMERAL), ("messages[3].content[0]", _HOUR)]


@pytest.mark.parametrize(
    ("provider", "fidelity"),
    [
        (name, fidelity)
        for name in sorted(set(PROVIDERS) - {"anthropic"})
        for fidelity in sorted(PROVIDERS[name].variants)
    ],
)
def test_other_providers_cache_by_themselves(provider: str, fidelity: str) -> None:
    auto = format(provider, _msgs(), tools=_TOOLS, prompt_cache="auto", fidelity=fidelity)
    plain = format(provider, _msgs(), tools=_TOOLS, fidelity=fidelity)
    assert dict(auto) == dict(plain)
    assert auto.warnings == plain.warnings


def test_a_conversation_moves_the_breakpoint_with_its_last_turn() -> None:
    conversation = Conversation("anthropic", prompt_cache="auto")
    for msg in _msgs():
        conversation.append(msg)
        expected = format("anthropic", conversation.messages, prompt_cache="auto")
        assert dict(conversation.format()) == dict(expected)
        assert json.loads(conversation.format_json().body_json) == dict(expected)


def test_an_unknown_mode_names_the_option() -> None:
    with pytest.raises(FormatError, match="prompt_cache"):
        format("anthropic", _msgs(), prompt_cache="always")


def test_the_option_round_trips_through_the_proto() -> None:
    settings = FormatSettings(prompt_cache="auto")
    options = format_settings_to_proto(settings)
    assert options.prompt_cache == pb.PROMPT_CACHE_AUTO
    assert format_settings_from_proto(options, multi_agent=False) == settings
    unset = format_settings_from_proto(pb.FormatOptions(), multi_agent=False)
    assert unset.prompt_cache is None
    with pytest.raises(FormatError, match="prompt_cache"):
        format_settings_from_proto(pb.FormatOptions(prompt_cache=7), multi_agent=False)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    running = RunningServer(ServerConfig(port=0)).start()
    yield running
    running.stop()


def test_the_service_places_them_too(server: RunningServer) -> None:
    with FormatterClient(server.target) as remote:
        body = remote.format("anthropic", _msgs(), tools=_TOOLS, prompt_cache="auto")
    assert dict(body) == dict(format("anthropic", _msgs(), tools=_TOOLS, prompt_cache="auto"))
    assert len(_markers(dict(body))) == 3


def test_the_cli_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conversation = tmp_path / "c.json"
    conversation.write_text(json.dumps(_msgs()), encoding="utf-8")
    main(["format", str(conversation), "--provider", "anthropic", "--prompt-cache", "auto"])
    printed = json.loads(capsys.readouterr().out)
    assert printed == dict(format("anthropic", _msgs(), prompt_cache="auto"))
    with pytest.raises(SystemExit) as refused:
        main(["format", str(conversation), "--provider", "anthropic", "--prompt-cache", "x"])
    assert refused.value.code != 0


@pytest.mark.skipif(not schemas.available(), reason=schemas.MISSING_REASON)
def test_the_bodies_validate() -> None:
    bodies = [
        format(
            "anthropic",
            _msgs(),
            tools=_TOOLS,
            prompt_cache="auto",
            fidelity=fidelity,
            request=REQUESTS["anthropic"],
        )
        for fidelity in ("agentscope", "provider")
    ]
    assert schemas.validate_many(("anthropic", dict(body)) for body in bodies) == [[], []]
