"""`make interop`: build every example client, run it against a live server, compare.

Installs what each language needs (Debian packages only when missing, the
TypeScript example's pinned npm packages), generates code from proto/ and
builds each example (`examples/<language>/build.sh`; skipped when nothing it
reads changed since the last build), starts `agentscope-proto serve` on a free
loopback port, runs each example against it and compares its JSON document
with the Python example's, case by case, as parsed JSON. The Python example's
own document is compared with `examples/expected.json`, the golden cases.

Usage: python examples/run_interop.py [--only LANG ...] [--no-install] [--write-expected]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
EXPECTED = EXAMPLES / "expected.json"
LOGS = ROOT / "build" / "interop"
VENV_BIN = Path(sys.executable).parent
SKIPPED_DIRS = {"build", "gen", "node_modules"}


@dataclass
class Language:
    """One example: the Debian packages it needs, how to build and run it."""

    name: str
    run: list[str]
    packages: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)  # needed on PATH, else `packages`
    build: bool = True


# The packages measured on a fresh Debian 12 (issue 12).
LANGUAGES = [
    Language("python", [sys.executable, "examples/python/client.py"], build=False),
    Language(
        "typescript",
        ["node", "examples/typescript/build/client.js"],
        ["nodejs", "npm", "protobuf-compiler"],
        commands=["node", "npm", "protoc"],
    ),
    Language(
        "go",
        ["examples/go/build/client"],
        [
            "golang-go",
            "protobuf-compiler",
            "protoc-gen-go",
            "protoc-gen-go-grpc",
            "golang-google-grpc-dev",
            "golang-google-protobuf-dev",
            "golang-github-golang-protobuf-1-5-dev",
        ],
    ),
    Language(
        "java",
        ["examples/java/build/client"],
        [
            "default-jdk-headless",
            "protobuf-compiler",
            "protobuf-compiler-grpc-java-plugin",
            "libprotobuf-java",
            "libgrpc-java",
            "libguava-java",
            "libnetty-java",
            "libperfmark-java",
            "libgoogle-gson-java",
            "libgeronimo-annotation-1.3-spec-java",
        ],
    ),
    Language(
        "cpp",
        ["examples/cpp/build/client"],
        [
            "g++",
            "pkg-config",
            "protobuf-compiler",
            "protobuf-compiler-grpc",
            "libgrpc++-dev",
            "libprotobuf-dev",
        ],
    ),
]


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def missing_packages(language: Language) -> list[str]:
    if language.commands and all(shutil.which(c) for c in language.commands):
        return []
    if shutil.which("dpkg-query") is None:
        return []  # not Debian: the build says what is missing
    missing = []
    for package in language.packages:
        query = subprocess.run(
            ["dpkg-query", "-W", "-f=${db:Status-Status}", package], capture_output=True, text=True
        )
        if query.stdout != "installed":
            missing.append(package)
    return missing


def install(languages: list[Language]) -> dict[str, str]:
    """apt-get install what is missing; the languages that could not get it, with why."""
    missing = sorted({p for lang in languages for p in missing_packages(lang)})
    if not missing:
        return {}
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    if sudo and shutil.which("sudo") is None:
        why = f"needs root to install {' '.join(missing)}"
        return {lang.name: why for lang in languages if missing_packages(lang)}
    log(f"installing {' '.join(missing)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    steps = [
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing],
    ]
    with open(LOGS / "apt.log", "w") as out:
        for step in steps:
            done = subprocess.run(sudo + step, stdout=out, stderr=subprocess.STDOUT, env=env)
            if done.returncode:
                why = f"`{' '.join(step[:2])}` failed (see {LOGS / 'apt.log'})"
                return {lang.name: why for lang in languages if missing_packages(lang)}
    return {}


def inputs_digest(language: Language) -> str:
    """A digest of everything a build reads: proto/ and the example's own sources."""
    digest = hashlib.sha256()
    files = sorted(ROOT.joinpath("proto").rglob("*.proto"))
    for path in sorted(EXAMPLES.joinpath(language.name).rglob("*")):
        if path.is_file() and not SKIPPED_DIRS & set(path.relative_to(EXAMPLES).parts):
            files.append(path)
    for path in files:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def build(language: Language) -> tuple[str | None, float]:
    """Build one example unless its inputs are unchanged: (error or None, seconds)."""
    started = time.monotonic()
    stamp = EXAMPLES / language.name / "build" / ".inputs"
    digest = inputs_digest(language)
    if stamp.is_file() and stamp.read_text() == digest and Path(ROOT / language.run[-1]).exists():
        return None, 0.0
    log_file = LOGS / f"{language.name}-build.log"
    env = {**os.environ, "RPC_PROTOS": rpc_protos()}
    script = EXAMPLES / language.name / "build.sh"
    with open(log_file, "w") as out:
        done = subprocess.run([str(script)], stdout=out, stderr=subprocess.STDOUT, env=env)
    if done.returncode:
        tail = log_file.read_text().strip().splitlines()[-5:]
        return "build failed:\n    " + "\n    ".join(tail), time.monotonic() - started
    stamp.write_text(digest)
    return None, time.monotonic() - started


def rpc_protos() -> str:
    """The directory holding google/rpc/*.proto (googleapis-common-protos, in this venv)."""
    from google.rpc import status_pb2

    return str(Path(status_pb2.__file__).parents[2])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    with open(LOGS / "server.log", "w") as server_log:
        server = subprocess.Popen(
            [str(VENV_BIN / "agentscope-proto"), "serve", "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=server_log,
        )
    target = f"127.0.0.1:{port}"
    with grpc.insecure_channel(target) as channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=30)
        except grpc.FutureTimeoutError:
            server.kill()
            server.wait()
            raise SystemExit(f"no server on {target}: see {LOGS / 'server.log'}") from None
    return server, target


def cases(document: dict[str, Any]) -> dict[str, Any]:
    """The golden cases of a document: one per provider under `format`, one per other key."""
    flat: dict[str, Any] = {}
    for key, value in document.items():
        if key == "format" and isinstance(value, dict):
            flat.update({f"format.{provider}": body for provider, body in value.items()})
        else:
            flat[key] = value
    return flat


def first_difference(expected: Any, actual: Any, path: str = "") -> str:
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(expected.keys() | actual.keys()):
            if key not in actual or key not in expected:
                return f"{path}.{key}: {'missing' if key not in actual else 'unexpected'}"
            if expected[key] != actual[key]:
                return first_difference(expected[key], actual[key], f"{path}.{key}")
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        for i, (a, b) in enumerate(zip(expected, actual, strict=True)):
            if a != b:
                return first_difference(a, b, f"{path}[{i}]")
    return f"{path or '.'}: expected {json.dumps(expected)[:120]}, got {json.dumps(actual)[:120]}"


def run(language: Language, target: str) -> tuple[dict[str, Any] | None, str, float]:
    """Run one example: (its document or None, an error, seconds)."""
    started = time.monotonic()
    try:
        done = subprocess.run(
            [*language.run, target], cwd=ROOT, capture_output=True, text=True, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, str(error), time.monotonic() - started
    elapsed = time.monotonic() - started
    if done.returncode:
        return None, f"exit {done.returncode}: {done.stderr.strip()[-300:]}", elapsed
    try:
        return json.loads(done.stdout), "", elapsed
    except json.JSONDecodeError as error:
        return None, f"stdout is not one JSON document: {error}", elapsed


def compare(lang: Language, document: dict[str, Any], reference: dict[str, Any]) -> dict[str, str]:
    """The cases where `document` differs from `reference`, with the first difference."""
    results = cases(document)
    wrong = {
        name: first_difference(expected, results.get(name))
        for name, expected in reference.items()
        if results.get(name) != expected
    }
    wrong.update(dict.fromkeys(results.keys() - reference.keys(), "unexpected case"))
    return wrong


def build_all(
    languages: list[Language], install_packages: bool
) -> tuple[dict[str, str], dict[str, float]]:
    """Install and build: (failures by language, build seconds by language)."""
    failures = install(languages) if install_packages else {}
    to_build = [lang for lang in languages if lang.build and lang.name not in failures]
    timings: dict[str, float] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for lang, (error, seconds) in zip(to_build, pool.map(build, to_build), strict=True):
            timings[lang.name] = seconds
            if error:
                failures[lang.name] = error
    return failures, timings


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=[lang.name for lang in LANGUAGES])
    parser.add_argument("--no-install", action="store_true", help="never call apt-get")
    parser.add_argument(
        "--write-expected", action="store_true", help="rewrite expected.json from Python's"
    )
    args = parser.parse_args()
    began = time.monotonic()
    LOGS.mkdir(parents=True, exist_ok=True)
    # Python always runs first: it is the reference.
    languages = [LANGUAGES[0]] + [
        lang for lang in LANGUAGES[1:] if not args.only or lang.name in args.only
    ]
    failures, timings = build_all(languages, not args.no_install)
    golden = cases(json.loads(EXPECTED.read_text()))
    reference = golden
    passed = failed = 0
    server, target = start_server()
    try:
        for lang in languages:
            label = f"{lang.name:<11}"
            document, error, seconds = (
                (None, failures[lang.name], 0.0) if lang.name in failures else run(lang, target)
            )
            if document is None:
                failed += len(reference)
                print(f"{label} FAILED: {error}")
                continue
            if lang.name == "python" and args.write_expected:
                EXPECTED.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
                golden = reference = cases(document)
            wrong = compare(lang, document, reference)
            failed += len(wrong)
            passed += len(reference) - len(wrong)
            against = "expected.json" if reference is golden else "python"
            timing = f"build {timings.get(lang.name, 0.0):.1f} s, run {seconds:.1f} s"
            ok = len(reference) - len(wrong)
            print(
                f"{label} {'FAILED' if wrong else 'ok'}: {ok}/{len(reference)} cases"
                f" equal {against} ({timing})"
            )
            for name, why in sorted(wrong.items()):
                print(f"    {name}: {why}")
            if lang.name == "python" and not wrong:
                reference = cases(document)
    finally:
        server.terminate()
        server.wait(10)
    print(f"took {time.monotonic() - began:.0f} s")
    print(f"interop: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
