"""What the hub tests share: a real redis-server, servers on each store, topics, messages."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from agentscope_proto import new_msg
from agentscope_proto._generated.agentscope.message.v1.message_pb2 import Msg
from agentscope_proto.hub import HubConfig
from agentscope_proto.service import ServerConfig

from conftest import require
from server_harness import RunningServer

STORES = ["memory", "redis"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """Debian's redis-server on a free loopback port, nothing persisted.

    redis-server cannot bind port 0, so a free port is picked and, if another
    process takes it first, another one.
    """

    def __init__(self, workdir: Path, extra: tuple[str, ...] = ()) -> None:
        binary = shutil.which("redis-server")
        require(binary is not None, "redis-server is not installed (apt-get install redis-server)")
        assert binary is not None
        options = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self._command = [binary, *options, "--dir", str(workdir), *extra]
        for _ in range(20):
            self.port = free_port()
            if self._start():
                return
        raise RuntimeError("redis-server did not start on any of 20 free ports")

    def _start(self) -> bool:
        self.process = subprocess.Popen(
            [*self._command, "--port", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if self._answers():
            return True
        self.process.wait()
        return False

    def restart(self) -> None:
        """Stop and start again on the same port: with nothing persisted,
        empty (as a crash of a Redis without persistence leaves it)."""
        self.stop()
        if not self._start():
            raise RuntimeError(f"redis-server did not start again on port {self.port}")

    def _answers(self) -> bool:
        deadline = time.monotonic() + 10
        while self.process.poll() is None and time.monotonic() < deadline:
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock,
            ):
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    return True
            time.sleep(0.02)
        return False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


class RedisCluster:
    """A Redis Cluster of `masters` Debian redis-servers on free loopback
    ports (no replicas, nothing persisted), made with `redis-cli --cluster
    create`; `url` names its first node (a cluster client finds the rest)."""

    def __init__(self, workdir: Path, masters: int = 3) -> None:
        cli = shutil.which("redis-cli")
        require(cli is not None, "redis-cli is not installed (apt-get install redis-tools)")
        assert cli is not None
        self.nodes = []
        try:
            for index in range(masters):
                node_dir = workdir / f"node{index}"
                node_dir.mkdir()
                self.nodes.append(
                    RedisServer(
                        node_dir, ("--cluster-enabled", "yes", "--cluster-node-timeout", "2000")
                    )
                )
            addresses = [f"127.0.0.1:{node.port}" for node in self.nodes]
            subprocess.run(
                [
                    cli,
                    "--cluster",
                    "create",
                    *addresses,
                    "--cluster-replicas",
                    "0",
                    "--cluster-yes",
                ],
                check=True,
                capture_output=True,
                timeout=60,
            )
            self._wait_ok(cli)
        except BaseException:
            self.stop()
            raise

    def _wait_ok(self, cli: str) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            states = [
                subprocess.run(
                    [cli, "-p", str(node.port), "cluster", "info"],
                    capture_output=True,
                    text=True,
                    timeout=10,
                    check=False,
                ).stdout
                for node in self.nodes
            ]
            if all("cluster_state:ok" in state for state in states):
                return
            time.sleep(0.1)
        raise RuntimeError("the Redis Cluster did not reach cluster_state:ok within 30 s")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.nodes[0].port}"

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def store_url(request: pytest.FixtureRequest, store: str) -> str:
    """The hub URL of a store kind (starting redis-server for `redis`)."""
    if store == "memory":
        return "memory"
    server: RedisServer = request.getfixturevalue("redis_server")
    return server.url


def hub_server(url: str, **config: Any) -> RunningServer:
    """A running server whose hub is on `url`; `config`: HubConfig fields and
    ServerConfig fields (`auth_token`, `tls_cert`, ...)."""
    hub_fields = set(HubConfig.__dataclass_fields__)
    hub = HubConfig(url=url, **{k: v for k, v in config.items() if k in hub_fields})
    server = {k: v for k, v in config.items() if k not in hub_fields}
    return RunningServer(ServerConfig(port=0, hub=hub, **server)).start()


@pytest.fixture
def topic() -> str:
    """A topic no other test uses (the Redis server is shared)."""
    return f"test/{uuid.uuid4().hex}"


def msg(text: str, name: str = "alice") -> Msg:
    return new_msg(name, text, "user")


def status_details(error: grpc.RpcError) -> dict[str, Any]:
    """The status details of a failed call, by type name."""
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    assert status is not None, error
    return details(status)


def details(status: Any) -> dict[str, Any]:
    """The details of a `google.rpc.Status` (or a message of its shape, as
    `PublishError`), by type name."""
    status = status_pb2.Status.FromString(status.SerializeToString())
    found: dict[str, Any] = {}
    for detail in status.details:
        for kind in (
            error_details_pb2.ErrorInfo,
            error_details_pb2.BadRequest,
            error_details_pb2.QuotaFailure,
        ):
            value = kind()
            if detail.Unpack(value):
                found[kind.DESCRIPTOR.name] = value
    return found


CLI = [sys.executable, "-m", "agentscope_proto"]


class ServeProcess:
    """`agentscope-proto serve` with a hub, in a subprocess (to be killed for real)."""

    def __init__(self, hub: str, port: int | None = None, *args: str) -> None:
        self.port = port or free_port()
        self.process = subprocess.Popen(
            [*CLI, "serve", "--port", str(self.port), "--hub", hub, "--log-level", "error", *args],
            stderr=subprocess.PIPE,
            text=True,
        )
        self._wait_ready()

    def _wait_ready(self) -> None:
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        deadline = time.monotonic() + 30
        with grpc.insecure_channel(self.target) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            while True:
                if self.process.poll() is not None:
                    raise RuntimeError(f"serve exited: {self.process.stderr.read()}")  # type: ignore[union-attr]
                try:
                    health.Check(health_pb2.HealthCheckRequest(), timeout=1)
                    return
                except grpc.RpcError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def kill(self) -> None:
        """SIGKILL: no draining, connections dropped as a crash drops them."""
        self.process.kill()
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
