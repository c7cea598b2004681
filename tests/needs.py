"""`require`: what a test does when a part it talks to for real is missing."""

from __future__ import annotations

import os

import pytest


def require(available: bool, reason: str) -> None:
    """Skip the calling test when a part it needs (a server binary, a venv) is
    missing, saying why; in CI (`CI` set, as .ci/run runs) every part is
    installed, so a missing one fails the test instead."""
    if available:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI installs every part, but: {reason}")
    pytest.skip(reason)
