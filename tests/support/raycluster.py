"""A real Ray cluster of two nodes on this machine, for the tests of distributed runs.

``ray_cluster`` (session-scoped) starts it once: a head node and a second node, each a raylet of
its own with its own worker processes, as two machines would have. ``ray_driver`` connects the
test's own process to it as a Ray driver and leaves the cluster with two live nodes afterwards,
whatever the test killed. Tests that start ``convy`` as a subprocess pass it ``cluster.address``
and ``cluster.env``.

The cluster is ``ray.cluster_utils.Cluster``: its nodes are children of the test process, and Ray's
reaper ends them if that process dies. ``ray start``/``ray stop`` are not used: ``ray stop`` ends
every Ray process on the machine, other people's clusters included.

What the environment is set to, for this process and every child (``cluster.env``):
- ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``: on Linux Ray rewrites ``127.0.0.1`` in an address to
  the machine's outward address, so a node pinned to loopback is then unreachable (a driver
  retries for about 14 minutes). With this set, Ray's idea of "this machine" is 127.0.0.1 and
  nothing listens or connects anywhere else.
- ``RAY_USAGE_STATS_ENABLED=0``: no usage report is sent anywhere.
- ``RAY_TMPDIR``: a folder of this cluster's own (short: Unix socket paths are limited to 107
  bytes), so its sessions, logs and ``ray_current_cluster`` never meet another cluster's on the
  same machine, and so its processes are found by that folder in their command lines.

Never connect with ``address="auto"`` in a test: Ray then joins any ``gcs_server`` it finds
running on the machine, whoever started it.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from support.waiting import wait_until

if TYPE_CHECKING:
    from ray._private.node import Node

LOOPBACK = "127.0.0.1"
# Logical CPUs per node. Nothing is pinned to them; they only decide how many actors Ray places:
# four one-CPU actors fit on either node alone, so the survivor of a killed node can take them all.
NODE_CPUS = 4
OBJECT_STORE = 80 * 1024 * 1024
# Generous: only a hung cluster reaches it.
PATIENCE = 300.0  # a hang guard: a loaded machine starts Ray slowly
# Read by Ray when it is imported, so set as soon as conftest imports this module, before any test
# module can import ray. Only Ray reads them.
STEADY = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}
os.environ.update(STEADY)


def pid_alive(pid: int) -> bool:
    """Whether a process still runs (a zombie, dead but not yet reaped, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def ray_processes(folder: Path) -> set[int]:
    """Every live process of a Ray whose temp folder is ``folder``, this process left out: its
    command line names the folder (GCS, raylets, agents), or it inherited ``RAY_TMPDIR`` set to it
    (the workers, actors among them). Zombies do not count."""
    mark = str(folder).encode()
    inherited = b"\0RAY_TMPDIR=" + mark + b"\0"
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
            environment = b"\0" + (entry / "environ").read_bytes()
        except OSError:
            continue
        if (mark in command or inherited in environment) and pid_alive(int(entry.name)):
            found.add(int(entry.name))
    return found


class LocalCluster:
    """A head node and a second node, on 127.0.0.1, in a temporary folder of their own."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="convy-ray-"))
        self.env = STEADY | {"RAY_TMPDIR": str(self.folder)}
        self._saved = {name: os.environ.get(name) for name in self.env}
        os.environ.update(self.env)
        from ray._private import ray_constants
        from ray.cluster_utils import Cluster

        if ray_constants.ENABLE_RAY_CLUSTER:
            raise RuntimeError("ray was imported before tests/support/raycluster.py set RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0")

        self._cluster = Cluster(
            initialize_head=True,
            head_node_args=self._node_args() | {"include_dashboard": False},
        )
        self.address: str = self._cluster.address
        self.others: list[Node] = []
        self.add_node()

    def _node_args(self) -> dict[str, Any]:
        return {"num_cpus": NODE_CPUS, "object_store_memory": OBJECT_STORE, "node_ip_address": LOOPBACK}

    @property
    def head_id(self) -> str:
        """The head node's id (hex), as ``ray.get_runtime_context().get_node_id()`` gives it."""
        return str(self._cluster.head_node.node_id)

    @property
    def other_id(self) -> str:
        """The second node's id (hex). The driver is always on the head, so this is the one to kill."""
        return str(self.others[0].node_id)

    def add_node(self, environment: dict[str, str] | None = None) -> str:
        """Start another node and wait until it has joined; its id. ``environment``: variables its
        processes start with besides this process's (Ray's testing hooks, say), this one's unchanged."""
        saved = {name: os.environ.get(name) for name in environment or {}}
        os.environ.update(environment or {})
        try:
            node = self._cluster.add_node(**self._node_args())
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        self._cluster.wait_for_nodes(timeout=PATIENCE)
        self.others.append(node)
        return str(node.node_id)

    def kill_node(self, node_id: str) -> None:
        """SIGKILL a non-head node's raylet and its other processes, as a machine that lost power.

        Its worker processes lose their raylet and end; the head notices the node is gone after its
        health checks fail (a few seconds), and the actors that lived there die with it.
        """
        node = next(node for node in self.others if str(node.node_id) == node_id)
        self.others.remove(node)
        self._cluster.remove_node(node, allow_graceful=False)
        self._cluster.wait_for_nodes(timeout=PATIENCE)

    def kill_process(self, pid: int) -> None:
        """SIGKILL one process (an actor's, say) and wait until it is gone."""
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not pid_alive(pid), f"process {pid} to end")

    def heal(self) -> None:
        """Bring the cluster back to two live nodes after a test killed one."""
        while not self.others:
            self.add_node()

    def pids(self) -> set[int]:
        """Every live process of this cluster (see ``ray_processes``)."""
        return ray_processes(self.folder)

    def connect(self) -> None:
        """Make this process a driver of the cluster, with Ray's own logging kept off stderr."""
        import ray

        ray.init(address=self.address, logging_level="ERROR", log_to_driver=False)

    def shutdown(self) -> None:
        """Disconnect, end every node, wait until no process of the cluster is left, restore the environment."""
        import ray

        try:
            ray.shutdown()
            self._cluster.shutdown()
            # Worker processes end after their raylet; wait for the last of them.
            wait_until(lambda: not self.pids(), f"the processes of {self.folder} to end")
        finally:
            for name, value in self._saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[LocalCluster]:
    """A real two-node Ray cluster for the whole session; skipped where Ray is not installed."""
    pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[dev,ray]' (make test does)")
    cluster = LocalCluster()
    try:
        yield cluster
    finally:
        cluster.shutdown()


@pytest.fixture
def ray_driver(ray_cluster: LocalCluster) -> Iterator[LocalCluster]:
    """The session's cluster with this process connected as its driver, for one test."""
    import ray

    ray_cluster.heal()
    ray_cluster.connect()
    try:
        yield ray_cluster
    finally:
        ray.shutdown()
        ray_cluster.heal()
