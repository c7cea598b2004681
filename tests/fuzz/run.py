"""Run one fuzz target (tests/fuzz/targets.py) and report it in one line.

    python tests/fuzz/run.py TARGET [--verbose] [libFuzzer options]

libFuzzer and atheris print thousands of progress lines; they go to
build/fuzz/TARGET.log (the corpus and any crash input to build/fuzz/TARGET/),
and this prints one summary line. On a failure it also prints the end of the
log and where the crash input is. `--verbose` (`make fuzz-quick VERBOSE=1`)
shows the whole output as it comes instead.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OUT = ROOT / "build" / "fuzz"
TARGETS = ("from_dict", "parse", "stream", "agent", "hub", "format")
TAIL = 40

DONE = re.compile(r"^#(\d+)\s+DONE\s+cov: (\d+) ft: (\d+) corp: (\d+)/", re.MULTILINE)
ARTIFACT = re.compile(r"Test unit written to (\S+)")


def summarize(target: str, code: int, log: str, seconds: float, log_path: Path) -> str:
    """The one line for a run that exited with `code` and wrote `log`."""
    where = log_path.relative_to(ROOT) if log_path.is_relative_to(ROOT) else log_path
    done = DONE.findall(log)
    if code == 0 and done:
        runs, cov, features, corpus = done[-1]
        return (
            f"fuzz {target}: OK: {int(runs):,} runs in {seconds:.0f} s, "
            f"coverage {cov}, features {features}, corpus {corpus} (log: {where})"
        )
    artifact = ARTIFACT.findall(log)
    found = f", input: {artifact[-1]}" if artifact else ""
    return f"fuzz {target}: FAIL: exit code {code}{found} (log: {where})"


def main() -> int:
    args = sys.argv[1:]
    verbose = "--verbose" in args
    args = [a for a in args if a != "--verbose"]
    if not args or args[0] not in TARGETS:
        print(f"usage: run.py {{{','.join(TARGETS)}}} [--verbose] [libFuzzer options]")
        return 2
    target, options = args[0], args[1:]
    work = OUT / target
    work.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, str(HERE / "targets.py"), target, str(work), *options]
    log_path = OUT / f"{target}.log"
    started = time.monotonic()
    if verbose:
        code = subprocess.run(command, check=False).returncode
        print(f"fuzz {target}: {'OK' if code == 0 else f'FAIL: exit code {code}'}")
        return code
    with log_path.open("w", encoding="utf-8") as log:
        code = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
    text = log_path.read_text(encoding="utf-8", errors="replace")
    line = summarize(target, code, text, time.monotonic() - started, log_path)
    if line.startswith(f"fuzz {target}: OK"):
        print(line)
        return 0
    print("\n".join(text.splitlines()[-TAIL:]), file=sys.stderr)
    print(line, file=sys.stderr)
    return code or 1


if __name__ == "__main__":
    sys.exit(main())
