"""A typed user script passes `mypy --strict`: the helpers' types hold up in use."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).resolve().parent / "user_script.py"


def _mypy(path: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    # The package's own modules are checked by `make lint`; here only the
    # script's use of them counts (imports are followed silently).
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")]
    command += ["--strict", "--follow-imports=silent", "--cache-dir", str(cache), str(path)]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_user_script_passes_mypy_strict(tmp_path: Path) -> None:
    result = _mypy(SCRIPT, tmp_path / "cache")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_catches_a_wrong_block_type(tmp_path: Path) -> None:
    """The check has teeth: a tool_use list is not a text list."""
    bad = tmp_path / "bad_script.py"
    bad.write_text(
        SCRIPT.read_text(encoding="utf-8")
        + "\n\ndef wrong(msg: Msg) -> str:\n"
        + '    calls: list[TextBlock] = get_content_blocks(msg, "tool_use")\n'
        + "    return calls[0].name\n",
        encoding="utf-8",
    )
    result = _mypy(bad, tmp_path / "cache")
    assert result.returncode == 1
    assert 'has type "list[ToolUseBlock]"' in result.stdout
    assert '"TextBlock" has no attribute "name"' in result.stdout
