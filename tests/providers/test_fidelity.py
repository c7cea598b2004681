"""The fidelity switch: its plumbing (settings, proto, clients, service, CLI)
and what provider fidelity does to a body across providers, each change
warned. What it does provider by provider is in each provider's test module
(test_<name>.py); the bodies' validity against the providers' schemas is
tests/providers/test_fidelity_schemas.py's business."""

from __future__ import annotations

import asyncio
import copy
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto.cache import FormatCache
from agentscope_proto.client import AsyncFormatterClient, FormatterClient
from agentscope_proto.errors import FormatError, ParseError
from agentscope_proto.formatting import format
from agentscope_proto.options import (
    FormatSettings,
    ParseSettings,
    format_settings_from_proto,
    format_settings_to_proto,
    parse_settings_from_proto,
    parse_settings_to_proto,
)
from agentscope_proto.parsing import StreamParser, parse
from agentscope_proto.providers import PROVIDERS, get_provider
from agentscope_proto.service import ServerConfig
from provider_schemas.scenarios import CROSS_PROVIDER_TOOL_LOOP, TOOLS

from fidelity_helpers import TOOL_LOOP, provider_fidelity
from fidelity_helpers import call as _call
from fidelity_helpers import kinds as _kinds
from fidelity_helpers import msg as _msg
from golden_data import decode, parser_cases
from server_harness import RunningServer

# -- the switch ------------------------------------------------------------------------


def test_default_is_agentscope_and_provider_differs() -> None:
    default = format("anthropic", TOOL_LOOP)
    assert dict(format("anthropic", TOOL_LOOP, fidelity="agentscope")) == dict(default)
    assert dict(format("anthropic", TOOL_LOOP, fidelity="provider")) != dict(default)


def test_unknown_fidelity_names_the_field() -> None:
    with pytest.raises(FormatError, match="fidelity: unknown fidelity 'exact'"):
        format("openai", TOOL_LOOP, fidelity="exact")
    with pytest.raises(ParseError, match="fidelity"):
        parse("openai", {}, fidelity="exact")
    with pytest.raises(ParseError, match="fidelity"):
        StreamParser("openai", fidelity="exact")


def test_the_pass_never_changes_its_input() -> None:
    parity = dict(format("anthropic", CROSS_PROVIDER_TOOL_LOOP, tools=TOOLS))
    before = copy.deepcopy(parity)
    warnings: list[pb.FormatWarning] = []
    adapted = provider_fidelity("anthropic", parity, warnings)
    assert parity == before
    assert adapted != parity
    assert warnings


def test_parse_provider_fidelity_is_agentscope_for_now() -> None:
    for provider in ("openai", "anthropic", "gemini"):
        case = next(c for c in parser_cases(provider) if "expected" in c and "response" in c)
        plain = parse(provider, decode(case["response"]))
        provider_result = parse(provider, decode(case["response"]), fidelity="provider")
        assert provider_result.content == plain.content


@pytest.mark.parametrize("fidelity", ["agentscope", "provider"])
def test_settings_round_trip_through_proto(fidelity: str) -> None:
    fmt = FormatSettings(fidelity=fidelity)
    assert format_settings_from_proto(format_settings_to_proto(fmt), multi_agent=False) == fmt
    par = ParseSettings(fidelity=fidelity)
    assert parse_settings_from_proto(parse_settings_to_proto(par)) == par


def test_unspecified_proto_fidelity_is_the_providers_default() -> None:
    """Not given (None, FIDELITY_UNSPECIFIED) is the provider's default:
    AgentScope 1.0.21's for the providers it has, which format and parse as
    with an explicit "agentscope"."""
    assert format_settings_to_proto(FormatSettings()).fidelity == pb.FIDELITY_UNSPECIFIED
    options = pb.FormatOptions(fidelity=pb.FIDELITY_UNSPECIFIED)
    assert format_settings_from_proto(options, multi_agent=False).fidelity is None
    assert parse_settings_from_proto(pb.ParseOptions()).fidelity is None
    assert get_provider("openai").default_fidelity == "agentscope"
    assert get_provider("openai").variant(None) is get_provider("openai").variant("agentscope")
    with pytest.raises(FormatError, match="fidelity"):
        format_settings_from_proto(pb.FormatOptions(fidelity=99), multi_agent=False)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    running = RunningServer(ServerConfig(port=0)).start()
    yield running
    running.stop()


@pytest.fixture
def client(server: RunningServer) -> Iterator[FormatterClient]:
    with FormatterClient(server.target) as formatter:
        yield formatter


def test_service_formats_in_provider_fidelity(client: FormatterClient) -> None:
    local = format("ollama", TOOL_LOOP, fidelity="provider")
    remote = client.format("ollama", TOOL_LOOP, fidelity="provider")
    assert dict(remote) == dict(local)
    assert _kinds(remote) == _kinds(local) != []
    assert dict(client.format("ollama", TOOL_LOOP)) == dict(format("ollama", TOOL_LOOP))


def test_async_client_formats_in_provider_fidelity(server: RunningServer) -> None:
    async def run() -> Any:
        async with AsyncFormatterClient(server.target) as remote:
            return await remote.format("anthropic", TOOL_LOOP, fidelity="provider")

    remote = asyncio.run(run())
    assert dict(remote) == dict(format("anthropic", TOOL_LOOP, fidelity="provider"))


def test_service_parses_with_provider_fidelity(client: FormatterClient) -> None:
    case = next(c for c in parser_cases("openai") if "expected" in c and "response" in c)
    remote = client.parse("openai", decode(case["response"]), fidelity="provider")
    assert remote.content == parse("openai", decode(case["response"])).content


def test_cli_fidelity_flag(tmp_path: Path) -> None:
    conversation = tmp_path / "c.json"
    conversation.write_text(json.dumps(TOOL_LOOP), encoding="utf-8")
    cli = [sys.executable, "-m", "agentscope_proto", "format", str(conversation)]
    done = subprocess.run(
        [*cli, "--provider", "ollama", "--fidelity", "provider"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout) == dict(format("ollama", TOOL_LOOP, fidelity="provider"))
    assert "tool_call_id" in done.stderr  # the dropped keys are warned
    bad = subprocess.run(
        [*cli, "--provider", "ollama", "--fidelity", "exact"], capture_output=True, text=True
    )
    assert bad.returncode != 0
    assert "--fidelity" in bad.stderr


# -- what provider fidelity does --------------------------------------------------------


def test_unanswered_calls_are_dropped_everywhere() -> None:
    msgs = [
        _msg("user", "user", "Weather?"),
        _msg("Friday", "assistant", [_call("lost")]),
        _msg("user", "user", "Never mind."),
    ]
    for provider in ("openai", "deepseek", "ollama", "anthropic", "openai_responses"):
        body = format(provider, msgs, fidelity="provider")
        assert "lost" not in json.dumps(dict(body)), provider
        assert any(kind == "tool_use" for _, kind in _kinds(body)), provider


def test_a_turn_left_empty_is_dropped() -> None:
    msgs = [
        _msg("user", "user", [{"type": "text", "text": ""}]),
        _msg("user", "user", "Hi"),
    ]
    for provider in ("openai", "anthropic", "openai_responses"):
        body = format(provider, msgs, fidelity="provider")
        turns = body.get("messages", body.get("input"))
        assert len(turns) == 1, provider
        assert ("messages[0]" if provider != "openai_responses" else "input[0]", "user") in _kinds(
            body
        ), provider


# Each provider: the key of the message list its API refuses empty, or None
# where the body goes out with an empty list (a row per provider: the
# provider contract checks it).
_NEEDS_A_MESSAGE = {
    "openai": "messages",
    "deepseek": "messages",
    "anthropic": "messages",
    "gemini": "contents",
    "dashscope": "messages",
    "ollama": None,
    "openai_responses": None,
    "moonshot": "messages",
    "xai": "messages",
    "volcengine": "messages",
    "zhipu": "messages",
    "minimax": "messages",
}
_EMPTY_STRING = [_msg("user", "user", "")]
# Thinking from a user: every chat formatter but Anthropic's drops it.
_ONLY_THINKING = [_msg("user", "user", [{"type": "thinking", "thinking": "hmm"}])]
_NOTHING_LEFT = [
    *((provider, _EMPTY_STRING) for provider in ("openai", "deepseek", "anthropic", "gemini")),
    *((provider, []) for provider, key in _NEEDS_A_MESSAGE.items() if key),
    *((provider, _ONLY_THINKING) for provider in ("openai", "deepseek", "gemini", "dashscope")),
]


@pytest.mark.parametrize(("provider", "msgs"), _NOTHING_LEFT)
def test_nothing_left_to_send_is_an_error_in_provider_fidelity(
    provider: str, msgs: list[dict[str, Any]]
) -> None:
    """Their APIs refuse an empty message list (OpenAI: "expected an array with
    minimum length 1"): a body that would hold one is a `FormatError` naming the
    list and the provider. AgentScope fidelity is left as 1.0.21 has it."""
    key = _NEEDS_A_MESSAGE[provider]
    # AgentScope's Anthropic fails on no message too.
    if provider != "anthropic" and "agentscope" in PROVIDERS[provider].variants:
        format(provider, msgs, fidelity="agentscope")
    with pytest.raises(FormatError, match=rf"^{key}: nothing to send") as caught:
        format(provider, msgs, fidelity="provider")
    assert provider in caught.value.reason


@pytest.mark.parametrize(
    "provider", [provider for provider, key in _NEEDS_A_MESSAGE.items() if key is None]
)
def test_an_empty_message_list_goes_out_where_the_api_takes_it(provider: str) -> None:
    assert format(provider, [], fidelity="provider")


def test_a_system_prompt_alone_is_nothing_to_send_to_claude() -> None:
    """Claude takes the system prompt apart from `messages`, which stays empty
    (AgentScope's body); Gemini gets it as a user turn."""
    msgs = [_msg("system", "system", "Be brief.")]
    assert format("anthropic", msgs)["messages"] == []
    with pytest.raises(FormatError, match=r"^messages: nothing to send"):
        format("anthropic", msgs, fidelity="provider")
    assert format("gemini", msgs, fidelity="provider")["contents"]


def test_an_empty_list_stays_where_the_api_takes_one() -> None:
    """Ollama documents an empty `messages` (it loads the model); the Responses
    API's `input` is optional (a request may go on from `previous_response_id`)."""
    msgs = [_msg("user", "user", "")]
    assert format("ollama", msgs, fidelity="provider")["messages"] == []
    assert format("openai_responses", msgs, fidelity="provider")["input"] == []


def test_a_cache_changes_no_provider_fidelity_body() -> None:
    cache = FormatCache()
    for provider in ("anthropic", "ollama", "openai_responses"):
        plain = format(provider, TOOL_LOOP, fidelity="provider")
        for _ in range(2):
            cached = format(provider, TOOL_LOOP, fidelity="provider", cache=cache)
            assert dict(cached) == dict(plain)
            assert _kinds(cached) == _kinds(plain)
        assert dict(format(provider, TOOL_LOOP, cache=cache)) == dict(format(provider, TOOL_LOOP))
