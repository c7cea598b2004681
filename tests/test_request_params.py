"""Request parameters (`format(..., request=...)`): each written where its
provider's API takes it, refused where the API takes none, `extra_body` merged
last without replacing anything; the same on `Conversation`, the proto form,
both clients, Connect and the CLI. Without `request` nothing changes (the
golden tests say so for every case); with it an AgentScope-fidelity body only
gains the parameters. Validity against the providers' SDK request types is
tests/providers/test_fidelity_schemas.py's business."""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format

from agentscope_proto import Conversation, FormatCache, FormatError, RequestParams, format
from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto.cli import main
from agentscope_proto.client import AsyncFormatterClient, FormatterClient, format_request
from agentscope_proto.formatting import body_to_json
from agentscope_proto.providers import PROVIDERS
from agentscope_proto.request import request_from_proto, request_to_proto
from agentscope_proto.service import ServerConfig

from golden_data import GOLDEN, decode, formatter_cases, golden_providers
from server_harness import RunningServer
from strict import assert_same

ROOT = Path(__file__).resolve().parents[1]
CHAT = [
    {"name": "system", "role": "system", "content": "Be brief."},
    {"name": "user", "role": "user", "content": "Weather in Paris?"},
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
MODELS = {
    "openai": "gpt-4.1",
    "deepseek": "deepseek-chat",
    "anthropic": "claude-sonnet-4-5",
    "gemini": "gemini-2.5-flash",
    "openai_responses": "gpt-4.1",
    "ollama": "llama3.2",
    "dashscope": "qwen-plus",
    "moonshot": "kimi-k2.5",
    "xai": "grok-4",
    "volcengine": "doubao-seed-1-6-250615",
    "zhipu": "glm-4.6",
    "minimax": "MiniMax-M2.7",
}
EVERYTHING = {
    "max_output_tokens": 256,
    "temperature": 0,
    "top_p": 0.9,
    "stop": ["END"],
    "seed": 7,
    "stream": True,
}


def _written(provider: str) -> dict[str, Any]:
    """Where each provider's API documents each parameter, written out by hand
    (not read from the package's tables)."""
    model = MODELS[provider]
    return {
        "openai": {
            "model": model,
            "max_completion_tokens": 256,
            "temperature": 0.0,
            "top_p": 0.9,
            "stop": ["END"],
            "seed": 7,
            "stream": True,
        },
        "deepseek": {
            "model": model,
            "max_tokens": 256,
            "temperature": 0.0,
            "top_p": 0.9,
            "stop": ["END"],
            "stream": True,
        },
        "anthropic": {
            "model": model,
            "max_tokens": 256,
            "stop_sequences": ["END"],
            "stream": True,
        },
        # REST `generateContent`: the model is in the URL, the rest in
        # `generation_config` (none of them at the top level).
        "gemini": {
            "generation_config": {
                "max_output_tokens": 256,
                "temperature": 0.0,
                "top_p": 0.9,
                "stop_sequences": ["END"],
                "seed": 7,
            },
        },
        "openai_responses": {
            "model": model,
            "max_output_tokens": 256,
            "temperature": 0.0,
            "top_p": 0.9,
            "stream": True,
        },
        "ollama": {
            "model": model,
            "options": {
                "num_predict": 256,
                "temperature": 0.0,
                "top_p": 0.9,
                "stop": ["END"],
                "seed": 7,
            },
            "stream": True,
        },
        "dashscope": {
            "model": model,
            "max_tokens": 256,
            "temperature": 0.0,
            "top_p": 0.9,
            "stop": ["END"],
            "seed": 7,
            # The package's stream parser reads DashScope's incremental
            # output, which AgentScope asks for with every streamed call.
            "stream": True,
            "incremental_output": True,
        },
        "moonshot": {
            "model": model,
            "max_tokens": 256,
            "temperature": 0.0,
            "top_p": 0.9,
            "stop": ["END"],
            "stream": True,
        },
        "volcengine": {
            "model": model,
            "max_tokens": 256,
            "temperature": 0.0,
            "top_p": 0.9,
            "stop": ["END"],
            "stream": True,
        },
        "minimax": {
            "model": model,
            "max_completion_tokens": 256,
            "temperature": 0.0,
            "top_p": 0.9,
            "stream": True,
        },
        "zhipu": {
            "model": model,
            "max_tokens": 256,
            "temperature": 0.0,
            "top_p": 0.9,
            "stop": ["END"],
            "seed": 7,
            "stream": True,
        },
        "xai": {
            "model": model,
            "max_completion_tokens": 256,
            "temperature": 0.0,
            "top_p": 0.9,
            "stop": ["END"],
            "seed": 7,
            "stream": True,
        },
    }[provider]


# What each provider's API has no request field for.
REFUSED = {
    "openai": [],
    "deepseek": ["seed"],
    # Sampling parameters are deprecated (gone from the SDK's request type).
    "anthropic": ["temperature", "top_p", "seed"],
    "gemini": ["stream"],  # a method of its own (streamGenerateContent)
    "openai_responses": ["stop", "seed"],
    "ollama": [],
    "dashscope": [],
    "moonshot": ["seed"],
    "xai": [],
    "volcengine": ["seed"],
    "zhipu": [],
    "minimax": ["stop", "seed"],
}


def _taken(provider: str) -> dict[str, Any]:
    params = {"model": MODELS[provider], **EVERYTHING}
    return {key: value for key, value in params.items() if key not in REFUSED[provider]}


# -- placement -----------------------------------------------------------------------------


def test_every_provider_is_covered() -> None:
    assert set(REFUSED) == set(MODELS) == set(PROVIDERS)


# Each provider in each fidelity it has (the providers AgentScope 1.0.21
# lacks have only their own).
_VARIANTS = [
    (provider, fidelity)
    for provider in sorted(PROVIDERS)
    for fidelity in PROVIDERS[provider].variants
]


@pytest.mark.parametrize(("provider", "fidelity"), _VARIANTS)
def test_each_parameter_goes_where_the_provider_takes_it(provider: str, fidelity: str) -> None:
    plain = format(provider, CHAT, tools=TOOLS, fidelity=fidelity)
    body = format(provider, CHAT, tools=TOOLS, fidelity=fidelity, request=_taken(provider))
    # The body as it was, first and unchanged, then the parameters.
    assert_same(dict(body), {**plain, **_written(provider)})
    assert body.warnings == plain.warnings


@pytest.mark.parametrize(
    ("provider", "name"),
    [(provider, name) for provider, names in REFUSED.items() for name in names],
)
def test_a_parameter_the_api_does_not_take_is_refused(provider: str, name: str) -> None:
    with pytest.raises(FormatError) as caught:
        format(provider, CHAT, request={"model": MODELS[provider], name: EVERYTHING[name]})
    assert caught.value.path == f"request.{name}"
    assert provider in caught.value.reason


@pytest.mark.parametrize("request_", [None, {}, RequestParams()], ids=["none", "dict", "typed"])
def test_no_parameter_changes_nothing(request_: Any) -> None:
    for provider in PROVIDERS:
        body = format(provider, CHAT, tools=TOOLS, request=request_)
        assert_same(dict(body), dict(format(provider, CHAT, tools=TOOLS)))
    # Gemini's structured output stays where AgentScope puts it, at the top.
    schema = {"type": "object"}
    body = format("gemini", CHAT, response_schema=schema, request=request_)
    assert_same(dict(body), dict(format("gemini", CHAT, response_schema=schema)))
    assert "response_mime_type" in body


BUDGETS = {
    "openai": {"model": "gpt-4.1", "max_completion_tokens": 512},
    "deepseek": {"model": "deepseek-chat", "max_tokens": 512},
    "anthropic": {"model": "claude-sonnet-4-5", "max_tokens": 512},
    "gemini": {"generation_config": {"max_output_tokens": 512}},
    "openai_responses": {"model": "gpt-4.1", "max_output_tokens": 512},
    "ollama": {"model": "llama3.2", "options": {"num_predict": 512}},
    "dashscope": {"model": "qwen-plus", "max_tokens": 512},
}


@pytest.mark.parametrize("provider", sorted(golden_providers("formatters")))
def test_agentscope_bodies_only_gain_the_parameters(provider: str) -> None:
    """Over a sample of the golden cases: AgentScope 1.0.21's body, then the
    parameters (the golden tests cover every case without them)."""
    params = {"model": MODELS[provider], "max_output_tokens": 512}
    cases = [case for case in formatter_cases(provider) if "expected" in case]
    for case in cases[::9]:
        body = format(
            provider,
            case["msgs"],
            multi_agent=case["multi_agent"],
            tools=case["tools"],
            tool_choice=case["tool_choice"],
            media_root=GOLDEN,
            request=params,
            **case["options"],
        )
        assert_same(dict(body), {**decode(case["expected"]), **BUDGETS[provider]})


# -- extra_body ----------------------------------------------------------------------------


def test_extra_body_adds_keys_last_and_merges_objects() -> None:
    body = format(
        "ollama",
        CHAT,
        request={
            "model": "llama3.2",
            "max_output_tokens": 64,
            "extra_body": {"keep_alive": "5m", "options": {"num_ctx": 8192}, "think": False},
        },
    )
    assert list(body) == ["messages", "model", "options", "keep_alive", "think"]
    assert body["options"] == {"num_predict": 64, "num_ctx": 8192}
    anthropic = format(
        "anthropic",
        CHAT,
        tools=TOOLS,
        tool_choice="auto",
        request={"extra_body": {"tool_choice": {"disable_parallel_tool_use": True}}},
    )
    assert anthropic["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}


@pytest.mark.parametrize(
    ("provider", "params", "path"),
    [
        ("openai", {"extra_body": {"messages": []}}, "request.extra_body.messages"),
        ("openai", {"model": "a", "extra_body": {"model": "b"}}, "request.extra_body.model"),
        ("gemini", {"extra_body": {"contents": [{"role": "user"}]}}, "request.extra_body.contents"),
        ("openai", {"extra_body": {"tool_choice": "none"}}, "request.extra_body.tool_choice"),
        (
            "ollama",
            {"max_output_tokens": 5, "extra_body": {"options": {"num_predict": 6}}},
            "request.extra_body.options.num_predict",
        ),
        (
            "anthropic",
            {"extra_body": {"tool_choice": {"type": "any"}}},
            "request.extra_body.tool_choice.type",
        ),
    ],
)
def test_extra_body_never_replaces_what_the_body_has(
    provider: str, params: dict[str, Any], path: str
) -> None:
    with pytest.raises(FormatError) as caught:
        format(provider, CHAT, tools=TOOLS, tool_choice="auto", request=params)
    assert caught.value.path == path
    assert "already" in caught.value.reason


def test_the_body_shares_nothing_with_the_parameters() -> None:
    extra = {"metadata": {"user": "u1"}, "stop": ["a"]}
    params = RequestParams(model="gpt-4.1", stop=["END"], extra_body={"metadata": {"user": "u1"}})
    first = format("openai", CHAT, request=params)
    first["metadata"]["user"] = "changed"
    first["stop"].append("changed")
    assert params.extra_body == {"metadata": {"user": "u1"}}
    assert params.stop == ("END",)
    second = format("openai", CHAT, request=params)
    assert second["metadata"] == {"user": "u1"}
    assert second["stop"] == ["END"]
    given = RequestParams(extra_body=extra)
    extra["metadata"]["user"] = "later"
    assert given.extra_body == {"metadata": {"user": "u1"}, "stop": ["a"]}


# -- the typed form ------------------------------------------------------------------------


def test_a_dict_and_the_typed_form_are_the_same() -> None:
    params = {"model": "gpt-4.1", **EVERYTHING, "extra_body": {"user": "u1"}}
    typed = RequestParams(**params)
    assert typed == RequestParams.of(params)
    assert RequestParams.of(typed) is typed
    assert dict(format("openai", CHAT, request=typed)) == dict(
        format("openai", CHAT, request=params)
    )
    assert type(typed.temperature) is float
    assert typed.temperature == 0.0


@pytest.mark.parametrize(
    ("params", "path", "reason"),
    [
        ({"max_output_tokens": 0}, "request.max_output_tokens", "positive"),
        ({"max_output_tokens": True}, "request.max_output_tokens", "integer"),
        ({"max_output_tokens": 2**63}, "request.max_output_tokens", "positive"),
        ({"temperature": -0.5}, "request.temperature", "at least 0"),
        ({"temperature": math.nan}, "request.temperature", "finite"),
        ({"temperature": "0.2"}, "request.temperature", "number"),
        ({"top_p": 1.5}, "request.top_p", "between 0 and 1"),
        ({"stop": "END"}, "request.stop", "list of strings"),
        ({"stop": []}, "request.stop", "at least one"),
        ({"stop": ["a", ""]}, "request.stop[1]", "non-empty"),
        ({"stop": ["a", 1]}, "request.stop[1]", "string"),
        ({"seed": 1.5}, "request.seed", "integer"),
        ({"seed": -(2**63) - 1}, "request.seed", "64-bit"),
        ({"stream": "yes"}, "request.stream", "bool"),
        ({"model": ""}, "request.model", "non-empty"),
        ({"model": 4}, "request.model", "string"),
        ({"extra_body": []}, "request.extra_body", "object"),
        ({"extra_body": {"x": math.inf}}, "request.extra_body", "JSON"),
        ({"max_tokens": 5}, "request", "max_output_tokens"),
    ],
)
def test_bad_parameters_name_the_field(params: dict[str, Any], path: str, reason: str) -> None:
    with pytest.raises(FormatError) as caught:
        RequestParams.of(params)
    assert caught.value.path == path
    assert reason in caught.value.reason
    with pytest.raises(FormatError) as again:
        format("openai", CHAT, request=params)
    assert again.value.path == path


def test_request_is_a_mapping_or_the_typed_form() -> None:
    with pytest.raises(FormatError, match="request: expected"):
        format("openai", CHAT, request=[("model", "x")])


# -- the proto form ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [
        RequestParams(),
        RequestParams(model="m", temperature=0, seed=0, stream=False),
        RequestParams(**{"model": "m", **EVERYTHING, "extra_body": {"a": [1, 2.5, None]}}),
    ],
)
def test_the_proto_form_round_trips_with_presence(params: RequestParams) -> None:
    message = request_to_proto(params)
    assert request_from_proto(message) == params
    # 0, 0.0 and false are values, not "unset".
    if params.seed == 0:
        assert all(message.HasField(name) for name in ("temperature", "seed", "stream"))
        assert not message.HasField("top_p")


def test_proto_values_are_checked_as_python_values() -> None:
    for message, path in [
        (pb.RequestParams(max_output_tokens=0), "request.max_output_tokens"),
        (pb.RequestParams(model=""), "request.model"),
        (pb.RequestParams(stop=[""]), "request.stop[0]"),
        (pb.RequestParams(extra_body_json="[1]"), "request.extra_body_json"),
        (pb.RequestParams(extra_body_json="{"), "request.extra_body_json"),
    ]:
        with pytest.raises(FormatError) as caught:
            request_from_proto(message)
        assert caught.value.path == path


# -- Conversation --------------------------------------------------------------------------


@pytest.mark.parametrize("fidelity", ["agentscope", "provider"])
def test_a_conversation_writes_them_as_format_does(fidelity: str) -> None:
    params = {"model": "gpt-4.1", "max_output_tokens": 100, "extra_body": {"user": "u1"}}
    history = Conversation("openai", tools=TOOLS, fidelity=fidelity, request=params)
    msgs: list[dict[str, Any]] = []
    for message in CHAT:
        history.append(message)
        msgs.append(message)
        expected = format("openai", msgs, tools=TOOLS, fidelity=fidelity, request=params)
        assert_same(dict(history.format()), dict(expected))
        assert history.format_json().body_json == body_to_json(expected)
    assert history.request == RequestParams.of(params)


def test_a_conversation_refuses_them_when_made() -> None:
    with pytest.raises(FormatError) as caught:
        Conversation("anthropic", request={"seed": 1})
    assert caught.value.path == "request.seed"
    with pytest.raises(FormatError, match=r"^request\.temperature"):
        Conversation("openai", request={"temperature": -1})


# -- over the wire -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    running = RunningServer(ServerConfig(port=0)).start()
    yield running
    running.stop()


def test_the_request_message_carries_them() -> None:
    request = format_request("openai", CHAT, request={"model": "m", "temperature": 0})
    assert request.HasField("request")
    assert request.request == pb.RequestParams(model="m", temperature=0.0)
    assert not format_request("openai", CHAT).HasField("request")


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_both_clients_give_the_local_body(provider: str, server: RunningServer) -> None:
    params = {**_taken(provider), "extra_body": {"x_trace": "t1"}}
    local = format(provider, CHAT, tools=TOOLS, request=params)
    with FormatterClient(server.target) as client:
        assert_same(dict(client.format(provider, CHAT, tools=TOOLS, request=params)), dict(local))

    async def remote() -> Any:
        async with AsyncFormatterClient(server.target) as client:
            return await client.format(provider, CHAT, tools=TOOLS, request=params)

    assert_same(dict(asyncio.run(remote())), dict(local))


def test_a_format_cache_changes_no_body() -> None:
    """The server's wire cache splices cached turns into the body it writes:
    the parameters go beside them, the same on every call."""
    running = RunningServer(ServerConfig(port=0, format_cache_mb=8)).start()
    cache = FormatCache()
    try:
        with FormatterClient(running.target) as client:
            for _ in range(2):
                for provider in PROVIDERS:
                    params = _taken(provider)
                    expected = dict(format(provider, CHAT, request=params))
                    assert_same(dict(client.format(provider, CHAT, request=params)), expected)
                    assert_same(dict(format(provider, CHAT, request=params, cache=cache)), expected)
    finally:
        running.stop()


def test_a_refused_parameter_is_the_same_error_remotely(server: RunningServer) -> None:
    with FormatterClient(server.target) as client, pytest.raises(FormatError) as caught:
        client.format("anthropic", CHAT, request={"seed": 1})
    assert caught.value.path == "request.seed"
    assert "anthropic" in caught.value.reason


def test_connect_takes_them_as_protojson(server: RunningServer) -> None:
    connect = pytest.importorskip("agentscope_proto.service.connect")
    import urllib.error
    import urllib.request

    http = server.call(connect.start_http(server.config, 0))
    try:
        payload = {
            "provider": "PROVIDER_ANTHROPIC",
            "messages": [{"name": "user", "role": "ROLE_USER", "text": "Hi"}],
            "request": {"model": "claude-sonnet-4-5", "maxOutputTokens": "1024", "stream": False},
        }
        url = f"http://{server.config.host}:{http.port}"
        url += "/agentscope.formatter.v1.FormatterService/Format"
        sent = urllib.request.Request(
            url, data=json.dumps(payload).encode(), headers={"content-type": "application/json"}
        )
        with urllib.request.urlopen(sent, timeout=30) as response:
            reply = json_format.Parse(response.read(), pb.FormatResponse())
        body = json.loads(reply.body_json)
        assert body["model"] == "claude-sonnet-4-5"
        assert body["max_tokens"] == 1024
        assert body["stream"] is False
        payload["request"] = {"seed": "3"}
        refused = urllib.request.Request(
            url, data=json.dumps(payload).encode(), headers={"content-type": "application/json"}
        )
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(refused, timeout=30)
        error = json.loads(caught.value.read())
        assert error["code"] == "invalid_argument"
        assert "request.seed" in json.dumps(error)
    finally:
        server.call(http.stop(0))


# -- the CLI -------------------------------------------------------------------------------


def test_the_cli_takes_them_as_key_json_pairs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conversation = tmp_path / "chat.json"
    conversation.write_text(json.dumps(CHAT), encoding="utf-8")
    flags = ["--request", "model=gpt-4.1", "--request", "max_output_tokens=100"]
    flags += ["--request", 'stop=["END"]', "--request", 'extra_body={"user": "u1"}']
    main(["format", str(conversation), "--provider", "openai", *flags])
    expected = format(
        "openai",
        CHAT,
        request={
            "model": "gpt-4.1",
            "max_output_tokens": 100,
            "stop": ["END"],
            "extra_body": {"user": "u1"},
        },
    )
    assert json.loads(capsys.readouterr().out) == dict(expected)
    with pytest.raises(SystemExit) as exited:
        main(["format", str(conversation), "--provider", "anthropic", "--request", "seed=1"])
    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert "request.seed" in error
    assert "anthropic" in error
    with pytest.raises(SystemExit):
        main(["format", str(conversation), "--provider", "openai", "--request", "model"])
    assert "--request" in capsys.readouterr().err


# -- Gemini: one REST body on every path ----------------------------------------------------

GEMINI = {"model": "gemini-2.5-flash", "max_output_tokens": 64, "temperature": 0.5}
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}


@pytest.mark.parametrize("fidelity", ["agentscope", "provider"])
def test_gemini_gives_one_rest_body_on_every_path(
    fidelity: str, server: RunningServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Structured output and the parameters in `generation_config`, no model
    in the body: `format()`, `Conversation`, the client (the server) and the
    CLI all give it."""
    options = {"response_schema": SCHEMA, "fidelity": fidelity}
    local = dict(format("gemini", CHAT, request=GEMINI, **options))
    assert set(local) <= {"contents", "system_instruction", "generation_config"}
    assert local["generation_config"]["max_output_tokens"] == 64
    history = Conversation("gemini", request=GEMINI, **options)
    for message in CHAT:
        history.append(message)
    assert_same(dict(history.format()), local)
    assert json.loads(history.format_json().body_json) == json.loads(body_to_json(local))
    with FormatterClient(server.target) as client:
        assert_same(dict(client.format("gemini", CHAT, request=GEMINI, **options)), local)
    conversation, schema = tmp_path / "chat.json", tmp_path / "schema.json"
    conversation.write_text(json.dumps(CHAT), encoding="utf-8")
    schema.write_text(json.dumps(SCHEMA), encoding="utf-8")
    flags = [f"--request={key}={json.dumps(value)}" for key, value in GEMINI.items()]
    flags += ["--response-schema", str(schema), "--fidelity", fidelity]
    main(["format", str(conversation), "--provider", "gemini", *flags])
    assert json.loads(capsys.readouterr().out) == json.loads(body_to_json(local))


# -- the documented table ------------------------------------------------------------------


def test_the_documented_table_is_what_the_providers_write() -> None:
    """docs/request-params.md's table: a row per parameter, a column per provider."""
    text = (ROOT / "docs" / "request-params.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    header = next(line for line in text.splitlines() if line.startswith("| parameter |"))
    providers = [cell.strip(" `") for cell in header.strip("|").split("|")[1:]]
    assert sorted(providers) == sorted(PROVIDERS)
    documented: dict[str, dict[str, Any]] = {provider: {} for provider in providers}
    for row in rows:
        name, *cells = (cell.strip() for cell in row.strip("|").split("|"))
        for provider, cell in zip(providers, cells, strict=True):
            # "URL": taken, in the request's URL (no body key); "—": refused.
            paths = [] if cell == "URL" else re.findall(r"`([^`]+)`", cell) or None
            documented[provider][name.strip("`")] = paths
    assert all(set(table) == {"model", *EVERYTHING} for table in documented.values())
    for provider in providers:
        params = RequestParams.of({"model": MODELS[provider], **EVERYTHING})
        for name in documented[provider]:
            value = getattr(params, name)
            if documented[provider][name] is None:
                with pytest.raises(FormatError, match=rf"request\.{name}"):
                    format(provider, CHAT, request={name: value})
                continue
            plain = format(provider, CHAT)
            body = format(provider, CHAT, request={name: value})
            written = [path for key in body if key not in plain for path in _paths(body[key], key)]
            assert written == documented[provider][name], (provider, name)


def _paths(value: Any, path: str) -> list[str]:
    """The dotted paths of the leaves under `value`."""
    if isinstance(value, dict) and value:
        return [leaf for key, item in value.items() for leaf in _paths(item, f"{path}.{key}")]
    return [path]
