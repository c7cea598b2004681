"""Regenerate python/agentscope_proto/_generated/ from proto/.

Runs the pinned `grpc_tools.protoc` (scripts/codegen-requirements.txt, in its
own venv: its protobuf major differs from the one mypy-protobuf needs) with the
mypy-protobuf plugins found on PATH, makes the
generated imports relative (the proto package `agentscope.*` would otherwise
collide with the real `agentscope` distribution), and writes the package
`__init__.py` files that protoc does not emit. It also writes a descriptor set
with source info (`descriptors.binpb`): the `_pb2` modules drop the comments,
and server reflection serves them from this file. Run it through `make generate`.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
OUT = ROOT / "python" / "agentscope_proto" / "_generated"
INIT_DOC = '"""Generated from proto/. Do not edit; run `make generate`."""\n'
ABSOLUTE_IMPORT = re.compile(r"^from (agentscope(?:\.\w+)*) import ", re.MULTILINE)
# Comments included, so that reflection clients (grpcurl describe) show them.
DESCRIPTOR_SET = OUT / "descriptors.binpb"
SERVICE = re.compile(r"^service \w+ \{", re.MULTILINE)


def _plugins() -> list[str]:
    flags = []
    for name in ("protoc-gen-mypy", "protoc-gen-mypy_grpc"):
        path = shutil.which(name)
        if path is None:
            sys.exit(f"{name} not found on PATH: install the dev extra (mypy-protobuf)")
        flags.append(f"--plugin={name}={path}")
    return flags


def _protoc(args: list[str]) -> None:
    # protoc.main expects argv[0] to be the program name; the include path of
    # the well-known types ships inside grpc_tools.
    well_known = Path(protoc.__file__).parent / "_proto"
    code = protoc.main(["protoc", f"-I{PROTO_ROOT}", f"-I{well_known}", *_plugins(), *args])
    if code != 0:
        sys.exit(f"protoc failed with exit code {code}")


def _relative(module_package: str, target: str) -> str:
    """The relative form of `target` as seen from inside `module_package`."""
    here = module_package.split(".")
    there = target.split(".")
    common = 0
    while common < min(len(here), len(there)) and here[common] == there[common]:
        common += 1
    dots = "." * (len(here) - common + 1)
    return dots + ".".join(there[common:])


def _rewrite_imports(path: Path) -> None:
    package = ".".join(path.parent.relative_to(OUT).parts)
    text = path.read_text(encoding="utf-8")
    text = ABSOLUTE_IMPORT.sub(lambda m: f"from {_relative(package, m.group(1))} import ", text)
    path.write_text(text, encoding="utf-8")


def main() -> None:
    protos = sorted(p.relative_to(PROTO_ROOT).as_posix() for p in PROTO_ROOT.rglob("*.proto"))
    services = [p for p in protos if SERVICE.search((PROTO_ROOT / p).read_text(encoding="utf-8"))]
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    _protoc([f"--python_out={OUT}", f"--mypy_out={OUT}", *protos])
    # Only files that declare a service get *_pb2_grpc modules.
    _protoc([f"--grpc_python_out={OUT}", f"--mypy_grpc_out={OUT}", *services])
    _protoc([f"--descriptor_set_out={DESCRIPTOR_SET}", "--include_source_info", *protos])
    for path in sorted(OUT.rglob("*.py*")):
        _rewrite_imports(path)
    for directory in sorted({OUT, *(p.parent for p in OUT.rglob("*_pb2.py"))}):
        while True:
            (directory / "__init__.py").write_text(INIT_DOC, encoding="utf-8")
            if directory == OUT:
                break
            directory = directory.parent


if __name__ == "__main__":
    main()
