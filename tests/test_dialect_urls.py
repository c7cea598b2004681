"""`dialects._url.normalize_url` gives what pydantic's `AnyUrl` gives (AgentScope 2.x URL sources).

tests/golden/agentscope2/urls.json holds, for each input string, what the real AgentScope 2.0.11
made of it as `URLSource(url=...)`: the normalised URL, or pydantic's refusal. For every case the
module gives the same URL, or refuses with the same reason, or refuses with UnsupportedURLError
(hosts that need UTS #46 processing, which it does not implement); it never accepts what pydantic
refuses and never guesses.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agentscope_proto.dialects._url import UnsupportedURLError, normalize_url

URLS = Path(__file__).resolve().parent / "golden" / "agentscope2" / "urls.json"
PYDANTIC_PREFIX = "Input should be a valid URL, "


def cases() -> list[dict[str, Any]]:
    with URLS.open(encoding="utf-8") as file:
        loaded: list[dict[str, Any]] = json.load(file)["cases"]
    return loaded


def outcome(text: str) -> tuple[str, str]:
    """("url", result), ("refused", message) or ("unsupported", message)."""
    try:
        return "url", normalize_url(text)
    except UnsupportedURLError as error:
        return "unsupported", str(error)
    except ValueError as error:
        return "refused", str(error)


def expected(case: dict[str, Any]) -> tuple[str, str]:
    if case["accepted"]:
        return "url", case["url"]
    reason = case["error"].removeprefix(PYDANTIC_PREFIX)
    return "refused", f"invalid URL: {reason}"


def needs_uts46(text: str) -> bool:
    """Whether a URL's text has what the module leaves to a UTS #46 implementation."""
    encoded_non_ascii = re.search("%[89a-fA-F][0-9a-fA-F]", text) is not None
    return not text.isascii() or encoded_non_ascii or "xn--" in text.lower()


def test_every_case_is_pydantics_answer_or_unsupported() -> None:
    mismatches = []
    for case in cases():
        got = outcome(case["input"])
        if got[0] != "unsupported" and got != expected(case):
            mismatches.append((case["input"][:200], expected(case), got))
    assert mismatches == []


def test_only_hosts_needing_uts46_are_unsupported() -> None:
    all_cases = cases()
    unsupported = [c["input"] for c in all_cases if outcome(c["input"])[0] == "unsupported"]
    assert [text for text in unsupported if not needs_uts46(text)] == []
    handled = len(all_cases) - len(unsupported)
    print(f"normalize_url: {handled} of {len(all_cases)} golden cases exactly as pydantic")
    # Everything else, every http(s)/file URL with an ASCII host included, is handled.
    assert len(unsupported) <= 12
    assert handled >= len(all_cases) - 12


def test_refuses_everything_pydantic_refuses() -> None:
    refused = [case for case in cases() if not case["accepted"]]
    assert len(refused) >= 60
    assert [c["input"] for c in refused if outcome(c["input"])[0] == "url"] == []


@pytest.mark.parametrize(
    ("text", "url"),
    [
        (
            "HTTPS://Example.COM:443/a/./b/../c d?q=1 2#f g",
            "https://example.com/a/c%20d?q=1%202#f%20g",
        ),
        ("http://0x7f.1/", "http://127.0.0.1/"),
        ("http://[0:0:0:0:0:0:0:1]:80", "http://[::1]/"),
        ("file:///C|/x/../y", "file:///C|/y"),
        ("file://localhost/tmp/a b.png", "file:///tmp/a%20b.png"),
        ("x-custom://Host/A?B", "x-custom://Host/A?B"),
    ],
)
def test_examples(text: str, url: str) -> None:
    assert normalize_url(text) == url


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "input is empty"),
        ("/tmp/a.png", "relative URL without a base"),
        ("https://", "empty host"),
        ("https://example.com:65536/", "invalid port number"),
        ("http://1.2.3.256/", "invalid IPv4 address"),
        ("http://[fe80::1%25eth0]/", "invalid IPv6 address"),
        ("foo://a b/", "invalid domain character"),
        ("http://a^b/", "invalid international domain name"),
    ],
)
def test_refusals_say_why_on_one_line(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=r"\A[^\n]+\Z") as raised:
        normalize_url(text)
    assert str(raised.value) == f"invalid URL: {reason}"


@pytest.mark.parametrize("text", ["http://bücher.de/", "file://日本.jp/x"])
def test_uts46_hosts_are_refused_not_guessed(text: str) -> None:
    with pytest.raises(UnsupportedURLError, match="UTS #46"):
        normalize_url(text)


def test_punycode_hosts_as_pydantic_writes_them() -> None:
    # What pydantic writes for a non-ASCII host reads back unchanged, so
    # every 2.x dump does; what cannot be such a label is refused.
    assert normalize_url("https://XN--BCHER-KVA.de/") == "https://xn--bcher-kva.de/"
    assert normalize_url("http://xn--wgv71a.jp/p") == "http://xn--wgv71a.jp/p"
    for text in ("http://xn--zz.de/", "http://xn--.de/", "http://xn--abc.de/"):
        with pytest.raises(ValueError, match="invalid international domain name"):
            normalize_url(text)


def test_bad_input_types() -> None:
    with pytest.raises(TypeError, match="not bytes"):
        normalize_url(b"http://example.com")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="lone surrogate"):
        normalize_url("http://example.com/\ud800")
