"""Shared fixtures: golden data loading."""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).resolve().parent / "golden"
sys.path.insert(0, str(Path(__file__).resolve().parent))


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
