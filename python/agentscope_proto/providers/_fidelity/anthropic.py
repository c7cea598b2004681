"""Provider fidelity for Anthropic Messages bodies.

What provider-fidelity parsing kept goes back as Claude expects it: redacted
thinking (a thinking block with `redacted_data`) as `redacted_thinking`,
signatures unchanged, text `citations` as the API returned them (less the keys
its request types do not define, such as a response's `file_id`; another
provider's citations are dropped), a client tool call's `caller`, and server
tool blocks (put in place by the formatter, `_anthropic_extras.py`) as they are.
"""

from __future__ import annotations

from typing import Any

from ._common import Json, Notes, empty, note_text, prune

# -- Anthropic ------------------------------------------------------------------------------

_ANTHROPIC_BLOCKS = {
    "text": frozenset({"type", "text", "cache_control", "citations"}),
    "thinking": frozenset({"type", "thinking", "signature"}),
    "redacted_thinking": frozenset({"type", "data"}),
    "image": frozenset({"type", "source", "cache_control"}),
    "document": frozenset({"type", "source", "cache_control", "title", "context", "citations"}),
    "tool_use": frozenset({"type", "id", "name", "input", "cache_control", "caller"}),
    "tool_result": frozenset({"type", "tool_use_id", "content", "is_error", "cache_control"}),
}
# The keys each citation type takes in a request (`TextCitationParam`).
_CITATIONS = {
    "char_location": frozenset(
        {"type", "cited_text", "document_index", "document_title"}
        | {"start_char_index", "end_char_index"}
    ),
    "page_location": frozenset(
        {"type", "cited_text", "document_index", "document_title"}
        | {"start_page_number", "end_page_number"}
    ),
    "content_block_location": frozenset(
        {"type", "cited_text", "document_index", "document_title"}
        | {"start_block_index", "end_block_index"}
    ),
    "web_search_result_location": frozenset(
        {"type", "cited_text", "encrypted_index", "title", "url"}
    ),
    "search_result_location": frozenset(
        {"type", "cited_text", "search_result_index", "source", "title"}
        | {"start_block_index", "end_block_index"}
    ),
}
_TOOL_RESULT_KINDS = frozenset({"text", "image", "document", "search_result"})
_ANTHROPIC_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


def _image_media_type(source: Any) -> str | None:
    """The media type of an image source: given (base64), or an SVG URL's."""
    if not isinstance(source, dict):
        return None
    if source.get("media_type") is not None:
        return str(source["media_type"])
    url = str(source.get("url") or "").lower()
    if url.startswith("data:image/svg+xml") or url.split("?")[0].split("#")[0].endswith(".svg"):
        return "image/svg+xml"
    return None


def _anthropic_block(block: Json, at: str, note: Notes, in_tool_result: bool) -> Json | None:
    kind = str(block.get("type"))
    if in_tool_result and kind not in _TOOL_RESULT_KINDS:
        note(at, kind, "replaced by a text note: a tool result takes text, images and documents")
        return {"type": "text", "text": note_text(kind, "a tool result")}
    if kind == "thinking" and block.get("redacted_data"):
        # Reasoning Claude encrypted: back as it came, whatever else the block holds.
        return {"type": "redacted_thinking", "data": block["redacted_data"]}
    if empty(block):
        note(at, kind, f"dropped an empty {kind} block")
        return None
    if kind == "text" and isinstance(block.get("citations"), list):
        block = _cited(block, at, note)
    if kind == "thinking" and not block.get("signature"):
        # Thinking from another provider: Claude refuses it without a signature.
        note(at, kind, "unsigned thinking turned into text")
        return {"type": "text", "text": block.get("thinking", "")}
    if kind == "image":
        media = _image_media_type(block.get("source"))
        if media is not None and media not in _ANTHROPIC_IMAGE_TYPES:
            note(at, kind, f"replaced by a text note: Claude takes no {media} images")
            return {"type": "text", "text": note_text(str(media), "Claude")}
    if kind == "tool_result" and isinstance(block.get("content"), list):
        inner = [
            _anthropic_block(item, f"{at}.content[{number}]", note, True)
            if isinstance(item, dict)
            else item
            for number, item in enumerate(block["content"])
        ]
        block = {**block, "content": [item for item in inner if item is not None]}
    allowed = _ANTHROPIC_BLOCKS.get(kind)
    return block if allowed is None else prune(block, allowed, at, kind, note)


def _cited(block: Json, at: str, note: Notes) -> Json:
    """A text block's citations as Claude takes them: its own kinds, less the
    keys a request does not define; another provider's (OpenAI `url_citation`...)
    dropped. No citations left: no `citations` key."""
    kept = []
    for number, item in enumerate(block["citations"]):
        where = f"{at}.citations[{number}]"
        kind = item.get("type") if isinstance(item, dict) else None
        if not isinstance(item, dict) or kind not in _CITATIONS:
            note(where, "citation", f"dropped a {kind} citation: Claude takes no such kind")
            continue
        kept.append(prune(item, _CITATIONS[kind], where, "citation", note))
    if kept:
        return {**block, "citations": kept}
    return {key: value for key, value in block.items() if key != "citations"}


def _anthropic_answers(messages: list[Any], index: int) -> set[Any]:
    """The tool use ids the user turns right after `messages[index]` answer
    (consecutive user turns: they are merged into one below)."""
    ids: set[Any] = set()
    for later in messages[index + 1 :]:
        if not isinstance(later, dict) or later.get("role") != "user":
            break
        content = later.get("content")
        if isinstance(content, list):
            ids.update(b.get("tool_use_id") for b in content if isinstance(b, dict))
    return ids


def _anthropic_content(messages: list[Any], index: int, note: Notes) -> list[Any]:
    message = messages[index]
    answered = _anthropic_answers(messages, index) if message.get("role") == "assistant" else None
    blocks = []
    for number, block in enumerate(message["content"]):
        at = f"messages[{index}].content[{number}]"
        if not isinstance(block, dict):
            blocks.append(block)
            continue
        unanswered = answered is not None and block.get("id") not in answered
        if block.get("type") == "tool_use" and unanswered:
            note(at, "tool_use", "dropped a tool use no tool result in the next turn answers")
            continue
        adapted = _anthropic_block(block, at, note, False)
        if adapted is not None:
            blocks.append(adapted)
    return blocks


def anthropic(body: Json, note: Notes) -> None:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return
    turns: list[Json] = []
    for index, message in enumerate(messages):
        path = f"messages[{index}]"
        if isinstance(message, dict) and isinstance(message.get("content"), list):
            message = {**message, "content": _anthropic_content(messages, index, note)}
            if not message["content"]:
                note(path, str(message.get("role")), "dropped a message left empty")
                continue
        if turns and _results_only(turns[-1]) and _results_only(message):
            # Parallel tool results answer one assistant turn: one user turn.
            note(path, "tool_result", "merged into the previous user turn")
            turns[-1] = {**turns[-1], "content": turns[-1]["content"] + message["content"]}
            continue
        turns.append(message)
    body["messages"] = turns


def _results_only(message: Any) -> bool:
    content = message.get("content") if isinstance(message, dict) else None
    return (
        message.get("role") == "user"
        and isinstance(content, list)
        and bool(content)
        and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def anthropic_container(body: Json, metadata: list[Any]) -> None:
    """The container the latest response ran code in (`{"container": {"id": ...}}`
    in its message's metadata, as the provider-fidelity parse keeps it), for
    the next request to run in the same one: Anthropic's `container`. Whether
    it has expired is the API's to say: the body is a function of the
    messages, not of the clock."""
    if "container" in body:
        return
    for item in reversed(metadata):
        container = item.get("container") if isinstance(item, dict) else None
        if isinstance(container, dict) and isinstance(container.get("id"), str):
            body["container"] = container["id"]
            return
