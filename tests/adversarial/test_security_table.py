"""SECURITY.md's "Surfaces and limits" table: every row names at least one
test, and every test it names exists (read from the test files' syntax
trees, so that tests of another venv, tests/agentscope2/, count too)."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Surfaces and limits"
COLUMNS = ["surface", "a caller makes the server", "limit (default)", "tests"]
NODE = re.compile(r"`([^`]+)`")


def table_rows(text: str) -> list[list[str]]:
    """The cells of the section's table, header and separator left off."""
    section = text.split(SECTION + "\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines]
    assert rows[0] == COLUMNS, rows[0]
    return rows[2:]


@cache
def _tests_in(path: Path) -> frozenset[str]:
    """The node ids (`Class::test` or `test`) of the test functions in `path`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    for node in tree.body:
        if isinstance(node, functions) and node.name.startswith("test"):
            found.add(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for item in node.body:
                if isinstance(item, functions) and item.name.startswith("test"):
                    found.add(f"{node.name}::{item.name}")
    return frozenset(found)


def problems(row: list[str]) -> list[str]:
    """What is wrong with a row: no test named, or a named test that does not exist."""
    if len(row) != len(COLUMNS):
        return [f"{len(row)} cells, not {len(COLUMNS)}"]
    nodes = NODE.findall(row[-1])
    if not nodes:
        return ["names no test"]
    out = []
    for node in nodes:
        file, _, name = node.partition("::")
        path = ROOT / file
        if not (file.startswith("tests/") and path.is_file() and name):
            out.append(f"{node}: not a test file's node id")
        elif name not in _tests_in(path):
            out.append(f"{node}: no such test")
    return out


def test_every_row_names_tests_that_exist() -> None:
    rows = table_rows((ROOT / "SECURITY.md").read_text(encoding="utf-8"))
    assert len(rows) >= 30
    found = {f"{row[0]} / {row[1]}": problems(row) for row in rows}
    assert {row: bad for row, bad in found.items() if bad} == {}


def test_every_surface_has_rows() -> None:
    rows = table_rows((ROOT / "SECURITY.md").read_text(encoding="utf-8"))
    surfaces = " ".join(row[0] for row in rows)
    for surface in ("formatter gRPC", "formatter HTTP", "AgentService", "hub gRPC", "A2A"):
        assert surface in surfaces


@pytest.mark.parametrize(
    ("tests", "problem"),
    [
        ("", "names no test"),
        ("the SSRF tests", "names no test"),
        ("`tests/adversarial/test_adv_rpc.py::test_no_such_thing`", "no such test"),
        ("`tests/nowhere.py::test_it`", "not a test file's node id"),
        ("`SECURITY.md`", "not a test file's node id"),
    ],
)
def test_a_row_without_a_real_test_is_caught(tests: str, problem: str) -> None:
    (found,) = problems(["hub gRPC", "allocate something", "none", tests])
    assert found.endswith(problem)


def test_a_test_of_the_agentscope2_venv_counts() -> None:
    row = [
        "A2A gRPC",
        "read",
        "none",
        "`tests/agentscope2/test_surface_limits.py::"
        "test_an_a2a_grpc_request_over_the_size_limit_is_resource_exhausted`",
    ]
    assert problems(row) == []
