"""Generate the fixed benchmark corpus under `bench/corpus/`.

Four kinds of conversation, each at 20 and 200 messages, as lists of
AgentScope 1.x message dicts (`Msg.to_dict()` form: id, name, role, content,
metadata, timestamp):

- `chat`: a user and an assistant; a system prompt, short user turns, longer
  assistant answers as text blocks, about one message in ten in Chinese.
- `tools`: a ReAct agent loop; assistant turns with thinking, text and
  `tool_use` blocks (nested JSON inputs), tool results in system messages as
  AgentScope 1.x stores them (JSON-text, logs and file contents as output).
- `media`: a user asking questions, half of the turns with one or two inline
  base64 images (PNG, JPEG) or audio clips (WAV, MP3) of 2-16 KiB, the
  assistant answering in text. Media payloads are incompressible
  pseudo-random bytes behind real file headers, like real compressed media.
- `debate`: four named agents (three debaters and a moderator) taking turns,
  as AgentScope's multi-agent examples store them.
- `varied`: an agent's history as real ones come: a ReAct loop (tool results
  as strings or text blocks), a few thinking blocks (some with a signature),
  text blocks carrying extra keys (ids, citations, cache markers), tool
  inputs with odd keys (empty, dotted, non-ASCII, `$ref`, digits) and now
  and then an integer wider than 64 bits, one image, one audio clip and one
  video from the user, and one screenshot a tool returned (an image inside a
  tool result). Every provider drops some of it with a warning, as with a
  history an agent built against another provider.

"mixed" in the results means chat + tools + debate together.

Everything is derived from fixed seeds and a fixed clock, so rerunning gives
byte-identical files. The files are committed; rerun this script only to
change the corpus:

    python bench/make_corpus.py
"""

from __future__ import annotations

import base64
import json
import random
import struct
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

OUT_DIR = Path(__file__).resolve().parent / "corpus"
SIZES = (20, 200)
BASE_TIME = datetime(2025, 3, 14, 9, 26, 53, 589000)
ID_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

WORDS = (  # noqa: SIM905 - a word list reads best as text
    "agent model message tool result context memory plan step answer question data "
    "user system service request response stream token budget latency cache query "
    "file path line function class module test build deploy server client network "
    "value field schema record table index search rank score summary report chart "
    "the a an of to in for on with by from at as is are was be can will should "
    "this that these those it its we you they our your their not only also more "
    "first then next finally because however therefore which while when where how "
    "quick careful simple robust large small new old fast slow clear exact likely "
    "check read write update create remove compare explain review improve measure "
    "weather city price order customer invoice shipment warehouse product account "
    "error warning timeout retry limit version release branch commit change issue"
).split()
CHINESE = (
    "我们先看一下这个问题的背景，然后再给出具体的建议。",
    "根据刚才的查询结果，北京明天有小雨，气温在十二到十八度之间。",
    "这个方案的主要风险在于数据迁移，需要提前做好备份。",
    "好的，我已经把报告整理好了，请查看附件中的图表。",
    "请帮我总结一下上周的销售数据，并和去年同期做个对比。",
)
TOOLS = ("web_search", "read_file", "run_python", "get_weather", "query_database")


class Gen:
    """Deterministic ids, clock and text for one conversation."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.clock = BASE_TIME
        self.calls = 0

    def msg_id(self) -> str:
        return "".join(self.rng.choice(ID_ALPHABET) for _ in range(22))

    def timestamp(self) -> str:
        self.clock += timedelta(milliseconds=self.rng.randint(300, 40_000))
        return self.clock.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]

    def sentence(self, low: int = 6, high: int = 18) -> str:
        words = [self.rng.choice(WORDS) for _ in range(self.rng.randint(low, high))]
        return " ".join(words).capitalize() + self.rng.choice(".....?!")

    def text(self, low_sentences: int, high_sentences: int, chinese: float = 0.1) -> str:
        if self.rng.random() < chinese:
            count = self.rng.randint(1, 4)
            return "".join(self.rng.choice(CHINESE) for _ in range(count))
        count = self.rng.randint(low_sentences, high_sentences)
        sentences = [self.sentence() for _ in range(count)]
        # Longer answers come in paragraphs, some with a bullet list.
        if count > 6:
            cut = count // 2
            bullets = "\n".join(f"- {self.sentence(3, 8)}" for _ in range(3))
            return " ".join(sentences[:cut]) + "\n\n" + bullets + "\n\n" + " ".join(sentences[cut:])
        return " ".join(sentences)

    def call_id(self) -> str:
        self.calls += 1
        return "call_" + "".join(self.rng.choice(ID_ALPHABET) for _ in range(24))

    def msg(
        self,
        name: str,
        role: str,
        content: str | list[dict[str, Any]],
        metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        return {
            "id": self.msg_id(),
            "name": name,
            "role": role,
            "content": content,
            "metadata": metadata or {},
            "timestamp": self.timestamp(),
        }


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


# --- chat --------------------------------------------------------------------


def chat(n: int) -> list[dict[str, Any]]:
    g = Gen(1000 + n)
    msgs = [g.msg("system", "system", "You are Friday, a helpful assistant. " + g.text(2, 4, 0))]
    while len(msgs) < n:
        msgs.append(g.msg("user", "user", g.text(1, 3)))
        if len(msgs) < n:
            msgs.append(g.msg("Friday", "assistant", [text_block(g.text(3, 12))]))
    return msgs


# --- tools -------------------------------------------------------------------


def tool_input(g: Gen, tool: str) -> dict[str, Any]:
    if tool == "web_search":
        return {"query": g.sentence(3, 7).rstrip(".?!"), "max_results": g.rng.choice((3, 5, 10))}
    if tool == "read_file":
        return {"path": f"src/{g.rng.choice(WORDS)}/{g.rng.choice(WORDS)}.py", "start_line": 1}
    if tool == "run_python":
        lines = [f"x{i} = {g.rng.randint(1, 999)} * {g.rng.random():.4f}" for i in range(4)]
        return {"code": "\n".join([*lines, "print(x0 + x1, x2 / x3)"]), "timeout": 30}
    if tool == "get_weather":
        return {"city": g.rng.choice(("Paris", "Beijing", "São Paulo", "Zürich")), "unit": "c"}
    return {
        "sql": "SELECT id, name, total FROM orders WHERE total > ? ORDER BY total DESC LIMIT 10",
        "params": [g.rng.randint(10, 500)],
        "options": {"readonly": True, "timeout_ms": 5000},
    }


def tool_output(g: Gen, tool: str) -> str:
    if tool == "web_search":
        hits = [
            {
                "title": g.sentence(4, 8),
                "url": f"https://example.com/{g.rng.choice(WORDS)}/{g.rng.randint(1, 99999)}",
                "snippet": g.sentence(12, 30),
            }
            for _ in range(g.rng.randint(3, 5))
        ]
        return json.dumps({"results": hits}, ensure_ascii=False)
    if tool == "read_file":
        body = [
            f"    {g.rng.choice(WORDS)}_{i} = {g.rng.choice(WORDS)}({g.rng.choice(WORDS)})"
            for i in range(g.rng.randint(10, 30))
        ]
        return "def main():\n" + "\n".join(body) + '\n    return "done"\n'
    if tool == "run_python":
        return f"{g.rng.random() * 1000:.6f} {g.rng.random():.6f}\n"
    if tool == "get_weather":
        return json.dumps(
            {
                "temperature": round(g.rng.uniform(-5, 35), 1),
                "humidity": g.rng.randint(20, 95),
                "conditions": g.rng.choice(("sunny", "light rain", "cloudy", "晴")),
                "forecast": [
                    {"day": d, "high": g.rng.randint(5, 30), "low": g.rng.randint(-5, 15)}
                    for d in ("Mon", "Tue", "Wed")
                ],
            },
            ensure_ascii=False,
        )
    rows = [
        {
            "id": g.rng.randint(1000, 9999),
            "name": g.rng.choice(WORDS),
            "total": g.rng.randint(1, 999),
        }
        for _ in range(10)
    ]
    return json.dumps(rows)


def tools(n: int, seed: int | None = None) -> list[dict[str, Any]]:
    """A ReAct agent loop of `n` messages (`seed`: another conversation of the
    same shape, as the service benchmark's simulated agents need)."""
    g = Gen(2000 + n if seed is None else seed)
    msgs = [
        g.msg("system", "system", "You are a ReAct agent. Use the tools. " + g.text(3, 6, 0)),
    ]
    while len(msgs) < n:
        msgs.append(g.msg("user", "user", g.text(1, 3)))
        for _ in range(g.rng.randint(2, 4)):
            if len(msgs) >= n - 1:
                break
            content: list[dict[str, Any]] = []
            if g.rng.random() < 0.6:
                content.append({"type": "thinking", "thinking": g.text(2, 5, 0)})
            if g.rng.random() < 0.5:
                content.append(text_block(g.sentence()))
            calls = []
            for _ in range(g.rng.choice((1, 1, 1, 2))):
                tool = g.rng.choice(TOOLS)
                calls.append((g.call_id(), tool))
                content.append(
                    {
                        "type": "tool_use",
                        "id": calls[-1][0],
                        "name": tool,
                        "input": tool_input(g, tool),
                    }
                )
            msgs.append(g.msg("Friday", "assistant", content))
            results = [
                {
                    "type": "tool_result",
                    "id": call_id,
                    "name": tool,
                    "output": [text_block(tool_output(g, tool))],
                }
                for call_id, tool in calls
            ]
            msgs.append(g.msg("system", "system", results))
        if len(msgs) < n:
            msgs.append(g.msg("Friday", "assistant", [text_block(g.text(2, 8))]))
    return msgs[:n]


# --- media -------------------------------------------------------------------


def png(g: Gen, size: int) -> tuple[str, bytes]:
    ihdr = struct.pack(">IIBBBBB", g.rng.randint(64, 1024), g.rng.randint(64, 1024), 8, 2, 0, 0, 0)
    return "image/png", b"\x89PNG\r\n\x1a\n" + ihdr + g.rng.randbytes(size) + b"IEND\xaeB`\x82"


def jpeg(g: Gen, size: int) -> tuple[str, bytes]:
    return "image/jpeg", b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + g.rng.randbytes(size) + b"\xff\xd9"


def wav(g: Gen, size: int) -> tuple[str, bytes]:
    header = b"RIFF" + struct.pack("<I", size + 36) + b"WAVEfmt "
    return "audio/wav", header + g.rng.randbytes(size)


def mp3(g: Gen, size: int) -> tuple[str, bytes]:
    # AgentScope names MP3 "audio/mp3" (its OpenAI formatter accepts nothing else).
    return "audio/mp3", b"ID3\x04\x00\x00" + g.rng.randbytes(size)


MEDIA: tuple[tuple[str, Callable[[Gen, int], tuple[str, bytes]]], ...] = (
    ("image", png),
    ("image", jpeg),
    ("audio", wav),
    ("audio", mp3),
)


def media_block(g: Gen) -> dict[str, Any]:
    kind, make = g.rng.choice(MEDIA)
    media_type, data = make(g, g.rng.randint(2, 16) * 1024)
    return {
        "type": kind,
        "source": {
            "type": "base64",
            "media_type": media_type,
            "data": base64.b64encode(data).decode("ascii"),
        },
    }


def media(n: int) -> list[dict[str, Any]]:
    g = Gen(3000 + n)
    msgs = [g.msg("system", "system", "You are a multimodal assistant. " + g.text(1, 3, 0))]
    while len(msgs) < n:
        # Every other user turn, on average, carries one or two media files.
        count = g.rng.choice((0, 0, 0, 1, 1, 2))
        content = [media_block(g) for _ in range(count)]
        content.append(text_block(g.text(1, 2)))
        msgs.append(g.msg("user", "user", content))
        if len(msgs) < n:
            msgs.append(g.msg("Friday", "assistant", [text_block(g.text(2, 8))]))
    return msgs


# --- debate ------------------------------------------------------------------


def debate(n: int) -> list[dict[str, Any]]:
    g = Gen(4000 + n)
    debaters = ("Alice", "Bob", "Carol")
    msgs = [
        g.msg(
            "system",
            "system",
            "You are taking part in a debate between Alice, Bob and Carol, moderated by "
            "Moderator. " + g.text(2, 4, 0),
        ),
        g.msg("Moderator", "user", "The motion: " + g.sentence(8, 14) + " Alice, please open."),
    ]
    turn = 0
    while len(msgs) < n:
        if turn and turn % 6 == 0:
            msgs.append(
                g.msg("Moderator", "user", g.text(1, 3), {"round": turn // 6, "next": "Alice"})
            )
        else:
            speaker = debaters[turn % 3]
            msgs.append(g.msg(speaker, "assistant", [text_block(g.text(3, 10))]))
        turn += 1
    return msgs[:n]


# --- varied ------------------------------------------------------------------


def mp4(g: Gen, size: int) -> tuple[str, bytes]:
    return "video/mp4", b"\x00\x00\x00\x18ftypmp42" + g.rng.randbytes(size)


def inline(kind: str, media: tuple[str, bytes]) -> dict[str, Any]:
    media_type, data = media
    source = {"type": "base64", "media_type": media_type, "data": base64.b64encode(data).decode()}
    return {"type": kind, "source": source}


def odd_input(g: Gen, tool: str) -> dict[str, Any]:
    """A tool input as models write them for loosely typed tools: the usual
    arguments plus keys no schema would name that way."""
    odd: dict[str, Any] = {
        "": g.rng.choice(("", "-", "0")),
        "a.b": g.rng.randint(0, 9),
        "with space": g.rng.random() < 0.5,
        "ключ": g.rng.choice(("значение", "键", "🚀")),
        "$ref": f"#/definitions/{g.rng.choice(WORDS)}",
        "0": [g.rng.randint(-5, 5), None, 1.5, "x"],
        "nested": {"x-y": {"__proto__": {}, "null": None}},
        # A 100-bit id, as JSON allows and Python reads exactly.
        "trace": g.rng.getrandbits(99) | 1 << 99,
    }
    keys = g.rng.sample(sorted(odd), g.rng.randint(1, 3))
    return {**tool_input(g, tool), **{key: odd[key] for key in keys}}


def extra_text(g: Gen, text: str) -> dict[str, Any]:
    """A text block with the keys another provider's reply left on it."""
    extra = g.rng.choice(
        (
            {"id": "txt_" + "".join(g.rng.choice(ID_ALPHABET) for _ in range(16))},
            {"cache_control": {"type": "ephemeral"}},
            {
                "annotations": [
                    {"type": "url_citation", "url": f"https://example.com/{g.rng.choice(WORDS)}"}
                ]
            },
        )
    )
    return {"type": "text", "text": text, **extra}


def varied(n: int) -> list[dict[str, Any]]:
    g = Gen(5000 + n)
    msgs = [g.msg("system", "system", "You are Friday, an agent with tools. " + g.text(2, 4, 0))]
    # One image, one audio clip and one video, from the user, spread over the history.
    media = [
        (n * 3 // 10, inline("image", png(g, 4096))),
        (n // 2, inline("audio", wav(g, 6144))),
        (n * 7 // 10, inline("video", mp4(g, 8192))),
    ]
    # ... and one image a tool returned, later.
    screenshot_at = n * 17 // 20
    screenshot: list[dict[str, Any]] = []
    while len(msgs) < n:
        content: list[dict[str, Any]] = []
        while media and len(msgs) >= media[0][0]:
            content.append(media.pop(0)[1])
        text = g.text(1, 3)
        content.append(extra_text(g, text) if g.rng.random() < 0.2 else text_block(text))
        if len(content) == 1 and g.rng.random() < 0.5:
            msgs.append(g.msg("user", "user", text))
        else:
            msgs.append(g.msg("user", "user", content))
        for _ in range(g.rng.randint(1, 4)):
            if len(msgs) >= n - 1:
                break
            content = []
            if g.rng.random() < 0.15:
                thinking: dict[str, Any] = {"type": "thinking", "thinking": g.text(2, 5, 0)}
                if g.rng.random() < 0.5:
                    thinking["signature"] = base64.b64encode(g.rng.randbytes(48)).decode()
                content.append(thinking)
            if g.rng.random() < 0.5:
                sentence = g.sentence()
                content.append(
                    extra_text(g, sentence) if g.rng.random() < 0.3 else text_block(sentence)
                )
            calls = []
            if len(msgs) >= screenshot_at and not screenshot:
                screenshot = [inline("image", png(g, 3072))]
                url = f"https://example.com/{g.rng.choice(WORDS)}"
                calls.append((g.call_id(), "screenshot"))
                content.append(
                    {
                        "type": "tool_use",
                        "id": calls[0][0],
                        "name": "screenshot",
                        "input": {"url": url},
                    }
                )
            for _ in range(g.rng.choice((1, 1, 1, 2)) - len(calls)):
                tool = g.rng.choice(TOOLS)
                calls.append((g.call_id(), tool))
                tool_args = odd_input(g, tool) if g.rng.random() < 0.3 else tool_input(g, tool)
                content.append(
                    {"type": "tool_use", "id": calls[-1][0], "name": tool, "input": tool_args}
                )
            msgs.append(g.msg("Friday", "assistant", content))
            results = []
            for call_id, tool in calls:
                if tool == "screenshot":
                    output: Any = [text_block("Saved the page as an image."), *screenshot]
                    results.append(
                        {"type": "tool_result", "id": call_id, "name": tool, "output": output}
                    )
                    continue
                output = tool_output(g, tool)
                if g.rng.random() < 0.6:
                    output = [text_block(output)]
                results.append(
                    {"type": "tool_result", "id": call_id, "name": tool, "output": output}
                )
            msgs.append(g.msg("system", "system", results))
        if len(msgs) < n:
            answer = g.text(2, 8)
            block = extra_text(g, answer) if g.rng.random() < 0.25 else text_block(answer)
            msgs.append(g.msg("Friday", "assistant", [block]))
    return msgs[:n]


KINDS: dict[str, Callable[[int], list[dict[str, Any]]]] = {
    "chat": chat,
    "tools": tools,
    "media": media,
    "debate": debate,
    "varied": varied,
}


def main() -> None:
    OUT_DIR.mkdir(exist_ok=True)
    for kind, build in KINDS.items():
        for size in SIZES:
            msgs = build(size)
            assert len(msgs) == size, (kind, size, len(msgs))
            doc = {"name": f"{kind}_{size}", "kind": kind, "messages": msgs}
            path = OUT_DIR / f"{kind}_{size}.json"
            path.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
            print(f"{path.name:16} {path.stat().st_size:>9,} bytes")


if __name__ == "__main__":
    main()
