"""Wire size: protobuf bytes vs AgentScope's JSON, per corpus; gzip'd sizes of both.

Per message, AgentScope's JSON is `json.dumps(msg.to_dict())` (its defaults:
`ensure_ascii=True`, `", "` and `": "` separators); the UTF-8 column is the same
with `ensure_ascii=False`. Protobuf is `from_dict(d).SerializeToString()`.
Sizes are summed over the messages of a corpus. The gzip columns compress a
whole conversation at once (level 6): the JSON list, and the protobuf messages
length-delimited one after another, as they travel in a repeated field.
Every message is also checked to convert back to the identical dict. `payload`
is the least any lossless, uncompressed encoding must carry (see `_payload`).
"""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

from _common import MIXED, corpus_names, load_corpus, parse_args, write_json
from agentscope.message import Msg as AsMsg

from agentscope_proto import from_dict, to_dict
from agentscope_proto._generated.agentscope.message.v1.message_pb2 import Msg


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _gz(data: bytes) -> int:
    return len(gzip.compress(data, compresslevel=6, mtime=0))


def _payload(value: Any) -> int:
    """Bytes of what a message says, with no envelope: the UTF-8 of its texts,
    thinking and tool outputs, tool inputs as compact JSON, and raw media
    bytes. No lossless encoding without compression goes below this."""
    if isinstance(value, str):
        return len(value.encode())
    if isinstance(value, list):
        return sum(_payload(item) for item in value)
    kind = value.get("type")
    if kind in ("text", "thinking"):
        return _payload(value[kind])
    if kind == "tool_use":
        return len(json.dumps(value["input"], ensure_ascii=False, separators=(",", ":")).encode())
    if kind == "tool_result":
        return _payload(value["output"] or "")
    source = value.get("source", {})
    if source.get("type") == "base64":
        return len(base64.b64decode(source["data"]))
    return len(source.get("url", "").encode())


def measure(name: str) -> dict[str, Any]:
    dicts = load_corpus(name)
    as_msgs = [AsMsg.from_dict(d) for d in dicts]
    json_texts = [json.dumps(m.to_dict()) for m in as_msgs]
    utf8_texts = [json.dumps(m.to_dict(), ensure_ascii=False) for m in as_msgs]
    wires = [from_dict(d).SerializeToString() for d in dicts]
    for d, wire in zip(dicts, wires, strict=True):
        if to_dict(Msg.FromString(wire)) != d:
            raise SystemExit(f"{name}: message {d['id']} does not round-trip")
    whole_json = json.dumps([m.to_dict() for m in as_msgs]).encode()
    whole_proto = b"".join(_varint(len(w)) + w for w in wires)
    return {
        "messages": len(dicts),
        "json": sum(len(t.encode()) for t in json_texts),
        "json_utf8": sum(len(t.encode()) for t in utf8_texts),
        "proto": sum(len(w) for w in wires),
        "payload": sum(_payload(d["content"]) for d in dicts),
        "json_gzip": _gz(whole_json),
        "proto_gzip": _gz(whole_proto),
    }


def main() -> None:
    args = parse_args(__doc__ or "")
    rows = {name: measure(name) for name in corpus_names()}
    keys = ("messages", "json", "json_utf8", "proto", "payload", "json_gzip", "proto_gzip")
    mixed = {k: sum(rows[n][k] for n in rows if n.split("_")[0] in MIXED) for k in keys}
    media = {k: sum(rows[n][k] for n in rows if n.startswith("media_")) for k in keys}
    write_json(
        args.json,
        {"corpora": rows, "mixed": mixed, "media": media},
    )


if __name__ == "__main__":
    main()
