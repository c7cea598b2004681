"""The committed generated code: importable, relative, and in step with the runtime floors."""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from google.protobuf import __version__ as protobuf_version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "python" / "agentscope_proto" / "_generated"
MODULES = sorted(
    ".".join(("agentscope_proto", "_generated", *p.relative_to(GENERATED).with_suffix("").parts))
    for p in GENERATED.rglob("*.py")
    if p.name != "__init__.py"
)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def _floor(requirement: str) -> tuple[int, ...]:
    match = re.search(r">=\s*([\d.]+)", requirement)
    assert match, requirement
    return _version(match.group(1))


def _dependency(name: str) -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return next(d for d in project["dependencies"] if re.match(rf"{name}\b", d))


def test_expected_modules_exist() -> None:
    names = {m.rsplit(".", 1)[-1] for m in MODULES}
    assert names == {
        "message_pb2",
        "formatter_service_pb2",
        "formatter_service_pb2_grpc",
        "hub_service_pb2",
        "hub_service_pb2_grpc",
        "events_pb2",
        "agent_service_pb2",
        "agent_service_pb2_grpc",
        "state_pb2",
    }


@pytest.mark.parametrize("module", MODULES)
def test_every_generated_module_imports(module: str) -> None:
    importlib.import_module(module)


@pytest.mark.parametrize(
    "path",
    sorted(p for p in GENERATED.rglob("*.py*") if "__pycache__" not in p.parts),
    ids=lambda p: p.name,
)
def test_no_absolute_agentscope_import(path: Path) -> None:
    # The real `agentscope` distribution owns that name.
    assert not re.search(r"^\s*(from|import) agentscope\b", path.read_text(), re.MULTILINE)


def _protobuf_gencode_version() -> tuple[int, ...]:
    text = (GENERATED / "agentscope" / "message" / "v1" / "message_pb2.py").read_text()
    match = re.search(
        r"ValidateProtobufRuntimeVersion\(\s*_runtime_version\.Domain\.PUBLIC,"
        r"\s*(\d+),\s*(\d+),\s*(\d+),",
        text,
    )
    assert match, "no protobuf gencode version stamp found"
    return tuple(int(g) for g in match.groups())


def test_protobuf_floor_matches_gencode() -> None:
    gencode = _protobuf_gencode_version()
    floor = _floor(_dependency("protobuf"))
    # The floor may sit above the stamp (for a security fix), never below it
    # and never on another major version.
    assert floor >= gencode
    assert floor[0] == gencode[0]
    assert _version(protobuf_version) >= floor


def test_grpcio_floor_matches_gencode() -> None:
    from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2_grpc

    stamped = _version(formatter_service_pb2_grpc.GRPC_GENERATED_VERSION)
    assert _floor(_dependency("grpcio")) == stamped
    assert _version(grpc.__version__) >= stamped


def test_generator_pin_matches_grpcio_floor() -> None:
    requirements = (ROOT / "scripts" / "codegen-requirements.txt").read_text()
    pin = re.search(r"^grpcio-tools==([\d.]+)$", requirements, re.MULTILINE)
    assert pin, "grpcio-tools is not pinned"
    assert _version(pin.group(1)) == _floor(_dependency("grpcio"))


def test_service_name_comes_from_the_schema() -> None:
    from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb

    service = pb.DESCRIPTOR.services_by_name["FormatterService"]
    assert service.full_name == "agentscope.formatter.v1.FormatterService"
    assert [m.name for m in service.methods] == ["Format", "Parse", "ParseStream"]


# -- README's "Generating code from proto/" -------------------------------------------


def test_each_file_sets_the_language_packages_the_readme_lists() -> None:
    from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2
    from agentscope_proto._generated.agentscope.message.v1 import message_pb2

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for module, part in ((message_pb2, "message"), (formatter_service_pb2, "formatter")):
        options = module.DESCRIPTOR.GetOptions()
        title = part.capitalize()
        go = f"github.com/agentscope-ai/agentscope-proto/gen/go/agentscope/{part}/v1"
        assert options.go_package == f"{go};{part}v1"
        assert options.java_package == f"io.agentscope.proto.{part}.v1"
        assert options.java_multiple_files
        assert options.csharp_namespace == f"AgentScope.Proto.{title}.V1"
        assert options.php_namespace == f"AgentScope\\Proto\\{title}\\V1"
        assert options.ruby_package == f"AgentScope::Proto::{title}::V1"
        assert options.swift_prefix == f"AgentScope{title}V1_"
        assert module.DESCRIPTOR.package == f"agentscope.{part}.v1"  # C++ namespaces
        assert f"`{options.objc_class_prefix}`" in readme
    for listed in (
        "github.com/agentscope-ai/agentscope-proto/gen/go/agentscope/{message,formatter}/v1",
        "io.agentscope.proto.{message,formatter}.v1",
        "AgentScope.Proto.{Message,Formatter}.V1",
        "`agentscope::message::v1`",
    ):
        assert listed in readme


def _protoc() -> list[str] | None:
    """A protoc: the pinned generator's (.venv-codegen, which `make check` makes) or one on PATH."""
    codegen = ROOT / ".venv-codegen" / "bin" / "python"
    if codegen.exists():
        return [str(codegen), "-m", "grpc_tools.protoc"]
    found = shutil.which("protoc")
    return [found] if found else None


def test_plain_protoc_python_clashes_with_agentscope_and_the_package_does_not(
    tmp_path: Path,
) -> None:
    protoc = _protoc()
    if protoc is None:
        pytest.skip("no protoc: neither .venv-codegen (make generate) nor protoc on PATH")
    out = tmp_path / "out"
    out.mkdir()
    done = subprocess.run(
        [
            *protoc,
            f"-I{ROOT / 'proto'}",
            f"--python_out={out}",
            "agentscope/message/v1/message.proto",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (out / "agentscope" / "message" / "v1" / "message_pb2.py").is_file()
    # AgentScope's own package, as far as imports go: `agentscope.message` is a module of it.
    fake = tmp_path / "site"
    (fake / "agentscope" / "message").mkdir(parents=True)
    (fake / "agentscope" / "__init__.py").write_text("")
    (fake / "agentscope" / "message" / "__init__.py").write_text("class Msg: ...\n")
    probe = (
        "import importlib, sys\n"
        "for name in sys.argv[1:]:\n"
        "    try:\n"
        "        module = importlib.import_module(name)\n"
        "        print(name, 'ok' if 'Msg' in dir(module) else 'impostor')\n"
        "    except ImportError:\n"
        "        print(name, 'hidden')\n"
    )
    names = [
        "agentscope.message",
        "agentscope.message.v1.message_pb2",
        "agentscope_proto._generated.agentscope.message.v1.message_pb2",
    ]

    def shown(*path: Path) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", probe, *names],
            env={**os.environ, "PYTHONPATH": os.pathsep.join(map(str, path))},
            capture_output=True,
            text=True,
            timeout=60,
        )
        return [line.split()[1] for line in done.stdout.splitlines()]

    # As protoc writes it (no __init__.py), AgentScope's package wins in any order.
    assert shown(fake, out) == shown(out, fake) == ["ok", "hidden", "ok"]
    # Made a package, whichever comes first hides the other (AgentScope's
    # `agentscope.message`, with its `Msg`, is gone).
    for directory in (
        out / "agentscope",
        out / "agentscope" / "message",
        out / "agentscope" / "message" / "v1",
    ):
        (directory / "__init__.py").write_text("")
    assert shown(out, fake) == ["impostor", "ok", "ok"]
