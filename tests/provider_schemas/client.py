"""The validator seen from any interpreter: runs it in .venv-schemas.

The SDKs (and their pydantic) live in their own venv so the package's dev
environment does not depend on them; `make schemas-venv` builds it.
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS_PYTHON = ROOT / ".venv-schemas" / "bin" / "python"
MISSING_REASON = "the provider SDKs' venv (.venv-schemas) is missing: run `make schemas-venv`"


@dataclass(frozen=True, slots=True)
class Violation:
    """One departure of a body from its provider's request schema."""

    path: str
    kind: str
    reason: str

    @property
    def unknown(self) -> bool:
        return self.kind == "unknown_key"

    def __str__(self) -> str:
        return f"{self.path}: {self.kind}: {self.reason}"


class ValidatorError(RuntimeError):
    """The validator failed (a bug in it), not the body."""


def available() -> bool:
    """Whether .venv-schemas exists (tests skip with MISSING_REASON otherwise)."""
    return SCHEMAS_PYTHON.exists()


def _encode(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    if isinstance(value, dict):
        return {key: _encode(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_encode(item) for item in value]
    return value


def validate_many(items: Iterable[tuple[str, Any]]) -> list[list[Violation]]:
    """Violations per `(provider, body)`, all in one run of the SDKs' interpreter."""
    payload = json.dumps([{"provider": p, "body": _encode(b)} for p, b in items])
    done = subprocess.run(
        [str(SCHEMAS_PYTHON), "-m", "provider_schemas"],
        input=payload,
        capture_output=True,
        text=True,
        cwd=ROOT / "tests",
        check=False,
    )
    if done.returncode != 0:
        raise ValidatorError(f"validator exited {done.returncode}: {done.stderr.strip()}")
    results: list[list[Violation]] = []
    for index, result in enumerate(json.loads(done.stdout)):
        if isinstance(result, dict):
            raise ValidatorError(f"item {index}: {result['error']}")
        results.append([Violation(**violation) for violation in result])
    return results


def validate(provider: str, body: Any) -> list[Violation]:
    """Violations of one body (one run of the SDKs' interpreter: batch when you can)."""
    return validate_many([(provider, body)])[0]
