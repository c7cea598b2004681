"""The golden formatter bodies (AgentScope 1.0.21's requests) to validate.

Reads `formatters/<provider>.json` directly: its cases carry the name and the
`expected` body, in the layout with the inputs inline and in the one with the
inputs in a file of their own (which has no `cases` and is skipped).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from golden_data import GOLDEN, decode


def golden_bodies() -> Iterator[tuple[str, str, Any]]:
    """(provider, case name, body) for every golden formatter case with a body."""
    for path in sorted((GOLDEN / "formatters").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for case in data.get("cases", ()):
            if "expected" in case:
                yield path.stem, case["name"], decode(case["expected"])
