"""The two-node Ray cluster of tests/support/raycluster.py is real: actors land on both nodes, a killed
actor process or node surfaces as an error in the caller, another actor takes the work over, and
clusters come and go without leaving a process behind."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.raycluster import NODE_CPUS, PATIENCE, LocalCluster, pid_alive
from support.waiting import wait_until

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[dev,ray]' (make test does)")
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # noqa: E402


@ray.remote(num_cpus=0)
class Player:
    """Stands in for an actor that plays attempts: says where it runs, and works until released."""

    def where(self) -> tuple[int, str]:
        return os.getpid(), ray.get_runtime_context().get_node_id()

    def play(self, started: str, release: str) -> str:
        # Written whole then renamed, so the test never reads it half written.
        Path(started + ".part").write_text(str(os.getpid()), encoding="ascii")
        os.replace(started + ".part", started)
        # Polls for a file, not a clock: the test creates it, or kills this process first.
        while not Path(release).exists():
            time.sleep(0.01)
        return ray.get_runtime_context().get_node_id()


def on(node_id: str, **options: object) -> object:
    """The Player class, placed on one node and no other."""
    return Player.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False), **options)


def test_actors_land_on_both_nodes(ray_driver: LocalCluster) -> None:
    # Two actors that each need a whole node's CPUs cannot share one: Ray must use both nodes.
    whole = [Player.options(num_cpus=NODE_CPUS).remote() for _ in range(2)]
    places = ray.get([player.where.remote() for player in whole], timeout=PATIENCE)
    assert {node for _, node in places} == {ray_driver.head_id, ray_driver.other_id}
    for player in whole:
        ray.kill(player)

    # Four small actors, two pinned to each node by its id, each in a process of its own.
    nodes = [ray_driver.head_id, ray_driver.other_id] * 2
    places = ray.get([on(node, num_cpus=1).remote().where.remote() for node in nodes], timeout=PATIENCE)
    assert [node for _, node in places] == nodes
    assert len({pid for pid, _ in places}) == 4


def test_killed_actor_process_fails_the_call_and_another_node_takes_over(
    ray_driver: LocalCluster, tmp_path: Path
) -> None:
    started, release = tmp_path / "started", tmp_path / "release"
    doomed = on(ray_driver.other_id).remote()
    call = doomed.play.remote(str(started), str(release))
    wait_until(started.exists, "the actor to start playing")
    pid = int(started.read_text(encoding="ascii"))

    ray_driver.kill_process(pid)
    with pytest.raises(ray.exceptions.RayActorError) as raised:
        ray.get(call, timeout=PATIENCE)
    assert isinstance(raised.value, ray.exceptions.ActorDiedError)

    release.touch()
    heir = on(ray_driver.head_id).remote()
    assert ray.get(heir.play.remote(str(tmp_path / "again"), str(release)), timeout=PATIENCE) == ray_driver.head_id


def test_a_restartable_actor_comes_back_in_a_new_process(ray_driver: LocalCluster, tmp_path: Path, full: bool) -> None:
    if not full:
        pytest.skip("Ray's own behaviour, which the spread runs' tests rely on: run with --full")
    started, release = tmp_path / "started", tmp_path / "release"
    player = Player.options(max_restarts=1, max_task_retries=0).remote()
    call = player.play.remote(str(started), str(release))
    wait_until(started.exists, "the actor to start playing")
    pid = int(started.read_text(encoding="ascii"))

    ray_driver.kill_process(pid)
    # The call in flight is lost (no task retries): a new one must be sent by the caller.
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(call, timeout=PATIENCE)
    # While Ray restarts it, a call fails with ActorUnavailableError (a RayActorError that is not
    # ActorDiedError): the actor may come back, so the caller asks again.
    answers: list[tuple[int, str]] = []

    def answered() -> bool:
        try:
            answers.append(ray.get(player.where.remote(), timeout=PATIENCE))
        except ray.exceptions.ActorUnavailableError:
            return False
        return True

    wait_until(answered, "the restarted actor to answer")
    restarted, _ = answers[0]
    assert restarted != pid
    assert pid_alive(restarted)


def test_a_killed_node_fails_its_actors_calls_and_the_head_takes_over(ray_driver: LocalCluster, tmp_path: Path, full: bool) -> None:
    if not full:
        pytest.skip("Ray's own behaviour, which the spread runs' tests rely on: run with --full")
    started, release = tmp_path / "started", tmp_path / "release"
    lost = on(ray_driver.other_id).remote()
    call = lost.play.remote(str(started), str(release))
    wait_until(started.exists, "the actor to start playing")
    pid = int(started.read_text(encoding="ascii"))
    node = ray_driver.other_id

    ray_driver.kill_node(node)
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(call, timeout=PATIENCE)
    wait_until(lambda: not pid_alive(pid), "the dead node's actor process to end")
    wait_until(lambda: not any(n["Alive"] for n in ray.nodes() if n["NodeID"] == node), "the head to see the node gone")

    release.touch()
    heir = on(ray_driver.head_id).remote()
    assert ray.get(heir.play.remote(str(tmp_path / "again"), str(release)), timeout=PATIENCE) == ray_driver.head_id


def test_clusters_come_and_go_without_leaving_processes(ray_cluster: LocalCluster, full: bool) -> None:
    if not full:
        pytest.skip("Ray's own behaviour, which the spread runs' tests rely on: run with --full")
    # Two more clusters, one after the other, beside the session's; none of their processes outlive them.
    folders = []
    for _ in range(2):
        cluster = LocalCluster()
        try:
            cluster.connect()
            players = [on(node).remote() for node in (cluster.head_id, cluster.other_id)]
            places = ray.get([player.where.remote() for player in players], timeout=PATIENCE)
            assert {node for _, node in places} == {cluster.head_id, cluster.other_id}
            running = cluster.pids()
            assert {pid for pid, _ in places} <= running
        finally:
            cluster.shutdown()
        assert not any(pid_alive(pid) for pid in running)
        assert not cluster.pids()
        folders.append(cluster.folder)
    assert folders[0] != folders[1]
    assert not any(folder.exists() for folder in folders)
    # The session's cluster was left alone.
    assert ray_cluster.pids()


DRIVER = """
import sys
import ray
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)

@ray.remote(num_cpus=1)
def node():
    print("an actor's print")  # kept off the driver's stdout by log_to_driver=False
    return ray.get_runtime_context().get_node_id()

print(sorted(set(ray.get([node.remote() for _ in range(2)]))))
print(sorted(n["NodeID"] for n in ray.nodes() if n["Alive"]))
ray.shutdown()
"""


def test_a_driver_in_another_process_joins_quietly(ray_cluster: LocalCluster) -> None:
    # As `convy run --ray ADDRESS` will: a process of its own, given the address and cluster.env.
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, ray_cluster.address],
        env=os.environ | ray_cluster.env,
        capture_output=True,
        text=True,
        timeout=PATIENCE,
    )
    assert done.returncode == 0, done.stderr
    ran, alive = (ast.literal_eval(line) for line in done.stdout.splitlines())
    assert alive == sorted([ray_cluster.head_id, ray_cluster.other_id])
    assert ran and set(ran) <= set(alive)
    assert "an actor's print" not in done.stdout
    assert done.stderr == ""
