"""The package's layout rules, checked on its source (README, "Layout"):

- no import cycle among its modules (counting every import: at module level,
  in functions, and under `TYPE_CHECKING`), nor among its top-level parts;
- below the one place each call chooses its variant, no code asks which
  fidelity it runs in: the provider modules and the format engine never read
  a `fidelity` attribute nor compare a fidelity name;
- one rule for underscores: a module without one is public, and the README's
  Layout table names it; `providers/` holds one public module per provider
  and nothing else public.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from agentscope_proto.providers import PROVIDERS

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "agentscope_proto"
FIDELITIES = {"agentscope", "provider"}


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def _modules() -> dict[str, Path]:
    """Every hand-written module of the package, by dotted name."""
    return {
        _name(path): path
        for path in sorted(PACKAGE.rglob("*.py"))
        if "_generated" not in path.relative_to(PACKAGE).parts
    }


def _is_package(name: str) -> bool:
    return _modules()[name].name == "__init__.py"


def _imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import of a module: at its top, in functions, and those only
    type checkers see (a cycle deferred to a function or hidden from the
    interpreter is still a cycle in the design)."""
    return [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


def _edges(name: str) -> set[str]:
    """The package's modules `name` imports, wherever it does."""
    tree = ast.parse(_modules()[name].read_text(encoding="utf-8"))
    here = name if _is_package(name) else name.rpartition(".")[0]
    edges = set()
    for node in _imports(tree):
        if isinstance(node, ast.Import):
            edges |= {alias.name for alias in node.names}
            continue
        base = node.module or ""
        if node.level:
            anchor = here.split(".")
            anchor = anchor[: len(anchor) - node.level + 1]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:
            module = f"{base}.{alias.name}"
            edges.add(module if module in _modules() else base)
    return {edge for edge in edges if edge in _modules() and edge != name}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for child in sorted(graph[node]):
            if child not in index:
                visit(child)
                low[node] = min(low[node], low[child])
            elif child in on_stack:
                low[node] = min(low[node], index[child])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_module_imports_itself_back() -> None:
    graph = {name: _edges(name) for name in _modules()}
    assert _cycles(graph) == []


def _part(name: str) -> str:
    """The top-level part of the package a module belongs to."""
    parts = name.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else name


def test_no_part_of_the_package_imports_itself_back() -> None:
    """Between the package's parts (its subpackages and top-level modules):
    the engine below the providers, the providers below format()."""
    graph: dict[str, set[str]] = {}
    for name in _modules():
        if name == "agentscope_proto":
            continue  # the package's face imports every part
        edges = {_part(edge) for edge in _edges(name)} - {"agentscope_proto"}
        edges -= KNOWN_BACK_EDGES.get(name, set())
        graph.setdefault(_part(name), set()).update(edges - {_part(name)})
    assert _cycles(graph) == []


# The one cycle between parts not broken yet, edge by edge: `a2a` builds on
# `agents`, and two entry points of `agents` reach back up to it, in
# functions, for the optional A2A extra (RemoteAgent on an A2A URL,
# serve_agent(a2a=...)). Breaking it moves those entry points (or the A2A
# choice) above both parts. Listed so that any other back edge fails.
KNOWN_BACK_EDGES = {
    "agentscope_proto.agents.remote": {"agentscope_proto.a2a"},
    "agentscope_proto.agents.server": {"agentscope_proto.a2a"},
}


def test_the_known_back_edges_are_still_there() -> None:
    """Once one is gone, its entry above must go too."""
    for name, parts in KNOWN_BACK_EDGES.items():
        assert parts <= {_part(edge) for edge in _edges(name)}, name


def _checked_for_fidelity() -> list[str]:
    return [
        name
        for name in _modules()
        if name.startswith(("agentscope_proto.providers.", "agentscope_proto._engine"))
    ]


@pytest.mark.parametrize("name", _checked_for_fidelity())
def test_no_fidelity_is_compared_below_the_choice(name: str) -> None:
    tree = ast.parse(_modules()[name].read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            assert node.attr != "fidelity", f"{name}:{node.lineno} reads .fidelity"
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            names = {o.value for o in operands if isinstance(o, ast.Constant)}
            assert not names & FIDELITIES, f"{name}:{node.lineno} compares a fidelity name"


def test_every_public_module_is_in_the_layout_table() -> None:
    layout = (ROOT / "README.md").read_text(encoding="utf-8").split("## Layout", 1)[1]
    table = layout.split("\n\n", 2)[1]
    public = [
        path.relative_to(PACKAGE.parent)
        for name, path in _modules().items()
        if not any(part.startswith("_") for part in name.split(".")[1:])
        and path.name != "__init__.py"
    ]
    missing = [str(path) for path in public if not _in_table(path, table)]
    assert missing == []


def _in_table(path: Path, table: str) -> bool:
    """Whether the Layout table names the module, its package, or (a
    provider's) `providers/<name>.py`."""
    if path.name in table or f"python/{path.parent}/`" in table:
        return True
    return path.parent.name == "providers" and "providers/<name>.py" in table


def test_the_providers_public_modules_are_the_providers() -> None:
    public = {
        path.stem for path in (PACKAGE / "providers").glob("*.py") if not path.stem.startswith("_")
    }
    assert public == set(PROVIDERS)
