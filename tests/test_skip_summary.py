"""`make check` ends with one line saying why tests were skipped (tests/conftest.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import SKIP_SUMMARY_ENV

TESTS = Path(__file__).resolve().parent
MAKEFILE = TESTS.parent / "Makefile"

SAMPLE = """
import pytest

@pytest.mark.skipif(True, reason="needs the moon")
@pytest.mark.parametrize("n", [1, 2])
def test_marked(n):
    pass

def test_skips_itself():
    pytest.skip("no network here")

def test_passes():
    pass
"""


def test_skips_are_summed_up_by_reason_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(SAMPLE, encoding="utf-8")
    target = tmp_path / "skipped.txt"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "conftest",
            "-p",
            "no:cacheprovider",
            str(tmp_path / "test_sample.py"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(TESTS), SKIP_SUMMARY_ENV: str(target)},
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    line = "3 skipped (2: needs the moon; 1: no network here)"
    assert line in done.stdout.splitlines()
    assert target.read_text(encoding="utf-8") == line + "\n"


def test_make_check_ends_with_the_line() -> None:
    makefile = MAKEFILE.read_text(encoding="utf-8")
    recipe = makefile[makefile.index("\ncheck: ") :].split("\n\n", 1)[0]
    last = recipe.strip().splitlines()[-1]
    assert re.search(r'echo "check: OK in .* s; \$\$\(cat \$\(SKIPPED\)\)"', last), last
    assert f"{SKIP_SUMMARY_ENV}=$(SKIPPED)" in makefile
