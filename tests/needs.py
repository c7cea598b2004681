"""`require`: what a test does when a part it talks to for real is missing."""

from __future__ import annotations

import os

import pytest

# The project's own switch for "every part is installed" (.ci/run sets it). Never
# the generic `CI`: hosted CI services set that for every job, where the README's
# `make check` must pass with parts missing.
STRICT_ENV = "AGENTSCOPE_PROTO_STRICT"


def strict() -> bool:
    """Whether a missing part fails the test instead of skipping it."""
    return os.environ.get(STRICT_ENV, "") not in ("", "0")


def require(available: bool, reason: str) -> None:
    """Skip the calling test when a part it needs (a server binary, a venv) is
    missing, saying why; under the strict switch (`AGENTSCOPE_PROTO_STRICT=1`,
    as .ci/run sets it) every part is installed, so a missing one fails the test
    instead."""
    if available:
        return
    if strict():
        pytest.fail(f"{STRICT_ENV} is set (every part installed), but: {reason}")
    pytest.skip(reason)
