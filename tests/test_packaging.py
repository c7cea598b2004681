"""What a user installs: the wheel and sdist carry the code, stubs, schema and licence,
and every extra of the wheel installs.

Both are built offline with the installed hatchling (the build backend, in the
dev extra) through its PEP 517 hooks, into a temporary directory. The tests
marked `pypi` resolve the wheel's extras on PyPI with this venv's pip on the
oldest and newest supported Pythons (network, about a minute: `make
test-packaging`, in ci-extra).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

import agentscope_proto
from agentscope_proto._version import __version__

from needs import require

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PROTOS = sorted(p.relative_to(ROOT / "proto").as_posix() for p in (ROOT / "proto").rglob("*.proto"))

pytest.importorskip("hatchling", reason="hatchling (the dev extra) builds the distributions")


def _build(kind: str, out: Path, env: dict[str, str] | None = None) -> Path:
    hook = f"from hatchling.build import build_{kind}; print(build_{kind}({str(out)!r}))"
    done = subprocess.run(
        [sys.executable, "-c", hook],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env=None if env is None else {**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr
    return out / done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = _build("wheel", tmp_path_factory.mktemp("wheel"))
    # Its tag: this platform's with the compiled core, else py3-none-any (tests/test_core_build.py).
    assert path.name.startswith(f"agentscope_proto-{__version__}-"), path.name
    return path


@pytest.fixture(scope="module")
def pure_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel without the compiled core (the same metadata, any CPython): what
    resolves on the other Pythons, where this one's platform wheel does not install."""
    path = _build("wheel", tmp_path_factory.mktemp("pure"), {"AGENTSCOPE_PROTO_BUILD_CORE": "0"})
    assert path.name.endswith("-py3-none-any.whl"), path.name
    return path


@pytest.fixture(scope="module")
def wheel_names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as opened:
        return set(opened.namelist())


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
    # Nothing from the repository around the package (tests, bench, build output), nor the
    # compiled core's C source (the sdist's).
    assert all(n.startswith(("agentscope_proto/", dist_info)) for n in wheel_names)
    assert "agentscope_proto/_ccore.c" not in wheel_names


def test_sdist_carries_sources_schema_and_licence(sdist_names: set[str]) -> None:
    for name in ("LICENSE", "README.md", "pyproject.toml", "python/agentscope_proto/py.typed"):
        assert name in sdist_names, name
    # The compiled core's source (every part), and the build hook and script that compile it.
    package = ROOT / "python"
    parts = [
        p.relative_to(ROOT).as_posix() for p in (package / "agentscope_proto").glob("_ccore/*.h")
    ]
    assert parts
    for name in (
        "python/agentscope_proto/_ccore.c",
        *parts,
        "hatch_build.py",
        "scripts/build_core.py",
    ):
        assert name in sdist_names, name
    for proto in PROTOS:
        assert f"proto/{proto}" in sdist_names, proto
    assert not any(n.startswith(("tests/", "bench/", "build/", ".venv")) for n in sdist_names)
    # Nor a module built in place (`make core`): it is this machine's.
    assert not any(n.endswith((".so", ".pyd")) for n in sdist_names)


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
    backend, no dependencies: those are this venv's) against this checkout. The
    wheel's name in the README is an example (its tag is the platform's where the
    compiled core is built): the last command installs the wheel the one before built."""
    (tmp_path / "agentscope-proto").symlink_to(ROOT)
    commands = _install_block()
    assert [command[:2] for command in commands] == [
        ["pip", "install"],
        ["pip", "wheel"],
        ["pip", "install"],
    ]
    offline = ["--no-index", "--no-build-isolation", "--quiet", "--disable-pip-version-check"]
    example = re.compile(rf"dist/agentscope_proto-{re.escape(__version__)}-[\w.-]+\.whl(\[.*\])")
    for index, command in enumerate(commands):
        if command[:2] == ["pip", "install"] and index > 0:
            (built,) = (tmp_path / "dist").glob("*.whl")
            (named,) = (example.fullmatch(argument) for argument in command[2:])
            assert named is not None, command
            command = ["pip", "install", f"dist/{built.name}{named.group(1)}"]
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
    assert len(list((tmp_path / "dist").glob(f"agentscope_proto-{__version__}-*.whl"))) == 1


# The extras' metadata: hatchling flattens an extra that names the package
# itself into the wheel, and drops that reference's own marker.

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
EXTRAS: dict[str, list[str]] = PROJECT["optional-dependencies"]
# Alternatives, never installed together: on 3.11+ `agentscope` asks for 2.x and
# `agentscope1` for 1.x. All the user extras together is each of these with the rest.
ALTERNATIVES = ("agentscope", "agentscope1")
USER_EXTRAS = sorted(set(EXTRAS) - {"dev", *ALTERNATIVES})
EXTRA_SETS = [
    *sorted(EXTRAS),
    *(",".join(sorted([*USER_EXTRAS, alternative])) for alternative in ALTERNATIVES),
]


def _pythons() -> list[str]:
    """The oldest and newest supported Pythons, from the classifiers."""
    listed = [
        c.rsplit(" :: ", 1)[1]
        for c in PROJECT["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    ]
    ordered = sorted(listed, key=lambda v: tuple(map(int, v.split("."))))
    return [ordered[0], ordered[-1]]


def test_the_oldest_python_listed_is_the_one_required() -> None:
    assert PROJECT["requires-python"] == f">={_pythons()[0]}"


def test_no_extra_names_the_package_itself_under_a_marker() -> None:
    """hatchling would drop the marker: the wheel would ask for that extra everywhere."""
    from packaging.requirements import Requirement

    for extra, lines in EXTRAS.items():
        for line in lines:
            requirement = Requirement(line)
            if requirement.name == PROJECT["name"]:
                assert requirement.marker is None, f"{extra}: {line}"


def _wheel_requirements(wheel: Path, extra: str, python: str) -> list[str]:
    """The wheel's requirements that apply with `extra` on `python`, as written."""
    from packaging.requirements import Requirement

    with zipfile.ZipFile(wheel) as opened:
        name = next(n for n in opened.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(opened.read(name).decode("utf-8"))
    applying = []
    for line in metadata.get_all("Requires-Dist") or []:
        requirement = Requirement(line)
        marker = requirement.marker
        if marker is None or marker.evaluate({"extra": extra, "python_version": python}):
            applying.append(f"{requirement.name}{requirement.specifier}")
    return sorted(applying)


@pytest.mark.parametrize("python", _pythons())
def test_the_wheel_asks_for_one_agentscope_per_python(wheel: Path, python: str) -> None:
    for extra in ALTERNATIVES:
        applying = _wheel_requirements(wheel, extra, python)
        asked = [r for r in applying if r.startswith("agentscope<")]
        assert len(asked) == 1, (extra, python, asked)
    base = set(_wheel_requirements(wheel, "", python))
    one = set(_wheel_requirements(wheel, "agentscope1", python)) - base
    both = set(_wheel_requirements(wheel, "agentscope", python)) - base
    # Before 3.11 (AgentScope 2.x needs it) `agentscope` is `agentscope1`, spelled out.
    before_2x = tuple(map(int, python.split("."))) < (3, 11)
    assert (both == one) is before_2x, (both, one)


def _interpreter(version: str) -> str | None:
    """A working `python<version>`: on PATH, else under pyenv's versions."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = [shutil.which(f"python{version}")]
    candidates += sorted(str(p) for p in pyenv.glob(f"{version}.*/bin/python{version}"))
    for candidate in candidates:
        if candidate is None:
            continue
        shown = subprocess.run(
            [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if shown.returncode == 0 and shown.stdout.strip() == version:
            return candidate
    return None


def _pip(python: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    """This venv's pip (the newest, `make setup` upgrades it) run for `python`.
    A real interpreter, not `--python-version`: pip evaluates the markers of a
    dependency with the running Python, whatever version it is told to pick for."""
    return subprocess.run(
        [
            *(sys.executable, "-m", "pip", "--python", python, "--disable-pip-version-check"),
            *("install", "--dry-run", "--quiet", "--ignore-installed", *arguments),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module", params=_pythons())
def python(request: pytest.FixtureRequest) -> str:
    version: str = request.param
    found = _interpreter(version)
    require(found is not None, f"needs python{version} (on PATH or under pyenv) to resolve on it")
    assert found is not None
    probe = _pip(found, "--no-deps", "filetype==1.2.0")
    require(probe.returncode == 0, f"needs PyPI through pip: {probe.stderr.strip()[-200:]}")
    return found


@pytest.mark.pypi
@pytest.mark.parametrize("extras", EXTRA_SETS)
def test_every_extra_of_the_wheel_resolves(pure_wheel: Path, python: str, extras: str) -> None:
    done = _pip(python, f"{pure_wheel}[{extras}]")
    errors = [line for line in done.stderr.splitlines() if not line.startswith("WARNING")]
    assert done.returncode == 0, "\n".join(errors[-20:])
