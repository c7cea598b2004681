"""What a user installs: the wheel and sdist carry the code, stubs, schema and licence.

Both are built offline with the installed hatchling (the build backend, in the
dev extra) through its PEP 517 hooks, into a temporary directory.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import agentscope_proto
from agentscope_proto._version import __version__

ROOT = Path(__file__).resolve().parents[1]
PROTOS = sorted(p.relative_to(ROOT / "proto").as_posix() for p in (ROOT / "proto").rglob("*.proto"))

pytest.importorskip("hatchling", reason="hatchling (the dev extra) builds the distributions")


def _build(kind: str, out: Path) -> Path:
    hook = f"from hatchling.build import build_{kind}; print(build_{kind}({str(out)!r}))"
    done = subprocess.run(
        [sys.executable, "-c", hook], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return out / done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    path = _build("wheel", tmp_path_factory.mktemp("wheel"))
    assert path.name == f"agentscope_proto-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(path) as wheel:
        return set(wheel.namelist())


@pytest.fixture(scope="module")
def sdist_names(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    path = _build("sdist", tmp_path_factory.mktemp("sdist"))
    assert path.name == f"agentscope_proto-{__version__}.tar.gz"
    with tarfile.open(path) as sdist:
        prefix = f"agentscope_proto-{__version__}/"
        return {name.removeprefix(prefix) for name in sdist.getnames()}


def test_the_proto_tree_is_not_empty() -> None:
    assert "agentscope/message/v1/message.proto" in PROTOS
    assert "agentscope/formatter/v1/formatter_service.proto" in PROTOS


def test_wheel_carries_types_generated_code_and_schema(wheel_names: set[str]) -> None:
    assert "agentscope_proto/py.typed" in wheel_names
    assert "agentscope_proto/_version.py" in wheel_names
    generated = ROOT / "python" / "agentscope_proto" / "_generated"
    for path in generated.rglob("*.py*"):
        if "__pycache__" not in path.parts:
            name = path.relative_to(ROOT / "python").as_posix()
            assert name in wheel_names, name
    for proto in PROTOS:
        assert f"agentscope_proto/proto/{proto}" in wheel_names, proto
    dist_info = f"agentscope_proto-{__version__}.dist-info"
    assert any(n.startswith(f"{dist_info}/") and n.endswith("LICENSE") for n in wheel_names)
    # Nothing from the repository around the package (tests, bench, build output).
    assert all(n.startswith(("agentscope_proto/", dist_info)) for n in wheel_names)


def test_sdist_carries_sources_schema_and_licence(sdist_names: set[str]) -> None:
    for name in ("LICENSE", "README.md", "pyproject.toml", "python/agentscope_proto/py.typed"):
        assert name in sdist_names, name
    for proto in PROTOS:
        assert f"proto/{proto}" in sdist_names, proto
    assert not any(n.startswith(("tests/", "bench/", "build/", ".venv")) for n in sdist_names)


def test_version_has_one_source() -> None:
    assert agentscope_proto.__version__ == __version__
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in pyproject
    assert f'"{__version__}"' not in pyproject


def test_version_from_the_command_line() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import agentscope_proto; print(agentscope_proto.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == __version__


def _install_block() -> list[list[str]]:
    """The `pip` commands of README's "Installing the package elsewhere", as argument lists."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("### Installing the package elsewhere") :]
    start = section.index("```sh\n") + len("```sh\n")
    block = section[start : section.index("```", start)]
    lines = [line.split(" #", 1)[0] for line in block.splitlines()]
    return [shlex.split(line) for line in lines if line.startswith("pip ")]


def test_the_readme_install_commands_work_from_a_clone(tmp_path: Path) -> None:
    """Each `pip` command as written, run offline (no index, the installed build
    backend, no dependencies: those are this venv's) against this checkout."""
    (tmp_path / "agentscope-proto").symlink_to(ROOT)
    commands = _install_block()
    assert [command[:2] for command in commands] == [
        ["pip", "install"],
        ["pip", "wheel"],
        ["pip", "install"],
    ]
    offline = ["--no-index", "--no-build-isolation", "--quiet", "--disable-pip-version-check"]
    for index, command in enumerate(commands):
        extra = (
            ["--no-deps", "--target", str(tmp_path / f"site{index}")]
            if command[1] == "install"
            else []
        )
        done = subprocess.run(
            [sys.executable, "-m", *command, *offline, *extra],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        if command[1] == "install":
            check = "import agentscope_proto as a, agentscope_proto.message as m; print(a.__file__)"
            shown = subprocess.run(
                [sys.executable, "-c", check],
                env={**os.environ, "PYTHONPATH": str(tmp_path / f"site{index}")},
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert shown.stdout.startswith(str(tmp_path / f"site{index}")), shown.stderr
    assert (tmp_path / "dist" / f"agentscope_proto-{__version__}-py3-none-any.whl").is_file()
