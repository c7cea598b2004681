"""The body validator (tests/provider_schemas/) is strict: bodies the providers
reject or silently drop parts of fail with the right path and kind; minimal
valid bodies pass; every golden formatter body is checked without the
validator itself failing.

The SDKs live in .venv-schemas (`make schemas-venv`); all bodies are checked in
one run of that interpreter.
"""

from __future__ import annotations

import pytest

from provider_schemas import client
from provider_schemas.cases import MUST_FAIL, MUST_PASS
from provider_schemas.golden import golden_bodies
from provider_schemas.validators import VALIDATORS

needs_sdks = pytest.mark.skipif(not client.available(), reason=client.MISSING_REASON)

_GOLDEN = [(provider, body) for provider, _, body in golden_bodies()]
_CASES = {**MUST_PASS, **MUST_FAIL}


@pytest.fixture(scope="module")
def batch() -> list[list[client.Violation]]:
    """The self-test cases' violations, then the golden bodies': one run of
    the validator (importing the SDKs is most of its time)."""
    return client.validate_many([*((c.provider, c.body) for c in _CASES.values()), *_GOLDEN])


@pytest.fixture(scope="module")
def verdicts(batch: list[list[client.Violation]]) -> dict[str, list[client.Violation]]:
    """Each self-test case's violations, by case name."""
    return dict(zip(_CASES, batch[: len(_CASES)], strict=True))


@needs_sdks
@pytest.mark.parametrize("name", sorted(MUST_PASS))
def test_valid_body_passes(name: str, verdicts: dict[str, list[client.Violation]]) -> None:
    assert verdicts[name] == [], [str(v) for v in verdicts[name]]


@needs_sdks
@pytest.mark.parametrize("name", sorted(MUST_FAIL))
def test_invalid_body_fails(name: str, verdicts: dict[str, list[client.Violation]]) -> None:
    kind, path = MUST_FAIL[name].expect or ("", "")
    found = [(v.kind, v.path) for v in verdicts[name]]
    assert (kind, path) in found, [str(v) for v in verdicts[name]]


def test_every_provider_has_both_kinds_of_case() -> None:
    providers = set(VALIDATORS)
    assert {case.provider for case in MUST_PASS.values()} == providers
    assert {case.provider for case in MUST_FAIL.values()} == providers
    assert all(case.expect is None for case in MUST_PASS.values())
    assert all(case.expect is not None for case in MUST_FAIL.values())


@needs_sdks
def test_unknown_keys_are_their_own_kind(verdicts: dict[str, list[client.Violation]]) -> None:
    unknown = verdicts["openai/thought_signature_on_text"]
    other = verdicts["openai/bogus_role"]
    assert [v.unknown for v in unknown] == [True]
    assert [v.unknown for v in other] == [False]


@needs_sdks
def test_unknown_provider_is_a_validator_error() -> None:
    with pytest.raises(client.ValidatorError, match="unknown provider 'nope'"):
        client.validate("nope", {})


@needs_sdks
def test_every_golden_body_is_checked(batch: list[list[client.Violation]]) -> None:
    """The validator copes with every golden body (its verdicts are the
    report's business: scripts/validate_golden_bodies.py)."""
    golden = batch[len(_CASES) :]
    assert len(golden) == len(_GOLDEN) > 1000
    assert any(golden)
    assert not all(golden)
