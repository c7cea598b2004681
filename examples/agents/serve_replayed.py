"""Serve weather_agent.py offline: `agentscope-proto serve-agent weather_agent:make_agent`
with its model answered from recordings instead of OpenAI.

The agent is the real one (AgentScope 2.x's `Agent`, its `OpenAIChatModel`, its
`get_weather` tool, which asks for confirmation); only `OPENAI_BASE_URL` points at
a local endpoint replaying recorded OpenAI streams (tests/replay_server.py: the
golden OpenAI cases, and the answers below). It answers the questions the README
and the example clients ask, matched leniently ("What's the weather in Paris?" is
"What is the weather in Paris?"): the weather, first with text and a `get_weather`
call, then, once the call's result is in, with an answer that says what the tool
returned; and a greeting to "hi" and "@Friday, hello!". Any other question fails
the reply (the server logs which words have no recording). So every run of an
example streams the same events. `make example-agent` runs this from `.venv-as2`
(AgentScope 2.0.11); `make interop` too, for the example clients.

Usage: python serve_replayed.py [--port 50052]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests"))

from replay_server import ReplayServer, saying  # noqa: E402

# What the model says, beside the golden cases: after `get_weather` answered
# "Sunny in Paris, 21°C" (weather_agent.py), the same weather.
ANSWER = "The weather in Paris is sunny, 21°C."
HELLO = "Hello! Ask me about the weather."
RECORDINGS = {"answer": saying(ANSWER), "hello": saying(HELLO)}
# The questions asked -> the recorded streams of their model calls, in order.
SCRIPT = {
    "What is the weather in Paris?": ["stream_text_then_tool_by4", "answer"],
    "hi": ["hello"],
    "@Friday, hello!": ["hello"],
}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--port", type=int, default=50052, help="the agent's port (0: any)")
    args = parser.parse_args()
    # The agentscope-proto of this interpreter's venv (the one with AgentScope).
    command = Path(sys.executable).parent / "agentscope-proto"
    with ReplayServer(SCRIPT, RECORDINGS) as replay:
        env = {
            **os.environ,
            "OPENAI_API_KEY": "sk-replay",
            "OPENAI_BASE_URL": replay.base_url,
            "OPENAI_MODEL": "gpt-4o-mini",
        }
        server = subprocess.Popen(
            [str(command), "serve-agent", "weather_agent:make_agent", "--port", str(args.port)],
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
