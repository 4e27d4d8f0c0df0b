"""A real Ray cluster on this machine for the tests of spread runs: a head node and one node added
to it, each a raylet of its own with its own processes, as two machines would have. It is started
once for the session (a start takes seconds) and shut down at its end; tests reach it by its
address, as ``convy run --ray ADDRESS`` does. Ray stays optional: without it the tests that use the
cluster are skipped.

Each node has 2 logical CPUs, enough for the 4 workers a test asks, and a small object store (a
spread run moves only small records); no dashboard, and no usage statistics sent anywhere.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

CPUS = 2  # logical CPUs of each node: 4 workers in all
STORE = 80 * 1024 * 1024  # bytes of each node's object store, Ray's least


@dataclass(frozen=True)
class RayCluster:
    """A running cluster: its address, and Ray's own ``Cluster``."""

    address: str
    cluster: Any


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[RayCluster]:
    pytest.importorskip("ray", reason="spread runs need Ray: pip install 'convy[ray]'")
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"  # inherited by every process of the cluster
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": CPUS, "object_store_memory": STORE, "include_dashboard": False},
    )
    try:
        cluster.add_node(num_cpus=CPUS, object_store_memory=STORE)
        cluster.wait_for_nodes()
        yield RayCluster(cluster.address, cluster)
    finally:
        cluster.shutdown()
