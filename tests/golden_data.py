"""Decoding of the golden files' placeholders ({TMP}, {CWD}, {"$bytes": ...})."""

from __future__ import annotations

import base64
import tempfile
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).resolve().parent / "golden"


def decode(value: Any) -> Any:
    """Golden JSON with its placeholders replaced by this machine's values."""
    if isinstance(value, dict):
        if list(value) == ["$bytes"]:
            return base64.b64decode(value["$bytes"])
        return {key: decode(item) for key, item in value.items()}
    if isinstance(value, list):
        return [decode(item) for item in value]
    if isinstance(value, str):
        return value.replace("{TMP}", tempfile.gettempdir()).replace("{CWD}", str(GOLDEN))
    return value
