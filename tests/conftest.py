"""Shared fixtures: golden data loading."""

from __future__ import annotations

import json
import sys
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
