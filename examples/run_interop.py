"""`make interop`: build every example client, run it against live servers, compare.

Installs what each language needs (the Debian package of each missing command,
and missing libraries; the TypeScript example's pinned npm packages), builds
each example by running its README's Build block exactly as written (the same
commands as its `build.sh`; skipped when nothing it reads changed since the
last build), starts `agentscope-proto serve` (the FormatterService and the
in-memory hub) with gRPC and Connect on free loopback ports, and the example
agent (examples/agents/serve_replayed.py: `agentscope-proto serve-agent
weather_agent:make_agent` from .venv-as2, its model a local replay of recorded
streams) on another, runs each example against them (TypeScript twice: over
gRPC and with `--connect` over HTTP, the agent over gRPC both times) and
compares its JSON document with the Python example's, case by case, as parsed
JSON. The Python example's own document is compared with
`examples/expected.json`, the golden cases.

Then each example resumes: run again with its agent behind a loopback proxy
to a second agent whose weather reply holds after each model call's first
words (`serve_replayed.py --hold`), its connection is cut there, in each
model call (before the confirmation and after it); it must come back each
time (a new connection), take the reply up (`Resume`) and print the same
agent document as before, each event once and the reply complete. Run once
more with the proxy closed at the first cut and one attempt, it must give up
with a one-line error and a non-zero exit.

Usage: python examples/run_interop.py [--only LANG ...] [--no-install] [--write-expected]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
EXPECTED = EXAMPLES / "expected.json"
LOGS = ROOT / "build" / "interop"
VENV_BIN = Path(sys.executable).parent
# AgentScope 2.x's venv (`make .venv-as2/.installed`), which serves the example agent.
AGENT_PYTHON = ROOT / ".venv-as2" / "bin" / "python"
AGENT_SERVER = EXAMPLES / "agents" / "serve_replayed.py"
sys.path.insert(0, str(ROOT / "tests"))
from tcp_proxy import Proxy  # noqa: E402

# Where the held agent's weather reply waits (`serve_replayed.py --hold`): each
# model call holds after its first text delta, where the example's connection
# is cut (before the confirmation, and after it).
CALL, CUT_AT = "MODEL_CALL_START", "TEXT_BLOCK_DELTA"
# The document's cases: one per key, and one per key inside these.
NESTED = ("format", "hub", "agent")
SKIPPED_DIRS = {"build", "gen", "node_modules"}


@dataclass
class Language:
    """One example: what it needs installed, how to build and run it."""

    name: str
    run: list[str]
    # Commands it needs on PATH, each with the Debian package that has it:
    # a command already there (Node from NodeSource, say) installs nothing.
    commands: dict[str, str] = field(default_factory=dict)
    # Debian packages without a command to look for (libraries, jars).
    libraries: list[str] = field(default_factory=list)
    # The example built by its README's Build block; False: nothing to build.
    build: bool = True
    # Run against the Connect (HTTP) port rather than the gRPC one.
    over_http: bool = False
    # CPU seconds a fresh build takes (measured on Debian 12): builds run two at a
    # time, the heaviest first, so that both lanes end about together.
    build_cpu: float = 0.0
    # How many times its reply is cut in the resume check: once in each model call.
    cuts: int = 2

    @property
    def directory(self) -> str:
        return self.name.split("-")[0]


PROTOC = {"protoc": "protobuf-compiler"}
# The packages measured on a fresh Debian 12 (issue 12).
LANGUAGES = [
    Language("python", [sys.executable, "examples/python/client.py"], build=False),
    Language(
        "typescript",
        ["node", "examples/typescript/build/client.js"],
        {"node": "nodejs", "npm": "npm", **PROTOC},
        build_cpu=5,
    ),
    Language(
        "typescript-connect",
        ["node", "examples/typescript/build/client.js", "--connect"],
        build=False,
        over_http=True,
    ),
    Language(
        "go",
        ["examples/go/build/client"],
        {
            "go": "golang-go",
            **PROTOC,
            "protoc-gen-go": "protoc-gen-go",
            "protoc-gen-go-grpc": "protoc-gen-go-grpc",
        },
        [
            "golang-google-grpc-dev",
            "golang-google-protobuf-dev",
            "golang-github-golang-protobuf-1-5-dev",
        ],
        build_cpu=11,
    ),
    Language(
        "java",
        ["examples/java/build/client"],
        {"javac": "default-jdk-headless", **PROTOC},
        [
            "protobuf-compiler-grpc-java-plugin",
            "libprotobuf-java",
            "libgrpc-java",
            "libguava-java",
            "libnetty-java",
            "libperfmark-java",
            "libgoogle-gson-java",
            "libgeronimo-annotation-1.3-spec-java",
        ],
        build_cpu=10,
    ),
    Language(
        "cpp",
        ["examples/cpp/build/client"],
        {"g++": "g++", "pkg-config": "pkg-config", **PROTOC},
        ["protobuf-compiler-grpc", "libgrpc++-dev", "libprotobuf-dev"],
        build_cpu=22,
    ),
]
# The language a variant is built with (typescript-connect runs typescript's build).
BUILT_BY = {"typescript-connect": "typescript"}


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def missing_packages(language: Language) -> list[str]:
    """The Debian packages to install for `language`: those of its missing
    commands, and its libraries that dpkg does not list as installed."""
    missing = [
        package for command, package in language.commands.items() if not shutil.which(command)
    ]
    if shutil.which("dpkg-query") is None:
        return missing  # not Debian: the build says what is missing
    for package in language.libraries:
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
    for path in sorted(EXAMPLES.joinpath(language.directory).rglob("*")):
        if path.is_file() and not SKIPPED_DIRS & set(path.relative_to(EXAMPLES).parts):
            files.append(path)
    for path in files:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def build_commands(language: Language) -> str:
    """The shell commands of the example README's Build section, exactly as written."""
    readme = (EXAMPLES / language.directory / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("\n## Build\n") :]
    section = section[: section.find("\n## ", 1)] if "\n## " in section[1:] else section
    (block,) = BLOCK.findall(section)
    return str(block)


BLOCK = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)


def build(language: Language) -> tuple[str | None, float]:
    """Build one example as its README says, unless its inputs are unchanged:
    (error or None, seconds)."""
    started = time.monotonic()
    stamp = EXAMPLES / language.directory / "build" / ".inputs"
    digest = inputs_digest(language)
    if stamp.is_file() and stamp.read_text() == digest and Path(ROOT / language.run[-1]).exists():
        return None, 0.0
    log_file = LOGS / f"{language.name}-build.log"
    # The README's defaults, not this process's settings.
    env = {key: value for key, value in os.environ.items() if key != "RPC_PROTOS"}
    with open(log_file, "w") as out:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", build_commands(language)],
            cwd=EXAMPLES / language.directory,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    if done.returncode:
        tail = log_file.read_text().strip().splitlines()[-5:]
        return "build failed:\n    " + "\n    ".join(tail), time.monotonic() - started
    stamp.write_text(digest)
    return None, time.monotonic() - started


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Servers:
    """The servers the examples talk to: `serve` (gRPC `target`, Connect
    `http_target`), the example agent (`agent_target`) and the same agent
    holding its weather reply until released (`held_target`, the last process)."""

    processes: list[subprocess.Popen[bytes]]
    target: str
    http_target: str
    agent_target: str
    held_target: str

    def wait_ready(self) -> None:
        """Return once every port accepts; exit if a server died or 60 s passed."""
        deadline = time.monotonic() + 60
        for target, log_name in [
            (self.target, _LOG_NAMES[0]),
            (self.http_target, _LOG_NAMES[0]),
            (self.agent_target, _LOG_NAMES[1]),
            (self.held_target, _LOG_NAMES[2]),
        ]:
            while not accepts(int(target.rpartition(":")[2])):
                if time.monotonic() > deadline or any(p.poll() is not None for p in self.processes):
                    self.stop()
                    raise SystemExit(f"nothing listens on {target}: see {LOGS / log_name}")
                time.sleep(0.1)

    def release(self) -> None:
        """Let the held agent's waiting reply go on."""
        self.processes[-1].send_signal(signal.SIGUSR1)

    def stop(self) -> None:
        """SIGTERM to each (the agents' wrappers pass it on to their
        serve-agent, which drains); one still running 30 s later is killed
        and named, with the end of its log."""
        for process in self.processes:
            process.terminate()
        stuck = []
        for process, log_name in zip(self.processes, _LOG_NAMES, strict=True):
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
                tail = (LOGS / log_name).read_text(errors="replace").splitlines()[-15:]
                stuck.append(f"{log_name}: still running 30 s after SIGTERM; its log ends:")
                stuck += [f"  {line}" for line in tail]
        if stuck:
            raise SystemExit("\n".join(stuck))


# The servers' logs, in the order `start_servers` starts them.
_LOG_NAMES = ("server.log", "agent.log", "agent-held.log")


def start_servers() -> Servers:
    """Start `agentscope-proto serve` with gRPC and Connect on free ports, and the
    example agent on another (not waiting: see `Servers.wait_ready`)."""
    if not AGENT_PYTHON.exists():
        raise SystemExit(f"no {AGENT_PYTHON}: `make interop` makes it (make .venv-as2/.installed)")
    port, http_port, agent_port, held_port = free_port(), free_port(), free_port(), free_port()
    serve = [str(VENV_BIN / "agentscope-proto"), "serve", "--port", str(port)]
    agent = [str(AGENT_PYTHON), str(AGENT_SERVER), "--port"]
    return Servers(
        [
            spawn([*serve, "--http-port", str(http_port)], _LOG_NAMES[0]),
            spawn([*agent, str(agent_port)], _LOG_NAMES[1]),
            spawn([*agent, str(held_port), "--hold"], _LOG_NAMES[2]),
        ],
        f"127.0.0.1:{port}",
        f"127.0.0.1:{http_port}",
        f"127.0.0.1:{agent_port}",
        f"127.0.0.1:{held_port}",
    )


def spawn(command: list[str], log_name: str) -> subprocess.Popen[bytes]:
    with open(LOGS / log_name, "w") as server_log:
        return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=server_log)


def accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def cases(document: dict[str, Any]) -> dict[str, Any]:
    """The golden cases of a document: one per key inside `format` (a provider),
    `hub` and `agent`, one per other key."""
    flat: dict[str, Any] = {}
    for key, value in document.items():
        if key in NESTED and isinstance(value, dict):
            flat.update({f"{key}.{name}": part for name, part in value.items()})
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


def run(language: Language, servers: Servers) -> tuple[dict[str, Any] | None, str, float]:
    """Run one example against `serve` and the agent: (its document or None, an
    error, seconds)."""
    started = time.monotonic()
    target = servers.http_target if language.over_http else servers.target
    try:
        done = subprocess.run(
            [*language.run, target, servers.agent_target],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
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


@dataclass
class Cut:
    """A run whose agent connection was cut mid-reply."""

    returncode: int
    stdout: str
    stderr: list[str]
    # The proxy's connections at each cut, then at the end: each more than the
    # one before if the client came back after each cut.
    accepted: list[int]


def run_cut(language: Language, servers: Servers, *, give_up: bool) -> Cut:
    """Run one example with its agent behind a proxy to the held agent; when
    a model call's first words reach the example (CUT_AT), drop its
    connections (at most `language.cuts` times; `give_up`: once, and stop
    listening, with one attempt allowed), then let the reply go on."""
    proxy = Proxy(int(servers.held_target.rpartition(":")[2]))
    env = {**os.environ, "AGENTSCOPE_RESUME_ATTEMPTS": "1"} if give_up else None
    lines: list[str] = []
    accepted: list[int] = []
    with tempfile.TemporaryFile("w+") as stdout:
        process = subprocess.Popen(
            [*language.run, servers.target, proxy.target],
            cwd=ROOT,
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )

        def watch(stderr: IO[str]) -> None:
            held = False
            for line in stderr:
                lines.append(line.rstrip("\n"))
                held = held or line.strip() == CALL
                if held and line.strip() == CUT_AT:
                    held = False
                    if len(accepted) < (1 if give_up else language.cuts):
                        accepted.append(proxy.accepted)
                        proxy.close() if give_up else proxy.cut()
                    servers.release()

        watcher = threading.Thread(target=watch, args=(process.stderr,), daemon=True)
        watcher.start()
        try:
            process.wait(120)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        watcher.join(10)
        proxy.close()
        servers.release()  # whatever still holds, for the next run
        stdout.seek(0)
        return Cut(process.returncode, stdout.read(), lines, [*accepted, proxy.accepted])


def resume_cases(lang: Language, servers: Servers, reference: dict[str, Any]) -> dict[str, str]:
    """The resume checks of `lang` (`run_cut` twice) -> what each failed, if
    it did: cut in each model call, it came back each time and its agent
    cases equal `reference`; cut with no way back, it gave up with a
    one-line error and a non-zero exit."""
    agent_cases = [name for name in reference if name.startswith("agent.")]
    resumed = ["came_back", *agent_cases]
    checks: dict[str, str] = dict.fromkeys([*resumed, "gave_up"], "")
    cut = run_cut(lang, servers, give_up=False)
    cuts = len(cut.accepted) - 1
    try:
        document = cases(json.loads(cut.stdout)) if cuts and not cut.returncode else None
    except json.JSONDecodeError as error:
        document, cut.stderr = None, [f"stdout is not one JSON document: {error}"]
    if document is None:
        where = f"exit {cut.returncode} after {cuts} cut(s)" if cuts else "never cut"
        checks.update(dict.fromkeys(resumed, f"{where}: {cut.stderr[-1:]}"))
    else:
        steps = itertools.pairwise(cut.accepted)
        if cuts != lang.cuts or any(after <= before for before, after in steps):
            checks["came_back"] = f"connections at the cuts and at the end: {cut.accepted}"
        for name in agent_cases:
            if document.get(name) != reference[name]:
                checks[name] = first_difference(reference[name], document.get(name))
    stop = run_cut(lang, servers, give_up=True)
    last = stop.stderr[-1] if stop.stderr else ""
    if (
        len(stop.accepted) < 2
        or stop.returncode == 0
        or "attempts to take it up failed" not in last
    ):
        checks["gave_up"] = f"exit {stop.returncode}, last line {last!r}"
    return {f"resume.{name}": why for name, why in checks.items()}


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
    to_build.sort(key=lambda lang: -lang.build_cpu)
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
    # Python always runs first: it is the reference; a variant brings the
    # language it is built with.
    wanted = set(args.only or [lang.name for lang in LANGUAGES])
    wanted |= {BUILT_BY[name] for name in wanted if name in BUILT_BY}
    languages = [LANGUAGES[0]] + [lang for lang in LANGUAGES[1:] if lang.name in wanted]
    golden = cases(json.loads(EXPECTED.read_text()))
    reference = golden
    passed = failed = 0
    # The servers start while the examples build (the agent's AgentScope takes seconds).
    servers = start_servers()
    try:
        failures, timings = build_all(languages, not args.no_install)
        for variant, base in BUILT_BY.items():
            if base in failures:
                failures[variant] = failures[base]
        servers.wait_ready()
        for lang in languages:
            label = f"{lang.name:<18}"
            document, error, seconds = (
                (None, failures[lang.name], 0.0) if lang.name in failures else run(lang, servers)
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
        # The agent over gRPC is the same client with or without --connect.
        for lang in [lang for lang in languages if not (lang.over_http or lang.name in failures)]:
            started = time.monotonic()
            checks = resume_cases(lang, servers, reference)
            wrong = {name: why for name, why in checks.items() if why}
            failed += len(wrong)
            passed += len(checks) - len(wrong)
            print(
                f"{lang.name + ' resume':<18} {'FAILED' if wrong else 'ok'}: cut {lang.cuts}x"
                f" mid-reply, {len(checks) - len(wrong)}/{len(checks)} checks"
                f" ({time.monotonic() - started:.1f} s)"
            )
            for name, why in sorted(wrong.items()):
                print(f"    {name}: {why}")
    finally:
        servers.stop()
    print(f"took {time.monotonic() - began:.0f} s")
    print(f"interop: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
