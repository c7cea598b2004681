"""Provider fidelity for Gemini bodies."""

from __future__ import annotations

from ._common import Json, Notes, prune

# -- Gemini ---------------------------------------------------------------------------------

# google-genai `types.Schema`'s fields, in the REST body's camelCase and the
# SDK's snake_case: the keywords Gemini takes in function parameters.
_GEMINI_KEYWORDS = """
    additionalProperties anyOf default defs description enum example format items
    maxItems maxLength maxProperties maximum minItems minLength minProperties minimum
    nullable pattern properties propertyOrdering ref required title type
    additional_properties any_of max_items max_length max_properties min_items
    min_length min_properties property_ordering
"""
_GEMINI_SCHEMA = frozenset(_GEMINI_KEYWORDS.split())


def _gemini_schema(schema: Json, path: str, note: Notes) -> Json:
    schema = prune(schema, _GEMINI_SCHEMA, path, "tool_schema", note)
    out = dict(schema)
    for key in ("items", "additionalProperties", "additional_properties"):
        if isinstance(schema.get(key), dict):
            out[key] = _gemini_schema(schema[key], f"{path}.{key}", note)
    for key in ("properties", "defs"):
        if isinstance(schema.get(key), dict):
            out[key] = {
                name: _gemini_schema(value, f"{path}.{key}.{name}", note)
                if isinstance(value, dict)
                else value
                for name, value in schema[key].items()
            }
    for key in ("anyOf", "any_of"):
        if isinstance(schema.get(key), list):
            out[key] = [
                _gemini_schema(value, f"{path}.{key}[{i}]", note)
                if isinstance(value, dict)
                else value
                for i, value in enumerate(schema[key])
            ]
    return out


def gemini(body: Json, note: Notes) -> None:
    contents = body.get("contents")
    if isinstance(contents, list):
        kept = []
        for index, content in enumerate(contents):
            parts = content.get("parts") if isinstance(content, dict) else None
            if isinstance(parts, list):
                left = []
                for number, part in enumerate(parts):
                    if (
                        isinstance(part, dict)
                        and set(part) <= {"text", "thought", "thought_signature"}
                        and not part.get("text")
                    ):
                        note(f"contents[{index}].parts[{number}]", "text", "dropped an empty part")
                        continue
                    left.append(part)
                if not left:
                    note(
                        f"contents[{index}]", str(content.get("role")), "dropped a turn left empty"
                    )
                    continue
                content = {**content, "parts": left}
            kept.append(content)
        body["contents"] = kept
    if "response_schema" in body:
        # `response_schema` is Gemini's OpenAPI subset; a plain JSON Schema goes
        # in `response_json_schema`, which takes JSON Schema as it is.
        note("response_schema", "response_schema", "moved to response_json_schema")
        body["response_json_schema"] = body.pop("response_schema")
    for index, tool in enumerate(body.get("tools") or []):
        for number, declaration in enumerate(tool.get("function_declarations") or []):
            parameters = declaration.get("parameters")
            if isinstance(parameters, dict):
                at = f"tools[{index}].function_declarations[{number}].parameters"
                declaration["parameters"] = _gemini_schema(parameters, at, note)
