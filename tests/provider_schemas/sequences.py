"""Rules across messages that no request type expresses, each one a
documented 400 of the provider's API: tool calls answered where the API looks
for the answers, and nothing answering a call that is not there.

Each rule reads a body the walker has already checked; malformed parts are
skipped here (their violations come from the walker).
"""

from __future__ import annotations

from typing import Any

from ._walk import CONSTRAINT, Violation


def _items(body: dict[str, Any], key: str) -> list[tuple[int, dict[str, Any]]]:
    value = body.get(key)
    if not isinstance(value, list):
        return []
    return [(index, item) for index, item in enumerate(value) if isinstance(item, dict)]


def _dicts(value: Any) -> list[tuple[int, dict[str, Any]]]:
    if not isinstance(value, list):
        return []
    return [(index, item) for index, item in enumerate(value) if isinstance(item, dict)]


def openai_tool_messages(body: dict[str, Any]) -> list[Violation]:
    """Chat Completions (and DeepSeek): an assistant message with `tool_calls`
    is followed by one `tool` message per call id, and a `tool` message answers
    a call of the assistant message before its run of tool messages."""
    found: list[Violation] = []
    pending: dict[Any, str] = {}  # open call id -> its path
    for index, message in _items(body, "messages"):
        if message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                found.append(
                    Violation(
                        f"$.messages[{index}].tool_call_id",
                        CONSTRAINT,
                        "answers no open tool call of the preceding assistant message",
                    )
                )
            pending.pop(call_id, None)
            continue
        found += _unanswered(pending)
        pending = {}
        if message.get("role") == "assistant":
            pending = {
                call.get("id"): f"$.messages[{index}].tool_calls[{position}]"
                for position, call in _dicts(message.get("tool_calls"))
            }
    return found + _unanswered(pending)


def _unanswered(pending: dict[Any, str]) -> list[Violation]:
    reason = "no tool message answers this call"
    return [Violation(path, CONSTRAINT, reason) for path in pending.values()]


def deepseek_reasoning(body: dict[str, Any]) -> list[Violation]:
    """DeepSeek thinking mode: assistant tool-call messages of the current
    question (after the last user message) carry their `reasoning_content`."""
    thinking = body.get("thinking")
    enabled = isinstance(thinking, dict) and thinking.get("type") == "enabled"
    if not (enabled or body.get("model") == "deepseek-reasoner"):
        return []
    messages = _items(body, "messages")
    last_user = max((index for index, m in messages if m.get("role") == "user"), default=-1)
    return [
        Violation(
            f"$.messages[{index}].reasoning_content",
            CONSTRAINT,
            "thinking mode needs the reasoning of this tool-calling turn back",
        )
        for index, message in messages
        if index > last_user
        and message.get("role") == "assistant"
        and message.get("tool_calls")
        and not isinstance(message.get("reasoning_content"), str)
    ]


def moonshot_partial(body: dict[str, Any]) -> list[Violation]:
    """Kimi's partial mode: only the last message, an assistant one, is partial."""
    found = []
    messages = _items(body, "messages")
    last = messages[-1][0] if messages else None
    for index, message in messages:
        if message.get("partial") and (index != last or message.get("role") != "assistant"):
            reason = "partial mode applies to the last message, an assistant one"
            found.append(Violation(f"$.messages[{index}].partial", CONSTRAINT, reason))
    return found


def responses_function_calls(body: dict[str, Any]) -> list[Violation]:
    """Responses: every `function_call_output` has its `function_call` earlier
    in the input, and every `function_call` its output. A continued response
    (`previous_response_id`, `conversation`) may answer calls made before it."""
    if body.get("previous_response_id") or body.get("conversation"):
        return []
    found: list[Violation] = []
    calls: dict[Any, int] = {}
    answered: set[Any] = set()
    for index, item in _items(body, "input"):
        kind = item.get("type")
        call_id = item.get("call_id")
        if kind == "function_call":
            calls[call_id] = index
        elif kind == "function_call_output":
            if call_id not in calls:
                reason = "no function_call with this call_id before this output"
                found.append(Violation(f"$.input[{index}].call_id", CONSTRAINT, reason))
            answered.add(call_id)
    for call_id, index in calls.items():
        if call_id not in answered:
            reason = "no function_call_output answers this call"
            found.append(Violation(f"$.input[{index}]", CONSTRAINT, reason))
    return found


def anthropic_tool_results(body: dict[str, Any]) -> list[Violation]:
    """Messages: consecutive messages of one role form one turn (the API
    combines them); every `tool_use` of an assistant turn has its
    `tool_result` in the next turn, a user turn; every `tool_result` answers a
    `tool_use` of the turn before; and a user turn's tool results come before
    anything else in it."""
    turns: list[tuple[Any, list[tuple[str, dict[str, Any]]]]] = []
    for index, message in _items(body, "messages"):
        blocks = [
            (f"$.messages[{index}].content[{position}]", block)
            for position, block in _dicts(message.get("content"))
        ]
        if turns and turns[-1][0] == message.get("role"):
            turns[-1][1].extend(blocks)
        else:
            turns.append((message.get("role"), blocks))
    found: list[Violation] = []
    previous_uses: dict[Any, str] = {}
    for role, blocks in turns:
        uses = {b.get("id"): path for path, b in blocks if b.get("type") == "tool_use"}
        results = {b.get("tool_use_id") for _, b in blocks if b.get("type") == "tool_result"}
        for use_id, path in previous_uses.items():
            if role != "user" or use_id not in results:
                reason = "no tool_result answers this tool_use in the next turn"
                found.append(Violation(path, CONSTRAINT, reason))
        seen_other = False
        for path, block in blocks:
            if block.get("type") != "tool_result":
                seen_other = True
                continue
            use_id = block.get("tool_use_id")
            if use_id not in previous_uses:
                reason = "answers no tool_use of the previous turn"
                found.append(Violation(f"{path}.tool_use_id", CONSTRAINT, reason))
            if seen_other:
                reason = "a tool_result after other content in its turn (results come first)"
                found.append(Violation(path, CONSTRAINT, reason))
        previous_uses = uses if role == "assistant" else {}
    reason = "no tool_result answers this tool_use in the next turn"
    return found + [Violation(path, CONSTRAINT, reason) for path in previous_uses.values()]
