"""The structured-output options reach the providers the same way on every path.

`response_schema` (a JSON Schema object) and `response_schema_name` are
`FormatSettings` fields and keyword options of `format()`, accepted by the
providers that take a schema (openai, deepseek, openai_responses, gemini) and
refused by the others; they travel as `FormatOptions.response_schema_json` /
`response_schema_name` through both clients and the servicer, and as
`--response-schema FILE` / `--response-schema-name` on the command line. Where
the schema goes in a body is each provider's business (tested there); these
tests check that the settings a provider sees are the ones asked for.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from agentscope_proto import FormatError, FormatSettings, format
from agentscope_proto._client_proto import format_request
from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto._generated.agentscope.formatter.v1 import (
    formatter_service_pb2_grpc as pb_grpc,
)
from agentscope_proto.cli import main
from agentscope_proto.client import AsyncFormatterClient, FormatterClient
from agentscope_proto.options import format_settings_from_proto, format_settings_to_proto
from agentscope_proto.providers import PROVIDERS
from agentscope_proto.service import ServerConfig
from agentscope_proto.service import servicer as servicer_module

from server_harness import RunningServer

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "n": {"type": "integer", "maximum": 1.0}},
    "required": ["city"],
}
# Whether each provider's API takes a response schema (a row per provider:
# the provider contract checks it).
TAKING = {
    "openai": True,
    "deepseek": True,
    "openai_responses": True,
    "gemini": True,
    "anthropic": False,
    "ollama": False,
    "dashscope": False,
    # The Chat Completions family's members AgentScope 1.0.21 lacks.
    "moonshot": True,
    "xai": True,
    "volcengine": True,
    "zhipu": True,
    "minimax": True,
}
MSGS = [{"name": "user", "role": "user", "content": "Weather in Paris?"}]


def test_settings_hold_a_checked_copy() -> None:
    given = json.loads(json.dumps(SCHEMA))
    settings = FormatSettings(response_schema=given, response_schema_name="weather")
    given["properties"]["city"]["type"] = "number"
    assert settings.response_schema == SCHEMA
    # The float stays a float (lossless JSON), and the settings still hash
    # (the turn cache keys on them).
    assert type(settings.response_schema["properties"]["n"]["maximum"]) is float
    hash(settings)
    assert settings.given() == {"response_schema", "response_schema_name"}


@pytest.mark.parametrize(
    ("kwargs", "path"),
    [
        ({"response_schema": [SCHEMA]}, "response_schema"),
        ({"response_schema": "{}"}, "response_schema"),
        ({"response_schema": {"x": float("nan")}}, "response_schema"),
        ({"response_schema": SCHEMA, "response_schema_name": ""}, "response_schema_name"),
        ({"response_schema": SCHEMA, "response_schema_name": 3}, "response_schema_name"),
        ({"response_schema_name": "weather"}, "response_schema_name"),
    ],
)
def test_bad_settings_name_the_option(kwargs: dict[str, Any], path: str) -> None:
    with pytest.raises(FormatError) as caught:
        FormatSettings(**kwargs)
    assert caught.value.path == path


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_format_accepts_the_options_only_where_a_provider_takes_a_schema(provider: str) -> None:
    options = {"response_schema": SCHEMA, "response_schema_name": "weather"}
    if TAKING[provider]:
        assert format(provider, MSGS, **options)
        assert format(provider, MSGS, response_schema=SCHEMA)
        return
    with pytest.raises(FormatError, match="unknown option") as caught:
        format(provider, MSGS, **options)
    assert "response_schema" in str(caught.value)


def test_proto_options_round_trip() -> None:
    settings = FormatSettings(response_schema=SCHEMA, response_schema_name="weather")
    options = format_settings_to_proto(settings)
    assert json.loads(options.response_schema_json) == SCHEMA
    assert options.response_schema_name == "weather"
    assert format_settings_from_proto(options, multi_agent=False) == settings
    empty = format_settings_to_proto(FormatSettings())
    assert not empty.response_schema_json
    assert not empty.response_schema_name
    assert format_settings_from_proto(empty, multi_agent=False).response_schema is None


@pytest.mark.parametrize("text", ["{", "[1]", '"x"', '{"a":1,"a":2}'])
def test_a_bad_schema_from_the_wire_names_the_field(text: str) -> None:
    with pytest.raises(FormatError) as caught:
        format_settings_from_proto(pb.FormatOptions(response_schema_json=text), multi_agent=False)
    assert caught.value.path == "response_schema_json"


def test_format_request_carries_the_schema() -> None:
    request = format_request("openai", MSGS, response_schema=SCHEMA, response_schema_name="w")
    assert json.loads(request.options.response_schema_json) == SCHEMA
    assert request.options.response_schema_name == "w"
    with pytest.raises(FormatError):
        format_request("openai", MSGS, response_schema=1)


# --- Over gRPC ------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    running = RunningServer(ServerConfig(port=0)).start()
    yield running
    running.stop()


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[FormatSettings]:
    """The settings the servicer hands to `format()`, call by call."""
    calls: list[FormatSettings] = []
    real = servicer_module.format

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs["settings"])
        return real(*args, **kwargs)

    monkeypatch.setattr(servicer_module, "format", spy)
    return calls


def test_the_clients_send_the_schema_to_the_server(
    server: RunningServer, seen: list[FormatSettings]
) -> None:
    with FormatterClient(server.target) as client:
        client.format("gemini", MSGS, response_schema=SCHEMA, response_schema_name="weather")

    async def call() -> None:
        async with AsyncFormatterClient(server.target) as client:
            await client.format("openai_responses", MSGS, response_schema=SCHEMA)

    asyncio.run(call())
    assert [(s.response_schema, s.response_schema_name) for s in seen] == [
        (SCHEMA, "weather"),
        (SCHEMA, None),
    ]


def test_the_server_refuses_a_bad_schema_naming_the_field(server: RunningServer) -> None:
    request = format_request("openai", MSGS)
    request.options.response_schema_json = '{"type": "object",'
    with grpc.insecure_channel(server.target) as channel:
        stub = pb_grpc.FormatterServiceStub(channel)
        with pytest.raises(grpc.RpcError) as caught:
            stub.Format(request)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "response_schema_json" in (caught.value.details() or "")


def test_the_server_refuses_the_schema_for_a_provider_without_one(server: RunningServer) -> None:
    with (
        FormatterClient(server.target) as client,
        pytest.raises(FormatError, match="unknown option") as caught,
    ):
        client.format("anthropic", MSGS, response_schema=SCHEMA)
    assert "response_schema" in str(caught.value)


# --- On the command line ----------------------------------------------------------


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_cli_reads_the_schema_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentscope_proto import formatting

    calls: list[dict[str, Any]] = []
    real = formatting.format

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(formatting, "format", spy)
    conversation = _write(tmp_path / "c.json", json.dumps(MSGS))
    schema = _write(tmp_path / "schema.json", json.dumps(SCHEMA, indent=2))
    main(
        [
            "format",
            "--provider",
            "openai",
            "--response-schema",
            str(schema),
            "--response-schema-name",
            "weather",
            str(conversation),
        ]
    )
    assert json.loads(capsys.readouterr().out)["messages"]
    assert calls[0]["response_schema"] == SCHEMA
    assert calls[0]["response_schema_name"] == "weather"


def _cli_error(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as caught:
        main(args)
    assert caught.value.code == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    return lines[0]


def test_cli_bad_schema_json_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conversation = _write(tmp_path / "c.json", json.dumps(MSGS))
    schema = _write(tmp_path / "schema.json", '{"type": "object",\n')
    line = _cli_error(
        ["format", "--provider", "openai", "--response-schema", str(schema), str(conversation)],
        capsys,
    )
    assert f"{schema}: invalid JSON" in line
    not_object = _write(tmp_path / "list.json", "[1]")
    line = _cli_error(
        ["format", "--provider", "openai", "--response-schema", str(not_object), str(conversation)],
        capsys,
    )
    assert "response_schema" in line
    schema = _write(tmp_path / "good.json", json.dumps(SCHEMA))
    line = _cli_error(
        ["format", "--provider", "anthropic", "--response-schema", str(schema), str(conversation)],
        capsys,
    )
    assert "unknown option" in line


def test_cli_reads_at_most_one_input_from_stdin(capsys: pytest.CaptureFixture[str]) -> None:
    line = _cli_error(["format", "--provider", "openai", "--response-schema", "-", "-"], capsys)
    assert "--response-schema" in line
