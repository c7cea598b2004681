"""Agents across processes.

- `events`: AgentScope 2.x's agent events from and to `AgentEvent` (pure).
"""

from __future__ import annotations

from .events import event_from_dict, event_to_dict

__all__ = ["event_from_dict", "event_to_dict"]
