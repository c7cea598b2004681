"""Validate request bodies in this interpreter (the one with the SDKs).

stdin: a JSON array of `{"provider": str, "body": object}`, bytes written as
`{"$bytes": "<base64>"}`. stdout: a JSON array with, per item, the list of
violations (`{"path", "kind", "reason"}`) or `{"error": "..."}` when the
validator itself failed (a bug here, never a verdict on the body).
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Any

from .validators import validate


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if list(value) == ["$bytes"]:
            return base64.b64decode(value["$bytes"])
        return {key: _decode(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_decode(item) for item in value]
    return value


def _one(item: dict[str, Any]) -> Any:
    try:
        return [v.to_json() for v in validate(item["provider"], _decode(item["body"]))]
    except Exception as exc:  # reported to the caller, which fails loudly
        return {"error": f"{type(exc).__name__}: {exc}"}


def main() -> int:
    items = json.load(sys.stdin)
    json.dump([_one(item) for item in items], sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
