"""The provider contract: what every registered provider has besides its
module (docs/providers.md, "Adding a provider").

Each test is one row a new provider adds, checked for every provider of the
registry: its enum value, its variants, its golden data (when AgentScope
1.0.21 has it) and its own provider-fidelity tests, its body validator with
its self-test cases and its request model, its CLI entry, its rows in the docs.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import re
import sys
from contextlib import nullcontext
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from agentscope_proto import StreamParser, parse
from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from agentscope_proto.cli import main
from agentscope_proto.errors import FormatError, ParseError
from agentscope_proto.formatting import format
from agentscope_proto.options import format_settings_from_proto, parse_settings_from_proto
from agentscope_proto.providers import PROVIDERS, PROVIDERS_BY_ENUM
from agentscope_proto.providers._provider import ProviderFidelity, Variant
from provider_schemas.cases import MUST_FAIL, MUST_PASS
from provider_schemas.golden import REQUESTS
from provider_schemas.validators import VALIDATORS

from golden_data import GOLDEN, formatter_cases, parser_cases

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
PACKAGE = ROOT / "python" / "agentscope_proto"
NAMES = sorted(PROVIDERS)


def _agentscope(name: str) -> bool:
    """Whether AgentScope 1.0.21 has the provider (it has that variant)."""
    return "agentscope" in PROVIDERS[name].variants


@functools.cache
def _bench_common() -> ModuleType:
    """bench/_common.py (the benchmarks' own, not on the tests' path)."""
    spec = importlib.util.spec_from_file_location("bench_common", ROOT / "bench" / "_common.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _table_rows(path: Path) -> list[list[str]]:
    """The cells of the Markdown table rows of `path`."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("| ") and not line.startswith("| ---"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def test_every_enum_value_is_a_provider_and_back() -> None:
    values = {value for value in pb.Provider.values() if value != pb.PROVIDER_UNSPECIFIED}
    assert set(PROVIDERS_BY_ENUM) == values
    assert [int(p.enum) for p in PROVIDERS.values()] == sorted(values)


@pytest.mark.parametrize("name", NAMES)
def test_its_enum_value_and_module(name: str) -> None:
    provider = PROVIDERS[name]
    assert pb.Provider.Name(provider.enum) == f"PROVIDER_{name.upper()}"
    assert (PACKAGE / "providers" / f"{name}.py").is_file()
    module = importlib.import_module(f"agentscope_proto.providers.{name}")
    assert module.PROVIDER is provider


@pytest.mark.parametrize("name", NAMES)
def test_its_variants(name: str) -> None:
    """The provider's own variant always; AgentScope 1.0.21's where it has the
    provider, and otherwise a clear error, never a silent fallback."""
    provider = PROVIDERS[name]
    assert set(provider.variants) <= {"agentscope", "provider"}
    assert isinstance(provider.variant("provider"), ProviderFidelity)
    if _agentscope(name):
        parity = provider.variant("agentscope")
        assert isinstance(parity, Variant)
        assert not isinstance(parity, ProviderFidelity)
        return
    msgs = [{"name": "user", "role": "user", "content": "Hi"}]
    with pytest.raises(FormatError, match=r"^fidelity: AgentScope 1\.0\.21 has no"):
        format(name, msgs, fidelity="agentscope")
    with pytest.raises(ParseError, match=r"^fidelity: AgentScope 1\.0\.21 has no"):
        parse(name, {}, fidelity="agentscope")
    with pytest.raises(ParseError, match=r"^fidelity: AgentScope 1\.0\.21 has no"):
        StreamParser(name, fidelity="agentscope")


@pytest.mark.parametrize("name", NAMES)
def test_its_default_fidelity(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A call that names no fidelity gets AgentScope 1.0.21's where it has the
    provider and the provider's own where it has not: in Python, through the
    proto options (FIDELITY_UNSPECIFIED) and on the CLI."""
    default = "agentscope" if _agentscope(name) else "provider"
    assert PROVIDERS[name].default_fidelity == default
    msgs = [{"name": "user", "role": "user", "content": "Hi"}]
    expected = dict(format(name, msgs, fidelity=default))
    assert dict(format(name, msgs)) == expected
    settings = format_settings_from_proto(pb.FormatOptions(), multi_agent=False)
    assert dict(format(name, msgs, settings=settings)) == expected
    # Parsing: StreamParser's first result is made before any event is read.
    unspecified = parse_settings_from_proto(pb.ParseOptions())
    assert StreamParser(name, settings=unspecified).finish().content == (
        StreamParser(name, fidelity=default).finish().content
    )
    with (
        pytest.raises(ParseError, match=r"^fidelity: AgentScope 1\.0\.21 has no")
        if (default == "provider")
        else nullcontext()
    ):
        StreamParser(name, fidelity="agentscope")
    conversation = tmp_path / "conversation.json"
    conversation.write_text(json.dumps(msgs))
    main(["format", "--provider", name, str(conversation)])
    assert json.loads(capsys.readouterr().out) == expected


@pytest.mark.parametrize("name", NAMES)
def test_its_golden_data_or_its_own_cases(name: str) -> None:
    """Golden data generated from AgentScope 1.0.21 where it has the provider
    (and the benchmarks know its formatters); its own tests, with its
    provider-fidelity cases, for every provider."""
    assert (TESTS / "providers" / f"test_{name}.py").is_file()
    golden = [GOLDEN / kind / f"{name}.json" for kind in ("formatters", "parsers")]
    if not _agentscope(name):
        assert not any(path.exists() for path in golden)
        return
    assert formatter_cases(name)
    assert parser_cases(name)
    assert name in _bench_common().AGENTSCOPE_FORMATTERS


@pytest.mark.parametrize("name", NAMES)
def test_its_body_validator_and_request(name: str) -> None:
    assert callable(VALIDATORS[name])
    assert set(REQUESTS[name]) == {"model", "max_output_tokens"}


@pytest.mark.parametrize("name", NAMES)
def test_its_validator_self_test_cases(name: str) -> None:
    """A body its validator must pass and one it must fail: a validator that
    accepted everything (or nothing) would otherwise go unnoticed."""
    for table, cases in (("MUST_PASS", MUST_PASS), ("MUST_FAIL", MUST_FAIL)):
        assert any(case.provider == name for case in cases.values()), (
            f"tests/provider_schemas/cases.py: {table} has no case for provider {name!r}"
        )


@pytest.mark.parametrize("name", NAMES)
def test_its_cli_entry(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conversation = tmp_path / "conversation.json"
    conversation.write_text(json.dumps([{"name": "user", "role": "user", "content": "Hi"}]))
    main(["format", "--provider", name, "--fidelity", "provider", str(conversation)])
    body: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert body
    response = tmp_path / "response.json"
    response.write_text("{}")
    with pytest.raises(SystemExit) as caught:
        main(["parse", "--provider", "no-such-provider", str(response)])
    assert caught.value.code != 0
    assert name in capsys.readouterr().err


@pytest.mark.parametrize("name", NAMES)
def test_its_docs_rows(name: str) -> None:
    """A row in docs/providers.md's table (with its enum value), a column in
    docs/request-params.md's."""
    providers = {row[0]: row for row in _table_rows(ROOT / "docs" / "providers.md")}
    assert f"`{name}`" in providers
    assert providers[f"`{name}`"][1] == f"`PROVIDER_{name.upper()}`"
    header = next(
        row for row in _table_rows(ROOT / "docs" / "request-params.md") if row[0] == "parameter"
    )
    assert f"`{name}`" in header


def test_the_docs_list_no_provider_the_registry_lacks() -> None:
    rows = _table_rows(ROOT / "docs" / "providers.md")
    documented = [row[0].strip("`") for row in rows if re.fullmatch(r"`[a-z_]+`", row[0])]
    assert sorted(documented) == NAMES


# The hand-written per-provider tables of other test files: (file, the name the
# table is bound to, whether every provider has a row or only those AgentScope
# 1.0.21 has). A function's name stands for the dict its `return` indexes.
HAND_WRITTEN_TABLES = [
    ("tests/test_request_params.py", "MODELS", "every"),
    ("tests/test_request_params.py", "_written", "every"),
    ("tests/test_request_params.py", "REFUSED", "every"),
    ("tests/test_request_params.py", "BUDGETS", "agentscope"),
    ("tests/providers/test_fidelity_schemas.py", "own", "every"),
    ("tests/providers/test_fidelity.py", "_NEEDS_A_MESSAGE", "every"),
    ("tests/test_parse_api.py", "ERROR_BODIES", "every"),
    ("tests/test_structured_output_options.py", "TAKING", "every"),
    ("tests/test_server.py", "PROVIDERS", "agentscope"),
]


def _bound_literal(tree: ast.Module, name: str) -> ast.expr | None:
    """The literal `name` is bound to (anywhere in the module, a function's
    locals included), or the literal a function called `name` returns indexed."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == name for target in node.targets
        ):
            return node.value
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == name
        ):
            return node.value
        if isinstance(node, ast.FunctionDef) and node.name == name:
            for inner in ast.walk(node):
                if isinstance(inner, ast.Return) and isinstance(inner.value, ast.Subscript):
                    return inner.value.value
    return None


def _table_keys(path: Path, name: str) -> set[str]:
    """The provider names a hand-written table (dict, set or list literal) has."""
    literal = _bound_literal(ast.parse(path.read_text(encoding="utf-8")), name)
    if isinstance(literal, ast.Dict):
        items = [key for key in literal.keys if key is not None]
    elif isinstance(literal, ast.Set | ast.List | ast.Tuple):
        items = list(literal.elts)
    else:
        raise AssertionError(f"{path.relative_to(ROOT)}: no dict, set or list literal {name}")
    return {item.value for item in items if isinstance(item, ast.Constant)}


@pytest.mark.parametrize(
    ("file", "table", "rows"), HAND_WRITTEN_TABLES, ids=[t[1] for t in HAND_WRITTEN_TABLES]
)
def test_its_rows_in_the_hand_written_tables(file: str, table: str, rows: str) -> None:
    """Tables the tests write out by hand, not read from the package: a
    provider without its row would go untested there (or fail with a bare
    KeyError), and a row for no provider is stale."""
    expected = set(NAMES) if rows == "every" else {n for n in NAMES if _agentscope(n)}
    found = _table_keys(ROOT / file, table)
    missing, stale = sorted(expected - found), sorted(found - expected)
    assert not missing, f"{file}: {table} has no row for {', '.join(missing)}"
    assert not stale, f"{file}: {table} has rows for no such provider: {', '.join(stale)}"
