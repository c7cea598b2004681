"""Compile the compiled core of `format()`, python/agentscope_proto/_ccore.c,
into `_ccore<EXT_SUFFIX>` with the C compiler this Python was built with.

The one place that compiles it (standard library only): the wheel's build
hook (hatch_build.py) imports it, `make core` runs it.

    python scripts/build_core.py --inplace        # next to _ccore.c (make core)
    python scripts/build_core.py --out-dir DIR

The command is sysconfig's LDSHARED, CFLAGS and CCSHARED with INCLUDEPY, one
step from the C file to the module (no object file is left behind). As
distutils did, `CC` in the environment replaces the compiler (in LDSHARED
too), `LDSHARED` replaces the link command and `CFLAGS` adds flags.

`AGENTSCOPE_PROTO_BUILD_CORE` chooses: `auto` (the default: build where a
compiler and Python's headers are), `0` (never: a pure-Python wheel on
purpose), `1` (required: not building is an error). Where it is not built,
one line says why, and the package runs `format()` in Python (same output).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "agentscope_proto"
SOURCE = PACKAGE / "_ccore.c"
SWITCH = "AGENTSCOPE_PROTO_BUILD_CORE"
CHOICES = ("auto", "0", "1")


class NotBuilt(Exception):
    """Why the core was not built: `missing` when this machine cannot build it
    (no compiler, no headers), else the compiler failed (its output in `output`)."""

    def __init__(self, reason: str, *, missing: bool, output: str = "") -> None:
        super().__init__(reason)
        self.missing = missing
        self.output = output


def choice() -> str:
    """The switch's value: auto, 0 or 1."""
    value = os.environ.get(SWITCH, "auto").strip() or "auto"
    if value not in CHOICES:
        raise ValueError(f"{SWITCH}: expected one of {', '.join(CHOICES)}, got {value!r}")
    return value


def extension_suffix() -> str:
    """This Python's suffix for extension modules: `.cpython-312-x86_64-linux-gnu.so`."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    if not isinstance(suffix, str) or not suffix:
        raise NotBuilt("this Python names no extension suffix (sysconfig EXT_SUFFIX)", missing=True)
    return suffix


def _config(name: str) -> str:
    value = sysconfig.get_config_var(name)
    return value if isinstance(value, str) else ""


def command(output: Path) -> list[str]:
    """The compile-and-link command writing `output`."""
    compiler = _config("CC")
    link = _config("LDSHARED")
    if "CC" in os.environ:
        if "LDSHARED" not in os.environ and compiler and link.startswith(compiler):
            link = os.environ["CC"] + link[len(compiler) :]
        compiler = os.environ["CC"]
    link = os.environ.get("LDSHARED", link)
    argv = shlex.split(link)
    if not compiler or not argv:
        raise NotBuilt("this Python names no C compiler (sysconfig CC, LDSHARED)", missing=True)
    if shutil.which(argv[0]) is None:
        raise NotBuilt(f"no C compiler: {argv[0]!r} not found", missing=True)
    include = _config("INCLUDEPY")
    if not (Path(include) / "Python.h").is_file():
        raise NotBuilt(f"no Python headers: {include}/Python.h (python3-dev)", missing=True)
    flags = shlex.split(_config("CFLAGS")) + shlex.split(os.environ.get("CFLAGS", ""))
    shared = shlex.split(_config("CCSHARED"))
    return [*argv, *flags, *shared, f"-I{include}", str(SOURCE), "-o", str(output)]


def _first_error(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    return (errors or lines or ["no output"])[0][:200]


def compile_core(directory: Path, *, verbose: bool = False) -> Path:
    """Compile into `directory`, replacing any module there only once the new
    one is complete (a running process may have the old one loaded)."""
    if not SOURCE.is_file():
        raise FileNotFoundError(f"{SOURCE}: the compiled core's source is missing")
    suffix = extension_suffix()
    target = directory / f"_ccore{suffix}"
    partial = directory / f"_ccore.building-{os.getpid()}{suffix}"
    argv = command(partial)
    if verbose:
        print(shlex.join(argv), file=sys.stderr)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            output = done.stdout + done.stderr
            reason = f"{Path(argv[0]).name} exited with {done.returncode}: {_first_error(output)}"
            raise NotBuilt(reason, missing=False, output=output)
        if done.stderr:  # the compiler's warnings
            print(done.stderr, end="", file=sys.stderr)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def say_not_built(reason: str) -> None:
    """The one line a build without the core prints (the runtime logs its own)."""
    print(
        f"agentscope-proto: compiled core not built ({reason}): format() runs in Python",
        file=sys.stderr,
    )


def build(directory: Path, *, verbose: bool = False, compiler_errors: bool = False) -> Path | None:
    """The module built into `directory`, or None after one line saying why
    not. Raises NotBuilt instead under `AGENTSCOPE_PROTO_BUILD_CORE=1`, and
    with `compiler_errors` when a compiler is there but fails."""
    wanted = choice()
    if wanted == "0":
        say_not_built(f"{SWITCH}=0")
        return None
    try:
        return compile_core(directory, verbose=verbose)
    except NotBuilt as exc:
        if wanted == "1" or (compiler_errors and not exc.missing):
            raise
        say_not_built(str(exc))
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--inplace", action="store_true", help=f"build into {PACKAGE}")
    where.add_argument("--out-dir", type=Path, help="build into this directory")
    parser.add_argument("--verbose", action="store_true", help="print the compiler command")
    arguments = parser.parse_args(argv)
    directory: Path = PACKAGE if arguments.inplace else arguments.out_dir
    try:
        # A compiler that fails is an error here: the tests would run an older module.
        built = build(directory, verbose=arguments.verbose, compiler_errors=True)
    except NotBuilt as exc:
        print(exc.output, end="", file=sys.stderr)
        print(f"core: not built ({exc})", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"core: {exc}", file=sys.stderr)
        return 2
    if built is not None:
        print(f"core: built {os.path.relpath(built)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
