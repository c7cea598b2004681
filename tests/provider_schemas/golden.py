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


def provider_fidelity_bodies() -> Iterator[tuple[str, str, Any]]:
    """(provider, case name, body) for every golden formatter case with a body,
    formatted again with `fidelity="provider"` (needs the package: run from
    the project's .venv; the validator still runs in .venv-schemas). Cases
    refused because no message is left to send are left out."""
    from agentscope_proto.errors import FormatError
    from agentscope_proto.formatting import format

    from golden_data import GOLDEN

    for provider in golden_providers("formatters"):
        for case in formatter_cases(provider):
            if "expected" not in case:
                continue
            try:
                body = format(
                    provider,
                    case["msgs"],
                    multi_agent=case["multi_agent"],
                    tools=case["tools"],
                    tool_choice=case["tool_choice"],
                    media_root=GOLDEN,
                    fidelity="provider",
                    **case["options"],
                )
            except FormatError as exc:
                if exc.reason.startswith("nothing to send"):
                    continue
                raise
            yield provider, case["name"], dict(body)
