"""Serve weather_agent.py offline: `agentscope-proto serve-agent weather_agent:make_agent`
with its model answered from recordings instead of OpenAI.

The agent is the real one (AgentScope 2.x's `Agent`, its `OpenAIChatModel`, its
`get_weather` tool, which asks for confirmation); only `OPENAI_BASE_URL` points at
a local endpoint replaying recorded OpenAI streams (tests/replay_server.py: the
golden OpenAI cases, and the answers below). It answers the questions the README
and the example clients ask, matched leniently ("What's the weather in Paris?" is
"What is the weather in Paris?"): the weather, first with text and a `get_weather`
call, then, once the call's result is in, with an answer that says what the tool
returned; a greeting to "hi" and "@Friday, hello!"; and a story, slowly, to "Tell
me a story about Paris in the rain"; and, for the web page (examples/web/), the
weather again to "Should I take an umbrella in Paris?", thinking first (AG-UI
reasoning), then, once the call's result is in, an umbrella answer. A call the
user denied gets a regret, whatever the question. Any other question fails
the reply (the server logs which words have no recording). So every run of an
example streams the same events. `make example-agent` runs this from `.venv-as2`
(AgentScope 2.0.11); `make interop` too, for the example clients.

With `--hold`, each model call of the weather reply (before the confirmation,
and after it) stops after its first words until this process gets SIGUSR1:
`make interop` cuts a client's connection there, mid-reply, and checks that the
client takes the reply up (`Resume`) and sees every event once.

With `--agui-port`, the agent is also an AG-UI agent on that port (and
`--cors-origin` names the web pages allowed to call it from a browser): what
examples/web/ serves its page against.

Usage: python serve_replayed.py [--port 50052] [--hold] [--agui-port N [--cors-origin ORIGIN ...]]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests"))

from replay_server import ReplayServer, golden_cases, saying  # noqa: E402

# What the model says, beside the golden cases: after `get_weather` answered
# "Sunny in Paris, 21°C" (weather_agent.py), the same weather.
ANSWER = "The weather in Paris is sunny, 21°C."
HELLO = "Hello! Ask me about the weather."
# A long answer, streamed slowly (a chunk every 0.05 s: about 3 s), so that the
# README's production recipe can kill the replica serving it mid-reply.
STORY = (
    "Rain came to Paris at noon. The cafes pulled their chairs in, the Seine "
    "turned the colour of pewter, and a painter on the Pont des Arts kept "
    "working under a borrowed umbrella until the light came back at six."
)
# The web page's question: the model thinks, says so and calls `get_weather`,
# then answers with the tool's weather.
THOUGHT = "The user asks about rain in Paris: I should check the weather first."
UMBRELLA = "No umbrella needed: it is sunny in Paris, 21°C."
# After a denied call: AgentScope asks the model again, the denial as the tool's result.
DENIED = "I was not allowed to check the weather, so I cannot tell you."
DENIAL = "is denied by user"  # in AgentScope 2.x's result of a denied call


def thinking_first(thought: str, case: Mapping[str, Any]) -> dict[str, Any]:
    """A recorded stream that thinks `thought` before it says anything: the
    chunks of `case` with reasoning deltas after its first (the role), five
    characters a chunk, in the form of the golden `stream_thinking_then_text_by5`."""
    form = golden_cases()["stream_thinking_then_text_by5"]["chunks"][1]
    first, *rest = copy.deepcopy(case["chunks"])
    thinking = []
    for start in range(0, len(thought), 5):
        chunk = copy.deepcopy(form)
        chunk["choices"][0]["delta"] = {"reasoning_content": thought[start : start + 5]}
        thinking.append(chunk)
    return {"chunks": [first, *thinking, *rest]}


RECORDINGS = {
    "answer": saying(ANSWER),
    "hello": saying(HELLO),
    "story": saying(STORY),
    "weather_thinking": thinking_first(THOUGHT, golden_cases()["stream_text_then_tool_by4"]),
    "umbrella": saying(UMBRELLA),
    "denied": saying(DENIED),
}
# The questions asked -> the recorded streams of their model calls, in order.
SCRIPT = {
    "What is the weather in Paris?": ["stream_text_then_tool_by4", "answer"],
    "hi": ["hello"],
    "@Friday, hello!": ["hello"],
    "Tell me a story about Paris in the rain": ["slow:story"],
    "Should I take an umbrella in Paris?": ["weather_thinking", "umbrella"],
}


def first_words_held(case: Mapping[str, Any]) -> dict[str, Any]:
    """A recorded stream with its first two chunks (the role, then the first
    words) as one: a `hold:` stream sends its first chunk and waits, so the
    agent has streamed its first text delta when the hold starts, and the
    events are those of the whole stream."""
    first, words, *rest = copy.deepcopy(case["chunks"])
    first["choices"][0]["delta"]["content"] = words["choices"][0]["delta"]["content"]
    return {"chunks": [first, *rest]}


# --hold: the weather's model calls held (see `Held`).
HELD_RECORDINGS = {
    **RECORDINGS,
    "weather_held": first_words_held(golden_cases()["stream_text_then_tool_by4"]),
    "answer_held": first_words_held(RECORDINGS["answer"]),
}
HELD_SCRIPT = {**SCRIPT, "What is the weather in Paris?": ["hold:weather_held", "hold:answer_held"]}


class Replay(ReplayServer):
    """The replay, whose model answers a denied tool call with `DENIED`
    (the script's next recording would speak of the tool's result)."""

    def pick(self, body: Mapping[str, Any]) -> str:
        messages = body.get("messages") or [{}]
        if messages[-1].get("role") == "tool" and DENIAL in json.dumps(messages[-1]):
            return "denied"
        return super().pick(body)


class Held(Replay):
    """The replay whose every `hold:` stream waits for a SIGUSR1 sent after
    the model was asked for it: its release is re-armed as the model is
    asked, so the signal that lets one stream go never lets a later one
    through."""

    def pick(self, body: Mapping[str, Any]) -> str:
        name = super().pick(body)
        if name.startswith("hold:"):
            self.release.clear()
        return name


def serving(args: argparse.Namespace) -> list[str]:
    """serve-agent's flags for the ports asked for."""
    flags = ["--port", str(args.port)]
    if args.agui_port is not None:
        flags += ["--agui-port", str(args.agui_port)]
    for origin in args.cors_origin:
        flags += ["--cors-origin", origin]
    return flags


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--port", type=int, default=50052, help="the agent's port (0: any)")
    parser.add_argument(
        "--hold", action="store_true", help="hold the weather's model calls until SIGUSR1 (above)"
    )
    parser.add_argument("--agui-port", type=int, help="also serve AG-UI on this port (0: any)")
    parser.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a web page allowed to call the AG-UI port from a browser (repeatable)",
    )
    args = parser.parse_args()
    # The agentscope-proto of this interpreter's venv (the one with AgentScope).
    command = Path(sys.executable).parent / "agentscope-proto"
    replay = Held(HELD_SCRIPT, HELD_RECORDINGS) if args.hold else Replay(SCRIPT, RECORDINGS)
    signal.signal(signal.SIGUSR1, lambda *_: replay.release.set())
    with replay:
        env = {
            **os.environ,
            "OPENAI_API_KEY": "sk-replay",
            "OPENAI_BASE_URL": replay.base_url,
            "OPENAI_MODEL": "gpt-4o-mini",
        }
        server = subprocess.Popen(
            [str(command), "serve-agent", "weather_agent:make_agent", *serving(args)],
            cwd=HERE,
            env=env,
        )
        # Stopping this process stops the server (which drains) before the replay.
        signal.signal(signal.SIGTERM, lambda *_: server.terminate())
        try:
            return server.wait()
        except KeyboardInterrupt:  # Ctrl-C reached the server too: let it drain
            return server.wait()


if __name__ == "__main__":
    sys.exit(main())
