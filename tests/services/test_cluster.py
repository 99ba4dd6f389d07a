"""The simulated cluster: hosts in their own network and mount namespaces, one Spark worker each."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from samza_nb import services
from samza_nb.cli import main
from samza_nb.errors import ServiceError
from samza_nb.services import _netns
from samza_nb.services._process import ProcessRecord, is_alive
from samza_nb.services.cluster import SimCluster

_REACH = textwrap.dedent(
    """
    import json, os, socket
    from confluent_kafka.admin import AdminClient
    from samza_nb.services import read_service_env
    from samza_nb.services.zookeeper import zookeeper_session_ok
    env = read_service_env()
    zk_host, _, zk_port = env["SAMZA_NB_ZK_CONNECT"].partition(":")
    with socket.create_connection((zk_host, int(zk_port)), timeout=5) as sock:
        own = sock.getsockname()[0]
    metadata = AdminClient({"bootstrap.servers": env["SAMZA_NB_KAFKA_BOOTSTRAP"]}).list_topics(
        timeout=15
    )
    print(json.dumps({
        "own": own,
        "zk": zookeeper_session_ok(zk_host, int(zk_port)),
        "brokers": [f"{b.host}:{b.port}" for b in metadata.brokers.values()],
    }))
    """
)

_DRIVER = textwrap.dedent(
    """
    import json, os, socket, time
    from samza_nb.runtime.executors.spark import get_spark
    # Master and driver address come from the host's environment (SAMZA_NB_SPARK_MASTER,
    # SAMZA_NB_HOST_ADDRESS); executors fork Python workers from samza_nb's daemon module, so
    # every host must import this checkout's samza_nb.
    spark = get_spark(
        {
            "spark.executor.memory": "512m",
            "spark.cores.max": "3",
            "spark.locality.wait": "0",
        },
        app_name="sim-cluster-test",
    )
    sc = spark.sparkContext
    deadline = time.monotonic() + 120
    while sc._jsc.sc().getExecutorMemoryStatus().size() < 4 and time.monotonic() < deadline:
        time.sleep(0.2)

    def where(_):
        time.sleep(0.3)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.connect(("10.213.0.1", 9))  # the source address is this namespace's own
            address = sock.getsockname()[0]
        return (os.environ.get("SAMZA_NB_HOST_NAME"), address)

    seen = sorted(set(sc.parallelize(range(24), 24).map(where).collect()))
    executors = sc._jsc.sc().getExecutorMemoryStatus().keys().mkString(",").split(",")
    print(json.dumps({"tasks": seen, "executors": sorted(executors)}))
    spark.stop()
    """
)


def _json_output(done: object) -> dict[str, object]:
    assert getattr(done, "returncode", 1) == 0, getattr(done, "stderr", "")[-3000:]
    last = getattr(done, "stdout", "").strip().splitlines()[-1]
    return json.loads(last)  # type: ignore[no-any-return]


def test_without_root_the_error_names_root_and_the_alternative(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    with pytest.raises(ServiceError, match=r"needs root.*services up spark") as caught:
        _netns.require_namespaces()
    assert caught.value.service == "cluster"


def test_without_ip_the_error_names_the_missing_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 0)
    monkeypatch.setattr("shutil.which", lambda *_args, **_kwargs: None)
    with pytest.raises(ServiceError, match=r"`ip` was not found.*iproute2"):
        _netns.require_namespaces()


def test_an_unknown_host_is_named(sim_cluster: SimCluster) -> None:
    with pytest.raises(ServiceError, match=r"no host 'h9'; hosts: h1, h2, h3"):
        sim_cluster.host("h9")


@pytest.mark.slow
def test_hosts_have_their_own_addresses_and_reach_zookeeper_and_kafka(
    sim_cluster: SimCluster,
) -> None:
    hosts = sim_cluster.hosts
    assert [host.name for host in hosts] == ["h1", "h2", "h3"]
    assert len({host.address for host in hosts}) == 3
    for host in hosts:
        seen = _json_output(sim_cluster.call(host, [sys.executable, "-c", _REACH], timeout=60))
        assert seen["own"] == host.address
        assert seen["zk"] is True
        # The broker advertises an address the host can use (the bridge's, not 127.0.0.1).
        assert seen["brokers"] == [sim_cluster.host_environment(host)["SAMZA_NB_KAFKA_BOOTSTRAP"]]
        assert str(seen["brokers"]).count(_netns.BRIDGE_ADDRESS) == 1


@pytest.mark.slow
def test_each_host_sees_its_own_disk_at_the_same_path(sim_cluster: SimCluster) -> None:
    path = sim_cluster.mount_point / "marker"
    write = sim_cluster.call("h1", ["sh", "-c", f"echo written-on-h1 > {path}"], timeout=20)
    assert write.returncode == 0, write.stderr
    on_h1 = sim_cluster.call("h1", ["cat", str(path)], timeout=20)
    on_h2 = sim_cluster.call("h2", ["cat", str(path)], timeout=20)
    assert on_h1.stdout.strip() == "written-on-h1"
    assert on_h2.returncode != 0 and "No such file" in on_h2.stderr
    assert not path.exists()  # the root namespace sees the empty mount point
    assert (sim_cluster.host("h1").disk / "marker").read_text().strip() == "written-on-h1"


@pytest.mark.slow
def test_a_spark_job_runs_tasks_on_executors_of_every_host(sim_cluster: SimCluster) -> None:
    done = sim_cluster.call("h1", [sys.executable, "-c", _DRIVER], timeout=240)
    seen = _json_output(done)
    hosts = sim_cluster.hosts
    assert sorted(map(tuple, seen["tasks"])) == [(h.name, h.address) for h in hosts]  # type: ignore[arg-type]
    executor_hosts = {item.rpartition(":")[0] for item in seen["executors"]}  # type: ignore[attr-defined]
    # Three executors, one per host; h1 also holds the driver.
    assert executor_hosts == {host.address for host in hosts}
    assert len(seen["executors"]) == 4  # type: ignore[arg-type]


@pytest.mark.slow
def test_killing_a_host_stops_its_worker_and_restart_brings_it_back(
    sim_cluster: SimCluster,
) -> None:
    host = sim_cluster.host("h2")
    keep = sim_cluster.call("h2", ["sh", "-c", f"echo kept > {sim_cluster.mount_point}/kept"])
    assert keep.returncode == 0, keep.stderr
    sleeper = sim_cluster.run("h2", ["sleep", "600"], role="sleeper")
    worker_pids = [p.pid for p in sim_cluster.processes("h2") if p.role.endswith("spark-worker")]
    assert len(worker_pids) == 1 and host.address in sim_cluster.alive_worker_addresses()

    killed = sim_cluster.kill("h2")

    assert sleeper.pid in killed and worker_pids[0] in killed
    assert sim_cluster.processes("h2") == []
    assert _netns.netns_pids(host.netns) == []
    assert host.address not in sim_cluster.alive_worker_addresses()
    assert sim_cluster.status().state == "unhealthy"
    assert "h2 10.213.0.12 down" in sim_cluster.status().address

    sim_cluster.restart("h2")

    assert host.address in sim_cluster.alive_worker_addresses()
    assert sim_cluster.status().state == "running"
    back = sim_cluster.call("h2", ["cat", f"{sim_cluster.mount_point}/kept"])
    assert back.stdout.strip() == "kept"


def _outliving(pids: list[int], timeout: float) -> list[int]:
    """Those of ``pids`` still running after ``timeout`` (children of this process that ended
    are reaped: a zombie is not a process left running)."""
    deadline = time.monotonic() + timeout
    while True:
        for pid in pids:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
        left = [pid for pid in pids if Path(f"/proc/{pid}").exists()]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.2)


def _stage(log: Path, stage: str, record: ProcessRecord, timeout: float = 300.0) -> dict[str, Any]:
    """The JSON line of ``stage`` that tests/services/cluster_job.py printed to ``log``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
        for line in text.splitlines():
            if line.startswith("{") and f'"stage": "{stage}"' in line:
                return json.loads(line)  # type: ignore[no-any-return]
        assert is_alive(record), f"the job's driver ended before {stage!r}:\n{text[-4000:]}"
        time.sleep(0.5)
    msg = f"no {stage!r} from the job's driver in {timeout:g} s:\n{text[-4000:]}"
    raise AssertionError(msg)


@pytest.mark.slow
def test_a_job_keeps_each_task_on_its_host_and_a_dead_hosts_tasks_move_and_come_back(
    sim_cluster: SimCluster, tmp_path: Path
) -> None:
    """The acceptance run of docs/cluster.md: a stateful Kafka job, driver on h1, task epochs
    on the three hosts' executors; h3 is killed and comes back while it runs."""
    h3 = sim_cluster.host("h3").address
    driver = Path(__file__).with_name("cluster_job.py")
    prefix = f"cj{os.getpid()}{int(time.time()) % 100000}"
    record = sim_cluster.run("h1", [sys.executable, str(driver), prefix, str(tmp_path)], role=prefix)
    log = sim_cluster.host_log("h1", prefix)
    try:
        ready = _stage(log, "ready", record)
        on_h3 = {task for task, host in ready["hosts"].items() if host == h3}
        stayed = set(ready["hosts"]) - on_h3
        assert on_h3 and stayed, ready["hosts"]  # four tasks spread over three hosts
        # The stores are on the executors' hosts, under the same path on each host's disk.
        for host in ("h1", "h2", "h3"):
            found = sim_cluster.call(host, ["sh", "-c", f"ls {sim_cluster.mount_point}/jobs/{prefix}/stores/*"])
            assert found.returncode == 0, found.stderr
        sim_cluster.kill("h3")
        (tmp_path / "more").touch()
        moved = _stage(log, "moved", record)
        sim_cluster.restart("h3")
        (tmp_path / "last").touch()
        done = _stage(log, "done", record)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(record.pgid, signal.SIGKILL)
    assert done["state"] == "drained" and done["exact"], done
    placements = "\n".join(  # each epoch's placement, for the messages below
        line for line in log.read_text(encoding="utf-8").splitlines() if "epoch on hosts" in line or "ran off" in line
    )
    for task in on_h3:  # moved off h3 and restored where it went: in full, or only the tail
        # when that host kept a copy from an epoch it ran there before h3 took the task
        assert moved["hosts"][task] != h3
        assert moved["tasks"][task]["restores"] > ready["tasks"][task]["restores"], placements
    back = {task for task, host in done["hosts"].items() if host == h3}
    assert back and back <= on_h3, placements  # h3 gets back a task whose store it holds
    for task in back:  # ... and restores there incrementally: the changelog after its copy
        before, after = moved["tasks"][task], done["tasks"][task]
        assert after["full_restores"] == before["full_restores"]
        assert after["restores"] == before["restores"] + 1
        assert after["restored_records"] > before["restored_records"]
    for task in stayed:  # the other tasks never moved and never restored after the first epochs
        assert done["hosts"][task] == ready["hosts"][task], placements
        assert done["tasks"][task] == ready["tasks"][task], placements


def _two_processor_job(
    sim_cluster: SimCluster, tmp_path: Path, tag: str, seeds: tuple[int, int], replication: str | None = None
) -> tuple[dict[str, str], str, Any, list[list[dict[str, Any]]], dict[str, ProcessRecord], dict[str, Path]]:
    """A page-counts job of six tasks on Kafka whose ZooKeeper processors run on h1 and h2
    (tests/services/cluster_job.py ``processor``): its first batch written, the second returned
    with what the processes are and where they log."""
    from kazoo.client import KazooClient

    from samza_nb.examples.page_views import generate_page_views
    from samza_nb.systems import KafkaSystem

    env = sim_cluster.host_environment(sim_cluster.host("h1"))
    prefix = f"{tag}{os.getpid()}{int(time.time()) % 100000}"
    client = KazooClient(hosts=env["SAMZA_NB_ZK_CONNECT"], timeout=10.0)
    client.start(timeout=15.0)
    client.ensure_path(f"/{prefix}")
    client.stop()
    system = KafkaSystem("kafka", bootstrap_servers=env["SAMZA_NB_KAFKA_BOOTSTRAP"])
    batches = [generate_page_views(1_500, seed=seed) for seed in seeds]
    system.create_stream(f"{prefix}-page-views", 6)
    system.write(f"{prefix}-page-views", batches[0])
    driver = Path(__file__).with_name("cluster_job.py")
    extra = [] if replication is None else [replication]
    processors = {
        host: sim_cluster.run(
            host,
            [sys.executable, str(driver), "processor", prefix, str(tmp_path), f"p-{host}", *extra],
            role=f"{prefix}-{host}",
        )
        for host in ("h1", "h2")
    }
    logs = {host: sim_cluster.host_log(host, f"{prefix}-{host}") for host in processors}
    return env, prefix, system, batches, processors, logs


def _ticks(log: Path) -> list[dict[str, Any]]:
    """The ``tick`` lines a processor of tests/services/cluster_job.py printed so far."""
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    return [json.loads(line) for line in text.splitlines() if line.startswith('{"stage": "tick"')]


def _until_tick(log: Path, record: ProcessRecord, what: str, done: Any, timeout: float = 300.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        ticks = _ticks(log)
        if ticks and done(ticks[-1]):
            return ticks[-1]
        said = log.read_text(encoding="utf-8", errors="replace")[-4000:] if log.exists() else ""
        assert is_alive(record), f"the processor ended before {what}:\n{said}"
        assert time.monotonic() < deadline, f"no {what} in {timeout:g} s:\n{said}"
        time.sleep(0.5)


@pytest.mark.slow
def test_a_task_taken_over_by_another_processor_runs_where_its_store_is_and_restores_no_more_than_the_tail(
    sim_cluster: SimCluster, tmp_path: Path
) -> None:
    """Two ZooKeeper processors on h1 and h2 share the cluster, each with an executor on every
    host; the stores of a task are on the host that ran it, whichever processor drove it. When
    h2's processor dies (its host lives on), h1's takes its tasks and runs each where its store
    is: nothing restores in full, and what is restored is at most the tail the dead processor
    wrote after its last commit."""

    from samza_nb.examples.page_views import expected_counts

    sys.path.insert(0, str(Path(__file__).parent))
    from cluster_job import page_counts_app, page_totals

    # Six tasks: three per processor, one per host each, and after the takeover two per host,
    # so the load alone moves no task.
    env, prefix, system, batches, processors, logs = _two_processor_job(sim_cluster, tmp_path, "tk", (31, 32))
    plan = page_counts_app(system, prefix, 6).plan({"job.coordinator.factory": "zookeeper"})
    try:
        _wait_for(lambda: _input_read(plan, prefix, zk=f"{env['SAMZA_NB_ZK_CONNECT']}/{prefix}") >= 1_500,
                  "the first batch read", processors["h1"], logs["h1"])
        for host in processors:  # each runs 3 tasks, one per host
            _until_tick(logs[host], processors[host], f"p-{host} running 3 tasks, one per host",
                        lambda tick: len(tick["runs"]) == 3 and set(tick["runs"]) <= set(tick["hosts"])
                        and len({tick["hosts"][task] for task in tick["runs"]}) == 3)
        time.sleep(3.0)  # an epoch or two more: every task has committed where it runs
        doomed = _ticks(logs["h2"])[-1]
        os.killpg(processors["h2"].pgid, signal.SIGKILL)
        system.write(f"{prefix}-page-views", batches[1])
        before = _ticks(logs["h1"])[-1]
        after = _until_tick(logs["h1"], processors["h1"], "p-h1 taking p-h2's tasks and reading the second batch",
                            lambda tick: len(tick["runs"]) == 6 and set(tick["runs"]) <= set(tick["hosts"]))
        _wait_for(lambda: _input_read(plan, prefix, zk=f"{env['SAMZA_NB_ZK_CONNECT']}/{prefix}") >= 3_000,
                  "the second batch read", processors["h1"], logs["h1"])
        after = _ticks(logs["h1"])[-1]
        (tmp_path / "drain").touch()
        done = _stage(logs["h1"], "done", processors["h1"])
    finally:
        for record in processors.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(record.pgid, signal.SIGKILL)
    assert done["state"] == "drained", done
    assert page_totals(_collected(plan, f"{prefix}-page-counts")) == expected_counts(
        [event for batch in batches for event in batch]
    )
    taken = set(doomed["runs"])
    changelog = {  # what a full restore of each taken task's store would read
        task: count
        for task, count in (
            (task, system.newest_offsets(plan.changelog_stream_id(store)).get(int(task.removeprefix("Partition ")), 0))
            for store in plan.store_names
            for task in taken
        )
    }
    numbers = {task: (doomed["hosts"].get(task), after["hosts"][task], after["tasks"][task]) for task in taken}
    for task in taken:
        assert after["hosts"][task] == doomed["hosts"][task], numbers  # where its store is
        assert after["tasks"][task]["full_restores"] == 0, numbers
        assert after["tasks"][task]["restored_records"] < changelog[task], (numbers, changelog)
    for task in before["runs"]:  # h1's own tasks did not move
        # Each tick's host and numbers of the task, to tell when and where it changed.
        course = [
            (tick.get("hosts", {}).get(task), tick.get("tasks", {}).get(task),
             [line for line in tick.get("rebuilt", []) if repr(task) in line])
            for tick in _ticks(logs["h1"])
        ]
        assert after["hosts"][task] == before["hosts"][task], (numbers, task, course)
        assert after["tasks"][task] == before["tasks"][task], (task, course)
    print(f"taken over: {numbers}; changelog lengths now {changelog}")


@pytest.mark.slow
def test_hot_standbys_keep_off_their_actives_hosts_and_a_lost_host_fails_over_to_the_standbys(
    sim_cluster: SimCluster, tmp_path: Path
) -> None:
    """Two ZooKeeper processors on h1 and h2 with one hot standby per task: each processor keeps
    its standbys' copies on its own host, so the other's active tasks never run there. h2 is
    lost (its processor and executors): h1's processor promotes its standbys, and the tasks
    whose host died run where their standby's copy is (h1), restoring only the tail. When
    Spark ran all of p-h2's tasks on h3, h3 is lost with h2, so that they have lost their host."""

    from samza_nb.examples.page_views import expected_counts

    sys.path.insert(0, str(Path(__file__).parent))
    from cluster_job import page_counts_app, page_totals

    h1, h2 = sim_cluster.host("h1").address, sim_cluster.host("h2").address
    env, prefix, system, batches, processors, logs = _two_processor_job(
        sim_cluster, tmp_path, "sb", (41, 42), replication="2"
    )
    zk = f"{env['SAMZA_NB_ZK_CONNECT']}/{prefix}"
    plan = page_counts_app(system, prefix, 6).plan({"job.coordinator.factory": "zookeeper"})
    try:
        _wait_for(lambda: _input_read(plan, prefix, zk=zk) >= 1_500, "the first batch read", processors["h1"], logs["h1"])
        ticks = {
            host: _until_tick(
                logs[host], processors[host], f"p-{host} running 3 tasks, each with a standby",
                lambda tick: len(tick["runs"]) == 3 and set(tick["runs"]) <= set(tick["hosts"])
                and len(tick["standbys"]) == 6,
            )
            for host in processors
        }
        time.sleep(3.0)  # an epoch or two more: every standby has stepped
        ticks = {host: _ticks(logs[host])[-1] for host in processors}
        for tick in ticks.values():  # the SEP's constraint, on hosts: never next to a standby
            for task in tick["runs"]:
                assert tick["hosts"][task] not in tick["standbys"][task], tick
        on_h2 = {task for task in ticks["h2"]["runs"] if ticks["h2"]["hosts"][task] == h2}
        # p-h2's tasks keep off h1 (its standbys), on h2 or h3: the lost hosts hold some of them.
        victims = ["h2"] if on_h2 else ["h2", "h3"]
        lost = {sim_cluster.host(victim).address for victim in victims}
        on_lost = {task for task in ticks["h2"]["runs"] if ticks["h2"]["hosts"][task] in lost}
        for victim in victims:
            sim_cluster.kill(victim)
        system.write(f"{prefix}-page-views", batches[1])
        _until_tick(logs["h1"], processors["h1"], "p-h1 running all 6 tasks",
                    lambda tick: len(tick["runs"]) == 6 and set(tick["runs"]) <= set(tick["hosts"]))
        _wait_for(lambda: _input_read(plan, prefix, zk=zk) >= 3_000, "the second batch read", processors["h1"], logs["h1"])
        after = _ticks(logs["h1"])[-1]
        (tmp_path / "drain").touch()
        done = _stage(logs["h1"], "done", processors["h1"])
    finally:
        for record in processors.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(record.pgid, signal.SIGKILL)
        alive = sim_cluster.alive_worker_addresses()
        for victim in ("h2", "h3"):
            if sim_cluster.host(victim).address not in alive:
                sim_cluster.restart(victim)
    assert done["state"] == "drained", done
    assert page_totals(_collected(plan, f"{prefix}-page-counts")) == expected_counts(
        [event for batch in batches for event in batch]
    )
    promoted = {task: (ticks["h2"]["hosts"][task], after["hosts"][task], after["tasks"][task]) for task in ticks["h2"]["runs"]}
    assert on_lost, ticks["h2"]
    for task in set(ticks["h2"]["runs"]) - on_lost:  # their host lives: its copy, or the standby's
        assert after["hosts"][task] in (ticks["h2"]["hosts"][task], h1), promoted
        assert after["tasks"][task]["full_restores"] == 0, promoted
    # Their host is gone: they run where the standby's copy is (h1) as far as h1's share of the
    # load allows (3 of 6 tasks), and there restore only the tail.
    back = {task for task in on_lost if after["hosts"][task] == h1}
    assert back, promoted
    for task in back:
        assert after["tasks"][task]["full_restores"] == 0, promoted
    print(f"promoted: {promoted}")


_ZK_APP = """
import sys
sys.path.insert(0, {tests!r})
from cluster_job import page_counts_app
from samza_nb.services import read_service_env
from samza_nb.systems import KafkaSystem
app = page_counts_app(KafkaSystem("kafka", bootstrap_servers=read_service_env()["SAMZA_NB_KAFKA_BOOTSTRAP"]), {prefix!r})
"""




@pytest.mark.slow
@pytest.mark.parametrize("coordinator", ["zookeeper", "azure"])
def test_processors_on_two_hosts_share_the_spark_cluster_and_survive_a_host(
    sim_cluster: SimCluster, tmp_path: Path, coordinator: str
) -> None:
    """One job, two processor processes (ZooKeeper or Azure standalone) on h1 and h2, each a
    Spark application on the cluster's master; h2 dies, h1's processor takes its tasks, a drain
    ends the job, and the counts equal plain Python's."""
    from kazoo.client import KazooClient

    from samza_nb.examples.page_views import expected_counts, generate_page_views
    from samza_nb.systems import KafkaSystem
    from samza_nb.testing import AZURE_PROCESS_TIMINGS, delete_azure_job

    sys.path.insert(0, str(Path(__file__).parent))
    from cluster_job import page_counts_app, page_totals

    env = sim_cluster.host_environment(sim_cluster.host("h1"))
    prefix = f"{coordinator[:2]}{os.getpid()}{int(time.time()) % 100000}"
    zk = env["SAMZA_NB_ZK_CONNECT"]
    azure = env["SAMZA_NB_AZURE_CONNECTION_STRING"]
    if coordinator == "zookeeper":
        client = KazooClient(hosts=zk, timeout=10.0)
        client.start(timeout=15.0)
        client.ensure_path(f"/{prefix}")
        client.stop()
    system = KafkaSystem("kafka", bootstrap_servers=env["SAMZA_NB_KAFKA_BOOTSTRAP"])
    batches = [generate_page_views(1_500, seed=seed) for seed in (21, 22)]
    system.create_stream(f"{prefix}-page-views", 4)
    system.write(f"{prefix}-page-views", batches[0])
    (tmp_path / "zkjob.py").write_text(_ZK_APP.format(tests=str(Path(__file__).parent), prefix=prefix))
    coordination = (
        {
            "job.coordinator.zk.connect": f"{zk}/{prefix}",
            "job.coordinator.zk.session.timeout.ms": "4000",
            "job.debounce.time.ms": "500",
        }
        if coordinator == "zookeeper"
        else AZURE_PROCESS_TIMINGS  # the account's key comes from the host's environment, never argv
    )
    settings = {
        "job.coordinator.factory": coordinator,
        **coordination,
        "task.max.epoch.messages": "200",
        "job.home": f"{sim_cluster.mount_point}/jobs/{prefix}",
        "spark.master": sim_cluster.master_url,
        "spark.cores.max": "1",
        "spark.executor.memory": "512m",
    }
    sets = [arg for key, value in settings.items() for arg in ("--set", f"{key}={value}")]
    python_path = {"PYTHONPATH": f"{env['PYTHONPATH']}{os.pathsep}{tmp_path}"}
    processors = {
        host: sim_cluster.run(
            host,
            [sys.executable, "-m", "samza_nb.cli", "run", "zkjob:app", "--until", "forever",
             "--set", f"processor.id=p-{host}", *sets],
            role=f"{prefix}-p",
            env=python_path,
        )
        for host in ("h1", "h2")
    }
    log = sim_cluster.host_log("h1", f"{prefix}-p")
    plan = page_counts_app(system, prefix).plan({**settings, "azure.storage.connect": azure})
    try:
        _wait_for(lambda: b"runs 2 tasks" in log.read_bytes() if log.exists() else False,
                  "p-h1 running 2 of the 4 tasks", processors["h1"], log)
        sim_cluster.kill("h2")
        system.write(f"{prefix}-page-views", batches[1])
        _wait_for(lambda: b"runs 4 tasks" in log.read_bytes(), "p-h1 taking h2's tasks",
                  processors["h1"], log)
        total = sum(map(len, batches))
        _wait_for(lambda: _input_read(plan, prefix) >= total, f"{total} events read",
                  processors["h1"], log)
        drain = sim_cluster.call(
            "h1",
            [sys.executable, "-m", "samza_nb.cli", "drain", "zkjob:app", "--wait", "--timeout", "240", *sets],
            timeout=300,
            env=python_path,
        )
        assert drain.returncode == 0, drain.stderr[-3000:]
        _wait_for(lambda: not is_alive(processors["h1"]), "p-h1 ending after the drain", None, log)
        said = log.read_text(encoding="utf-8", errors="replace")
        assert "job drained" in said, said[-3000:]
        assert page_totals(_collected(plan, f"{prefix}-page-counts")) == expected_counts(
            [event for batch in batches for event in batch]
        )
    finally:
        for record in processors.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(record.pgid, signal.SIGKILL)
        if sim_cluster.host("h2").address not in sim_cluster.alive_worker_addresses():
            sim_cluster.restart("h2")
        if coordinator == "azure":
            delete_azure_job(plan.app_name, azure)


def _input_read(plan: Any, prefix: str, zk: str | None = None) -> int:
    """Input offsets the job's committed checkpoints hold (a drain ends reading there); ``zk``:
    those of a ZooKeeper job whose processors keep their job homes on their hosts' disks."""
    from samza_nb.job import job_home
    from samza_nb.job.preparation import open_metadata_store
    from samza_nb.runtime.checkpoints import CheckpointStore

    if zk is not None:
        from samza_nb.metadata.zookeeper import ZkMetadataStore

        store: Any = ZkMetadataStore(zk, f"/app-{plan.app_name}-{plan.job_id}/ApplicationRunnerData")
    else:
        store = open_metadata_store(plan.config, job_home(plan))
    try:
        return sum(
            offset
            for checkpoint in CheckpointStore(store).read_all().values()
            for key, offset in checkpoint.offsets.items()
            if key.startswith(f"{prefix}-page-views#")
        )
    finally:
        store.close()


def _collected(plan: Any, stream_id: str) -> Any:
    from samza_nb.plan.serdes import KVSerde

    info = plan.streams[stream_id]
    serde = info.serde
    if isinstance(serde, KVSerde):
        return info.system.read_frame(stream_id, serde=serde.value_serde, key_serde=serde.key_serde)
    return info.system.read_frame(stream_id, serde=serde)


def _wait_for(done: Any, what: str, record: ProcessRecord | None, log: Path, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        said = log.read_text(encoding="utf-8", errors="replace")[-4000:] if log.exists() else ""
        assert record is None or is_alive(record), f"the processor ended before {what}:\n{said}"
        assert time.monotonic() < deadline, f"no {what} in {timeout:g} s:\n{said}"
        time.sleep(0.5)


@pytest.mark.slow
def test_services_status_lists_the_hosts(
    sim_cluster: SimCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["services", "status", "cluster"]) == 0
    out = capsys.readouterr().out
    assert f"cluster    running     {sim_cluster.master_url}\n" in out
    for host in sim_cluster.hosts:
        assert f"host {host.name} {host.address} up" in out


def test_hosts_must_be_a_positive_number(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["services", "up", "cluster", "--hosts", "0"])
    assert "--hosts: expected a whole number >= 1, got '0'" in capsys.readouterr().err


@pytest.mark.slow
def test_down_in_another_services_folder_leaves_the_cluster_alone(
    sim_cluster: SimCluster, tmp_path: Path
) -> None:
    services.down(services_dir=tmp_path)  # every service, the cluster included
    assert sorted(_netns.netns_names()) == ["snb-h1", "snb-h2", "snb-h3"]
    assert sim_cluster.status().state == "running"


@pytest.mark.slow
def test_down_leaves_no_namespace_bridge_or_process(sim_cluster: SimCluster) -> None:
    pids = [record.pid for host in sim_cluster.hosts for record in sim_cluster.processes(host)]
    assert pids and _netns.netns_names()
    services.down(["cluster"])  # a later test's sim_cluster starts it again
    assert _netns.netns_names() == []
    assert not Path("/sys/class/net", _netns.BRIDGE).exists()
    assert not _outliving(pids, timeout=20.0)
    assert sim_cluster.status().state == "stopped"
