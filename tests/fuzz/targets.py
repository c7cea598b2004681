"""Coverage-guided fuzzing (atheris/libFuzzer) of the parts that read untrusted bytes.

    python tests/fuzz/targets.py TARGET WORKDIR [libFuzzer options]

Run it through tests/fuzz/run.py (`make fuzz`, `make fuzz-quick`), which keeps
libFuzzer's progress output in a log and prints one summary line. TARGET is one of:

- `from_dict`: a dialect byte, then JSON text for `from_dict`; what reads in
  the 1.x or agentscope-java dialect must write back in it and read again.
- `parse`: a provider byte, then a response body for `parse`.
- `stream`: a provider byte and a slice-size byte, then a raw stream body for
  `StreamParser.feed_bytes` in slices, and `finish`.

Any exception other than the package's own errors is a crash (libFuzzer keeps
the input), except the provider bugs listed in
tests/adversarial/adversarial_inputs.py (KNOWN_BUGS), which their owners fix.
The corpus starts from the golden data; `make fuzz` runs each target for
longer, `make fuzz-quick` (CI, `make ci-extra`) for a bounded number of runs.
Crash inputs go to WORKDIR/, the grown corpus to WORKDIR/corpus/.
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
from pathlib import Path
from typing import Any

import atheris

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
sys.path[:0] = [str(TESTS), str(TESTS / "adversarial")]

with atheris.instrument_imports():
    import json_repair  # noqa: F401  (instrumented too: tool arguments go through it)

    from agentscope_proto.dialects import detect_dialect, from_dict, to_dict
    from agentscope_proto.errors import AgentScopeProtoError
    from agentscope_proto.parsing import StreamParser, parse
    from agentscope_proto.providers import PROVIDERS as REGISTRY

from adversarial_inputs import known_bug  # noqa: E402

PROVIDERS = sorted(REGISTRY)
DIALECTS: list[Any] = [None, "agentscope", "java", "agentscope2"]
GOLDEN = TESTS / "golden"
FIXTURES = TESTS / "fixtures"


def _tolerate(exc: Exception) -> None:
    if isinstance(exc, AgentScopeProtoError) or known_bug(exc) is not None:
        return
    raise exc


def fuzz_from_dict(data: bytes) -> None:
    if not data:
        return
    dialect = DIALECTS[data[0] % len(DIALECTS)]
    try:
        value = json.loads(data[1:])
    except (ValueError, RecursionError):
        return
    try:
        msg = from_dict(value, dialect)
        read_as = dialect or detect_dialect(value)
    except Exception as exc:
        _tolerate(exc)
        return
    # A message read in a writable dialect must write back in it and read
    # again. Other writes may refuse what the dialect cannot hold
    # (agentscope-java wants object metadata), but only with a typed error;
    # and what they write need not read back (a 2.x or agentscope-java tool
    # result may hold block kinds a 1.x one may not).
    if read_as in ("agentscope", "java"):
        from_dict(to_dict(msg, read_as), read_as)
    for out in ("agentscope", "java"):
        try:
            to_dict(msg, out)
        except Exception as exc:
            _tolerate(exc)


def fuzz_parse(data: bytes) -> None:
    if not data:
        return
    provider = PROVIDERS[data[0] % len(PROVIDERS)]
    try:
        parse(provider, data[1:], split_think_tags=bool(data[0] & 0x80))
    except Exception as exc:
        _tolerate(exc)


def fuzz_stream(data: bytes) -> None:
    if len(data) < 2:
        return
    provider = PROVIDERS[data[0] % len(PROVIDERS)]
    size = data[1] + 1
    body = data[2:]
    try:
        parser = StreamParser(provider, split_think_tags=bool(data[0] & 0x80))
        for start in range(0, len(body), size):
            parser.feed_bytes(body[start : start + size])
        parser.finish()
    except Exception as exc:
        _tolerate(exc)


TARGETS = {"from_dict": fuzz_from_dict, "parse": fuzz_parse, "stream": fuzz_stream}


def _stream_body(provider: str, chunks: list[Any]) -> bytes:
    if REGISTRY[provider].framing == "ndjson":
        return b"".join(json.dumps(c).encode() + b"\n" for c in chunks)
    events = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    return events + b"data: [DONE]\n\n"


def _golden_parsers(provider: str) -> Path:
    """The golden responses a provider's seeds start from: its own where
    AgentScope 1.0.21 has it, else the Chat Completions family's (the API
    every provider it lacks speaks today); a seed is only a starting point."""
    own = "agentscope" in REGISTRY[provider].variants
    return GOLDEN / "parsers" / f"{provider if own else 'openai'}.json"


def seeds(target: str) -> list[bytes]:
    """The starting corpus: golden inputs in the target's byte layout."""
    out: list[bytes] = []
    if target == "from_dict":
        cases = json.loads((GOLDEN / "messages.json").read_text(encoding="utf-8"))["cases"]
        messages = [case["input"] for case in cases]
        messages += [json.loads(p.read_text(encoding="utf-8")) for p in FIXTURES.glob("*/*.json")]
        for index, message in enumerate(messages):
            out.append(bytes([index % len(DIALECTS)]) + json.dumps(message).encode())
        return out
    for number, provider in enumerate(PROVIDERS):
        cases = json.loads(_golden_parsers(provider).read_text(encoding="utf-8"))
        for case in cases["cases"]:
            if target == "parse" and not case["stream"]:
                out.append(bytes([number]) + json.dumps(case["response"]).encode())
            elif target == "stream" and case["stream"]:
                out.append(bytes([number, 63]) + _stream_body(provider, case["chunks"]))
    return out


def main() -> None:
    if len(sys.argv) < 3 or sys.argv[1] not in TARGETS:
        raise SystemExit(f"usage: targets.py {{{','.join(TARGETS)}}} WORKDIR [libFuzzer options]")
    target, work = sys.argv[1], Path(sys.argv[2]).resolve()
    logging.disable(logging.CRITICAL)  # repair and dropped-block warnings by the thousand
    corpus = work / "corpus"
    # A fresh corpus each run, so that a bounded run is the same run every time.
    shutil.rmtree(corpus, ignore_errors=True)
    corpus.mkdir(parents=True)
    for index, seed in enumerate(seeds(target)):
        (corpus / f"seed-{index:04d}").write_bytes(seed)
    args = [sys.argv[0], *sys.argv[3:], f"-artifact_prefix={work}/", str(corpus)]
    atheris.Setup(args, TARGETS[target])
    atheris.Fuzz()


if __name__ == "__main__":
    main()
