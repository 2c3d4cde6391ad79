"""A private RabbitMQ node for the live tests: loopback only, its own folders, stopped by pid.

Debian's `rabbitmq-server` package, started from its own sbin script (not the service wrapper,
so the process is ours): node `specgen-<pid>@localhost`, stream plugin on 127.0.0.1:5552,
AMQP 0-9-1/1.0 on 127.0.0.1:5672, Erlang distribution and epmd on loopback ports of its own.
`stop()` ends exactly the processes `start()` launched.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

STREAM_PORT = 5552
AMQP_PORT = 5672
STARTUP_TIMEOUT = 120.0


class ServerUnavailable(RuntimeError):
    """The server is not installed or did not come up; the message says which and why."""


def _sbin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/rabbitmq/lib/rabbitmq_server-*/sbin/rabbitmq-server"))
    return Path(found[-1]).parent if found else None


def installed_version() -> str | None:
    sbin = _sbin()
    return sbin.parent.name.split("-", 1)[1] if sbin else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class RabbitNode:
    base: Path
    stream_port: int = STREAM_PORT
    amqp_port: int = AMQP_PORT
    node: str = field(default_factory=lambda: f"specgen-{os.getpid()}@localhost")
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def log_dir(self) -> Path:
        return self.base / "log"

    def start(self) -> None:
        sbin = _sbin()
        if sbin is None or shutil.which("epmd") is None:
            raise ServerUnavailable(
                "rabbitmq-server is not installed (apt-get install rabbitmq-server)"
            )
        for port in (self.stream_port, self.amqp_port):
            if _port_open(port):
                raise ServerUnavailable(f"127.0.0.1:{port} is taken by another process")
        for sub in ("mnesia", "log", "home"):
            (self.base / sub).mkdir(parents=True, exist_ok=True)
        epmd_port, dist_port = free_port(), free_port()
        (self.base / "enabled_plugins").write_text("[rabbitmq_stream,rabbitmq_amqp1_0].\n")
        (self.base / "rabbitmq.conf").write_text(
            "\n".join(
                [
                    f"listeners.tcp.default = 127.0.0.1:{self.amqp_port}",
                    f"stream.listeners.tcp.default = 127.0.0.1:{self.stream_port}",
                    "stream.advertised_host = localhost",
                    f"stream.advertised_port = {self.stream_port}",
                    "log.console = false",
                    "log.file.level = info",
                    "",
                ]
            )
        )
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.base / "home"),
            "LANG": "C.UTF-8",
            "RABBITMQ_NODENAME": self.node,
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(self.amqp_port),
            "RABBITMQ_DIST_PORT": str(dist_port),
            "RABBITMQ_MNESIA_BASE": str(self.base / "mnesia"),
            "RABBITMQ_LOG_BASE": str(self.log_dir),
            "RABBITMQ_CONFIG_FILE": str(self.base / "rabbitmq"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(self.base / "enabled_plugins"),
            "RABBITMQ_PID_FILE": str(self.base / "rabbit.pid"),
            "ERL_EPMD_PORT": str(epmd_port),
            "ERL_EPMD_ADDRESS": "127.0.0.1",
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1}",
        }
        self.env = env
        # our own epmd, in the foreground, so that we hold its pid
        epmd = subprocess.Popen(
            ["epmd", "-port", str(epmd_port), "-address", "127.0.0.1"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.processes.append(epmd)
        with open(self.log_dir / "stdout.log", "wb") as out:
            server = subprocess.Popen(
                [str(sbin / "rabbitmq-server")],
                env=env,
                cwd=self.base,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.processes.append(server)
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise ServerUnavailable(
                    f"rabbitmq-server exited with {server.returncode}:\n{self.tail()}"
                )
            if _port_open(self.stream_port):
                return
            time.sleep(0.5)
        self.stop()
        raise ServerUnavailable(
            f"the stream port did not open in {STARTUP_TIMEOUT:.0f}s:\n{self.tail()}"
        )

    def tail(self, lines: int = 30) -> str:
        out = []
        for path in sorted(self.log_dir.glob("*.log")):
            text = path.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"== {path.name}\n" + "\n".join(text))
        return "\n".join(out)

    def ctl(self, *args: str, timeout: float = 60) -> str:
        """rabbitmqctl against this node (its own epmd port and cookie)."""
        sbin = _sbin()
        assert sbin is not None
        done = subprocess.run(
            [str(sbin / "rabbitmqctl"), "-n", self.node, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            raise RuntimeError(f"rabbitmqctl {' '.join(args)}: {done.stderr or done.stdout}")
        return done.stdout

    def stop(self) -> None:
        """SIGTERM (the VM shuts down cleanly), then SIGKILL after 30 s; server first, epmd last."""
        for proc in reversed(self.processes):
            if proc.poll() is None:
                try:
                    os.kill(proc.pid, signal.SIGTERM)
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.kill(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=10)
                except ProcessLookupError:
                    pass
        self.processes.clear()
