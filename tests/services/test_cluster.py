"""The simulated cluster: hosts in their own network and mount namespaces, one Spark worker each."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from samza_nb import services
from samza_nb.cli import main
from samza_nb.errors import ServiceError
from samza_nb.services import _netns
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
    from samza_nb.runtime.spark import get_spark
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
    services.down(["cluster"])
    try:
        assert _netns.netns_names() == []
        assert not Path("/sys/class/net", _netns.BRIDGE).exists()
        assert not [pid for pid in pids if Path(f"/proc/{pid}").exists()]
        assert sim_cluster.status().state == "stopped"
    finally:
        # Later users of the session fixture get their cluster back.
        services.up(["cluster"], hosts=3, timeout=300)
