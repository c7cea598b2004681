"""The committed generated code: importable, relative, and in step with the runtime floors."""

from __future__ import annotations

import importlib
import re
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
        "events_pb2",
        "agent_service_pb2",
        "agent_service_pb2_grpc",
    }


@pytest.mark.parametrize("module", MODULES)
def test_every_generated_module_imports(module: str) -> None:
    importlib.import_module(module)


@pytest.mark.parametrize("path", sorted(GENERATED.rglob("*.py*")), ids=lambda p: p.name)
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
