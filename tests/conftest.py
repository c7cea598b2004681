"""Shared fixtures: golden data loading."""

from __future__ import annotations

import importlib.metadata
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).resolve().parent / "golden"
sys.path.insert(0, str(Path(__file__).resolve().parent))
# The hub tests' fixtures (a real redis-server, a fresh topic), for tests/hub/.
pytest_plugins = ["hub_fixtures"]

# A test that needs a part (a server binary, a venv) calls `require` (kept in
# its own module: a suite with a conftest of its own cannot import this one).
from needs import require  # noqa: E402

__all__ = ["load_golden", "require"]


def _agentscope_major() -> int | None:
    try:
        version = importlib.metadata.version("agentscope")
    except importlib.metadata.PackageNotFoundError:
        return None
    return int(version.split(".", 1)[0])


# tests/agentscope2/ is a suite of its own, run in the venv that has AgentScope
# 2.x (`make test-agentscope2`, in CI); any other venv does not collect it.
collect_ignore = [] if _agentscope_major() == 2 else ["agentscope2"]


def load_golden(name: str) -> dict[str, Any]:
    """A golden JSON file under tests/golden/."""
    with (GOLDEN / name).open(encoding="utf-8") as file:
        data: dict[str, Any] = json.load(file)
    return data


def default_options(case: dict[str, Any]) -> bool:
    """Whether a parser golden case ran with AgentScope's default model options."""
    return all(
        key == "stream_tool_parsing" and value is True for key, value in case["options"].items()
    )


SKIP_SUMMARY_ENV = "AGENTSCOPE_PROTO_SKIP_SUMMARY"


def skip_summary(reports: list[Any]) -> str:
    """One line: how many tests were skipped and why, by reason, most first."""
    if not reports:
        return "no test skipped"
    reasons: Counter[str] = Counter()
    for report in reports:
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reasons[reason.removeprefix("Skipped: ")] += 1
    by_reason = "; ".join(f"{count}: {reason}" for reason, count in reasons.most_common())
    return f"{len(reports)} skipped ({by_reason})"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say why tests were skipped, in one line (and into the file `make check`
    ends its output with, when it names one)."""
    line = skip_summary(terminalreporter.stats.get("skipped", []))
    terminalreporter.write_line(line)
    target = os.environ.get(SKIP_SUMMARY_ENV)
    if target:
        Path(target).write_text(line + "\n", encoding="utf-8")
