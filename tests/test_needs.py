"""A missing part skips, whatever CI service runs the suite; it fails only under
the project's own strict switch (.ci/run sets it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from needs import STRICT_ENV, require

ROOT = Path(__file__).resolve().parents[1]


def test_a_missing_part_skips_under_a_hosted_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    # GitHub Actions and GitLab set CI=true for every job.
    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv(STRICT_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="no redis-server"):
        require(False, "no redis-server")


@pytest.mark.parametrize("value", ["", "0"])
def test_the_switch_off_skips(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(STRICT_ENV, value)
    with pytest.raises(pytest.skip.Exception):
        require(False, "no venv")


def test_a_missing_part_fails_under_the_strict_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv(STRICT_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="no redis-server"):
        require(False, "no redis-server")


def test_a_present_part_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STRICT_ENV, "1")
    require(True, "never said")


def test_ci_runs_strict() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert f"export {STRICT_ENV}=1" in script


def test_nothing_reads_the_generic_ci_variable() -> None:
    """The suite, the scripts and the Makefile key nothing on `CI`."""
    reads = re.compile(r"""environ(\.get)?\(?\[?["']CI["']|getenv\(["']CI["']|\$\{?CI\b""")
    places = [ROOT / "Makefile", *(ROOT / "examples").glob("*.mk")]
    for folder in ("python", "tests", "scripts", "bench"):
        places += (ROOT / folder).rglob("*.py")
    found = [
        str(path.relative_to(ROOT))
        for path in places
        if path != Path(__file__).resolve() and reads.search(path.read_text(encoding="utf-8"))
    ]
    assert found == []
