"""The wheel's build hook: the compiled core of `format()` (scripts/build_core.py
compiles it; see there for the compiler and AGENTSCOPE_PROTO_BUILD_CORE).

A wheel gets `agentscope_proto/_ccore<EXT_SUFFIX>` and this platform's tag;
an editable install gets the module in place, next to _ccore.c (its .pth
points at python/). Where it cannot be built, one line says why and the
wheel is pure Python: the package runs `format()` in Python.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from hatchling.builders.config import BuilderConfig
from hatchling.builders.hooks.plugin.interface import BuildHookInterface


def _build_core(root: str) -> ModuleType:
    path = Path(root) / "scripts" / "build_core.py"
    spec = importlib.util.spec_from_file_location("agentscope_proto_build_core", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: cannot load the compiled core's build script")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class CompiledCoreHook(BuildHookInterface[BuilderConfig]):
    """Builds the compiled core into the wheel (or in place, for an editable install)."""

    _scratch: Path | None = None  # the wheel's module, until the wheel is written

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        core = _build_core(self.root)
        if version == "editable":
            core.build(core.PACKAGE)
            return
        self._scratch = Path(tempfile.mkdtemp(prefix="agentscope-proto-core-"))
        built: Path | None = core.build(self._scratch)
        if built is None:
            return
        build_data["force_include"][str(built)] = f"agentscope_proto/{built.name}"
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
