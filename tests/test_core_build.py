"""The compiled core's build (hatch_build.py runs scripts/build_core.py): a
wheel built where a C compiler is carries `agentscope_proto/_ccore<EXT_SUFFIX>`
and this platform's tag, and formats with it; one built without a compiler is
pure Python, formats the same on the Python path and says so once at DEBUG.

The wheels are built by pip from this checkout offline (no index, this venv's
hatchling) and installed into a fresh venv whose dependencies are this venv's
(a .pth, after the fresh venv's own site-packages): 3 s for the two. The
script's own checks use a stand-in compiler and take no time.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path
from types import ModuleType

import pytest
from packaging import tags

from agentscope_proto import format, new_msg
from agentscope_proto._version import __version__

from needs import require

ROOT = Path(__file__).resolve().parents[1]
SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")
OFFLINE = ("--no-index", "--no-build-isolation", "--disable-pip-version-check")
# Run in the fresh venv: the package's file, whether the core is built, a
# format() call's body, and the counts of the paths it took; logging at DEBUG.
PROBE = """
import json, logging, sys
logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="%(name)s: %(message)s")
import agentscope_proto
from agentscope_proto import _core, format, new_msg
msgs = [new_msg("user", "Hi", "user"), new_msg("Friday", "Hello", "assistant")]
bodies = [dict(format("openai", msgs, request={"model": "gpt-4.1"})) for _ in range(2)]
print(json.dumps([agentscope_proto.__file__, _core.available(), bodies, _core.counts()]))
"""

pytest.importorskip("hatchling", reason="hatchling (the dev extra) builds the wheels")


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_core", ROOT / "scripts" / "build_core.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build_core = _script()


def _expected_bodies() -> list[dict[str, object]]:
    msgs = [new_msg("user", "Hi", "user"), new_msg("Friday", "Hello", "assistant")]
    return [dict(format("openai", msgs, request={"model": "gpt-4.1"}))] * 2


def _pip(*arguments: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", *arguments],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    """A fresh venv's python, which sees this venv's packages after its own."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")],
        check=True,
        timeout=120,
    )
    python = tmp_path / "venv" / "bin" / "python"
    own = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    ours = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    (Path(own) / "zz_this_venvs_packages.pth").write_text("\n".join(ours) + "\n")
    return python


def _probe(python: Path) -> tuple[list[object], str]:
    done = subprocess.run(
        [python, "-c", PROBE],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={k: v for k, v in os.environ.items() if k != "AGENTSCOPE_PROTO_CORE"},
    )
    assert done.returncode == 0, done.stderr
    shown: list[object] = json.loads(done.stdout)
    return shown, done.stderr


def _installed_here(shown: list[object], python: Path) -> None:
    assert str(shown[0]).startswith(str(python.parents[1])), shown[0]


def test_a_wheel_built_with_a_compiler_carries_the_core(tmp_path: Path, venv: Path) -> None:
    try:
        build_core.command(tmp_path / "probe.so")
    except build_core.NotBuilt as exc:
        require(False, f"needs a C compiler and Python's headers to build the core: {exc}")
    env = {k: v for k, v in os.environ.items() if k != build_core.SWITCH}
    done = _pip(
        "wheel", "--no-deps", "--quiet", *OFFLINE, "-w", str(tmp_path / "dist"), str(ROOT), env=env
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    tag = wheel.name.removeprefix(f"agentscope_proto-{__version__}-").removesuffix(".whl")
    assert tag.startswith(f"{tags.interpreter_name()}{tags.interpreter_version()}-"), tag
    with zipfile.ZipFile(wheel) as opened:
        names = opened.namelist()
        metadata = opened.read(f"agentscope_proto-{__version__}.dist-info/WHEEL").decode()
    # The module, and nothing else of the C file's (not the source, no partial build).
    assert [n for n in names if "_ccore" in n] == [f"agentscope_proto/_ccore{SUFFIX}"]
    assert "Root-Is-Purelib: false" in metadata
    installed = _pip("--python", str(venv), "install", "--no-deps", "--quiet", *OFFLINE, str(wheel))
    assert installed.returncode == 0, installed.stderr
    shown, _ = _probe(venv)
    _installed_here(shown, venv)
    assert shown[1:] == [True, _expected_bodies(), {"openai:compiled": 2}]


def test_an_install_without_a_compiler_runs_in_python(tmp_path: Path, venv: Path) -> None:
    (tmp_path / "bin").mkdir()
    hidden = {k: v for k, v in os.environ.items() if k not in ("LDSHARED", build_core.SWITCH)}
    hidden |= {"CC": "/nonexistent/cc", "PATH": str(tmp_path / "bin")}
    done = _pip(
        "--python", str(venv), "install", "--no-deps", "-v", *OFFLINE, str(ROOT), env=hidden
    )
    assert done.returncode == 0, done.stderr
    said = [line for line in (done.stdout + done.stderr).splitlines() if "core not built" in line]
    assert len(said) == 1, said
    assert "no C compiler: '/nonexistent/cc' not found" in said[0]
    (record,) = Path(venv.parents[1], "lib").glob("python*/site-packages/agentscope_proto-*/WHEEL")
    assert "Tag: py3-none-any" in record.read_text()
    assert not list(record.parents[1].glob("agentscope_proto/_ccore*"))
    shown, logged = _probe(venv)
    _installed_here(shown, venv)
    assert shown[1:] == [False, _expected_bodies(), {}]
    assert logged.count("compiled core not built") == 1, logged


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A shell script standing in for the C compiler (its body written by the
    test), as CC, with this Python's configuration replaced by a known one."""
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "Python.h").touch()
    config = {
        "CC": "gcc",
        "LDSHARED": "gcc -shared -L/lib",
        "CFLAGS": "-O3 -Wall",
        "CCSHARED": "-fPIC",
        "INCLUDEPY": str(tmp_path / "include"),
        "EXT_SUFFIX": SUFFIX,
    }
    monkeypatch.setattr(build_core.sysconfig, "get_config_var", config.get)
    for name in ("LDSHARED", "CFLAGS", build_core.SWITCH):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CC", str(tmp_path / "cc"))
    return tmp_path / "cc"


def _compiler(path: Path, body: str) -> None:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def test_cc_ldshared_and_cflags_from_the_environment(
    tmp_path: Path, stand_in: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As distutils did: CC replaces the compiler (in the link command too),
    LDSHARED the link command, CFLAGS adds flags."""
    _compiler(stand_in, "exit 0")
    monkeypatch.setenv("CFLAGS", "-O0 -g")
    out = tmp_path / "out.so"
    assert build_core.command(out) == [
        *(str(stand_in), "-shared", "-L/lib", "-O3", "-Wall", "-O0", "-g", "-fPIC"),
        *(f"-I{tmp_path / 'include'}", str(build_core.SOURCE), "-o", str(out)),
    ]
    monkeypatch.setenv("LDSHARED", f"{stand_in} -bundle")
    assert build_core.command(out)[:2] == [str(stand_in), "-bundle"]
    monkeypatch.delenv("LDSHARED")
    stand_in.unlink()
    with pytest.raises(build_core.NotBuilt, match="no C compiler") as missing:
        build_core.command(out)
    assert missing.value.missing


def test_a_module_is_replaced_only_by_a_complete_one(
    tmp_path: Path, stand_in: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A compiler that fails leaves the module there as it was and nothing
    else: `make core` (the script) fails with the compiler's output (the tests
    must not run an older module), a wheel's build says so in one line and
    goes on without it. One that works replaces it, with nothing left over."""
    out = tmp_path / "out"
    out.mkdir()
    module = out / f"_ccore{SUFFIX}"
    module.write_text("old")
    _compiler(stand_in, 'echo "_ccore.c:1:1: error: broken" >&2; exit 1')
    assert build_core.main(["--out-dir", str(out)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "_ccore.c:1:1: error: broken",
        "core: not built (cc exited with 1: _ccore.c:1:1: error: broken)",
    ]
    assert build_core.build(out) is None
    assert capsys.readouterr().err == (
        "agentscope-proto: compiled core not built (cc exited with 1: _ccore.c:1:1: error: "
        "broken): format() runs in Python\n"
    )
    assert [(p.name, p.read_text()) for p in out.iterdir()] == [(module.name, "old")]
    _compiler(stand_in, 'for last; do :; done; echo new > "$last"')
    assert build_core.main(["--out-dir", str(out)]) == 0
    assert capsys.readouterr().out == f"core: built {os.path.relpath(module)}\n"
    assert [(p.name, p.read_text()) for p in out.iterdir()] == [(module.name, "new\n")]


def test_the_switch(
    tmp_path: Path,
    stand_in: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """0: nothing is compiled (a pure wheel on purpose); 1: not building is an
    error (a release's build); anything else names the variable."""
    _compiler(stand_in, "exit 1")
    monkeypatch.setenv(build_core.SWITCH, "0")
    assert build_core.build(tmp_path) is None
    assert capsys.readouterr().err == (
        "agentscope-proto: compiled core not built (AGENTSCOPE_PROTO_BUILD_CORE=0): "
        "format() runs in Python\n"
    )
    monkeypatch.setenv(build_core.SWITCH, "1")
    with pytest.raises(build_core.NotBuilt, match="cc exited with 1"):
        build_core.build(tmp_path)
    monkeypatch.setenv(build_core.SWITCH, "yes")
    with pytest.raises(ValueError, match="AGENTSCOPE_PROTO_BUILD_CORE: expected one of auto, 0, 1"):
        build_core.build(tmp_path)
    assert not list(tmp_path.glob("_ccore*"))
