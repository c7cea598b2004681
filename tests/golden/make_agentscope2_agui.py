"""Generate golden data for AgentScope 2.x's AG-UI mapping (`AGUIProtocolMiddleware`).

The oracle is ``agentscope==2.0.11``'s own ``agentscope.app.middleware.
AGUIProtocolMiddleware`` with ``ag-ui-protocol`` (the version is recorded),
in the AgentScope 2.x venv (without the ``service`` extra's packages, which
the middleware does not use: see ``_middleware_class``). Its input is the
recorded 2.x event streams of ``tests/golden/agentscope2/events.json``
(``make_agentscope2_events.py``):
each event goes through the middleware's own JSON path (the ``data:`` payload
of AgentScope's event stream, parsed into 2.x's event class, converted, dumped
as the middleware writes it). It writes ``tests/golden/agentscope2/agui.json``:

* ``events``: for each single-event case, by name, what a fresh middleware
  writes for it (``null`` where it writes nothing).
* ``replies``: for each recorded reply, by name, its turns; each turn the list
  of ``{"item": index, "agui": ...}``, one per event item of the recorded turn
  (the index into that turn's items), from one middleware per reply (it keeps
  the model name and tool result text across events, as in a real app).

``tests/test_agui_golden.py`` runs this package's mapping over the same
streams and checks it against this file (docs/agui.md says where it differs).

Rerun from the repository root with the AgentScope 2.x venv:

    .venv-as2/bin/python tests/golden/make_agentscope2_agui.py

Rerunning reproduces the file byte for byte.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import sys
import types
from pathlib import Path
from typing import Any

import agentscope

AGENTSCOPE_VERSION = "2.0.11"
SOURCE = Path("tests/golden/agentscope2/events.json")
OUT = Path("tests/golden/agentscope2/agui.json")


def _middleware_class() -> Any:
    """AgentScope's `AGUIProtocolMiddleware`, its own module and its base's.

    `agentscope.app`'s `__init__` builds the whole app (a scheduler, the
    `service` extra's packages); the middleware needs none of it, so its parent
    packages are entered as bare packages over their own folders and the two
    middleware modules are imported from there unchanged.
    """
    root = Path(agentscope.__file__).parent
    for name in ("app", "app.middleware", "app.middleware._protocol"):
        package = types.ModuleType(f"agentscope.{name}")
        package.__path__ = [str(root.joinpath(*name.split(".")))]
        sys.modules[package.__name__] = package
    module = importlib.import_module("agentscope.app.middleware._protocol._agui")
    return module.AGUIProtocolMiddleware


AGUIProtocolMiddleware = _middleware_class()


async def _no_app(scope: Any, receive: Any, send: Any) -> None:
    """The middleware wraps an ASGI app; only its converter is used here."""


def _convert(middleware: Any, dump: dict[str, Any]) -> Any:
    written = middleware._convert_event_json(json.dumps(dump, ensure_ascii=False))
    return None if written is None else json.loads(written)


def event_records(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"name": case["name"], "agui": _convert(AGUIProtocolMiddleware(_no_app), case["dump"])}
        for case in cases
    ]


def reply_records(replies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    records = []
    for reply in replies:
        middleware = AGUIProtocolMiddleware(_no_app)
        turns = [
            [
                {"item": index, "agui": _convert(middleware, item["event"])}
                for index, item in enumerate(turn)
                if "event" in item
            ]
            for turn in reply["turns"]
        ]
        records.append({"name": reply["name"], "turns": turns})
    return records


def main() -> None:
    if agentscope.__version__ != AGENTSCOPE_VERSION:
        raise SystemExit(
            f"agentscope {agentscope.__version__} is installed, not {AGENTSCOPE_VERSION}"
        )
    source = json.loads(SOURCE.read_text(encoding="utf-8"))
    document = {
        "agentscope": AGENTSCOPE_VERSION,
        "ag_ui_protocol": importlib.metadata.version("ag-ui-protocol"),
        "generated_by": "tests/golden/make_agentscope2_agui.py",
        "source": str(SOURCE),
        "events": event_records(source["events"]),
        "replies": reply_records(source["replies"]),
    }
    text = json.dumps(document, ensure_ascii=False, indent=1, allow_nan=False)
    OUT.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
