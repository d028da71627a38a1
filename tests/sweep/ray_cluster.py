"""A Ray cluster of several nodes on this machine, each node pinned to its own CPUs.

Each node is `taskset -c CPUS ray start ... --num-cpus len(CPUS)` with its own temp dir and
free ports, started in its own session: stopping the cluster ends exactly the processes of
those sessions (and any left over that name the cluster's temp dirs), never another Ray on the
machine, as a plain `ray stop` would. Used by tests/sweep/test_ray_placement.py and
bench/ray_placement.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

START_TIMEOUT_S = 120.0
STOP_GRACE_S = 10.0
#: For the nodes and every driver: no token authentication (Ray turns it on when it finds
#: ~/.ray/auth_token, which a local `ray.init()` writes, and a joining node then fails to
#: connect), no usage reports.
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}

_NODES_SCRIPT = """
import json, logging, sys, ray
ray.init(address=sys.argv[1], include_dashboard=False, log_to_driver=False,
         logging_level=logging.ERROR)
print(json.dumps([{k: n.get(k) for k in ("NodeID", "Alive", "Resources", "RayletSocketName",
                                         "NodeManagerAddress")} for n in ray.nodes()]))
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LocalRayCluster:
    """`cpu_sets[0]` is the head's CPUs, each further set another node's."""

    cpu_sets: Sequence[tuple[int, ...]]
    address: str = ""
    #: node id -> the CPUs its processes were pinned to (filled by `start`)
    node_cpus: dict[str, tuple[int, ...]] = field(default_factory=dict)
    _dirs: list[Path] = field(default_factory=list)
    _groups: list[int] = field(default_factory=list)

    def start(self, timeout_s: float = START_TIMEOUT_S) -> LocalRayCluster:
        ray = Path(sys.executable).with_name("ray")
        env = self.driver_env()
        port = free_port()
        self.address = f"127.0.0.1:{port}"
        for i, cpus in enumerate(self.cpu_sets):
            # short: Ray's unix socket paths must fit in 107 characters
            folder = Path(tempfile.mkdtemp(prefix=f"xr{i}-", dir="/tmp"))
            self._dirs.append(folder)
            command = ["taskset", "-c", ",".join(map(str, cpus)), str(ray), "start",
                       "--num-cpus", str(len(cpus)), "--temp-dir", str(folder),
                       "--disable-usage-stats", "--dashboard-agent-listen-port", "0"]
            if i == 0:
                command += ["--head", "--port", str(port), "--node-ip-address", "127.0.0.1",
                            "--include-dashboard=false", "--dashboard-port", str(free_port()),
                            "--ray-client-server-port", str(free_port())]
            else:
                command += ["--address", self.address]
            proc = subprocess.Popen(command, env=env, start_new_session=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            self._groups.append(proc.pid)
            try:
                out, _ = proc.communicate(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.stop()
                raise RuntimeError(f"ray start did not return in {timeout_s:g} s") from None
            if proc.returncode != 0:
                self.stop()
                raise RuntimeError(f"ray start failed:\n{out[-3000:]}")
        self._wait_for_nodes(timeout_s)
        return self

    @staticmethod
    def driver_env() -> dict[str, str]:
        """The environment a process that connects to this cluster must have."""
        return {**os.environ, **RAY_ENV}

    def _wait_for_nodes(self, timeout_s: float) -> None:
        """Until every node is alive in the cluster; map node ids to their CPUs."""
        deadline = time.monotonic() + timeout_s
        while True:
            done = subprocess.run([sys.executable, "-c", _NODES_SCRIPT, self.address],
                                  capture_output=True, text=True, timeout=timeout_s,
                                  env=self.driver_env())
            nodes = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else []
            for node in nodes:
                socket_name = str(node.get("RayletSocketName") or "")
                for folder, cpus in zip(self._dirs, self.cpu_sets, strict=True):
                    if node.get("Alive") and socket_name.startswith(f"{folder}/"):
                        self.node_cpus[node["NodeID"]] = tuple(cpus)
            if len(self.node_cpus) == len(self.cpu_sets):
                return
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the cluster did not come up: {done.stderr[-2000:]}")
            time.sleep(1.0)

    def stop(self) -> None:
        """End every process of this cluster: its nodes' sessions, then any stragglers."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for group in self._groups:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(group, sig)
            deadline = time.monotonic() + STOP_GRACE_S
            while self._members() and time.monotonic() < deadline:
                time.sleep(0.2)
        for pid in self._members():  # e.g. Ray's workers, which start their own sessions
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        for folder in self._dirs:
            shutil.rmtree(folder, ignore_errors=True)
        self._groups.clear()

    def _members(self) -> list[int]:
        """Live processes in this cluster's sessions, or naming one of its temp dirs."""
        found = []
        marks = [str(folder).encode() for folder in self._dirs]
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            state, group = fields[0], int(fields[2])
            if state != "Z" and (group in self._groups or any(m in cmdline for m in marks)):
                found.append(int(entry.name))
        return found

    def __enter__(self) -> LocalRayCluster:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
