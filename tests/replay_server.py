"""A local OpenAI Chat Completions endpoint that replays recorded responses.

Hosted-agent tests run real AgentScope agents whose model is AgentScope's own
`OpenAIChatModel` pointed here (`base_url`), so nothing reaches the network.
The recordings are the OpenAI golden cases of `tests/golden/parsers/openai.json`
(chunks of real streams and whole responses, recorded with AgentScope 1.0.21's
parsers), chosen by what the user said:

    script = {"hi": ["stream_text_by3"],
              "weather?": ["stream_text_then_tool_by4", "stream_text_by3"]}

Words match leniently: case, punctuation, spacing and the contraction
`'s` aside ("What's the weather in Paris?" is "what is the weather in
paris"), as a reader retyping a question would vary it. The n-th model
call after the user's words gets the n-th case (the agent's
tool round trips are the calls after the first). A streamed request gets the
case's chunks as SSE, a plain one (AgentScope 1.x test agents do not stream)
its response: script stream cases for streaming models, whole responses for
the others. `"case@tool"` replays a case with its tool calls renamed to
`tool` (e.g. a call of AgentScope's `GenerateStructuredOutput`). AgentScope
2.x adds a `<system-reminder>` user message to every model call, so the
user's words are the last user message that is not one.

Script entries that are not golden cases: `"http:500"` answers with that HTTP
status and an OpenAI error body, `"hang"` sends the start of a stream and
then nothing until the client goes away (a reply in progress, to cancel),
`"hold:<case>"` sends the case's first chunk and the rest once the test sets
`release`, and `"slow:<case>"` streams the case a chunk every 0.05 s (a reply
long enough to be in flight when its server stops).
"""

from __future__ import annotations

import copy
import json
import re
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).resolve().parent / "golden" / "parsers" / "openai.json"
_REMINDER = "<system-reminder>"


def golden_cases() -> dict[str, dict[str, Any]]:
    """The OpenAI parser golden cases by name."""
    data = json.loads(GOLDEN.read_text(encoding="utf-8"))
    return {case["name"]: case for case in data["cases"]}


def saying(text: str) -> dict[str, Any]:
    """A recording of our own: the golden stream `stream_text_by3` with its
    text replaced by `text` (three characters a chunk, as it comes)."""
    chunks = golden_cases()["stream_text_by3"]["chunks"]
    first, pieces, last = chunks[0], chunks[1:-2], chunks[-2:]
    said = []
    for start in range(0, len(text), 3):
        chunk = copy.deepcopy(pieces[0])
        chunk["choices"][0]["delta"]["content"] = text[start : start + 3]
        said.append(chunk)
    return {"chunks": [first, *said, *last]}


def renamed(case: Mapping[str, Any], tool: str) -> dict[str, Any]:
    """A case whose tool calls call `tool`."""
    out = copy.deepcopy(dict(case))
    chunks = out.get("chunks") or []
    choices = [choice for chunk in chunks for choice in chunk.get("choices") or []]
    deltas = [choice["delta"] for choice in choices]
    if out.get("response"):
        deltas += [choice["message"] for choice in out["response"]["choices"]]
    for delta in deltas:
        for call in delta.get("tool_calls") or []:
            if call.get("function", {}).get("name"):
                call["function"]["name"] = tool
    return out


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def normalised(words: str) -> str:
    """The words as the replay matches them: lower case, `'s` as ` is`, no
    punctuation, single spaces."""
    spelled = re.sub(r"(?<=\w)['’]s\b", " is", words.lower())
    return " ".join(re.findall(r"\w+", spelled))


def user_words(messages: Sequence[Mapping[str, Any]]) -> tuple[str, int]:
    """The user's last words and how many model turns followed them."""
    turns = 0
    for message in reversed(messages):
        if message.get("role") == "assistant":
            turns += 1
        elif message.get("role") == "user" and not _text(message).startswith(_REMINDER):
            return _text(message), turns
    return "", turns


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return  # the client hung up (a cancelled reply, a retry): nothing to report
        super().handle_error(request, client_address)


class ReplayServer:
    """The endpoint on a free loopback port, in a thread; a context manager."""

    def __init__(
        self,
        script: Mapping[str, Sequence[str]],
        recordings: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.script: dict[str, list[str]] = {}
        for words, cases in script.items():
            key, names = normalised(words), list(cases)
            if self.script.get(key, names) != names:
                raise ValueError(f"{words!r}: the script has these words for other cases")
            self.script[key] = names
        # The golden cases, and `recordings` of the same form by name.
        self.cases = {**golden_cases(), **(recordings or {})}
        self.requests: list[dict[str, Any]] = []
        # Hanging streams open now, and opened so far (a count that only
        # grows: one closing as another opens leaves `open_streams` as it was).
        self.open_streams = 0
        self.hung_streams = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        # What a `hold:<case>` stream waits for after its first chunk.
        self.release = threading.Event()
        self._server = _Server(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ReplayServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()

    def pick(self, body: Mapping[str, Any]) -> str:
        words, turn = user_words(body.get("messages", []))
        names = self.script.get(normalised(words))
        if names is None:
            raise LookupError(f"no recording for the words {words!r}")
        if turn >= len(names):
            raise LookupError(f"{words!r}: only {len(names)} model calls recorded")
        return names[turn]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        replay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                with replay._lock:
                    replay.requests.append(body)
                try:
                    name = replay.pick(body)
                except LookupError as exc:
                    self._json(404, {"error": {"message": str(exc), "type": "not_found"}})
                    return
                if name.startswith("http:"):
                    status = int(name.removeprefix("http:"))
                    self._json(status, {"error": {"message": "recorded failure", "type": "x"}})
                elif name == "hang":
                    self._hang()
                elif name.startswith("hold:"):
                    self._held(replay.cases[name.removeprefix("hold:")]["chunks"])
                elif name.startswith("slow:"):
                    self._stream(replay.cases[name.removeprefix("slow:")]["chunks"], pause=0.05)
                else:
                    case_name, _, tool = name.partition("@")
                    case = replay.cases[case_name]
                    case = renamed(case, tool) if tool else case
                    if body.get("stream"):
                        self._stream(case["chunks"])
                    else:
                        self._json(200, case["response"])

            def _json(self, status: int, value: Any) -> None:
                data = json.dumps(value).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _start_stream(self) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()

            def _stream(self, chunks: Sequence[Any], pause: float = 0.0) -> None:
                self._start_stream()
                for chunk in chunks:
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                    if pause:
                        self.wfile.flush()
                        time.sleep(pause)
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _held(self, chunks: Sequence[Any]) -> None:
                """The first chunk, then the rest once the test sets `release`."""
                self._start_stream()
                self.wfile.write(b"data: " + json.dumps(chunks[0]).encode() + b"\n\n")
                self.wfile.flush()
                replay.release.wait(60)
                for chunk in chunks[1:]:
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _hang(self) -> None:
                first = replay.cases["stream_text_by3"]["chunks"][0]
                self._start_stream()
                with replay._lock:
                    replay.open_streams += 1
                    replay.hung_streams += 1
                try:
                    self.wfile.write(b"data: " + json.dumps(first).encode() + b"\n\n")
                    self.wfile.flush()
                    # Until the client hangs up (a write fails) or the server stops.
                    while not replay._stop.wait(0.05):
                        self.wfile.write(b": waiting\n\n")
                        self.wfile.flush()
                except OSError:
                    pass
                finally:
                    with replay._lock:
                        replay.open_streams -= 1

        return Handler


def wait_until(condition: Any, timeout: float = 10.0) -> bool:
    """Poll `condition()` until it holds (True) or `timeout` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return bool(condition())
