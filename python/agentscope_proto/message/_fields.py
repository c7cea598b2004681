"""How block dict values read into typed fields and are written back.

The scalar readers of the codec's key tables (`_codec.py`), and the composite
values of the provider-fidelity keys: a text block's `citations`, a grounding
block's `sources` and `queries`. A reader raises `Misfit` when a value does not
fit its field; the codec then keeps it as an extra key or raises, per key.

A citation is the provider's own object, kept verbatim in `raw_json`; the typed
`Citation` fields are filled from it by `_CITATION_KEYS` so that clients in
other languages can show them. A citation that arrives with typed fields only
(built elsewhere, no `raw_json`) is written as a flat object of its type with
the provider's key names.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from .. import _json
from .._generated.agentscope.message.v1.message_pb2 import (
    Citation,
    GroundingSource,
    PermissionBehavior,
    PermissionRule,
    ToolCallState,
    ToolResultState,
)
from ..errors import MessageFormatError

__all__ = [
    "ABSENT",
    "Misfit",
    "citation_dicts",
    "dump_citations",
    "dump_queries",
    "dump_rules",
    "dump_sources",
    "load_citations",
    "load_object",
    "load_queries",
    "load_rules",
    "load_sources",
    "read_b64",
    "read_bool",
    "read_call_state",
    "read_json",
    "read_object",
    "read_state",
    "read_str",
    "rule_dicts",
    "source_dicts",
    "write_b64",
    "write_call_state",
    "write_state",
]


class Misfit(Exception):
    """A value that cannot live in its typed field."""


# What a composite key's dumper returns when the dict has no such key.
ABSENT: Any = object()


def read_str(value: Any) -> str:
    if not isinstance(value, str):
        raise Misfit(f"expected a string, got {type(value).__name__}")
    return value


def read_bool(value: Any) -> bool:
    if type(value) is not bool:
        raise Misfit(f"expected true or false, got {type(value).__name__}")
    return value


class _EnumNames:
    """An enum's values under AgentScope's lower-case names (`"success"` for
    `TOOL_RESULT_STATE_SUCCESS`), both ways."""

    def __init__(self, enum: Any, prefix: str, what: str) -> None:
        self.numbers: dict[str, int] = {
            name.removeprefix(prefix).lower(): number for name, number in enum.items() if number
        }
        self.names: dict[int, str] = {number: name for name, number in self.numbers.items()}
        self.what = what

    def read(self, value: Any) -> int:
        if not isinstance(value, str) or value not in self.numbers:
            raise Misfit(f"unknown {self.what} {value!r}")
        return self.numbers[value]

    def write(self, value: int, path: str) -> str:
        # A newer schema's value (or any number sent over the wire) has no name here.
        name = self.names.get(value)
        if name is None:
            raise MessageFormatError(path, f"unknown {self.what} {value}")
        return name


RESULT_STATES = _EnumNames(ToolResultState, "TOOL_RESULT_STATE_", "tool result state")
CALL_STATES = _EnumNames(ToolCallState, "TOOL_CALL_STATE_", "tool call state")
BEHAVIORS = _EnumNames(PermissionBehavior, "PERMISSION_BEHAVIOR_", "permission behavior")


def read_state(value: Any) -> int:
    return RESULT_STATES.read(value)


def write_state(value: int) -> str:
    return RESULT_STATES.write(value, "state")


def read_call_state(value: Any) -> int:
    return CALL_STATES.read(value)


def write_call_state(value: int) -> str:
    return CALL_STATES.write(value, "state")


_RULE_KEYS = ["tool_name", "rule_content", "behavior", "source"]


def load_rules(message: Any, value: Any, path: str) -> None:
    """A tool call's `suggested_rules`: AgentScope 2.x permission rules.

    Only rules of exactly 2.x's shape and key order are typed, so that each
    comes back the same; anything else keeps the list as an extra key.
    """
    if type(value) is not list or not value:
        # An empty list stays an extra key: an empty field is an absent key.
        raise Misfit("expected a non-empty list of permission rules")
    rules = []
    for item in value:
        if type(item) is not dict or list(item) != _RULE_KEYS:
            raise Misfit("expected rules of the form {tool_name, rule_content, behavior, source}")
        tool_name, content, source = item["tool_name"], item["rule_content"], item["source"]
        if not (isinstance(tool_name, str) and isinstance(source, str)):
            raise Misfit("a rule's tool_name and source are strings")
        if content is not None and not isinstance(content, str):
            raise Misfit("a rule's rule_content is a string or null")
        behavior = PermissionBehavior.ValueType(BEHAVIORS.read(item["behavior"]))
        rule = PermissionRule(tool_name=tool_name, behavior=behavior, source=source)
        if content is not None:
            rule.rule_content = content
        rules.append(rule)
    message.suggested_rules.extend(rules)


def rule_dicts(rules: Any, path: str = "suggested_rules") -> list[dict[str, Any]]:
    return [
        {
            "tool_name": rule.tool_name,
            "rule_content": rule.rule_content if rule.HasField("rule_content") else None,
            "behavior": BEHAVIORS.write(rule.behavior, f"{path}[{index}].behavior"),
            "source": rule.source,
        }
        for index, rule in enumerate(rules)
    ]


def dump_rules(message: Any) -> Any:
    return rule_dicts(message.suggested_rules) if message.suggested_rules else ABSENT


def read_b64(value: Any) -> bytes:
    if not isinstance(value, str):
        raise Misfit(f"expected base64 text, got {type(value).__name__}")
    try:
        data = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise Misfit(f"invalid base64 ({exc})") from None
    # Only canonical base64 maps back to the same text; anything else would
    # change on the way out.
    if base64.b64encode(data).decode("ascii") != value:
        raise Misfit("base64 text is not in canonical form")
    return data


def write_b64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def read_json(value: Any) -> str:
    try:
        return _json.dumps(value)
    except MessageFormatError as exc:
        raise Misfit(exc.reason) from None


def read_object(value: Any) -> str:
    """A JSON object (a provider's item verbatim) as JSON text."""
    if type(value) is not dict:
        raise Misfit(f"expected an object, got {type(value).__name__}")
    return read_json(value)


def load_object(text: str, path: str) -> dict[str, Any]:
    """The JSON object `text` holds (a `MessageFormatError` at `path` otherwise)."""
    value = _json.loads(text, path)
    if type(value) is not dict:
        raise MessageFormatError(path, "expected a JSON object")
    return value


# Typed `Citation` field -> the provider's key, per citation type: OpenAI
# (Responses and Chat Completions annotations) and Anthropic (text citations).
_CITATION_KEYS: dict[str, tuple[tuple[str, str], ...]] = {
    "url_citation": (
        ("url", "url"),
        ("title", "title"),
        ("start_index", "start_index"),
        ("end_index", "end_index"),
    ),
    "file_citation": (("file_id", "file_id"), ("title", "filename")),
    "container_file_citation": (
        ("file_id", "file_id"),
        ("title", "filename"),
        ("start_index", "start_index"),
        ("end_index", "end_index"),
    ),
    "file_path": (("file_id", "file_id"),),
    "char_location": (
        ("cited_text", "cited_text"),
        ("title", "document_title"),
        ("start_index", "start_char_index"),
        ("end_index", "end_char_index"),
        ("file_id", "file_id"),
    ),
    "page_location": (
        ("cited_text", "cited_text"),
        ("title", "document_title"),
        ("start_index", "start_page_number"),
        ("end_index", "end_page_number"),
        ("file_id", "file_id"),
    ),
    "content_block_location": (
        ("cited_text", "cited_text"),
        ("title", "document_title"),
        ("start_index", "start_block_index"),
        ("end_index", "end_block_index"),
        ("file_id", "file_id"),
    ),
    "web_search_result_location": (
        ("url", "url"),
        ("title", "title"),
        ("cited_text", "cited_text"),
    ),
    "search_result_location": (
        ("url", "source"),
        ("title", "title"),
        ("cited_text", "cited_text"),
        ("start_index", "start_block_index"),
        ("end_index", "end_block_index"),
    ),
}
# Any other type: the typed fields under their own names.
_GENERIC_KEYS = tuple(
    (name, name) for name in ("url", "title", "cited_text", "start_index", "end_index", "file_id")
)
# A citation of no type (Gemini's `citationMetadata`, REST or SDK spelling):
# where its typed fields are when not under their own names (read only: it
# goes back as its raw JSON).
_UNTYPED_KEYS = (("url", "uri"), ("start_index", "startIndex"), ("end_index", "endIndex"))
_INT_FIELDS = frozenset({"start_index", "end_index"})
_INT64 = range(-(2**63), 2**63)


def _citation(value: dict[str, Any], raw: str) -> Citation:
    kind = value.get("type")
    citation = Citation(raw_json=raw, citation_type=kind if isinstance(kind, str) else "")
    # Chat Completions nests the fields under the type: {"type": "url_citation",
    # "url_citation": {...}}; Responses and Anthropic keep them flat.
    fields = value.get(kind) if isinstance(kind, str) else None
    if type(fields) is not dict:
        fields = value
    keys = _CITATION_KEYS.get(citation.citation_type, _GENERIC_KEYS)
    if not citation.citation_type:
        keys = _UNTYPED_KEYS + keys  # their own names, when there, win
    for name, key in keys:
        found = fields.get(key)
        if name in _INT_FIELDS:
            if type(found) is int and found in _INT64:
                setattr(citation, name, found)
        elif isinstance(found, str):
            setattr(citation, name, found)
    return citation


def load_citations(message: Any, value: Any, path: str) -> None:
    """A text block's `citations`: a non-empty list of provider citation objects."""
    if type(value) is not list or not value:
        raise Misfit("expected a non-empty list of citation objects")
    citations = []
    for item in value:
        if type(item) is not dict:
            raise Misfit(f"expected a citation object, got {type(item).__name__}")
        citations.append(_citation(item, read_json(item)))
    message.citations.extend(citations)


def citation_dict(citation: Any, path: str = "citations") -> dict[str, Any]:
    """A citation as its provider object (built from the typed fields if none)."""
    if citation.raw_json:
        return load_object(citation.raw_json, f"{path}.raw_json")
    out: dict[str, Any] = {}
    if citation.citation_type:
        out["type"] = citation.citation_type
    for name, key in _CITATION_KEYS.get(citation.citation_type, _GENERIC_KEYS):
        if citation.HasField(name) and key not in out:
            out[key] = getattr(citation, name)
    return out


def citation_dicts(citations: Any) -> list[dict[str, Any]]:
    return [citation_dict(c, f"citations[{i}]") for i, c in enumerate(citations)]


def dump_citations(message: Any) -> Any:
    return citation_dicts(message.citations) if message.citations else ABSENT


def load_sources(message: Any, value: Any, path: str) -> None:
    """A grounding block's `sources`: a list of `{"url": str, "title": str}`."""
    if type(value) is not list:
        raise Misfit(f"expected a list of sources, got {type(value).__name__}")
    sources = []
    for item in value:
        # Exactly these keys in this order, or the source would not come back
        # the same; anything else keeps the list as an extra key.
        if (
            type(item) is not dict
            or list(item) != ["url", "title"]
            or not isinstance(item["url"], str)
            or not isinstance(item["title"], str)
        ):
            raise Misfit('expected sources of the form {"url": str, "title": str}')
        sources.append(GroundingSource(url=item["url"], title=item["title"]))
    message.sources.extend(sources)


def source_dicts(sources: Any) -> list[dict[str, Any]]:
    return [{"url": s.url, "title": s.title} for s in sources]


def dump_sources(message: Any) -> list[dict[str, Any]]:
    return source_dicts(message.sources)


def load_queries(message: Any, value: Any, path: str) -> None:
    """A grounding block's `queries`: a list of strings."""
    if type(value) is not list or not all(isinstance(q, str) for q in value):
        raise Misfit("expected a list of strings")
    message.queries.extend(value)


def dump_queries(message: Any) -> list[str]:
    return list(message.queries)
