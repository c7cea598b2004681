"""The golden formatter bodies (AgentScope 1.0.21's requests) to validate."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from golden_data import decode, formatter_cases, golden_providers


def golden_bodies() -> Iterator[tuple[str, str, Any]]:
    """(provider, case name, body) for every golden formatter case with a body."""
    for provider in golden_providers("formatters"):
        for case in formatter_cases(provider):
            if "expected" in case:
                yield provider, case["name"], decode(case["expected"])
