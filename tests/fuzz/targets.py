"""Coverage-guided fuzzing (atheris/libFuzzer) of the parts that read untrusted bytes.

    python tests/fuzz/targets.py TARGET WORKDIR [libFuzzer options]

Run it through tests/fuzz/run.py (`make fuzz`, `make fuzz-quick`), which keeps
libFuzzer's progress output in a log and prints one summary line. TARGET is one of:

- `from_dict`: a dialect byte, then JSON text for `from_dict`; what reads in
  the 1.x or agentscope-java dialect must write back in it and read again.
- `parse`: a provider byte, then a response body for `parse`.
- `stream`: a provider byte and a slice-size byte, then a raw stream body for
  `StreamParser.feed_bytes` in slices, and `finish`.
- `agent`: a kind byte, then the bytes of an AgentService `ReplyRequest` or
  `ObserveRequest`, read as the servicer reads one before any session or
  agent sees it: the lenient deserializer, `decoded`, the session id check,
  and the hosting's reading that needs no AgentScope (each message as the
  1.x and 2.x dialects write it, an answer as 2.x's event, the schema).
  What 2.x's pydantic models then check is AgentScope's, not fuzzed here.
- `format`: a provider-and-mode byte, then the bytes of a `FormatRequest`
  whose messages are formatted on both paths, the compiled core and the
  Python walk (`_core.forced`): the same body, warnings and error, or a crash
  (the core reads the messages' wire bytes itself, so this is its fuzzing).
- `hub`: a kind byte, then the bytes of a HubService `PublishRequest`,
  `PublishStreamRequest`, `SubscribeRequest`, `SubscribeBatchesRequest` or
  `AckRequest`, through the servicer's checks onto one memory store kept for
  the run (publishes store, subscriptions parse and check their offset or
  join their group against it, acks check their offsets against the group).

Any exception other than the package's own errors is a crash (libFuzzer keeps
the input), except the provider bugs listed in
tests/adversarial/adversarial_inputs.py (KNOWN_BUGS), which their owners fix.
The corpus starts from the golden data; `make fuzz` runs each target for
longer, `make fuzz-quick` (CI, `make ci-extra`) for a bounded number of runs.
Crash inputs go to WORKDIR/, the grown corpus to WORKDIR/corpus/.
"""

from __future__ import annotations

import asyncio
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

    from agentscope_proto import _core
    from agentscope_proto._engine.body import body_to_json
    from agentscope_proto._generated.agentscope.agent.v1 import agent_service_pb2 as agent_pb
    from agentscope_proto._generated.agentscope.agent.v1 import events_pb2 as events_pb
    from agentscope_proto._generated.agentscope.agent.v1 import hub_service_pb2 as hub_pb
    from agentscope_proto._generated.agentscope.formatter.v1 import formatter_service_pb2 as fmt_pb
    from agentscope_proto._generated.agentscope.message.v1.message_pb2 import Msg
    from agentscope_proto._wire import field_bytes
    from agentscope_proto.agents.hosting.agentscope2 import _with_defaults
    from agentscope_proto.agents.hosting.protocol import read_each, structured_schema
    from agentscope_proto.agents.sessions import check_session_id
    from agentscope_proto.dialects import detect_dialect, from_dict, to_dict
    from agentscope_proto.errors import AgentScopeProtoError
    from agentscope_proto.events import event_from_dict, event_to_dict
    from agentscope_proto.formatting import format as format_body
    from agentscope_proto.hub.memory import MemoryHubStore
    from agentscope_proto.hub.servicer import HubServicer, acknowledge, checked_subscription
    from agentscope_proto.hub.store import HubConfig
    from agentscope_proto.parsing import StreamParser, parse
    from agentscope_proto.providers import PROVIDERS as REGISTRY
    from agentscope_proto.service._rpc import Wired, decoded, lenient

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


COMPILED = sorted(name for name, provider in REGISTRY.items() if provider.compiled is not None)


def _formatted(provider: str, msgs: list[Msg], multi_agent: bool) -> Any:
    """A call's outcome: its body as the server writes it and warnings, or its error."""
    try:
        body = format_body(provider, msgs, multi_agent=multi_agent)
    except AgentScopeProtoError as exc:
        return type(exc).__name__, str(exc)
    return body_to_json(body), list(body.warnings)


def fuzz_format(data: bytes) -> None:
    if not data:
        return
    provider = COMPILED[data[0] % len(COMPILED)]
    try:
        msgs = list(fmt_pb.FormatRequest.FromString(data[1:]).messages)
    except Exception:  # not a FormatRequest: nothing to format
        return
    multi_agent = bool(data[0] & 0x80)
    with _core.forced("python"):
        reference = _formatted(provider, msgs, multi_agent)
    compiled = _formatted(provider, msgs, multi_agent)
    if compiled != reference:
        raise AssertionError(f"{provider}: the compiled core and the Python walk differ")


AGENT_REQUESTS = [agent_pb.ReplyRequest, agent_pb.ObserveRequest]
_AGENT_READERS = [lenient(kind) for kind in AGENT_REQUESTS]
_ANSWERS = [f.name for f in agent_pb.ReplyRequest.DESCRIPTOR.oneofs_by_name["answer"].fields]


def _read_msg(msg: Msg, path: str) -> None:
    """A message as the hostings read it, up to AgentScope's own classes."""
    to_dict(_with_defaults(msg), dialect="agentscope2")
    to_dict(msg)


def fuzz_agent(data: bytes) -> None:
    if not data:
        return
    kind = data[0] % len(AGENT_REQUESTS)
    received = _AGENT_READERS[kind](data[1:])
    try:
        request = decoded(received)
        check_session_id(request.session_id)
        read_each(request.msgs, "msgs", _read_msg)
        if kind == 0:
            which = request.WhichOneof("answer")
            if which is not None:
                event = events_pb.AgentEvent(id="fuzz", created_at="2026-01-01T00:00:00")
                getattr(event, which).CopyFrom(getattr(request, which))
                read_each([event], which, lambda e, _: event_to_dict(e))
            structured_schema(request)
    except Exception as exc:
        _tolerate(exc)


HUB_REQUESTS = [
    hub_pb.PublishRequest,
    hub_pb.PublishStreamRequest,
    hub_pb.SubscribeRequest,
    hub_pb.SubscribeBatchesRequest,
    hub_pb.AckRequest,
]
_HUB_READERS = [lenient(kind, keep_wire=kind is hub_pb.PublishRequest) for kind in HUB_REQUESTS]
_MSG_FIELD = hub_pb.PublishRequest.DESCRIPTOR.fields_by_name["msg"].number
# Small, so that the run reaches the store's trimming and eviction.
_HUB_CONFIG = HubConfig(retention=64, max_msg_kb=64, memory_mb=1)
_loop = asyncio.new_event_loop()
_store = MemoryHubStore(_HUB_CONFIG)
_hub = HubServicer(_store, _HUB_CONFIG)


async def _hub_request(kind: int, received: object) -> None:
    if kind == 0:  # Publish, as the servicer reads it from its bytes
        if not isinstance(received, Wired):
            decoded(received)  # raises: it did not decode
            return
        message: hub_pb.PublishRequest = received.message  # type: ignore[assignment]
        data = field_bytes(received.data, _MSG_FIELD)
        if message.HasField("msg") and Msg.FromString(data) != message.msg:
            raise AssertionError("the bytes Publish stores are not the request's message")
        msg = _hub._checked(message.topic, data if message.HasField("msg") else None)
        await _store.publish(message.topic, msg)
    elif kind == 1:
        await _hub._publish_all(decoded(received, "requests[0]"), 0)
    elif kind == 4:  # Ack, as the servicer checks and stores it
        request = decoded(received)
        await acknowledge(_store, request.topic, request.group, request.member, request.offsets)
    else:  # what Subscribe and SubscribeBatches check before following a topic (or joining a group)
        request = decoded(received)
        group = request.group if request.HasField("group") else None
        member = checked_subscription(request.topic, request.after, group)
        subscription = await _store.follow(request.topic, request.after, member)
        subscription.close()


def fuzz_hub(data: bytes) -> None:
    if not data:
        return
    kind = data[0] % len(HUB_REQUESTS)
    received = _HUB_READERS[kind](data[1:])
    try:
        _loop.run_until_complete(_hub_request(kind, received))
    except Exception as exc:
        _tolerate(exc)


TARGETS = {
    "from_dict": fuzz_from_dict,
    "parse": fuzz_parse,
    "stream": fuzz_stream,
    "agent": fuzz_agent,
    "hub": fuzz_hub,
    "format": fuzz_format,
}


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


def _golden_msgs() -> list[Msg]:
    """The golden messages as protobuf `Msg`s (those that read)."""
    cases = json.loads((GOLDEN / "messages.json").read_text(encoding="utf-8"))["cases"]
    out = []
    for case in cases:
        try:
            out.append(from_dict(case["input"]))
        except AgentScopeProtoError:
            continue
    return out


def _golden_answers() -> list[agent_pb.ReplyRequest]:
    """Replies answering with each golden 2.x answer event."""
    data = json.loads((GOLDEN / "agentscope2" / "events.json").read_text(encoding="utf-8"))
    out = []
    for case in data["events"]:
        event = event_from_dict(case["dump"])
        which = event.WhichOneof("event")
        if which in _ANSWERS:
            request = agent_pb.ReplyRequest(session_id=case["dump"].get("session_id", "s"))
            getattr(request, which).CopyFrom(getattr(event, which))
            out.append(request)
    return out


def _agent_seeds() -> list[bytes]:
    msgs = _golden_msgs()
    requests: list[Any] = [
        agent_pb.ReplyRequest(msgs=msgs[i : i + 2], session_id=f"session-{i}")
        for i in range(0, len(msgs), 2)
    ]
    requests.append(
        agent_pb.ReplyRequest(msgs=msgs[:1], structured_schema_json='{"type": "object"}')
    )
    requests += _golden_answers()
    out = [bytes([0]) + r.SerializeToString() for r in requests]
    out += [
        bytes([1]) + agent_pb.ObserveRequest(msgs=[m], session_id="s").SerializeToString()
        for m in msgs
    ]
    return out


def _hub_seeds() -> list[bytes]:
    msgs = _golden_msgs()
    topics = ["room", "team.a:b/c-1"]
    publishes = [hub_pb.PublishRequest(topic=topics[i % 2], msg=msg) for i, msg in enumerate(msgs)]
    out = [bytes([0]) + p.SerializeToString() for p in publishes]
    out.append(bytes([1]) + hub_pb.PublishStreamRequest(publishes=publishes).SerializeToString())
    # An offset this run's store gave out, and ones it never did.
    given = _loop.run_until_complete(_store.publish("room", msgs[0].SerializeToString()))
    for after in ("", given, "0-0", "18446744073709551615-0"):
        for kind, request in ((2, hub_pb.SubscribeRequest), (3, hub_pb.SubscribeBatchesRequest)):
            out.append(bytes([kind]) + request(topic="room", after=after).SerializeToString())
    return out


def _format_seeds() -> list[bytes]:
    """The golden messages and the bench corpora, each provider in both modes."""
    conversations = [_golden_msgs()]
    for path in sorted((TESTS.parent / "bench" / "corpus").glob("*_20.json")):
        messages = json.loads(path.read_text(encoding="utf-8"))["messages"]
        conversations.append([from_dict(m) for m in messages])
    out = []
    for msgs in conversations:
        request = fmt_pb.FormatRequest(messages=msgs).SerializeToString()
        for number in range(len(COMPILED)):
            out += [bytes([number]) + request, bytes([number | 0x80]) + request]
    return out


def seeds(target: str) -> list[bytes]:
    """The starting corpus: golden inputs in the target's byte layout."""
    if target == "format":
        return _format_seeds()
    if target == "agent":
        return _agent_seeds()
    if target == "hub":
        return _hub_seeds()
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
