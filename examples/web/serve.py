"""Serve the web example: its page (index.html, app.js and the npm packages
they import, from node_modules/) and the example agent as an AG-UI agent,
its model replayed offline (examples/agents/serve_replayed.py --agui-port),
the page's origin the one browser origin the agent allows (--cors-origin).

Prints the page's address once both listen; Ctrl-C stops both.

Usage: python serve.py [--port 8080] [--agent-port 8081] (0: any free port)
"""

from __future__ import annotations

import argparse
import re
import shutil
import signal
import subprocess
import sys
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any, ClassVar

HERE = Path(__file__).resolve().parent
AGENT = HERE.parent / "agents" / "serve_replayed.py"
# serve-agent's line naming its AG-UI address.
AGUI_URL = re.compile(r"(http://\S+) \(AG-UI\)")


class Files(SimpleHTTPRequestHandler):
    """The example's files. A module path without its extension is served as
    its `.js` file, as Node resolves it: rxjs 7's ES modules (imported by
    @ag-ui/client) import each other that way, which browsers do not."""

    extensions_map: ClassVar[dict[str, str]] = {
        **SimpleHTTPRequestHandler.extensions_map,
        ".mjs": "text/javascript",
    }

    def translate_path(self, path: str) -> str:
        local = super().translate_path(path)
        if not Path(local).exists() and Path(local + ".js").is_file():
            return local + ".js"
        return local

    def log_message(self, *args: Any) -> None:
        pass  # the agent's log is the one to read


def start_agent(agent_port: int, origin: str) -> tuple[subprocess.Popen[str], str]:
    """The replayed agent, allowing `origin`, and its AG-UI address once it listens."""
    flags = ["--port", "0", "--agui-port", str(agent_port), "--cors-origin", origin]
    agent = subprocess.Popen(
        [sys.executable, str(AGENT), *flags], stderr=subprocess.PIPE, text=True
    )
    assert agent.stderr is not None
    for line in agent.stderr:
        sys.stderr.write(line)
        found = AGUI_URL.search(line)
        if found:
            threading.Thread(target=copy_lines, args=(agent.stderr,), daemon=True).start()
            return agent, found.group(1)
    raise SystemExit(f"serve.py: the agent stopped before it listened (exit {agent.wait()})")


def copy_lines(source: IO[str]) -> None:
    """The agent's log to ours, as it comes (a full pipe would stall it)."""
    shutil.copyfileobj(source, sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--port", type=int, default=8080, help="the page's port")
    parser.add_argument("--agent-port", type=int, default=8081, help="the agent's AG-UI port")
    args = parser.parse_args()
    if not (HERE / "node_modules" / "@ag-ui" / "client").is_dir():
        raise SystemExit("serve.py: no node_modules/@ag-ui/client: run `npm ci` in examples/web")
    page = ThreadingHTTPServer(("127.0.0.1", args.port), partial(Files, directory=str(HERE)))
    origin = f"http://127.0.0.1:{page.server_address[1]}"
    agent, agent_url = start_agent(args.agent_port, origin)
    # Stopping this process stops the page, then the agent (which drains).
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=page.shutdown).start())
    print(f"page: {origin}/?agent={agent_url}/", flush=True)
    try:
        page.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        page.server_close()
        agent.terminate()
    return agent.wait()


if __name__ == "__main__":
    sys.exit(main())
