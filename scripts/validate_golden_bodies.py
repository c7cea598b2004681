"""How many golden formatter bodies the providers' own request schemas accept.

Runs every golden formatter body (tests/golden/formatters/: AgentScope 1.0.21's, which
the package reproduces exactly) through tests/provider_schemas/ and prints per
provider: valid / total, how many fail on unknown keys alone, and the most
frequent violations. A measurement, not a test: parity bodies are what they
are; provider fidelity is the follow-up work that makes them all valid.

    make schemas-report                        # builds .venv-schemas first
    python scripts/validate_golden_bodies.py --top 5 --json build/schemas.json
    .venv/bin/python scripts/validate_golden_bodies.py --fidelity provider
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))

from provider_schemas import client  # noqa: E402  (tests/ is not a package)
from provider_schemas.golden import golden_bodies, provider_fidelity_bodies  # noqa: E402

_INDEX = re.compile(r"\[\d+\]")
# Property names of tool schemas are the tools' own: one kind across tools.
_PROPERTY = re.compile(r"(?<=\.properties\.)[^.\[]+")


def _kind_of(violation: client.Violation) -> str:
    """A violation without its indices: one line per kind of problem."""
    path = _PROPERTY.sub("*", _INDEX.sub("[*]", violation.path))
    return f"{violation.kind}  {path}  ({violation.reason})"


def summarize(
    cases: list[tuple[str, str, Any]], results: list[list[client.Violation]]
) -> dict[str, dict[str, Any]]:
    summary: dict[str, dict[str, Any]] = {}
    for (provider, name, _), violations in zip(cases, results, strict=True):
        entry = summary.setdefault(
            provider,
            {
                "total": 0,
                "valid": 0,
                "unknown_keys_only": 0,
                "unknown_keys": 0,
                "kinds": Counter(),
                "invalid": [],
            },
        )
        entry["total"] += 1
        if not violations:
            entry["valid"] += 1
            continue
        entry["invalid"].append(name)
        entry["unknown_keys"] += sum(1 for violation in violations if violation.unknown)
        if all(violation.unknown for violation in violations):
            entry["unknown_keys_only"] += 1
        # Counted once per body: "how many bodies have this problem".
        entry["kinds"].update({_kind_of(violation) for violation in violations})
    return summary


def _print(summary: dict[str, dict[str, Any]], top: int) -> None:
    total = sum(entry["total"] for entry in summary.values())
    valid = sum(entry["valid"] for entry in summary.values())
    print(
        f"{'provider':<18}{'valid':>7}{'total':>7}{'%':>8}"
        f"{'invalid by unknown keys alone':>31}{'unknown keys':>14}"
    )
    for provider, entry in sorted(summary.items()):
        share = 100 * entry["valid"] / entry["total"]
        print(
            f"{provider:<18}{entry['valid']:>7}{entry['total']:>7}{share:>7.1f}%"
            f"{entry['unknown_keys_only']:>31}{entry['unknown_keys']:>14}"
        )
    print(f"{'all':<18}{valid:>7}{total:>7}{100 * valid / total:>7.1f}%")
    for provider, entry in sorted(summary.items()):
        if not entry["kinds"]:
            continue
        print(f"\n{provider}: most frequent violations (bodies affected)")
        for kind, count in entry["kinds"].most_common(top):
            print(f"  {count:>4}  {kind}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=8, help="violation kinds shown per provider")
    parser.add_argument("--provider", action="append", help="only these providers (repeatable)")
    parser.add_argument("--json", type=Path, help="also write the summary here as JSON")
    parser.add_argument(
        "--fidelity",
        choices=("agentscope", "provider"),
        default="agentscope",
        help="provider: format the golden conversations again in provider fidelity "
        "(run with the project's .venv, which has the package)",
    )
    args = parser.parse_args(argv)
    if not client.available():
        print(f"validate_golden_bodies: {client.MISSING_REASON}", file=sys.stderr)
        return 2
    bodies = provider_fidelity_bodies() if args.fidelity == "provider" else golden_bodies()
    cases = [case for case in bodies if not args.provider or case[0] in args.provider]
    if not cases:
        print("validate_golden_bodies: no golden bodies for these providers", file=sys.stderr)
        return 2
    results = client.validate_many((provider, body) for provider, _, body in cases)
    summary = summarize(cases, results)
    _print(summary, args.top)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        serializable = {
            provider: {**entry, "kinds": dict(entry["kinds"].most_common())}
            for provider, entry in summary.items()
        }
        args.json.write_text(json.dumps(serializable, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
